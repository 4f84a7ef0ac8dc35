// libebur128 (Debian: libebur128-dev). Only Sources/AudioEngine/LoudnessMeter.swift imports this module.
#ifndef MUSICKIT_CEBUR128_SHIM_H
#define MUSICKIT_CEBUR128_SHIM_H
#include <ebur128.h>
#endif
