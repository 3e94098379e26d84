// Test support: arming threads and reading the allocation and lock counts (see alloccounter.c).
#ifndef AUDIOGRAPH_ALLOCCOUNTER_H
#define AUDIOGRAPH_ALLOCCOUNTER_H
/// Test support: this target defines malloc, calloc, realloc, free, posix_memalign,
/// aligned_alloc, memalign and pthread_mutex_lock for the whole test process (an executable's
/// own definitions interpose libc's), forwarding to glibc and counting the calls made on threads
/// that armed themselves. Used to prove the JACK process thread neither allocates nor locks.

/// 1 when the interposers are in place; 0 in sanitizer builds, which own malloc themselves.
int alloccounter_available(void);
/// Marks the calling thread as counted (a thread-local store; safe on the render thread).
void alloccounter_arm_this_thread(void);
/// Calls counted on armed threads since the last reset.
unsigned long alloccounter_allocations(void);
unsigned long alloccounter_frees(void);
unsigned long alloccounter_locks(void);
/// How many threads have armed themselves.
unsigned long alloccounter_armed_threads(void);
void alloccounter_reset(void);
#endif
