// libpulse (Debian: libpulse-dev). Only Sources/AudioEngine/PulseAudio.swift imports this module.
#ifndef MUSICKIT_CPULSE_SHIM_H
#define MUSICKIT_CPULSE_SHIM_H
#include <pulse/pulseaudio.h>
#endif
