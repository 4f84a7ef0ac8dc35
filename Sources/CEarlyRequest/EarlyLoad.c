// `musickit play` through the engine's PulseAudio output (`--device pulseaudio[:SINK]`) must be
// heard as soon as `aplay` is (issue #8). Most of its start is the dynamic loader's: libpulse and
// the ~28 libraries it needs (~2.2 ms). So the play command's device library is loaded at process
// start, from a constructor that runs before the Swift runtime's, on a thread of its own, while
// the runtime and the command start; the engine's own dlopen then finds it loaded. Only
// libpulse: an ALSA device's library depends on its configuration (a plugin, a card), which only
// ALSA reads. With no device named, the play command's is the server natively when its socket
// is there (AudioEngineConfiguration.automaticDeviceName), found here the same way.
//
// Then, on the same thread, the connection to the server begins as PulseStream.init begins it
// (a threaded main loop and a context connecting): its handshake is mostly waiting for the
// server, and the engine's first stream is made on it (PlayCommand.adoptEarlyConnection,
// AudioEngine.adoptPulseAudioConnection).
//
// While the library loads, glibc's loader locks make the rest of the process wait whenever it
// looks a symbol up (dlopen, dlsym, dladdr) or creates a thread (its thread-local storage).
// What that means here:
// - The thread starts on another CPU than this one (then may run anywhere): Linux puts a new
//   thread on its creator's CPU, where it waited ~1.5 ms for the runtime's start to yield it.
// - The Swift runtime's crash-backtracer set-up, a constructor that runs after this one, asks the
//   loader where the runtime is (swift_getRuntimeLibraryPath, once per process): asked here first,
//   before the load begins, it does not wait for the whole load (it did: `main` came ~2 ms later).
// - The command makes no thread of its own meanwhile: it hands its device warm-up
//   (AudioEngine.warmUpDevice) to this thread, which runs it once the connection is begun
//   (musickit_early_thread_run, PlayCommand.runOnEarlyThread). It parses its arguments and
//   starts on its first file, whose decoder library waits for the load to end.
// Each of these steps made the stream start sooner, measured from the spawn (Benchmarks/RESULTS.md,
// "The command line's start"). MUSICKIT_NO_EARLY_LOAD=1 turns the load, the connection and the
// hand-over off (for comparisons).
#define _GNU_SOURCE  // sched_getcpu, CPU_CLR, pthread_attr_setaffinity_np
#include "EarlyRequest.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <pulse/context.h>
#include <pulse/thread-mainloop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
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

// The connection to the server, begun on a thread of its own, which loads libpulse first.
static pthread_mutex_t connection_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t connection_begun = PTHREAD_COND_INITIALIZER;
static enum { connection_none, connection_beginning, connection_begun_state } connection_state = connection_none;
static pa_threaded_mainloop *early_mainloop = NULL;
static pa_context *early_context = NULL;
// The job the thread runs once the connection is begun (musickit_early_thread_run), if it is
// handed over within EARLY_JOB_WAIT_MILLISECONDS of that; closed once the thread stops waiting.
#define EARLY_JOB_WAIT_MILLISECONDS 100
static pthread_cond_t early_job_posted = PTHREAD_COND_INITIALIZER;
static void (*early_job)(void *) = NULL;
static void *early_job_context = NULL;
static int early_job_closed = 0;

#define EARLY_FUNCTION(name) __typeof__(name) *name##_ = (__typeof__(name) *)dlsym(library, #name)

static __typeof__(pa_threaded_mainloop_signal) *early_signal = NULL;

static void early_context_changed(pa_context *context, void *mainloop) {
    (void)context;
    early_signal(mainloop, 0);
}

// The CPUs the thread may run on once started (it starts on the others than its creator's).
static cpu_set_t early_allowed_cpus;
static int early_cpus_narrowed = 0;

