// libasound opened when first needed, and the functions Sources/AudioEngine/ALSA.swift calls:
// see include/CALSA.h. Written by scripts/generate-alsa-library from alsa-lib's declarations (a
// function missing from the library fails musickit_alsa_load).
#include "CALSA.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static __typeof__(snd_device_name_free_hint) *p_snd_device_name_free_hint;
static __typeof__(snd_device_name_get_hint) *p_snd_device_name_get_hint;
static __typeof__(snd_device_name_hint) *p_snd_device_name_hint;
static __typeof__(snd_lib_error_set_handler) *p_snd_lib_error_set_handler;
static __typeof__(snd_pcm_avail_update) *p_snd_pcm_avail_update;
static __typeof__(snd_pcm_close) *p_snd_pcm_close;
static __typeof__(snd_pcm_delay) *p_snd_pcm_delay;
static __typeof__(snd_pcm_drop) *p_snd_pcm_drop;
static __typeof__(snd_pcm_hw_params) *p_snd_pcm_hw_params;
static __typeof__(snd_pcm_hw_params_any) *p_snd_pcm_hw_params_any;
static __typeof__(snd_pcm_hw_params_can_pause) *p_snd_pcm_hw_params_can_pause;
static __typeof__(snd_pcm_hw_params_free) *p_snd_pcm_hw_params_free;
static __typeof__(snd_pcm_hw_params_get_buffer_size) *p_snd_pcm_hw_params_get_buffer_size;
static __typeof__(snd_pcm_hw_params_get_period_size) *p_snd_pcm_hw_params_get_period_size;
static __typeof__(snd_pcm_hw_params_malloc) *p_snd_pcm_hw_params_malloc;
static __typeof__(snd_pcm_hw_params_set_access) *p_snd_pcm_hw_params_set_access;
static __typeof__(snd_pcm_hw_params_set_buffer_size_near) *p_snd_pcm_hw_params_set_buffer_size_near;
static __typeof__(snd_pcm_hw_params_set_channels) *p_snd_pcm_hw_params_set_channels;
static __typeof__(snd_pcm_hw_params_set_format) *p_snd_pcm_hw_params_set_format;
static __typeof__(snd_pcm_hw_params_set_period_size_near) *p_snd_pcm_hw_params_set_period_size_near;
static __typeof__(snd_pcm_hw_params_set_rate_near) *p_snd_pcm_hw_params_set_rate_near;
static __typeof__(snd_pcm_hw_params_test_format) *p_snd_pcm_hw_params_test_format;
static __typeof__(snd_pcm_open) *p_snd_pcm_open;
static __typeof__(snd_pcm_pause) *p_snd_pcm_pause;
static __typeof__(snd_pcm_poll_descriptors) *p_snd_pcm_poll_descriptors;
static __typeof__(snd_pcm_poll_descriptors_count) *p_snd_pcm_poll_descriptors_count;
static __typeof__(snd_pcm_poll_descriptors_revents) *p_snd_pcm_poll_descriptors_revents;
static __typeof__(snd_pcm_prepare) *p_snd_pcm_prepare;
static __typeof__(snd_pcm_recover) *p_snd_pcm_recover;
static __typeof__(snd_pcm_start) *p_snd_pcm_start;
static __typeof__(snd_pcm_state) *p_snd_pcm_state;
static __typeof__(snd_pcm_sw_params) *p_snd_pcm_sw_params;
static __typeof__(snd_pcm_sw_params_current) *p_snd_pcm_sw_params_current;
static __typeof__(snd_pcm_sw_params_free) *p_snd_pcm_sw_params_free;
static __typeof__(snd_pcm_sw_params_malloc) *p_snd_pcm_sw_params_malloc;
static __typeof__(snd_pcm_sw_params_set_avail_min) *p_snd_pcm_sw_params_set_avail_min;
static __typeof__(snd_pcm_sw_params_set_start_threshold) *p_snd_pcm_sw_params_set_start_threshold;
static __typeof__(snd_pcm_type) *p_snd_pcm_type;
static __typeof__(snd_pcm_writei) *p_snd_pcm_writei;
static __typeof__(snd_strerror) *p_snd_strerror;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];
static const char *load_failure = "libasound.so.2 has not been opened";

