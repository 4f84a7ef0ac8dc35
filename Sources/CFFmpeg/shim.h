// FFmpeg's libavformat, libavcodec and libavutil (Debian: libavformat-dev, libavcodec-dev,
// libavutil-dev). Headers only: the libraries are opened with dlopen at first use. Only
// Sources/AudioEngine/FFmpeg.swift imports this module.
#ifndef MUSICKIT_CFFMPEG_SHIM_H
#define MUSICKIT_CFFMPEG_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/dict.h>
#endif