// Loads libpulse, then does what PulseStream.init does before it waits for the context
// (Sources/AudioEngine/PulseConnection.swift): a threaded main loop, a context named as its, connected
// to the default server without autospawn, the loop started.
static void *early_connect(void *unused) {
    (void)unused;
    if (early_cpus_narrowed) sched_setaffinity(0, sizeof early_allowed_cpus, &early_allowed_cpus);
    pa_threaded_mainloop *mainloop = NULL;
    pa_context *context = NULL;
    // Lazily bound, unlike DynamicLibrary's (RTLD_NOW), whose later dlopen of the library finds
    // it loaded and binds nothing more: libpulse and most of what it needs are marked to be bound
    // at load time anyway (BIND_NOW), and the rest -- libsndfile and its codecs, which only the
    // decoder thread calls, X11's libraries, which this process never does -- bind a function at
    // its first call instead of thousands of them here, which shortens the load and so the start
    // (Benchmarks/RESULTS.md, 2026-12-04). The
    // audio thread calls only libpulse, whose functions are all bound now. The handle stays open
    // for the process's life, as DynamicLibrary's do.
    void *library = dlopen("libpulse.so.0", RTLD_LAZY | RTLD_LOCAL);
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
    }
    pthread_mutex_lock(&connection_lock);
    early_mainloop = mainloop;
    early_context = context;
    connection_state = connection_begun_state;
    pthread_cond_broadcast(&connection_begun);
    // Then the command's first job, if it hands one over soon (musickit_early_thread_run).
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += EARLY_JOB_WAIT_MILLISECONDS * 1000000L;
    deadline.tv_sec += deadline.tv_nsec / 1000000000L;
    deadline.tv_nsec %= 1000000000L;
    while (!early_job && pthread_cond_timedwait(&early_job_posted, &connection_lock, &deadline) == 0) {}
    void (*job)(void *) = early_job;
    void *job_context = early_job_context;
    early_job_closed = 1;
    pthread_mutex_unlock(&connection_lock);
    if (job) job(job_context);
    return NULL;
}

int musickit_early_thread_run(void (*job)(void *), void *context) {
    pthread_mutex_lock(&connection_lock);
    int taken = connection_state != connection_none && !early_job_closed && !early_job;
    if (taken) {
        early_job = job;
        early_job_context = context;
        pthread_cond_signal(&early_job_posted);
    }
    pthread_mutex_unlock(&connection_lock);
    return taken;
}

extern const char *swift_getRuntimeLibraryPath(void) __attribute__((weak));

int musickit_early_pulse_connect_start(void) {
    pthread_mutex_lock(&connection_lock);
    int begins = connection_state == connection_none;
    if (begins) connection_state = connection_beginning;
    pthread_mutex_unlock(&connection_lock);
    if (!begins) return 0;
    if (swift_getRuntimeLibraryPath) swift_getRuntimeLibraryPath();  // see the top of this file
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    int current = sched_getcpu();
    if (current >= 0 && sched_getaffinity(0, sizeof early_allowed_cpus, &early_allowed_cpus) == 0) {
        cpu_set_t others = early_allowed_cpus;
        CPU_CLR(current, &others);
        early_cpus_narrowed = CPU_COUNT(&others) > 0
                              && pthread_attr_setaffinity_np(&attributes, sizeof others, &others) == 0;
    }
    int created = pthread_create(&thread, &attributes, early_connect, NULL) == 0;
    pthread_attr_destroy(&attributes);
    if (!created) {
        pthread_mutex_lock(&connection_lock);
        connection_state = connection_begun_state;
        early_job_closed = 1;
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

int musickit_early_plays_on_pulseaudio(int argc, char **argv) {
    const char *device = musickit_early_play_device(argc, argv);
    return device && (strcmp(device, "pulseaudio") == 0 || strncmp(device, "pulseaudio:", 11) == 0);
}

__attribute__((constructor(101))) static void musickit_early_load_at_start(int argc, char **argv, char **envp) {
    (void)envp;
    if (getenv("MUSICKIT_NO_EARLY_LOAD")) return;
    if (musickit_early_plays_on_pulseaudio(argc, argv)) musickit_early_pulse_connect_start();
}
