// Helpers shared by the kernels below.
static __device__ __forceinline__ float memfit_max(float a, float b) { return (a != a || a > b) ? a : b; }
static __device__ __forceinline__ double memfit_max(double a, double b) { return (a != a || a > b) ? a : b; }
static __device__ __forceinline__ long long memfit_max(long long a, long long b) { return a > b ? a : b; }

template <typename T> static __device__ __forceinline__ T memfit_warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename T> static __device__ __forceinline__ T memfit_warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = memfit_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
#ifdef MEMFIT_CUDA_HOST_H
// A warp row's partials on the host: lane 0's result of the butterflies.
template <typename T, unsigned long N> static __device__ __forceinline__ T memfit_warp_sum(T (&partials)[N]) { return memfit_host::warpLaneSum(partials); }
template <typename T, unsigned long N> static __device__ __forceinline__ T memfit_warp_max(T (&partials)[N]) { return memfit_host::warpLaneMax(partials); }
#endif
// Thread loops (runtime/KERNELS.md): a kernel whose manifest entry has
// threadLoops reads its thread index only through these, so that the host
// backend can run each block once, the loops going over the block's threads.
//  - MEMFIT_THREAD_LOOP(i, n) { ... }: i is the thread's index in the grid,
//    the body runs if i < n (one thread per element);
//  - MEMFIT_BLOCK_STRIDE(j, first, last) { ... }: the block's threads stride
//    over [first, last);
//  - MEMFIT_PARTIAL(T, a, init): a per-thread partial result, read and
//    written as MEMFIT_LANE(a, j) inside a block-stride loop over j and
//    combined by
//    memfit_block_sum or memfit_block_max after it.
// Everything else in such a kernel is the same for every thread of a block.
// Warp rows, for rows short enough for a warp: each warp of the block takes
// a row of its own.
//  - MEMFIT_WARP_ROWS(row, rows) { ... }: row is the warp's row, the body
//    runs if row < rows;
//  - MEMFIT_WARP_STRIDE(j, first, last) { ... }: the warp's lanes stride
//    over [first, last); its partials are combined by memfit_warp_sum or
//    memfit_warp_max (shuffles only, no barrier), whose result every lane
//    gets;
//  - MEMFIT_LANE0 is true in the warp's first lane.
// Everything else in a warp row is the same for every lane of the warp.
#ifndef MEMFIT_CUDA_HOST_H
#define MEMFIT_THREAD_LOOP(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i = (n))
#define MEMFIT_BLOCK_STRIDE(j, first, last) for (long long j = (first) + threadIdx.x; j < (last); j += blockDim.x)
#define MEMFIT_PARTIAL(T, a, init) T a = (init)
#define MEMFIT_LANE(a, j) a
#define MEMFIT_WARP_ROWS(row, rows) for (long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < (rows); row = (rows))
#define MEMFIT_WARP_STRIDE(j, first, last) for (long long j = (first) + (threadIdx.x & 31); j < (last); j += 32)
#define MEMFIT_LANE0 ((threadIdx.x & 31) == 0)
#define MEMFIT_BLOCK_STRIDE_VEC(j, first, last, V) for (long long j = (first) + (long long)threadIdx.x * (V); j < (last); j += (long long)blockDim.x * (V))
#define MEMFIT_WARP_STRIDE_VEC(j, first, last, V) for (long long j = (first) + (long long)(threadIdx.x & 31) * (V); j < (last); j += 32 * (V))
#endif
// Vector loops (the _VEC strides): each thread takes V adjacent elements
// at a time, from j (a multiple of V from the row's start), loaded and
// stored as one memfit_vec of 16 bytes at most; its partial gets them in
// order, as MEMFIT_LANE(a, j).
template <typename T, int N> struct alignas(sizeof(T) * N) memfit_vec { T v[N]; };
template <typename T, int N> static __device__ __forceinline__ memfit_vec<T, N> memfit_load_vec(const T* p) { return *reinterpret_cast<const memfit_vec<T, N>*>(p); }
template <typename T, int N> static __device__ __forceinline__ void memfit_store_vec(T* p, const memfit_vec<T, N>& x) { *reinterpret_cast<memfit_vec<T, N>*>(p) = x; }
// Block-wide reductions: every thread gets the result. `scratch` holds one
// value per warp; blockDim.x is a multiple of 32. The host backend computes
// the same results at one barrier (memfit_host::blockSum and blockMax), or
// from a thread-loop kernel's partials without one (laneSum and laneMax:
// thread 0's result).
#ifdef MEMFIT_CUDA_HOST_H
template <typename T> static __device__ __forceinline__ T memfit_block_sum(T v, T* scratch) { return memfit_host::blockSum(v); }
template <typename T> static __device__ __forceinline__ T memfit_block_max(T v, T* scratch) { return memfit_host::blockMax(v); }
template <typename T, unsigned long N> static __device__ __forceinline__ T memfit_block_sum(T (&partials)[N], T* scratch) { return memfit_host::laneSum(partials); }
template <typename T, unsigned long N> static __device__ __forceinline__ T memfit_block_max(T (&partials)[N], T* scratch) { return memfit_host::laneMax(partials); }
#else
template <typename T> static __device__ __forceinline__ T memfit_block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = memfit_warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : (T)0;
  v = memfit_warp_sum(v);
  __syncthreads();
  return v;
}
template <typename T> static __device__ __forceinline__ T memfit_block_max(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = memfit_warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : scratch[0];
  v = memfit_warp_max(v);
  __syncthreads();
  return v;
}
#endif
// An integer power by repeated squaring, wrapping like the C types (the
// caller casts to its own); a negative exponent gives 0 unless the base is
// 1 or -1 (ONNX Pow on integers, as onnxruntime).
static __device__ __forceinline__ long long memfit_ipow(long long b, long long e) {
  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
  unsigned long long r = 1, x = (unsigned long long)b;
  while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }
  return (long long)r;
}

