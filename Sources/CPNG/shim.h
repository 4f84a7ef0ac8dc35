// libpng's header (Debian: libpng-dev), for artwork. Not linked: Sources/MusicKitCore/Support/PNG.swift
// (the only file that imports this module) opens libpng16.so.16 when an image is first read.
#ifndef MUSICKIT_CPNG_SHIM_H
#define MUSICKIT_CPNG_SHIM_H
#include <png.h>
// PNG_FORMAT_RGBA is a macro made of macros, which Swift does not import.
static const png_uint_32 musickit_png_format_rgba = PNG_FORMAT_RGBA;
#endif
