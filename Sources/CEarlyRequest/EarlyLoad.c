// `musickit play` through the engine's PulseAudio output (`--device pulseaudio[:SINK]`) must be
// heard as soon as `aplay` is (issue #8). Most of its start is the dynamic loader's: libpulse and
// the ~28 libraries it needs. Loaded from the warm-up thread (AudioEngine.warmUpDevice),
// that work overlapped the Swift runtime's and the command's own start, and on two cores each
// slowed the other (the loader's lock, which every load and lookup in the process takes, and the
// kernel's lock on the address space, which mapping a library and touching a new page both take):
// the loading took ~3.3 ms there against ~2.4 ms alone. So the play command's device library is
// loaded here, before the Swift runtime starts, alone; the engine's own dlopen then finds it
// loaded. Only libpulse: an ALSA device's library depends on its configuration (a plugin, a
// card), which only ALSA reads. With no device named, the play command's is the server natively
// when its socket is there (AudioEngineConfiguration.automaticDeviceName), found here the same way.
//
// Then the connection to the server begins, on a thread of its own, as PulseStream.init begins
// it (a threaded main loop and a context connecting): its handshake is mostly waiting for the
// server, so it overlaps the Swift runtime's start and the command's, and the engine's first
// stream is made on it (PlayCommand.adoptEarlyConnection, AudioEngine.adoptPulseAudioConnection).
// The context was ready ~0.9 ms sooner, the stream started ~0.2 ms sooner (a trace, 20 runs).
// MUSICKIT_NO_EARLY_LOAD=1 turns both off (for comparisons).
#include "EarlyRequest.h"

#include <dlfcn.h>
#include <pthread.h>
#include <pulse/context.h>
#include <pulse/thread-mainloop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int musickit_early_pulse_server_found(void) {
    if (musickit_early_variable("PULSE_SERVER")) return 1;
    const char *runtime = musickit_early_variable("PULSE_RUNTIME_PATH");
    const char *xdg = musickit_early_variable("XDG_RUNTIME_DIR");
    char path[sizeof ((struct sockaddr_un *)0)->sun_path];
    int length = runtime ? snprintf(path, sizeof path, "%s/native", runtime)
               : xdg     ? snprintf(path, sizeof path, "%s/pulse/native", xdg)
                         : -1;
    if (length < 0 || (size_t)length >= sizeof path) return 0;
    struct stat status;
    return stat(path, &status) == 0 && S_ISSOCK(status.st_mode);
}

const char *musickit_early_play_device(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[1], "play") != 0) return NULL;
    const char *device = NULL;
    for (int index = 2; index < argc; index++) {
        const char *argument = argv[index];
        if (strcmp(argument, "--") == 0) break;
        // Handed to the daemon, or only help: nothing plays here.
        if (strcmp(argument, "--system") == 0 || strcmp(argument, "-h") == 0 || strcmp(argument, "--help") == 0)
            return NULL;
        if (strncmp(argument, "--device=", 9) == 0) {
            device = argument + 9;
        } else if (strcmp(argument, "--device") == 0 || strcmp(argument, "--repeat") == 0
                   || strcmp(argument, "--crossfade") == 0) {
            // PlayCommand.spec's options that take a value.
            if (index + 1 >= argc) return NULL;
            index++;
            if (argument[2] == 'd') device = argv[index];
        }
    }
    if (!device) device = musickit_early_variable("MUSICKIT_AUDIO_DEVICE");
    if (!device) device = musickit_early_pulse_server_found() ? "pulseaudio" : "default";
    return device;
}

// The connection to the server, begun on a thread of its own once libpulse is loaded.
static pthread_mutex_t connection_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t connection_begun = PTHREAD_COND_INITIALIZER;
static enum { connection_none, connection_beginning, connection_begun_state } connection_state = connection_none;
static pa_threaded_mainloop *early_mainloop = NULL;
static pa_context *early_context = NULL;

#define EARLY_FUNCTION(name) __typeof__(name) *name##_ = (__typeof__(name) *)dlsym(library, #name)

static __typeof__(pa_threaded_mainloop_signal) *early_signal = NULL;

static void early_context_changed(pa_context *context, void *mainloop) {
    (void)context;
    early_signal(mainloop, 0);
}

