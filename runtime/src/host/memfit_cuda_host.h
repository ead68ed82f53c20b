//===- memfit_cuda_host.h - CUDA C++ on the CPU for the host backend
//
// The host backend compiles Manifest::source with the host C++ compiler after
// this header, into a shared object. It supports the subset of CUDA C++ in
// runtime/KERNELS.md:
//
//  - qualifiers (__global__, __device__, __forceinline__, ...) expand to
//    nothing or to `inline`; `__shared__` is `static thread_local`, which is
//    per block because each OS thread runs whole blocks, one at a time;
//  - threadIdx, blockIdx, blockDim and gridDim are thread_local variables
//    the launcher sets before running a thread;
//  - kernels with thread loops (the prelude's MEMFIT_THREAD_LOOP and
//    MEMFIT_BLOCK_STRIDE) run once per block as thread 0, their loops over
//    the block's threads and their partial results one per thread in
//    arrays, reduced as the barrier kernels' block reductions are;
//  - other kernels without barriers run as plain loops over blocks and
//    threads;
//  - kernels with barriers run each block as cooperative fibers, one per
//    CUDA thread: __syncthreads() switches to the next fiber, and a round
//    over all fibers brings every thread to the barrier. Warp shuffles
//    exchange values through a per-block slot array around a barrier
//    (double-buffered, so one barrier per shuffle suffices). Fibers switch
//    with a few instructions of assembly on x86-64 and with ucontext
//    elsewhere (or when MEMFIT_HOST_FORCE_UCONTEXT is defined); their
//    stacks are 128 KiB, with a canary checked after each block.
//
// The launcher of kernels[i] is `extern "C" int memfit_launch_<i>(const
// memfit_host_launch *, void **args)`; args holds, like cuLaunchKernel's
// kernelParams, pointers to the device-pointer values. It runs the linear
// blocks [blockBegin, blockEnd) on the calling thread and returns non-zero
// with a message in `error` when the kernel misuses barriers. Each worker
// thread calls memfit_host_release_thread() before it exits.
//
// With MEMFIT_HOST_ABI_ONLY defined, only the ABI shared with the runtime
// (HostBackend.cpp) is declared.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_CUDA_HOST_H
#define MEMFIT_CUDA_HOST_H

extern "C" {
struct memfit_host_launch {
  unsigned grid[3];
  unsigned block[3];
  unsigned long long blockBegin, blockEnd; // linear block indices to run
  unsigned numArgs;                        // entries of args
  char *error;                             // message on failure
  unsigned long errorSize;
};
typedef int (*memfit_host_launcher)(const struct memfit_host_launch *launch,
                                    void **args);
typedef void (*memfit_host_release)(void);
}

#define MEMFIT_HOST_LAUNCHER_PREFIX "memfit_launch_"
#define MEMFIT_HOST_RELEASE_SYMBOL "memfit_host_release_thread"

#ifndef MEMFIT_HOST_ABI_ONLY

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <type_traits>
#include <utility>

#if !defined(__x86_64__) || defined(MEMFIT_HOST_FORCE_UCONTEXT)
#define MEMFIT_HOST_UCONTEXT 1
#include <ucontext.h>
#endif

//===----------------------------------------------------------------------===//
// Qualifiers and builtins
//===----------------------------------------------------------------------===//

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static thread_local
#define __launch_bounds__(...)

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
};

static thread_local uint3 threadIdx;
static thread_local uint3 blockIdx;
static thread_local dim3 blockDim;
static thread_local dim3 gridDim;
static constexpr int warpSize = 32;

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) {
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}
// The bit reinterpretations CUDA provides as intrinsics.
template <class To, class From> static inline To memfit_host_bit_cast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bit cast between sizes");
  To to;
  memcpy(&to, &x, sizeof(to));
  return to;
}
static inline float __int_as_float(int x) { return memfit_host_bit_cast<float>(x); }
static inline int __float_as_int(float x) { return memfit_host_bit_cast<int>(x); }
static inline unsigned __float_as_uint(float x) {
  return memfit_host_bit_cast<unsigned>(x);
}
static inline float __uint_as_float(unsigned x) {
  return memfit_host_bit_cast<float>(x);
}
static inline double __longlong_as_double(long long x) {
  return memfit_host_bit_cast<double>(x);
}
static inline long long __double_as_longlong(double x) {
  return memfit_host_bit_cast<long long>(x);
}

