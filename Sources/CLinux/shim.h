// Linux interfaces that Swift's Glibc module leaves out: eventfd and thread names for the engine's
// threads (Sources/AudioEngine/Threads.swift), malloc statistics and pseudo-terminals for the
// benchmarks.
#ifndef MUSICKIT_CLINUX_SHIM_H
#define MUSICKIT_CLINUX_SHIM_H
#include <pthread.h>
#include <sys/eventfd.h>
#include <malloc.h>

// Declared by <pthread.h> only under _GNU_SOURCE, which the Glibc module is built without.
extern int pthread_setname_np(pthread_t thread, const char *name);
// Declared by <stdlib.h> only under _XOPEN_SOURCE.
extern int posix_openpt(int flags);
extern int grantpt(int fd);
extern int unlockpt(int fd);
extern char *ptsname(int fd);
#endif
