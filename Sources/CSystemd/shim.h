// libsystemd's sd-bus (Debian: libsystemd-dev). Only Sources/MusicKitDaemon/SDBus.swift imports this module.
#ifndef MUSICKIT_CSYSTEMD_SHIM_H
#define MUSICKIT_CSYSTEMD_SHIM_H
#include <systemd/sd-bus.h>
#endif
