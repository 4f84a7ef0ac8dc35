// ALSA (Debian: libasound2-dev): its header, and libasound opened when the engine first needs a
// device (Sources/CALSA/ALSALibrary.c), not linked, so that a command that plays nothing -- `musickit
// next` among them -- does not load it at start. Only Sources/AudioEngine/ALSA.swift imports this
// module: it calls the musickit_snd_* functions below, each the libasound function of the same
// name without the prefix, through a pointer looked up once. Direct C calls, so that the audio
// thread's `@_noLocks` code can make them (the compiler rejects calls through Swift function
// values there). Written by scripts/generate-alsa-library.
#ifndef MUSICKIT_CALSA_H
#define MUSICKIT_CALSA_H
#include <alsa/asoundlib.h>

/// Opens libasound.so.2 and looks up every function below, once per process (any thread);
/// NULL when done, or why it could not be (then every function below fails with -ENOSYS or
/// returns NULL, and musickit_snd_strerror describes codes as strerror does).
const char *musickit_alsa_load(void);

/// Drops the messages alsa-lib prints on stderr (the engine reports every failure itself).
void musickit_alsa_silence_library_errors(void);

int musickit_snd_device_name_free_hint(void **hints);
char * musickit_snd_device_name_get_hint(const void *hint, const char *id);
int musickit_snd_device_name_hint(int card, const char *iface, void ***hints);
int musickit_snd_lib_error_set_handler(snd_lib_error_handler_t handler);
snd_pcm_sframes_t musickit_snd_pcm_avail_update(snd_pcm_t *pcm);
int musickit_snd_pcm_close(snd_pcm_t *pcm);
int musickit_snd_pcm_delay(snd_pcm_t *pcm, snd_pcm_sframes_t *delayp);
int musickit_snd_pcm_drop(snd_pcm_t *pcm);
int musickit_snd_pcm_hw_params(snd_pcm_t *pcm, snd_pcm_hw_params_t *params);
int musickit_snd_pcm_hw_params_any(snd_pcm_t *pcm, snd_pcm_hw_params_t *params);
int musickit_snd_pcm_hw_params_can_pause(const snd_pcm_hw_params_t *params);
void musickit_snd_pcm_hw_params_free(snd_pcm_hw_params_t *obj);
int musickit_snd_pcm_hw_params_get_buffer_size(const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val);
int musickit_snd_pcm_hw_params_get_period_size(const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *frames, int *dir);
int musickit_snd_pcm_hw_params_malloc(snd_pcm_hw_params_t **ptr);
int musickit_snd_pcm_hw_params_set_access(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_access_t _access);
int musickit_snd_pcm_hw_params_set_buffer_size_near(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val);
int musickit_snd_pcm_hw_params_set_channels(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val);
int musickit_snd_pcm_hw_params_set_format(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val);
int musickit_snd_pcm_hw_params_set_period_size_near(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val, int *dir);
int musickit_snd_pcm_hw_params_set_rate_near(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int *val, int *dir);
int musickit_snd_pcm_hw_params_test_format(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val);
int musickit_snd_pcm_open(snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode);
int musickit_snd_pcm_pause(snd_pcm_t *pcm, int enable);
int musickit_snd_pcm_poll_descriptors(snd_pcm_t *pcm, struct pollfd *pfds, unsigned int space);
int musickit_snd_pcm_poll_descriptors_count(snd_pcm_t *pcm);
int musickit_snd_pcm_poll_descriptors_revents(snd_pcm_t *pcm, struct pollfd *pfds, unsigned int nfds, unsigned short *revents);
int musickit_snd_pcm_prepare(snd_pcm_t *pcm);
int musickit_snd_pcm_recover(snd_pcm_t *pcm, int err, int silent);
int musickit_snd_pcm_start(snd_pcm_t *pcm);
snd_pcm_state_t musickit_snd_pcm_state(snd_pcm_t *pcm);
int musickit_snd_pcm_sw_params(snd_pcm_t *pcm, snd_pcm_sw_params_t *params);
int musickit_snd_pcm_sw_params_current(snd_pcm_t *pcm, snd_pcm_sw_params_t *params);
void musickit_snd_pcm_sw_params_free(snd_pcm_sw_params_t *obj);
int musickit_snd_pcm_sw_params_malloc(snd_pcm_sw_params_t **ptr);
int musickit_snd_pcm_sw_params_set_avail_min(snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val);
int musickit_snd_pcm_sw_params_set_start_threshold(snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val);
snd_pcm_type_t musickit_snd_pcm_type(snd_pcm_t *pcm);
snd_pcm_sframes_t musickit_snd_pcm_writei(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size);
const char * musickit_snd_strerror(int errnum);

#endif
