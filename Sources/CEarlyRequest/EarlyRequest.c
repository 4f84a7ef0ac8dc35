// `musickit next` has to be heard as soon as `mpc next` is (issue #11). A Swift process spends
// ~2 ms of CPU before its `main` and its first request (the runtime's and Foundation's
// initializers, type metadata, URLs); mpc has sent its command by then. So the transport
// commands send their one request from a constructor that runs before the Swift runtime's own
// (priority 101; glibc passes it argc and argv), on a daemon that already listens. The Swift
// side (SystemCommands.withPlayer) takes the socket with musickit_early_request_take, reads the
// answer to request 1 and prints the state; anything else -- no daemon (it is started), another
// command, an error -- is left to the Swift side as before. The frame is the one
// SystemPlayerWire writes (a test compares the bytes), so the protocol has one definition of
// its messages and this is a second writer of one fixed request. MUSICKIT_NO_EARLY_REQUEST=1
// turns it off (the benchmark measures the command both ways).
#include "EarlyRequest.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

// SystemPlayerWire.version.
#define MUSICKIT_WIRE_VERSION 1
// How long the start waits for the daemon's answer before going on (the Swift side then waits
// for it as it always does).
static const int answer_timeout_milliseconds = 5000;

static int early_descriptor = -1;
static const char *early_operation = NULL;

int musickit_early_request_take(const char **operation) {
    int descriptor = early_descriptor;
    if (operation) *operation = early_operation;
    early_descriptor = -1;
    early_operation = NULL;
    return descriptor;
}

int musickit_early_request_frame(const char *operation, int id, char *buffer, size_t capacity) {
    if (capacity < 4) return -1;
    int length = snprintf(buffer + 4, capacity - 4, "{\"args\":{},\"id\":%d,\"op\":\"%s\",\"v\":%d}", id, operation,
                          MUSICKIT_WIRE_VERSION);
    if (length < 0 || (size_t)length >= capacity - 4) return -1;
    buffer[0] = (char)((length >> 24) & 0xff);
    buffer[1] = (char)((length >> 16) & 0xff);
    buffer[2] = (char)((length >> 8) & 0xff);
    buffer[3] = (char)(length & 0xff);
    return length + 4;
}

const char *musickit_early_variable(const char *name) {
    const char *value = getenv(name);
    return value && *value ? value : NULL;
}

int musickit_early_request_socket_path(char *buffer, size_t capacity) {
    const char *runtime = musickit_early_variable("MUSICKIT_RUNTIME_DIR");
    const char *xdg = musickit_early_variable("XDG_RUNTIME_DIR");
    int length = runtime ? snprintf(buffer, capacity, "%s/player.sock", runtime)
               : xdg     ? snprintf(buffer, capacity, "%s/musickit/player.sock", xdg)
                         : snprintf(buffer, capacity, "/tmp/musickit-%u/player.sock", (unsigned)getuid());
    return length < 0 || (size_t)length >= capacity ? -1 : length;
}

const char *musickit_early_request_operation(const char *command) {
    if (strcmp(command, "next") == 0) return "next";
    if (strcmp(command, "previous") == 0) return "previous";
    if (strcmp(command, "resume") == 0) return "play";
    return NULL;
}

void musickit_early_request_start(int argc, char **argv) {
    if (argc != 2 || early_descriptor >= 0) return;
    const char *operation = musickit_early_request_operation(argv[1]);
    if (!operation) return;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (musickit_early_request_socket_path(address.sun_path, sizeof address.sun_path) < 0) return;
    char frame[128];
    int length = musickit_early_request_frame(operation, 1, frame, sizeof frame);
    if (length < 0) return;
    int descriptor = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (descriptor < 0) return;
    if (connect(descriptor, (struct sockaddr *)&address, sizeof address) != 0) {
        close(descriptor);  // no daemon listens: the Swift side starts one
        return;
    }
    for (int sent = 0; sent < length;) {
        ssize_t count = send(descriptor, frame + sent, (size_t)(length - sent), MSG_NOSIGNAL);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) {
            close(descriptor);  // a part of a frame is dropped by the daemon; the Swift side asks again
            return;
        }
        sent += (int)count;
    }
    // Wait for the answer (the daemon gives it once the skip is heard) before the runtime's
    // start goes on: idle, as mpc is, this process leaves the cores to the daemon and the sound
    // server while they make the change heard; on two cores, starting Swift meanwhile made
    // the sound ~0.5 ms later. The Swift side reads the answer.
    struct pollfd answer = {.fd = descriptor, .events = POLLIN};
    while (poll(&answer, 1, answer_timeout_milliseconds) < 0 && errno == EINTR) {}
    early_descriptor = descriptor;
    early_operation = operation;
}

__attribute__((constructor(101))) static void musickit_early_request_at_start(int argc, char **argv, char **envp) {
    (void)envp;
    if (getenv("MUSICKIT_NO_EARLY_REQUEST")) return;
    musickit_early_request_start(argc, argv);
}
