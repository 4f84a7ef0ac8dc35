// ALSA (Debian: libasound2-dev). Only Sources/AudioEngine/ALSA.swift imports this module.
#ifndef MUSICKIT_CALSA_SHIM_H
#define MUSICKIT_CALSA_SHIM_H
#include <alsa/asoundlib.h>
#endif
