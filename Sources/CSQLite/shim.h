// SQLite (Debian: libsqlite3-dev). Only Sources/MusicKit/Store/SQLite.swift imports this module.
#ifndef MUSICKIT_CSQLITE_SHIM_H
#define MUSICKIT_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
static inline int musickit_sqlite3_bind_text_transient(sqlite3_stmt *statement, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(statement, index, text, byteCount, SQLITE_TRANSIENT);
}
static inline int musickit_sqlite3_bind_blob_transient(sqlite3_stmt *statement, int index, const void *bytes, int byteCount) {
    return sqlite3_bind_blob(statement, index, bytes, byteCount, SQLITE_TRANSIENT);
}
#endif
