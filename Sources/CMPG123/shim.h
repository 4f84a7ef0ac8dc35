// libmpg123 (Debian: libmpg123-dev). Only Sources/AudioEngine/MPG123.swift imports this module.
#ifndef MUSICKIT_CMPG123_SHIM_H
#define MUSICKIT_CMPG123_SHIM_H
#include <mpg123.h>
#endif