// expf in float arithmetic without calls or branches, so that a thread
// loop around it vectorizes (the softmaxes' and the losses' loops): 2^n
// (two normal powers, so that results below 2^-126 round once, to the
// subnormal) times a degree-7 polynomial. Within 1 unit in the last place
// of the float nearest exp(x) everywhere, equal to it for all but 0.8% of
// the floats (glibc's expf: 1 unit, 0.008%; CUDA documents 2 units); NaN
// stays NaN, exp(-inf) is 0 and above 88.7228394 it is +inf.
static inline float memfit_host_expf(float x) {
  float c = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = (c - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
  float p =
      1.0f +
      r * (1.0f +
           r * (0.5f +
                r * (0.166666667f +
                     r * (0.0416666667f +
                          r * (0.00833333333f +
                               r * (0.00138888889f + r * 0.000198412698f))))));
  int k = (int)n, half = k >> 1;
  float v = p * memfit_host_bit_cast<float>((half + 127) << 23) *
            memfit_host_bit_cast<float>((k - half + 127) << 23);
  return x != x ? x : (x > 88.72283935546875f ? INFINITY : v);
}
#define expf memfit_host_expf

// tanhf in the same form: below 0.625 in magnitude an odd polynomial
// (degree 11, fitted to tanh, relative error 5e-9), above (e - 1) / (e + 1)
// for e = exp(2|x|) (|x| is clamped to 9, past which tanh rounds to 1).
// Over every float it is within 2 units in the last place of the float
// nearest tanh(x) and equal to it for all but 0.34% (glibc's tanhf: 2
// units, 9% differ; CUDA documents 2 units). NaN stays NaN, -0.0 stays
// -0.0.
static inline float memfit_host_tanhf(float x) {
  float a = fabsf(x), t = x * x;
  float small =
      a + a * t *
              (-0.33333285218236697f +
               t * (0.133315126256647f +
                    t * (-0.05374465438568219f +
                         t * (0.020653112384104843f +
                              t * -0.00571894833924139f))));
  float e = memfit_host_expf(2.0f * (a < 9.0f ? a : 9.0f));
  float big = (e - 1.0f) / (e + 1.0f);
  float v = a < 0.625f ? small : big;
  return x != x ? x : copysignf(v, x);
}
#define tanhf memfit_host_tanhf

// atomicCAS on 64-bit words: blocks run on several OS threads.
static inline unsigned long long atomicCAS(unsigned long long *address,
                                           unsigned long long compare,
                                           unsigned long long value) {
  __atomic_compare_exchange_n(address, &compare, value, false,
                              __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;
}

//===----------------------------------------------------------------------===//
// f16 and bf16
//===----------------------------------------------------------------------===//

// The 16-bit types as CUDA's headers name them, with the conversions the
// kernels call; the arithmetic happens in float. The embedded header has
// memfit_half.h in front of this file.
#ifndef MEMFIT_HALF_H
#include "memfit_half.h"
#endif
struct __half {
  unsigned short __x;
};
struct __nv_bfloat16 {
  unsigned short __x;
};
static inline float __half2float(__half h) {
  return memfit_f16_to_float(h.__x);
}
static inline __half __float2half_rn(float f) {
  __half h;
  h.__x = memfit_float_to_f16(f);
  return h;
}
static inline float __bfloat162float(__nv_bfloat16 b) {
  return memfit_bf16_to_float(b.__x);
}
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  __nv_bfloat16 b;
  b.__x = memfit_float_to_bf16(f);
  return b;
}

template <class A, class B,
          class = typename std::enable_if<std::is_arithmetic<A>::value &&
                                          std::is_arithmetic<B>::value>::type>
static inline typename std::common_type<A, B>::type min(A a, B b) {
  typedef typename std::common_type<A, B>::type T;
  return T(b) < T(a) ? T(b) : T(a);
}
template <class A, class B,
          class = typename std::enable_if<std::is_arithmetic<A>::value &&
                                          std::is_arithmetic<B>::value>::type>
static inline typename std::common_type<A, B>::type max(A a, B b) {
  typedef typename std::common_type<A, B>::type T;
  return T(a) < T(b) ? T(b) : T(a);
}

//===----------------------------------------------------------------------===//
// Fibers
//===----------------------------------------------------------------------===//

namespace memfit_host {

static const unsigned kMaxThreads = 1024;
static const size_t kStackBytes = 128 * 1024;
// The lowest bytes of each stack hold a pattern that a block checks after
// it ran: a thread that overflowed its stack is reported, not ignored.
static const size_t kCanaryWords = 16;
static const unsigned long long kCanary = 0x6d656d6669742121ull;

#ifdef MEMFIT_HOST_UCONTEXT
typedef ucontext_t Context;
static inline void switchContext(Context *save, Context *to) {
  swapcontext(save, to);
}
#else
// A suspended context is its stack pointer: memfit_host_switch saves the
// callee-saved registers on the current stack, stores the stack pointer in
// *save, and resumes the stack `to` (x86-64 System V).
typedef void *Context;
extern "C" __attribute__((visibility("hidden"))) void
memfit_host_switch(void **save, void *to);
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl memfit_host_switch\n"
        ".hidden memfit_host_switch\n"
        ".type memfit_host_switch,@function\n"
        "memfit_host_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size memfit_host_switch,.-memfit_host_switch\n"
        ".popsection\n");
static inline void switchContext(Context *save, Context *to) {
  memfit_host_switch(save, *to);
}
#endif

/// What one OS thread needs to run blocks: a fiber (context and stack) per
/// CUDA thread, and the block's shuffle slots. Allocated on first use.
struct ThreadState {
  Context *fibers;
  unsigned capacity;  // fibers with a stack
  char *stacks;       // capacity * kStackBytes, a canary at each bottom
  Context scheduler;  // the launcher, between rounds
  Context finished;   // where finished fibers leave their last context
  bool inFibers;      // running a barrier kernel's block
  bool barrierMisuse; // a barrier or shuffle outside fibers
  unsigned count;     // threads of the current block
  unsigned current;   // the running fiber
  unsigned char done[kMaxThreads];
  unsigned shuffles[kMaxThreads]; // per thread, selects the slot buffer
  unsigned long long slots[2][kMaxThreads];
  // Block reductions (blockReduce): per thread, how many it entered; how
  // many results are computed; the last result of each lane.
  unsigned collectives[kMaxThreads];
  unsigned long long values[kMaxThreads]; // each thread's value
  unsigned computed;
  unsigned long long results[32];
  void (*body)(void *const *args);
  void *const *bodyArgs;
};

static thread_local ThreadState *tlsState;

static inline ThreadState *state() {
  if (!tlsState)
    tlsState = static_cast<ThreadState *>(calloc(1, sizeof(ThreadState)));
  return tlsState;
}

static inline void setThreadIndex(unsigned linear) {
  if (blockDim.y == 1 && blockDim.z == 1) {
    threadIdx = uint3{linear, 0, 0}; // 1-D blocks, the common case
    return;
  }
  unsigned x = blockDim.x, y = blockDim.y;
  threadIdx.x = linear % x;
  threadIdx.y = (linear / x) % y;
  threadIdx.z = linear / (x * y);
}

/// Ends the running fiber's turn: control passes to the next fiber of the
/// round that has not finished, or back to the scheduler after the last.
/// The running fiber's context goes to *save.
static inline void passOn(ThreadState *s, Context *save) {
  unsigned next = s->current + 1;
  while (next < s->count && s->done[next])
    ++next;
  if (next < s->count) {
    s->current = next;
    setThreadIndex(next);
    switchContext(save, &s->fibers[next]);
  } else {
    switchContext(save, &s->scheduler);
  }
}

/// Called by a fiber at a barrier; returns once every fiber of the block
/// got there.
static inline void yieldFiber(ThreadState *s) {
  __asm__ __volatile__("" ::: "memory");
  passOn(s, &s->fibers[s->current]);
  __asm__ __volatile__("" ::: "memory");
}

static void fiberMain() {
  ThreadState *s = tlsState;
  s->body(s->bodyArgs);
  s = tlsState;
  s->done[s->current] = 1;
  passOn(s, &s->finished);
  __builtin_unreachable();
}

/// Gives every one of `count` fibers a stack; false if memory runs out.
static bool reserveFibers(ThreadState *s, unsigned count) {
  if (count <= s->capacity)
    return true;
  if (s->stacks)
    munmap(s->stacks, s->capacity * kStackBytes);
  free(s->fibers);
  s->capacity = 0;
  s->fibers = static_cast<Context *>(calloc(count, sizeof(Context)));
  void *stacks = mmap(nullptr, count * kStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (!s->fibers || stacks == MAP_FAILED) {
    free(s->fibers);
    s->fibers = nullptr;
    s->stacks = nullptr;
    if (stacks != MAP_FAILED)
      munmap(stacks, count * kStackBytes);
    return false;
  }
  s->stacks = static_cast<char *>(stacks);
  for (unsigned i = 0; i < count; ++i) {
    unsigned long long *canary =
        reinterpret_cast<unsigned long long *>(s->stacks + i * kStackBytes);
    for (size_t w = 0; w < kCanaryWords; ++w)
      canary[w] = kCanary;
  }
  s->capacity = count;
  return true;
}

static bool stacksIntact(const ThreadState *s, unsigned count) {
  for (unsigned i = 0; i < count; ++i) {
    const unsigned long long *canary =
        reinterpret_cast<const unsigned long long *>(s->stacks +
                                                     i * kStackBytes);
    for (size_t w = 0; w < kCanaryWords; ++w)
      if (canary[w] != kCanary)
        return false;
  }
  return true;
}

/// Prepares fiber i to start the kernel on its own stack.
static void startFiber(ThreadState *s, unsigned i) {
  char *bottom = s->stacks + i * kStackBytes;
#ifdef MEMFIT_HOST_UCONTEXT
  ucontext_t &c = s->fibers[i];
  getcontext(&c);
  c.uc_stack.ss_sp = bottom;
  c.uc_stack.ss_size = kStackBytes;
  c.uc_link = nullptr;
  makecontext(&c, fiberMain, 0);
#else
  // The initial frame memfit_host_switch pops: six registers, then the
  // return address fiberMain, above which sits fiberMain's (null) return
  // address, so that fiberMain starts with the stack aligned as after a call.
  void **sp = reinterpret_cast<void **>(bottom + kStackBytes);
  *--sp = nullptr;
  *--sp = reinterpret_cast<void *>(&fiberMain);
  for (int r = 0; r < 6; ++r)
    *--sp = nullptr;
  s->fibers[i] = sp;
#endif
}

/// Runs one block of `count` threads as fibers, in rounds: a round resumes
/// every unfinished fiber once, in order, and ends when each reached its
/// next barrier or returned. Returns false, with a message, when some
/// threads returned while others wait at a barrier.
static bool runBlockInFibers(ThreadState *s, unsigned count, char *error,
                             unsigned long errorSize) {
  if (!reserveFibers(s, count)) {
    snprintf(error, errorSize, "out of memory for %u fiber stacks", count);
    return false;
  }
  s->count = count;
  for (unsigned i = 0; i < count; ++i) {
    s->done[i] = 0;
    s->shuffles[i] = 0;
    s->collectives[i] = 0;
    startFiber(s, i);
  }
  s->computed = 0;
  s->inFibers = true;
  for (unsigned barrier = 0;; ++barrier) {
    unsigned first = 0;
    while (s->done[first])
      ++first;
    s->current = first;
    setThreadIndex(first);
    switchContext(&s->scheduler, &s->fibers[first]);

    unsigned finished = 0;
    for (unsigned i = 0; i < count; ++i)
      finished += s->done[i];
    if (finished == count)
      break;
    if (finished > 0) {
      unsigned returned = 0, waiting = 0;
      while (!s->done[returned])
        ++returned;
      while (s->done[waiting])
        ++waiting;
      snprintf(error, errorSize,
               "thread %u of block (%u, %u, %u) returned while thread %u waits "
               "at barrier %u (__syncthreads or a shuffle); every thread of a "
               "block must reach every barrier",
               returned, blockIdx.x, blockIdx.y, blockIdx.z, waiting, barrier);
      s->inFibers = false;
      return false;
    }
  }
  s->inFibers = false;
  if (!stacksIntact(s, count)) {
    snprintf(error, errorSize,
             "a thread of block (%u, %u, %u) overflowed its %zu KiB host stack",
             blockIdx.x, blockIdx.y, blockIdx.z, kStackBytes / 1024);
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

template <class F> struct KernelTraits;
template <class... P> struct KernelTraits<void (*)(P...)> {
  static const unsigned arity = sizeof...(P);

  template <void (*K)(P...), size_t... I>
  static inline void call(void *const *args, std::index_sequence<I...>) {
    K(static_cast<P>(args[I])...);
  }
  template <void (*K)(P...)> static void body(void *const *args) {
    call<K>(args, std::index_sequence_for<P...>());
  }
  static constexpr bool allPointers() {
    bool ok = true;
    bool each[] = {true, std::is_pointer<P>::value...};
    for (bool b : each)
      ok = ok && b;
    return ok;
  }
};

/// Runs the blocks [params->blockBegin, params->blockEnd) of kernel K: a
/// thread-loop kernel once per block, as thread 0 (its loops go over the
/// block's threads), a kernel with barriers as fibers, any other thread by
/// thread.
template <auto K>
static int launch(const memfit_host_launch *params, void **args,
                  bool usesBarriers, bool threadLoops) {
  typedef KernelTraits<decltype(K)> Traits;
  static_assert(Traits::allPointers(),
                "kernel parameters must be pointers (runtime/KERNELS.md)");
  if (params->numArgs != Traits::arity) {
    snprintf(params->error, params->errorSize,
             "the kernel takes %u parameters but the step passes %u buffers",
             Traits::arity, params->numArgs);
    return 1;
  }
  void *pointers[Traits::arity + 1];
  for (unsigned i = 0; i < Traits::arity; ++i)
    pointers[i] = *static_cast<void **>(args[i]);

  ThreadState *s = state();
  if (!s) {
    snprintf(params->error, params->errorSize, "out of memory");
    return 1;
  }
  s->barrierMisuse = false;
  s->inFibers = false;
  gridDim = dim3{params->grid[0], params->grid[1], params->grid[2]};
  blockDim = dim3{params->block[0], params->block[1], params->block[2]};
  unsigned long long threads =
      (unsigned long long)blockDim.x * blockDim.y * blockDim.z;
  if (threads > kMaxThreads) {
    snprintf(params->error, params->errorSize,
             "block of %llu threads exceeds %u", threads, kMaxThreads);
    return 1;
  }
  for (unsigned long long b = params->blockBegin; b < params->blockEnd; ++b) {
    blockIdx.x = unsigned(b % gridDim.x);
    blockIdx.y = unsigned((b / gridDim.x) % gridDim.y);
    blockIdx.z = unsigned(b / ((unsigned long long)gridDim.x * gridDim.y));
    if (threadLoops) {
      threadIdx = uint3{0, 0, 0};
      Traits::template call<K>(pointers,
                               std::make_index_sequence<Traits::arity>());
    } else if (usesBarriers) {
      s->body = &Traits::template body<K>;
      s->bodyArgs = pointers;
      if (!runBlockInFibers(s, unsigned(threads), params->error,
                            params->errorSize))
        return 1;
      continue;
    } else {
      for (unsigned z = 0; z < blockDim.z; ++z) {
        for (unsigned y = 0; y < blockDim.y; ++y) {
          for (unsigned x = 0; x < blockDim.x; ++x) {
            threadIdx = uint3{x, y, z};
            Traits::template call<K>(
                pointers, std::make_index_sequence<Traits::arity>());
          }
        }
      }
    }
    if (s->barrierMisuse) {
      snprintf(params->error, params->errorSize,
               threadLoops ? "a thread-loop kernel calls __syncthreads or a "
                             "warp shuffle (it may only reduce with "
                             "memfit_block_sum and memfit_block_max)"
                           : "the kernel calls __syncthreads or a warp "
                             "shuffle but the manifest says usesBarriers is "
                             "false");
      return 1;
    }
  }
  return 0;
}

/// The calling thread's state when it runs a block as fibers (a barrier
/// kernel), else null, noting the misuse of a barrier or shuffle in a
/// kernel the manifest says has none (the launcher reports it).
static inline ThreadState *fiberState() {
  ThreadState *s = tlsState;
  if (s && !s->inFibers) {
    s->barrierMisuse = true;
    return nullptr;
  }
  return s;
}

/// Exchanges `value` among the threads of a block; returns the value of
/// thread `source`, or the caller's own when `source` is not a valid lane.
template <class T>
static inline T exchange(T value, unsigned source, bool valid) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "warp shuffles take values of at most 8 bytes");
  ThreadState *s = fiberState();
  if (!s)
    return value;
  unsigned self = s->current;
  unsigned buffer = s->shuffles[self]++ & 1;
  memcpy(&s->slots[buffer][self], &value, sizeof(T));
  yieldFiber(s);
  T result = value;
  if (valid && source < s->count)
    memcpy(&result, &s->slots[buffer][source], sizeof(T));
  return result;
}

static inline unsigned laneId() {
  return tlsState ? tlsState->current & 31 : 0;
}
static inline unsigned warpBase() {
  return tlsState ? tlsState->current & ~31u : 0;
}

/// Lane i's value after a butterfly over the 32 values of `x` (xor 16, 8,
/// 4, 2, 1: x[i] = op(x[i], x[i ^ o])), as a warp's shuffles compute it.
template <class T, class Op> static inline void butterfly(T *x, Op op) {
  T y[32];
  for (unsigned o = 16; o > 0; o >>= 1) {
    for (unsigned i = 0; i < 32; ++i)
      y[i] = op(x[i], x[i ^ o]);
    memcpy(x, y, sizeof(y));
  }
}

/// butterflyLane0 past its first level: x[0..15] hold that level's values.
template <class T, class Op>
static inline T butterflyLane0From16(T *x, Op op) {
  for (unsigned i = 0; i < 8; ++i)
    x[i] = op(x[i], x[i + 8]);
  for (unsigned i = 0; i < 4; ++i)
    x[i] = op(x[i], x[i + 4]);
  for (unsigned i = 0; i < 2; ++i)
    x[i] = op(x[i], x[i + 2]);
  return op(x[0], x[1]);
}

/// Lane 0's value after butterfly(x, op), and only that: the tree of the 31
/// operations it depends on, each with its operands in the butterfly's
/// order (x[i] = op(x[i], x[i + o]) for i < o), so the same value to the bit
/// whether or not op commutes. Overwrites x.
template <class T, class Op> static inline T butterflyLane0(T *x, Op op) {
  // Level by level with constant bounds, which the host compiler turns
  // into vector operations (a loop over o it did not: a block reduction
  // took about 200 ns).
  for (unsigned i = 0; i < 16; ++i)
    x[i] = op(x[i], x[i + 16]);
  return butterflyLane0From16(x, op);
}

/// The 32 lanes of a block reduction's second butterfly, as the prelude's
/// CUDA memfit_block_sum/max fills them: lane w holds lane 0's value of
/// the butterfly over warp w's values (`value(t)` for thread t of the
/// `threads`), the lanes beyond the warps `pad`, or warp 0's value when
/// `padWithFirst`. Of each warp's butterfly only lane 0 is read, so only its
/// 31 operations are done.
template <class T, class Op, class Value>
static inline void secondStage(unsigned threads, Value value, Op op, T pad,
                               bool padWithFirst, T *lanes) {
  unsigned warps = threads / 32;
  T firsts[32];
  for (unsigned w = 0; w < warps; ++w) {
    // The first level straight from the values (no copy of the warp).
    for (unsigned i = 0; i < 16; ++i)
      lanes[i] = op(value(w * 32 + i), value(w * 32 + i + 16));
    firsts[w] = butterflyLane0From16(lanes, op);
  }
  for (unsigned i = 0; i < 32; ++i)
    lanes[i] = i < warps ? firsts[i] : padWithFirst ? firsts[0] : pad;
}

/// A block-wide reduction at one barrier, with the result of the prelude's
/// CUDA memfit_block_sum/max to the bit: thread t gets lane t % 32's value
/// of the second butterfly (secondStage). Every thread enters with its
/// value; the first to pass the barrier computes the results, the others
/// read them. The second butterfly is done whole, since every lane's value
/// is read (they may differ: max does not commute on signed zeros). (The
/// CUDA code switches threads at 12 barriers and shuffles.)
template <class T, class Op>
static inline T blockReduce(T v, Op op, T pad, bool padWithFirst) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "block reductions take values of at most 8 bytes");
  ThreadState *s = fiberState();
  if (!s)
    return v;
  unsigned self = s->current;
  unsigned round = ++s->collectives[self];
  memcpy(&s->values[self], &v, sizeof(T));
  yieldFiber(s);
  s = tlsState;
  if (s->computed != round) {
    T lanes[32];
    secondStage(
        s->count,
        [&](unsigned t) {
          T x;
          memcpy(&x, &s->values[t], sizeof(T));
          return x;
        },
        op, pad, padWithFirst, lanes);
    butterfly(lanes, op);
    for (unsigned i = 0; i < 32; ++i)
      memcpy(&s->results[i], &lanes[i], sizeof(T));
    s->computed = round;
  }
  T result;
  memcpy(&result, &s->results[self & 31], sizeof(T));
  return result;
}

