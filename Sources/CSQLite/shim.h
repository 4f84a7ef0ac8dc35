// SQLite's header (Debian: libsqlite3-dev). Only Sources/MusicKitCore/Store/SQLite.swift imports this
// module; libsqlite3 itself is opened there when the first database is (not linked).
#ifndef MUSICKIT_CSQLITE_SHIM_H
#define MUSICKIT_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
