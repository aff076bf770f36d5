// Synchronisation kernels (paper, Appendix A): a GPU subtask publishes its completion by
// atomically adding to a dependency counter in fine-grained SVM, and a GPU queue waits for CPU
// work by spinning (bounded) until a counter reaches a target. Counters count completions
// upward, so a waiter needs only a target value and never a reset within one inference.
//
// A wait ends when its counter reaches the target. It gives up - setting
// counters[timeout_slot] to 1, so the host reports an error instead of wrong results - only
// when counters[release] (release >= 0) is set while its counter is still short: the host sets
// that word once no host thread will add to any counter any more, so the wait could never be
// met (a lost signal). That is decided by what happened, not by time, so a busy machine that
// delays the CPU work never fails a wait. max_spins > 0 adds a spin budget (tests).

#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 200
#if __OPENCL_C_VERSION__ >= 300 && !defined(__opencl_c_atomic_scope_all_devices)
// The device only promises device scope; on the unified-memory devices psched targets that is
// also what the host observes, and the host side uses seq_cst atomics.
#define PSCHED_SYNC_SCOPE memory_scope_device
#else
#define PSCHED_SYNC_SCOPE memory_scope_all_svm_devices
#endif

__kernel void psched_signal(__global atomic_int* counters, int index, int delta) {
  atomic_fetch_add_explicit(&counters[index], delta, memory_order_release, PSCHED_SYNC_SCOPE);
}

#define PSCHED_LOAD(p) atomic_load_explicit(p, memory_order_acquire, PSCHED_SYNC_SCOPE)

__kernel void psched_wait(__global atomic_int* counters, int index, int target, int max_spins,
                          int timeout_slot, int release) {
  for (int spins = 0; PSCHED_LOAD(&counters[index]) < target;) {
    const bool released = release >= 0 && PSCHED_LOAD(&counters[release]) != 0 &&
                          PSCHED_LOAD(&counters[index]) < target;
    if (released || (max_spins > 0 && ++spins >= max_spins)) {
      atomic_store_explicit(&counters[timeout_slot], 1, memory_order_release, PSCHED_SYNC_SCOPE);
      return;
    }
  }
}

#else

__kernel void psched_signal(volatile __global int* counters, int index, int delta) {
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  atomic_add(&counters[index], delta);
}

__kernel void psched_wait(volatile __global int* counters, int index, int target, int max_spins,
                          int timeout_slot, int release) {
  for (int spins = 0; atomic_add(&counters[index], 0) < target;) {
    const bool released = release >= 0 && atomic_add(&counters[release], 0) != 0 &&
                          atomic_add(&counters[index], 0) < target;
    if (released || (max_spins > 0 && ++spins >= max_spins)) {
      atomic_xchg(&counters[timeout_slot], 1);
      return;
    }
  }
  mem_fence(CLK_GLOBAL_MEM_FENCE);
}

#endif

// Does nothing; enqueued to measure the bare dispatch cost.
__kernel void psched_noop(__global int* unused) {}
