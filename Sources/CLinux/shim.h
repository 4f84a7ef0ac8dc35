// Linux interfaces that Swift's Glibc module leaves out: eventfd, thread names and CPU affinity for
// the engine's threads (Sources/PlatformSupport/Threads.swift), a pipe's size (the Snapcast output),
// malloc statistics and pseudo-terminals for the benchmarks.
#ifndef MUSICKIT_CLINUX_SHIM_H
#define MUSICKIT_CLINUX_SHIM_H
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <malloc.h>

// Declared by <pthread.h> only under _GNU_SOURCE, which the Glibc module is built without.
extern int pthread_setname_np(pthread_t thread, const char *name);
extern int pthread_getname_np(pthread_t thread, char *name, size_t size);
extern int pthread_attr_setaffinity_np(pthread_attr_t *attr, size_t size, const cpu_set_t *set);
// Declared by <sched.h> only under _GNU_SOURCE, as are the CPU_* macros the four helpers stand for.
extern int sched_getcpu(void);
extern int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set);
extern int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set);
static inline int musickit_cpu_count(const cpu_set_t *set) { return __CPU_COUNT_S(sizeof(cpu_set_t), set); }
static inline void musickit_cpu_clear(int cpu, cpu_set_t *set) { __CPU_CLR_S(cpu, sizeof(cpu_set_t), set); }
static inline void musickit_cpu_set(int cpu, cpu_set_t *set) { __CPU_SET_S(cpu, sizeof(cpu_set_t), set); }
static inline int musickit_cpu_isset(int cpu, const cpu_set_t *set) { return __CPU_ISSET_S(cpu, sizeof(cpu_set_t), set); }
// Defined by <fcntl.h> only under _GNU_SOURCE (Linux's values, F_LINUX_SPECIFIC_BASE + 7 and + 8).
static const int musickit_F_SETPIPE_SZ = 1031;
static const int musickit_F_GETPIPE_SZ = 1032;
// Declared by <stdlib.h> only under _XOPEN_SOURCE.
extern int posix_openpt(int flags);
extern int grantpt(int fd);
extern int unlockpt(int fd);
extern char *ptsname(int fd);
#endif
