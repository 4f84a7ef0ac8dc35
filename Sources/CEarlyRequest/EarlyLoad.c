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
// MUSICKIT_NO_EARLY_LOAD=1 turns it off (for comparisons).
#include "EarlyRequest.h"

#include <dlfcn.h>
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
    musickit_early_load_start(argc, argv);
}