/// Thread 0's result of blockReduce over a thread-loop kernel's partials,
/// one per thread of the block, without fibers: the second butterfly is
/// done only as far as lane 0 reads it.
template <class T, class Op>
static inline T laneReduce(const T *partials, Op op, T pad, bool padWithFirst) {
  T lanes[32];
  secondStage(
      blockDim.x, [&](unsigned t) { return partials[t]; }, op, pad,
      padWithFirst, lanes);
  return butterflyLane0(lanes, op);
}

/// The operations of memfit_block_sum and memfit_block_max (the prelude's
/// memfit_max: NaN wins, and of two equal values the second).
struct AddOp {
  template <class T> T operator()(T a, T b) const { return T(a + b); }
};
struct MaxOp {
  template <class T> T operator()(T a, T b) const {
    return (a != a || a > b) ? a : b;
  }
};

/// memfit_block_sum and memfit_block_max of the prelude, on the host: over
/// a thread-loop kernel's partials, or each thread's value at a barrier.
template <class T> static inline T laneSum(const T *partials) {
  return laneReduce(partials, AddOp(), T(0), false);
}
template <class T> static inline T laneMax(const T *partials) {
  return laneReduce(partials, MaxOp(), T(0), true);
}
/// memfit_warp_sum and memfit_warp_max of the prelude over a warp row's
/// partials (the first 32): lane 0's value of the CUDA butterfly.
template <class T, class Op>
static inline T warpLaneReduce(const T *partials, Op op) {
  T lanes[32];
  for (unsigned i = 0; i < 32; ++i)
    lanes[i] = partials[i];
  return butterflyLane0(lanes, op);
}
template <class T> static inline T warpLaneSum(const T *partials) {
  return warpLaneReduce(partials, AddOp());
}
template <class T> static inline T warpLaneMax(const T *partials) {
  return warpLaneReduce(partials, MaxOp());
}
template <class T> static inline T blockSum(T v) {
  return blockReduce(v, AddOp(), T(0), false);
}
template <class T> static inline T blockMax(T v) {
  return blockReduce(v, MaxOp(), T(0), true);
}

} // namespace memfit_host

