//===- memfit_thread_loops.h - the prelude's thread loops on the host ----===//
//
// The host backend's forms of the prelude's thread loops, thread-stride and
// warp-row loops (runtime/KERNELS.md), for a kernel with thread loops that
// it runs once per block. CMake writes this file after memfit_cuda_host.h
// (whose thread state, blockDim and memfit_host::kMaxThreads it uses) in
// front of the kernel source the host backend compiles.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_THREAD_LOOPS_H
#define MEMFIT_THREAD_LOOPS_H
#ifndef MEMFIT_HOST_ABI_ONLY

//===----------------------------------------------------------------------===//
// Thread loops
//===----------------------------------------------------------------------===//

// The prelude's thread loops (runtime/KERNELS.md) for a kernel run once per
// block: a loop over the block's threads, each thread's partial result an
// entry of an array. A block-stride loop runs its elements in order, lane
// by lane, which gives each thread's partial the additions in the order the
// thread does them. The loops over threads are `omp simd` (with
// -fopenmp-simd): the threads of a block are independent between barriers,
// so the compiler may run them in vector lanes. (The one-shot loops around
// them only declare their bounds; a block-stride loop's thread is its
// element's distance from the first of the round, memfit_j0.)
#define MEMFIT_THREAD_LOOP(i, n)                                               \
  for (long long memfit_first = (long long)blockIdx.x * blockDim.x,            \
                 memfit_end = min(memfit_first + (long long)blockDim.x,        \
                                  (long long)(n)),                             \
                 memfit_once = 1;                                              \
       memfit_once; memfit_once = 0)                                           \
  _Pragma("omp simd") for (long long i = memfit_first; i < memfit_end; ++i)
#define MEMFIT_BLOCK_STRIDE(j, first, last)                                    \
  for (long long memfit_j0 = (first), memfit_last = (last);                    \
       memfit_j0 < memfit_last; memfit_j0 += blockDim.x)                       \
    for (long long memfit_jend = min(memfit_j0 + (long long)blockDim.x,        \
                                     memfit_last),                             \
                   memfit_once = 1;                                            \
         memfit_once; memfit_once = 0)                                         \
    _Pragma("omp simd") for (long long j = memfit_j0; j < memfit_jend; ++j)
#define MEMFIT_PARTIAL(T, a, init)                                             \
  T a[memfit_host::kMaxThreads];                                               \
  for (unsigned memfit_t = 0; memfit_t < blockDim.x; ++memfit_t)               \
  a[memfit_t] = (init)
#define MEMFIT_LANE(a, j) a[(j) - memfit_j0]
// Warp rows: the block's rows one after the other, each by its lane 0 (a
// warp-stride loop, like a block-stride loop, runs its elements in order,
// lane by lane).
#define MEMFIT_WARP_ROWS(row, rows)                                            \
  for (long long row = (long long)blockIdx.x * (blockDim.x / 32),              \
                 memfit_rows_end = min(row + (long long)(blockDim.x / 32),     \
                                       (long long)(rows));                     \
       row < memfit_rows_end; ++row)
#define MEMFIT_WARP_STRIDE(j, first, last)                                     \
  for (long long memfit_j0 = (first), memfit_last = (last);                    \
       memfit_j0 < memfit_last; memfit_j0 += 32)                               \
    for (long long memfit_jend = min(memfit_j0 + 32LL, memfit_last),           \
                   memfit_once = 1;                                            \
         memfit_once; memfit_once = 0)                                         \
    _Pragma("omp simd") for (long long j = memfit_j0; j < memfit_jend; ++j)
#define MEMFIT_LANE0 (threadIdx.x == 0)
// Vector strides: each thread's V adjacent elements from j, thread by
// thread (a thread's partial is MEMFIT_LANE(a, j): memfit_j0 is j less
// the thread's index).
#define MEMFIT_STRIDE_VEC_(j, first, last, V, threads)                         \
  for (long long memfit_r0 = (first), memfit_last = (last);                    \
       memfit_r0 < memfit_last; memfit_r0 += (long long)(threads) * (V))       \
    for (long long memfit_t = 0; memfit_t < (long long)(threads) &&            \
                                 memfit_r0 + memfit_t * (V) < memfit_last;     \
         ++memfit_t)                                                           \
      for (long long j = memfit_r0 + memfit_t * (V), memfit_j0 = j - memfit_t, \
                     memfit_once = 1;                                          \
           memfit_once; memfit_once = 0)
#define MEMFIT_BLOCK_STRIDE_VEC(j, first, last, V)                             \
  MEMFIT_STRIDE_VEC_(j, first, last, V, blockDim.x)
#define MEMFIT_WARP_STRIDE_VEC(j, first, last, V)                              \
  MEMFIT_STRIDE_VEC_(j, first, last, V, 32)

#endif // MEMFIT_HOST_ABI_ONLY
#endif // MEMFIT_THREAD_LOOPS_H