// Integer division that never traps, the same on every backend: x / 0 is 0
// (NumPy's convention; a GPU does not trap, x86 does), and the lowest signed
// value divided by -1 wraps to itself, as its negation does in two's
// complement (ONNX Mod, a - (a / b) * b, then gives 0 for it).
template <typename T> static __device__ __forceinline__ T memfit_idiv(T a, T b) {
  if (b == (T)0) return (T)0;
  if ((T)-1 < (T)0 && b == (T)-1) return (T)(0ull - (unsigned long long)a);
  return a / b;
}

// TopK's order of floats as unsigned keys: larger values have larger keys,
// -0 equals 0 and NaN is above every number. Without a branch on the sign,
// which random data mispredicts.
static __device__ __forceinline__ unsigned long long memfit_order_key(double v) {
  const unsigned long long b = (unsigned long long)__double_as_longlong(v == 0 ? 0.0 : v);
  const unsigned long long k = b ^ ((unsigned long long)((long long)b >> 63) | 0x8000000000000000ull);
  return v != v ? ~0ull : k;
}

// Records an index out of range in the executable's index-error word
// (rt::IndexError): the first thread to find one stores `code` (its kernel
// and check) and the index; the session fails the run with the check's
// message after the kernels ran.
static __device__ __forceinline__ void memfit_index_error(unsigned long long* err, unsigned long long code, long long index) {
  if (atomicCAS(err, 0ull, code) == 0ull) err[1] = (unsigned long long)index;
}

// Dropout's keep decision, counter-based: splitmix64's finalizer of the
// seed (with the stream) and the step gives the step's key, the finalizer
// of the key and the element index a uniform number in [0, 1) from its top
// 24 bits, kept when it is at least the drop ratio.
static __device__ __forceinline__ unsigned long long memfit_mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static __device__ __forceinline__ bool memfit_dropout_keep(unsigned long long seed, long long step, long long i, float ratio) {
  const unsigned long long key = memfit_mix64(seed + 0xd1b54a32d192ed03ull * (unsigned long long)(step + 1));
  const unsigned long long z = memfit_mix64(key + 0x9e3779b97f4a7c15ull * (unsigned long long)(i + 1));
  return (float)(z >> 40) * (1.0f / 16777216.0f) >= ratio;
}