extern "C" __attribute__((visibility("default"))) void
memfit_host_release_thread(void) {
  memfit_host::ThreadState *s = memfit_host::tlsState;
  if (!s)
    return;
  if (s->stacks)
    munmap(s->stacks, s->capacity * memfit_host::kStackBytes);
  free(s->fibers);
  free(s);
  memfit_host::tlsState = nullptr;
}

//===----------------------------------------------------------------------===//
// Barriers and warp shuffles
//===----------------------------------------------------------------------===//

static inline void __syncthreads() {
  if (memfit_host::ThreadState *s = memfit_host::fiberState())
    memfit_host::yieldFiber(s);
}

/// Warp-level barriers are block barriers here (control flow is uniform).
static inline void __syncwarp(unsigned mask = 0xffffffffu) { __syncthreads(); }
static inline void __threadfence_block() {}
static inline void __threadfence() {}

template <class T>
static inline T __shfl_sync(unsigned mask, T var, int srcLane,
                            int width = warpSize) {
  unsigned lane = memfit_host::laneId();
  unsigned group = lane & ~unsigned(width - 1);
  unsigned source = group + (unsigned(srcLane) & unsigned(width - 1));
  return memfit_host::exchange(var, memfit_host::warpBase() + source, true);
}

template <class T>
static inline T __shfl_xor_sync(unsigned mask, T var, int laneMask,
                                int width = warpSize) {
  unsigned lane = memfit_host::laneId();
  unsigned source = lane ^ unsigned(laneMask);
  // Lanes may read from their own or earlier groups of `width` lanes.
  bool valid =
      source < ((lane + unsigned(width)) & ~unsigned(width - 1)) && source < 32;
  return memfit_host::exchange(var, memfit_host::warpBase() + source, valid);
}

template <class T>
static inline T __shfl_down_sync(unsigned mask, T var, unsigned delta,
                                 int width = warpSize) {
  unsigned lane = memfit_host::laneId();
  bool valid = (lane & unsigned(width - 1)) + delta < unsigned(width);
  return memfit_host::exchange(var, memfit_host::warpBase() + lane + delta,
                               valid);
}

template <class T>
static inline T __shfl_up_sync(unsigned mask, T var, unsigned delta,
                               int width = warpSize) {
  unsigned lane = memfit_host::laneId();
  bool valid = (lane & unsigned(width - 1)) >= delta;
  return memfit_host::exchange(var, memfit_host::warpBase() + lane - delta,
                               valid);
}

#endif // MEMFIT_HOST_ABI_ONLY
#endif // MEMFIT_CUDA_HOST_H
