// libpulse (Debian: libpulse-dev). Imported by Sources/AudioEngine/PulseLibrary.swift (the wrapper) and the PulseConnection.swift and PulseStream.swift built on it.
#ifndef MUSICKIT_CPULSE_SHIM_H
#define MUSICKIT_CPULSE_SHIM_H
#include <pulse/pulseaudio.h>
#endif
