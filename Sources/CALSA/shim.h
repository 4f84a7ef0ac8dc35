// ALSA (Debian: libasound2-dev). Only Sources/AudioEngine/ALSA.swift imports this module.
#ifndef MUSICKIT_CALSA_SHIM_H
#define MUSICKIT_CALSA_SHIM_H
#include <alsa/asoundlib.h>

// ALSA's error handler is variadic, which Swift cannot implement: this one drops the
// messages alsa-lib prints on stderr, because the engine reports every failure itself.
static void musickit_alsa_quiet_error_handler(const char *file, int line, const char *function, int err,
                                              const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void musickit_alsa_silence_library_errors(void) {
    snd_lib_error_set_handler(musickit_alsa_quiet_error_handler);
}
#endif