// Small float formats: ONNX's FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2,
// FLOAT8E5M2FNUZ and FLOAT4E2M1 (stored one per byte), and f16 or bf16 from
// a double. `mbits` mantissa bits, `ebits` exponent bits of bias `bias`,
// largest finite value `maxv`; `kind` 0: IEEE (infinities, NaN with the
// exponent all ones), 1: FN (no infinity, NaN all ones), 2: FNUZ (no
// infinity, no -0, NaN the sign bit alone), 3: no infinity or NaN
// (FLOAT4E2M1: saturates, NaN becomes the sign bit alone, as ml_dtypes).
// A 64-bit integer as a double rounded to odd: exact below 2^53; beyond,
// the bits a double cannot hold are OR'ed into its lowest bit, so that a
// later rounding to fewer bits (bf16's 8) rounds once, as if from the
// integer itself.
static __device__ __forceinline__ double memfit_u64_odd(unsigned long long u) {
  int s = 0;
  while ((u >> s) >= (1ull << 53)) ++s;
  unsigned long long kept = u >> s;
  if (s && (u & ((1ull << s) - 1))) kept |= 1;
  return ldexp((double)kept, s);
}
static __device__ __forceinline__ double memfit_i64_odd(long long v) {
  return v < 0 ? -memfit_u64_odd(0ull - (unsigned long long)v) : memfit_u64_odd((unsigned long long)v);
}

// memfit_fp_round: x rounded to nearest even in the format, as a double;
// beyond maxv, maxv when saturating (and always for kind 3), else infinity
// (kind 0) or NaN.
static __device__ __forceinline__ double memfit_fp_round(double x, int mbits, int bias, double maxv, int kind, bool saturate) {
  if (x != x) return x;
  double a = fabs(x);
  if (a > maxv && (saturate || kind == 3)) a = maxv;
  if (a > maxv && a - a != 0)  // infinity, not saturated
    return kind == 0 ? x : copysign(__longlong_as_double(0x7ff8000000000000LL), x);
  if (a == 0) return x;
  int e;
  (void)frexp(a, &e);
  int lead = e - 1 < 1 - bias ? 1 - bias : e - 1;
  double quantum = ldexp(1.0, lead - mbits);
  double r = rint(a / quantum) * quantum;
  if (r > maxv)
    r = kind == 0 ? __longlong_as_double(0x7ff0000000000000LL) : __longlong_as_double(0x7ff8000000000000LL);
  return copysign(r, x);
}
// The bits of x in the format (rounded to nearest even, not saturating).
static __device__ __forceinline__ unsigned memfit_fp_encode(double x, int ebits, int mbits, int bias, double maxv, int kind) {
  unsigned signBit = 1u << (ebits + mbits), expMask = (1u << ebits) - 1, manMask = (1u << mbits) - 1;
  double r = memfit_fp_round(x, mbits, bias, maxv, kind, false);
  unsigned sign = __double_as_longlong(r) < 0 ? signBit : 0u;
  if (r != r) {
    if (kind == 0) return sign | expMask << mbits | 1u << (mbits - 1);
    if (kind == 1) return sign | expMask << mbits | manMask;
    return signBit;
  }
  double a = fabs(r);
  if (a - a != 0) return sign | expMask << mbits;
  if (a == 0) return kind == 2 ? 0u : sign;
  int e;
  (void)frexp(a, &e);
  if (e - 1 < 1 - bias) return sign | (unsigned)(a / ldexp(1.0, 1 - bias - mbits));
  return sign | (unsigned)(e - 1 + bias) << mbits | ((unsigned)(a / ldexp(1.0, e - 1 - mbits)) & manMask);
}
// The value of the format's bits b.
static __device__ __forceinline__ float memfit_fp_decode(unsigned b, int ebits, int mbits, int bias, int kind) {
  unsigned signBit = 1u << (ebits + mbits), expMask = (1u << ebits) - 1, manMask = (1u << mbits) - 1;
  unsigned ex = (b >> mbits) & expMask, man = b & manMask;
  float nan = __int_as_float(0x7fc00000);
  if ((kind == 2 && b == signBit) || (kind == 1 && ex == expMask && man == manMask) || (kind == 0 && ex == expMask && man))
    return nan;
  float v = kind == 0 && ex == expMask ? __int_as_float(0x7f800000)
          : ex ? ldexpf((float)(man | (1u << mbits)), (int)ex - bias - mbits)
               : ldexpf((float)man, 1 - bias - mbits);
  return (b & signBit) ? -v : v;
}
