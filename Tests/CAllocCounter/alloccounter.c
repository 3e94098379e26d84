// Test support: counts allocations, frees and lock calls on armed threads, by interposing malloc and pthread_mutex_lock.
#define _GNU_SOURCE
#include "alloccounter.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static __thread int armed;
static unsigned long allocations, frees, locks, armed_threads;

void alloccounter_arm_this_thread(void) {
    if (!armed) {
        armed = 1;
        __atomic_add_fetch(&armed_threads, 1, __ATOMIC_RELAXED);
    }
}
unsigned long alloccounter_allocations(void) { return __atomic_load_n(&allocations, __ATOMIC_RELAXED); }
unsigned long alloccounter_frees(void) { return __atomic_load_n(&frees, __ATOMIC_RELAXED); }
unsigned long alloccounter_locks(void) { return __atomic_load_n(&locks, __ATOMIC_RELAXED); }
unsigned long alloccounter_armed_threads(void) { return __atomic_load_n(&armed_threads, __ATOMIC_RELAXED); }
void alloccounter_reset(void) {
    __atomic_store_n(&allocations, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&frees, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&locks, 0, __ATOMIC_RELAXED);
}

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define ALLOCCOUNTER_DISABLED 1  /* the sanitizer owns malloc; interposing it too would crash */
#  endif
#endif

int alloccounter_available(void) {
#ifdef ALLOCCOUNTER_DISABLED
    return 0;
#else
    return 1;
#endif
}

#ifndef ALLOCCOUNTER_DISABLED
#define COUNT(counter) do { if (armed) __atomic_add_fetch(&(counter), 1, __ATOMIC_RELAXED); } while (0)

void *malloc(size_t size) { COUNT(allocations); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { COUNT(allocations); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { COUNT(allocations); return __libc_realloc(p, size); }
void free(void *p) { if (p) COUNT(frees); __libc_free(p); }
void *memalign(size_t alignment, size_t size) { COUNT(allocations); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { COUNT(allocations); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    COUNT(allocations);
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (!p && size) return ENOMEM;
    *out = p;
    return 0;
}

int pthread_mutex_lock(pthread_mutex_t *mutex) {
    static int (*real)(pthread_mutex_t *);
    if (!real) real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    COUNT(locks);
    return real(mutex);
}
#endif /* ALLOCCOUNTER_DISABLED */
