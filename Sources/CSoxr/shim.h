// libsoxr (Debian: libsoxr-dev). Only Sources/AudioEngine/SampleRateConverter.swift imports this module.
#ifndef MUSICKIT_CSOXR_SHIM_H
#define MUSICKIT_CSOXR_SHIM_H
#include <soxr.h>
#endif