// What PulseStream.init does before it waits for the context (Sources/AudioEngine/PulseAudio.swift):
// a threaded main loop, a context named as its, connected to the default server without
// autospawn, the loop started.
static void *early_connect(void *unused) {
    (void)unused;
    pa_threaded_mainloop *mainloop = NULL;
    pa_context *context = NULL;
    void *library = dlopen("libpulse.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (library) {
        EARLY_FUNCTION(pa_threaded_mainloop_new);
        EARLY_FUNCTION(pa_threaded_mainloop_get_api);
        EARLY_FUNCTION(pa_threaded_mainloop_start);
        EARLY_FUNCTION(pa_threaded_mainloop_free);
        EARLY_FUNCTION(pa_threaded_mainloop_lock);
        EARLY_FUNCTION(pa_threaded_mainloop_unlock);
        EARLY_FUNCTION(pa_context_new);
        EARLY_FUNCTION(pa_context_set_state_callback);
        EARLY_FUNCTION(pa_context_connect);
        EARLY_FUNCTION(pa_context_unref);
        early_signal = (__typeof__(pa_threaded_mainloop_signal) *)dlsym(library, "pa_threaded_mainloop_signal");
        if (early_signal && pa_threaded_mainloop_new_ && pa_threaded_mainloop_get_api_ && pa_threaded_mainloop_start_
            && pa_threaded_mainloop_free_ && pa_threaded_mainloop_lock_ && pa_threaded_mainloop_unlock_ && pa_context_new_
            && pa_context_set_state_callback_ && pa_context_connect_ && pa_context_unref_
            && (mainloop = pa_threaded_mainloop_new_()) != NULL) {
            context = pa_context_new_(pa_threaded_mainloop_get_api_(mainloop), "OpenMusicKit");
            int started = 0;
            if (context) {
                pa_threaded_mainloop_lock_(mainloop);
                pa_context_set_state_callback_(context, early_context_changed, mainloop);
                started = pa_context_connect_(context, NULL, PA_CONTEXT_NOAUTOSPAWN, NULL) >= 0
                          && pa_threaded_mainloop_start_(mainloop) >= 0;
                pa_threaded_mainloop_unlock_(mainloop);
            }
            if (!started) {
                // The engine connects on its own and reports what fails.
                if (context) pa_context_unref_(context);
                pa_threaded_mainloop_free_(mainloop);
                mainloop = NULL;
                context = NULL;
            }
        }
        dlclose(library);
    }
    pthread_mutex_lock(&connection_lock);
    early_mainloop = mainloop;
    early_context = context;
    connection_state = connection_begun_state;
    pthread_cond_broadcast(&connection_begun);
    pthread_mutex_unlock(&connection_lock);
    return NULL;
}

int musickit_early_pulse_connect_start(void) {
    void *loaded = dlopen("libpulse.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!loaded) return 0;
    dlclose(loaded);
    pthread_mutex_lock(&connection_lock);
    int begins = connection_state == connection_none;
    if (begins) connection_state = connection_beginning;
    pthread_mutex_unlock(&connection_lock);
    if (!begins) return 0;
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    int created = pthread_create(&thread, &attributes, early_connect, NULL) == 0;
    pthread_attr_destroy(&attributes);
    if (!created) {
        pthread_mutex_lock(&connection_lock);
        connection_state = connection_begun_state;
        pthread_mutex_unlock(&connection_lock);
    }
    return created;
}

int musickit_early_pulse_connection_take(void **mainloop, void **context) {
    pthread_mutex_lock(&connection_lock);
    while (connection_state == connection_beginning) pthread_cond_wait(&connection_begun, &connection_lock);
    *mainloop = early_mainloop;
    *context = early_context;
    early_mainloop = NULL;
    early_context = NULL;
    pthread_mutex_unlock(&connection_lock);
    return *mainloop != NULL;
}

int musickit_early_load_start(int argc, char **argv) {
    const char *device = musickit_early_play_device(argc, argv);
    if (!device) return 0;
    if (strcmp(device, "pulseaudio") != 0 && strncmp(device, "pulseaudio:", 11) != 0) return 0;
    // The flags DynamicLibrary uses; the handle stays open for the process's life, as its does.
    return dlopen("libpulse.so.0", RTLD_NOW | RTLD_LOCAL) != NULL;
}

__attribute__((constructor(101))) static void musickit_early_load_at_start(int argc, char **argv, char **envp) {
    (void)envp;
    if (getenv("MUSICKIT_NO_EARLY_LOAD")) return;
    if (musickit_early_load_start(argc, argv)) musickit_early_pulse_connect_start();
}
