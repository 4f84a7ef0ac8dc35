// Counts heap allocations and frees made on threads that opted in.
//
// The test process's malloc, calloc, realloc, free, posix_memalign, aligned_alloc and
// memalign are replaced (ELF symbol interposition) by wrappers that forward to glibc's
// __libc_* functions and, when the calling thread has opted in, count the call.
#ifndef MUSICKIT_ALLOCATION_COUNTER_H
#define MUSICKIT_ALLOCATION_COUNTER_H
#include <stdint.h>

/// Starts counting the calling thread's allocations and frees (until the thread ends).
void allocation_counter_watch_current_thread(void);
/// Allocations (malloc, calloc, realloc, memalign family) on watched threads since the last reset.
int64_t allocation_counter_allocations(void);
/// Frees on watched threads since the last reset.
int64_t allocation_counter_frees(void);
void allocation_counter_reset(void);
#endif
