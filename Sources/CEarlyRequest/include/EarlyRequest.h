// What the command-line tool does when its process starts, before the Swift runtime and
// Foundation initialize: the request of a transport command (`musickit next`, `previous`,
// `resume`), sent to the system player's daemon (EarlyRequest.c), and the audio library of
// `musickit play` on a PulseAudio device, loaded, and its connection to the server begun
// (EarlyLoad.c).
#ifndef MUSICKIT_EARLY_REQUEST_H
#define MUSICKIT_EARLY_REQUEST_H

#include <stddef.h>

/// The socket the request was sent on (the daemon's answer to request id 1 is still to be
/// read), or -1 when none was sent. Taking it passes it to the caller: a second call gives -1.
int musickit_early_request_take(const char **operation);

/// The system player protocol's frame asking for `operation` under `id` with no arguments
/// (4-byte big-endian length, then the JSON object with sorted keys, as SystemPlayerWire
/// writes it). Returns its length, or -1 when `capacity` is too small.
int musickit_early_request_frame(const char *operation, int id, char *buffer, size_t capacity);

/// The daemon's socket for this environment (as MusicKitEnvironment.fromProcessEnvironment
/// finds the runtime folder: MUSICKIT_RUNTIME_DIR, $XDG_RUNTIME_DIR/musickit or
/// /tmp/musickit-UID). Returns the path's length, or -1 when `capacity` is too small.
int musickit_early_request_socket_path(char *buffer, size_t capacity);

/// The operation that `musickit COMMAND` (with nothing after it) asks the daemon for at start,
/// or NULL when the command is not one of them.
const char *musickit_early_request_operation(const char *command);

/// What the process-start hook does: when `argv` is `musickit next|previous|resume` and a daemon
/// listens, connects, sends the request and waits (5 s at most) until its answer can be read.
/// Exposed for tests.
void musickit_early_request_start(int argc, char **argv);

/// The environment variable's value when it is set and not empty, else NULL.
const char *musickit_early_variable(const char *name);

/// The device `musickit play` will play on when `argv` is a play command that plays here (not
/// with --system, not asking for help): its --device, else MUSICKIT_AUDIO_DEVICE, else
/// "pulseaudio" when a PulseAudio server is there, else "default". NULL for anything else.
/// See EarlyLoad.c.
const char *musickit_early_play_device(int argc, char **argv);

/// Whether a PulseAudio (or PipeWire) server is there, looked for as
/// AudioEngineConfiguration.automaticDeviceName looks: PULSE_SERVER set, or a socket at
/// $PULSE_RUNTIME_PATH/native, else $XDG_RUNTIME_DIR/pulse/native.
int musickit_early_pulse_server_found(void);

/// Whether the process-start hook of EarlyLoad.c begins the connection for this command line:
/// `musickit play` on a PulseAudio device (`pulseaudio`, `pulseaudio:SINK`). Exposed for tests.
int musickit_early_plays_on_pulseaudio(int argc, char **argv);

/// Loads libpulse and begins the connection to the PulseAudio server that `musickit play` will
/// play on, on a thread of its own, as the engine's PulseAudio output begins its own (a threaded
/// main loop and a context, connecting). 1 when the thread was started; 0 when a connection was
/// begun already (one per process).
int musickit_early_pulse_connect_start(void);

/// Hands `job` to the thread that musickit_early_pulse_connect_start started, which runs it (with
/// `context`) once the connection is begun, so that the command need not start a thread of its
/// own while libpulse loads (thread creation waits for the loader). 1 when taken; 0 when there
/// is no such thread, it has a job already, or it stopped waiting for one (100 ms after the
/// connection was begun): the caller runs the job itself.
int musickit_early_thread_run(void (*job)(void *), void *context);

/// The main loop (pa_threaded_mainloop *) and context (pa_context *) that
/// musickit_early_pulse_connect_start began, once begun (the context may still be connecting;
/// its state callback signals the main loop). Taking them passes them to the caller, who
/// replaces the context's state callback under the main loop's lock and frees both: a second
/// call gives 0. 0 when none was begun or beginning failed.
int musickit_early_pulse_connection_take(void **mainloop, void **context);

#endif
