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
// Block-wide reductions: every thread gets the result. `scratch` holds one
// value per warp; blockDim.x is a multiple of 32.
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
// Dropout's keep decision: a counter-based hash (splitmix64) of the seed and
// the element index, compared with the drop ratio.
static __device__ __forceinline__ bool memfit_dropout_keep(unsigned long long seed, long long i, float ratio) {
  unsigned long long z = seed + 0x9e3779b97f4a7c15ull * (unsigned long long)(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.0f / 16777216.0f) >= ratio;
}
