// `musickit play` through the engine's PulseAudio output (`--device pulseaudio[:SINK]`) must be
// heard as soon as `aplay` is (issue #8). Most of its start is the dynamic loader's: libpulse and
// the ~28 libraries it needs. Loaded from the warm-up thread (AudioEngine.warmUpDevice),
// that work overlapped the Swift runtime's and the command's own start, and on two cores each
// slowed the other (the loader's lock, which every load and lookup in the process takes, and the
// kernel's lock on the address space, which mapping a library and touching a new page both take):
// the loading took ~3.3 ms there against ~2.4 ms alone. So the play command's device library is
// loaded here, before the Swift runtime starts, alone; the engine's own dlopen then finds it
// loaded. Only libpulse: an ALSA device's library depends on its configuration (a plugin, a
// card), which only ALSA reads. MUSICKIT_NO_EARLY_LOAD=1 turns it off (for comparisons).
#include "EarlyRequest.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

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
    if (!device) {
        const char *configured = getenv("MUSICKIT_AUDIO_DEVICE");
        device = configured && *configured ? configured : "default";
    }
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