static void load(void) {
    void *library = dlopen("libasound.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(load_error, sizeof load_error, "libasound.so.2 could not be opened (%s)", dlerror());
        load_failure = load_error;
        return;
    }
    if (!(p_snd_device_name_free_hint = (__typeof__(snd_device_name_free_hint) *)dlsym(library, "snd_device_name_free_hint"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_device_name_free_hint"); load_failure = load_error; return; }
    if (!(p_snd_device_name_get_hint = (__typeof__(snd_device_name_get_hint) *)dlsym(library, "snd_device_name_get_hint"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_device_name_get_hint"); load_failure = load_error; return; }
    if (!(p_snd_device_name_hint = (__typeof__(snd_device_name_hint) *)dlsym(library, "snd_device_name_hint"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_device_name_hint"); load_failure = load_error; return; }
    if (!(p_snd_lib_error_set_handler = (__typeof__(snd_lib_error_set_handler) *)dlsym(library, "snd_lib_error_set_handler"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_lib_error_set_handler"); load_failure = load_error; return; }
    if (!(p_snd_pcm_avail_update = (__typeof__(snd_pcm_avail_update) *)dlsym(library, "snd_pcm_avail_update"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_avail_update"); load_failure = load_error; return; }
    if (!(p_snd_pcm_close = (__typeof__(snd_pcm_close) *)dlsym(library, "snd_pcm_close"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_close"); load_failure = load_error; return; }
    if (!(p_snd_pcm_delay = (__typeof__(snd_pcm_delay) *)dlsym(library, "snd_pcm_delay"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_delay"); load_failure = load_error; return; }
    if (!(p_snd_pcm_drop = (__typeof__(snd_pcm_drop) *)dlsym(library, "snd_pcm_drop"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_drop"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params = (__typeof__(snd_pcm_hw_params) *)dlsym(library, "snd_pcm_hw_params"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_any = (__typeof__(snd_pcm_hw_params_any) *)dlsym(library, "snd_pcm_hw_params_any"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_any"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_can_pause = (__typeof__(snd_pcm_hw_params_can_pause) *)dlsym(library, "snd_pcm_hw_params_can_pause"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_can_pause"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_free = (__typeof__(snd_pcm_hw_params_free) *)dlsym(library, "snd_pcm_hw_params_free"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_free"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_get_buffer_size = (__typeof__(snd_pcm_hw_params_get_buffer_size) *)dlsym(library, "snd_pcm_hw_params_get_buffer_size"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_get_buffer_size"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_get_period_size = (__typeof__(snd_pcm_hw_params_get_period_size) *)dlsym(library, "snd_pcm_hw_params_get_period_size"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_get_period_size"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_malloc = (__typeof__(snd_pcm_hw_params_malloc) *)dlsym(library, "snd_pcm_hw_params_malloc"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_malloc"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_set_access = (__typeof__(snd_pcm_hw_params_set_access) *)dlsym(library, "snd_pcm_hw_params_set_access"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_set_access"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_set_buffer_size_near = (__typeof__(snd_pcm_hw_params_set_buffer_size_near) *)dlsym(library, "snd_pcm_hw_params_set_buffer_size_near"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_set_buffer_size_near"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_set_channels = (__typeof__(snd_pcm_hw_params_set_channels) *)dlsym(library, "snd_pcm_hw_params_set_channels"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_set_channels"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_set_format = (__typeof__(snd_pcm_hw_params_set_format) *)dlsym(library, "snd_pcm_hw_params_set_format"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_set_format"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_set_period_size_near = (__typeof__(snd_pcm_hw_params_set_period_size_near) *)dlsym(library, "snd_pcm_hw_params_set_period_size_near"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_set_period_size_near"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_set_rate_near = (__typeof__(snd_pcm_hw_params_set_rate_near) *)dlsym(library, "snd_pcm_hw_params_set_rate_near"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_set_rate_near"); load_failure = load_error; return; }
    if (!(p_snd_pcm_hw_params_test_format = (__typeof__(snd_pcm_hw_params_test_format) *)dlsym(library, "snd_pcm_hw_params_test_format"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_hw_params_test_format"); load_failure = load_error; return; }
    if (!(p_snd_pcm_open = (__typeof__(snd_pcm_open) *)dlsym(library, "snd_pcm_open"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_open"); load_failure = load_error; return; }
    if (!(p_snd_pcm_pause = (__typeof__(snd_pcm_pause) *)dlsym(library, "snd_pcm_pause"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_pause"); load_failure = load_error; return; }
    if (!(p_snd_pcm_poll_descriptors = (__typeof__(snd_pcm_poll_descriptors) *)dlsym(library, "snd_pcm_poll_descriptors"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_poll_descriptors"); load_failure = load_error; return; }
    if (!(p_snd_pcm_poll_descriptors_count = (__typeof__(snd_pcm_poll_descriptors_count) *)dlsym(library, "snd_pcm_poll_descriptors_count"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_poll_descriptors_count"); load_failure = load_error; return; }
    if (!(p_snd_pcm_poll_descriptors_revents = (__typeof__(snd_pcm_poll_descriptors_revents) *)dlsym(library, "snd_pcm_poll_descriptors_revents"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_poll_descriptors_revents"); load_failure = load_error; return; }
    if (!(p_snd_pcm_prepare = (__typeof__(snd_pcm_prepare) *)dlsym(library, "snd_pcm_prepare"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_prepare"); load_failure = load_error; return; }
    if (!(p_snd_pcm_recover = (__typeof__(snd_pcm_recover) *)dlsym(library, "snd_pcm_recover"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_recover"); load_failure = load_error; return; }
    if (!(p_snd_pcm_start = (__typeof__(snd_pcm_start) *)dlsym(library, "snd_pcm_start"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_start"); load_failure = load_error; return; }
    if (!(p_snd_pcm_state = (__typeof__(snd_pcm_state) *)dlsym(library, "snd_pcm_state"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_state"); load_failure = load_error; return; }
    if (!(p_snd_pcm_sw_params = (__typeof__(snd_pcm_sw_params) *)dlsym(library, "snd_pcm_sw_params"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_sw_params"); load_failure = load_error; return; }
    if (!(p_snd_pcm_sw_params_current = (__typeof__(snd_pcm_sw_params_current) *)dlsym(library, "snd_pcm_sw_params_current"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_sw_params_current"); load_failure = load_error; return; }
    if (!(p_snd_pcm_sw_params_free = (__typeof__(snd_pcm_sw_params_free) *)dlsym(library, "snd_pcm_sw_params_free"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_sw_params_free"); load_failure = load_error; return; }
    if (!(p_snd_pcm_sw_params_malloc = (__typeof__(snd_pcm_sw_params_malloc) *)dlsym(library, "snd_pcm_sw_params_malloc"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_sw_params_malloc"); load_failure = load_error; return; }
    if (!(p_snd_pcm_sw_params_set_avail_min = (__typeof__(snd_pcm_sw_params_set_avail_min) *)dlsym(library, "snd_pcm_sw_params_set_avail_min"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_sw_params_set_avail_min"); load_failure = load_error; return; }
    if (!(p_snd_pcm_sw_params_set_start_threshold = (__typeof__(snd_pcm_sw_params_set_start_threshold) *)dlsym(library, "snd_pcm_sw_params_set_start_threshold"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_sw_params_set_start_threshold"); load_failure = load_error; return; }
    if (!(p_snd_pcm_type = (__typeof__(snd_pcm_type) *)dlsym(library, "snd_pcm_type"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_type"); load_failure = load_error; return; }
    if (!(p_snd_pcm_writei = (__typeof__(snd_pcm_writei) *)dlsym(library, "snd_pcm_writei"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_pcm_writei"); load_failure = load_error; return; }
    if (!(p_snd_strerror = (__typeof__(snd_strerror) *)dlsym(library, "snd_strerror"))) { snprintf(load_error, sizeof load_error, "libasound.so.2 has no snd_strerror"); load_failure = load_error; return; }
    load_failure = NULL;
}

const char *musickit_alsa_load(void) {
    pthread_once(&load_once, load);
    return load_failure;
}

int musickit_snd_device_name_free_hint(void **hints) { return p_snd_device_name_free_hint ? p_snd_device_name_free_hint(hints) : -ENOSYS; }
char * musickit_snd_device_name_get_hint(const void *hint, const char *id) { return p_snd_device_name_get_hint ? p_snd_device_name_get_hint(hint, id) : NULL; }
int musickit_snd_device_name_hint(int card, const char *iface, void ***hints) { return p_snd_device_name_hint ? p_snd_device_name_hint(card, iface, hints) : -ENOSYS; }
int musickit_snd_lib_error_set_handler(snd_lib_error_handler_t handler) { return p_snd_lib_error_set_handler ? p_snd_lib_error_set_handler(handler) : -ENOSYS; }
snd_pcm_sframes_t musickit_snd_pcm_avail_update(snd_pcm_t *pcm) { return p_snd_pcm_avail_update ? p_snd_pcm_avail_update(pcm) : -ENOSYS; }
int musickit_snd_pcm_close(snd_pcm_t *pcm) { return p_snd_pcm_close ? p_snd_pcm_close(pcm) : -ENOSYS; }
int musickit_snd_pcm_delay(snd_pcm_t *pcm, snd_pcm_sframes_t *delayp) { return p_snd_pcm_delay ? p_snd_pcm_delay(pcm, delayp) : -ENOSYS; }
int musickit_snd_pcm_drop(snd_pcm_t *pcm) { return p_snd_pcm_drop ? p_snd_pcm_drop(pcm) : -ENOSYS; }
int musickit_snd_pcm_hw_params(snd_pcm_t *pcm, snd_pcm_hw_params_t *params) { return p_snd_pcm_hw_params ? p_snd_pcm_hw_params(pcm, params) : -ENOSYS; }
int musickit_snd_pcm_hw_params_any(snd_pcm_t *pcm, snd_pcm_hw_params_t *params) { return p_snd_pcm_hw_params_any ? p_snd_pcm_hw_params_any(pcm, params) : -ENOSYS; }
int musickit_snd_pcm_hw_params_can_pause(const snd_pcm_hw_params_t *params) { return p_snd_pcm_hw_params_can_pause ? p_snd_pcm_hw_params_can_pause(params) : -ENOSYS; }
void musickit_snd_pcm_hw_params_free(snd_pcm_hw_params_t *obj) { if (p_snd_pcm_hw_params_free) p_snd_pcm_hw_params_free(obj); }
int musickit_snd_pcm_hw_params_get_buffer_size(const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val) { return p_snd_pcm_hw_params_get_buffer_size ? p_snd_pcm_hw_params_get_buffer_size(params, val) : -ENOSYS; }
int musickit_snd_pcm_hw_params_get_period_size(const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *frames, int *dir) { return p_snd_pcm_hw_params_get_period_size ? p_snd_pcm_hw_params_get_period_size(params, frames, dir) : -ENOSYS; }
int musickit_snd_pcm_hw_params_malloc(snd_pcm_hw_params_t **ptr) { return p_snd_pcm_hw_params_malloc ? p_snd_pcm_hw_params_malloc(ptr) : -ENOSYS; }
int musickit_snd_pcm_hw_params_set_access(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_access_t _access) { return p_snd_pcm_hw_params_set_access ? p_snd_pcm_hw_params_set_access(pcm, params, _access) : -ENOSYS; }
int musickit_snd_pcm_hw_params_set_buffer_size_near(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val) { return p_snd_pcm_hw_params_set_buffer_size_near ? p_snd_pcm_hw_params_set_buffer_size_near(pcm, params, val) : -ENOSYS; }
int musickit_snd_pcm_hw_params_set_channels(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val) { return p_snd_pcm_hw_params_set_channels ? p_snd_pcm_hw_params_set_channels(pcm, params, val) : -ENOSYS; }
int musickit_snd_pcm_hw_params_set_format(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val) { return p_snd_pcm_hw_params_set_format ? p_snd_pcm_hw_params_set_format(pcm, params, val) : -ENOSYS; }
int musickit_snd_pcm_hw_params_set_period_size_near(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val, int *dir) { return p_snd_pcm_hw_params_set_period_size_near ? p_snd_pcm_hw_params_set_period_size_near(pcm, params, val, dir) : -ENOSYS; }
int musickit_snd_pcm_hw_params_set_rate_near(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int *val, int *dir) { return p_snd_pcm_hw_params_set_rate_near ? p_snd_pcm_hw_params_set_rate_near(pcm, params, val, dir) : -ENOSYS; }
int musickit_snd_pcm_hw_params_test_format(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val) { return p_snd_pcm_hw_params_test_format ? p_snd_pcm_hw_params_test_format(pcm, params, val) : -ENOSYS; }
int musickit_snd_pcm_open(snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode) { return p_snd_pcm_open ? p_snd_pcm_open(pcm, name, stream, mode) : -ENOSYS; }
int musickit_snd_pcm_pause(snd_pcm_t *pcm, int enable) { return p_snd_pcm_pause ? p_snd_pcm_pause(pcm, enable) : -ENOSYS; }
int musickit_snd_pcm_poll_descriptors(snd_pcm_t *pcm, struct pollfd *pfds, unsigned int space) { return p_snd_pcm_poll_descriptors ? p_snd_pcm_poll_descriptors(pcm, pfds, space) : -ENOSYS; }
int musickit_snd_pcm_poll_descriptors_count(snd_pcm_t *pcm) { return p_snd_pcm_poll_descriptors_count ? p_snd_pcm_poll_descriptors_count(pcm) : -ENOSYS; }
int musickit_snd_pcm_poll_descriptors_revents(snd_pcm_t *pcm, struct pollfd *pfds, unsigned int nfds, unsigned short *revents) { return p_snd_pcm_poll_descriptors_revents ? p_snd_pcm_poll_descriptors_revents(pcm, pfds, nfds, revents) : -ENOSYS; }
int musickit_snd_pcm_prepare(snd_pcm_t *pcm) { return p_snd_pcm_prepare ? p_snd_pcm_prepare(pcm) : -ENOSYS; }
int musickit_snd_pcm_recover(snd_pcm_t *pcm, int err, int silent) { return p_snd_pcm_recover ? p_snd_pcm_recover(pcm, err, silent) : -ENOSYS; }
int musickit_snd_pcm_start(snd_pcm_t *pcm) { return p_snd_pcm_start ? p_snd_pcm_start(pcm) : -ENOSYS; }
snd_pcm_state_t musickit_snd_pcm_state(snd_pcm_t *pcm) { return p_snd_pcm_state ? p_snd_pcm_state(pcm) : SND_PCM_STATE_DISCONNECTED; }
int musickit_snd_pcm_sw_params(snd_pcm_t *pcm, snd_pcm_sw_params_t *params) { return p_snd_pcm_sw_params ? p_snd_pcm_sw_params(pcm, params) : -ENOSYS; }
int musickit_snd_pcm_sw_params_current(snd_pcm_t *pcm, snd_pcm_sw_params_t *params) { return p_snd_pcm_sw_params_current ? p_snd_pcm_sw_params_current(pcm, params) : -ENOSYS; }
void musickit_snd_pcm_sw_params_free(snd_pcm_sw_params_t *obj) { if (p_snd_pcm_sw_params_free) p_snd_pcm_sw_params_free(obj); }
int musickit_snd_pcm_sw_params_malloc(snd_pcm_sw_params_t **ptr) { return p_snd_pcm_sw_params_malloc ? p_snd_pcm_sw_params_malloc(ptr) : -ENOSYS; }
int musickit_snd_pcm_sw_params_set_avail_min(snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val) { return p_snd_pcm_sw_params_set_avail_min ? p_snd_pcm_sw_params_set_avail_min(pcm, params, val) : -ENOSYS; }
int musickit_snd_pcm_sw_params_set_start_threshold(snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val) { return p_snd_pcm_sw_params_set_start_threshold ? p_snd_pcm_sw_params_set_start_threshold(pcm, params, val) : -ENOSYS; }
snd_pcm_type_t musickit_snd_pcm_type(snd_pcm_t *pcm) { return p_snd_pcm_type ? p_snd_pcm_type(pcm) : SND_PCM_TYPE_HW; }
snd_pcm_sframes_t musickit_snd_pcm_writei(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size) { return p_snd_pcm_writei ? p_snd_pcm_writei(pcm, buffer, size) : -ENOSYS; }
const char * musickit_snd_strerror(int errnum) { return p_snd_strerror ? p_snd_strerror(errnum) : strerror(errnum < 0 ? -errnum : errnum); }

static void quiet_error_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

void musickit_alsa_silence_library_errors(void) { musickit_snd_lib_error_set_handler(quiet_error_handler); }
