#include "AllocationCounter.h"

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define MUSICKIT_SANITIZED 1
#  endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#  define MUSICKIT_SANITIZED 1
#endif
#include <stdatomic.h>
#include <stddef.h>
#include <errno.h>
#include <execinfo.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Thread_local int watched;
static _Atomic int64_t allocations;
static _Atomic int64_t frees;

void allocation_counter_watch_current_thread(void) { watched = 1; }
int64_t allocation_counter_allocations(void) { return atomic_load(&allocations); }
int64_t allocation_counter_frees(void) { return atomic_load(&frees); }
void allocation_counter_reset(void) { atomic_store(&allocations, 0); atomic_store(&frees, 0); }

#ifndef MUSICKIT_SANITIZED
// Sanitizers replace the allocator themselves; under them nothing is interposed (and the
// allocation test is not run: scripts/test runs it in an optimized build).
static _Thread_local int reporting;

// With MUSICKIT_ALLOCATION_BACKTRACE=1 in the environment, each counted allocation prints
// its call stack to stderr (symbolize with `swift demangle`), to find where it comes from.
static void report(const char *what) {
    if (reporting) return;
    reporting = 1;
    const char *flag = getenv("MUSICKIT_ALLOCATION_BACKTRACE");
    if (flag && flag[0] == '1') {
        void *frames[32];
        int count = backtrace(frames, 32);
        write(2, what, 6);
        write(2, "\n", 1);
        backtrace_symbols_fd(frames, count, 2);
    }
    reporting = 0;
}

static inline void count_allocation(void) {
    if (watched) {
        atomic_fetch_add(&allocations, 1);
        report("malloc");
    }
}

void *malloc(size_t size) { count_allocation(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { count_allocation(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { count_allocation(); return __libc_realloc(pointer, size); }
void free(void *pointer) {
    if (watched && pointer) {
        atomic_fetch_add(&frees, 1);
        report("free  ");
    }
    __libc_free(pointer);
}
void *memalign(size_t alignment, size_t size) { count_allocation(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count_allocation(); return __libc_memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
    count_allocation();
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *result = pointer;
    return 0;
}
#endif
