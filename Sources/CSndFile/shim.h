// libsndfile (Debian: libsndfile1-dev). Only Sources/AudioEngine/SndFile.swift imports this module.
#ifndef MUSICKIT_CSNDFILE_SHIM_H
#define MUSICKIT_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
