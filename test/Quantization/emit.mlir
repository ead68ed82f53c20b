// The CUDA C++ of quantize and dequantize. The code tables, midpoints and
// encoders of the schemes in use are written once after the prelude;
// dequantize is an index mapping inside pointwise kernels; a kernel that
// ends in quantize runs one thread block per quantization block: the
// element-wise values and the block's absmax of |x| first, then the codes
// (4-bit codes meet in shared memory and are packed two per byte).
// RUN: memfit-opt %s --memfit-form-kernels | memfit-translate --memfit-to-cuda | FileCheck %s
// RUN: memfit-opt %s --memfit-form-kernels | memfit-translate --memfit-to-manifest | FileCheck %s --check-prefix=MANIFEST
//
// It compiles with g++ through the host emulation header and, where NVRTC
// is, to CUBIN for sm_80 and sm_90.
// RUN: memfit-opt %s --memfit-form-kernels | memfit-translate --memfit-to-cuda -o %t.cu
// RUN: %cxx -std=c++17 -fsyntax-only -w \
// RUN:   -include %memfit_src_root/runtime/src/host/memfit_cuda_host.h -include %memfit_src_root/runtime/src/host/memfit_thread_loops.h -x c++ %t.cu
// RUN: %if nvrtc %{ memfit-nvrtc --arch=sm_80 --arch=sm_90 %t.cu | FileCheck %s --check-prefix=NVRTC %}
// NVRTC: sm_80: {{[1-9][0-9]*}} bytes of CUBIN
// NVRTC-NEXT: sm_90: {{[1-9][0-9]*}} bytes of CUBIN

// CHECK: // The code tables and encoders of the quantization schemes used below.
// CHECK: static __device__ const float memfit_qmap_dynamic[256] = {
// CHECK-NEXT: -0x1.fc6666p-1f, -0x1.f53334p-1f, -0x1.eep-1f, -0x1.e6ccccp-1f,
// CHECK: static __device__ const float memfit_qmid_dynamic[255] = {
// CHECK: static __device__ __forceinline__ unsigned char memfit_qenc_dynamic(float x, float a) {
// CHECK-NEXT: if (a == 0.0f) return 0;
// CHECK-NEXT: const float u = fminf(fmaxf(x * (1.0f / a), -1.0f), 1.0f);
// CHECK-NEXT: const int bin = (int)fmaf((u + 1.0f) * 0.5f, 65535.0f, 0.5f);
// CHECK-NEXT: const float v = (float)(2 * bin) / 65535.0f - 1.0f;
// CHECK-NEXT: int lo = 0, hi = 255;
// CHECK: static __device__ const float memfit_qmap_nf4[16] = {
// CHECK: static __device__ const unsigned char memfit_qsorted_nf4[16] = {
// CHECK: memfit_qenc_nf4(float x, float a) {
// CHECK-NEXT: const float v = fminf(fmaxf(x * (1.0f / fmaxf(a, 1e-38f)), -1.0f), 1.0f);
// CHECK: return memfit_qsorted_nf4[lo];
// The other schemes (@schemes below): int8, fp4 (sorted by value through
// memfit_qsorted_fp4) and the unsigned dynamic map.
// CHECK: memfit_qenc_linear(float x, float a) {
// CHECK-NEXT: if (a == 0.0f) return 0;
// CHECK-NEXT: return (unsigned char)(signed char)rintf(fminf(fmaxf(x * (1.0f / a), -1.0f), 1.0f) * 127.0f);
// CHECK: static __device__ const unsigned char memfit_qsorted_fp4[16] = {
// CHECK-NEXT: 11, 10, 13, 12,
// CHECK: memfit_qenc_dynamic_unsigned(float x, float a) {

// An update that dequantizes, computes and quantizes again: one kernel.
// CHECK-LABEL: extern "C" __global__ void k0_dequantize_add_quantize(const unsigned char* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, unsigned char* __restrict__ out0, float* __restrict__ out1)
// CHECK: __shared__ float scratch[32];
// CHECK-NEXT: const long long base = (long long)blockIdx.x * 512LL;
// CHECK-NEXT: float q0[2];
// CHECK-NEXT: float a0 = 0.0f;
// CHECK-NEXT: for (int e = 0; e < 2; ++e) {
// CHECK-NEXT: const long long local = (long long)e * 256 + threadIdx.x;
// CHECK-NEXT: const long long idx = base + local;
// CHECK-NEXT: if (local >= 512LL || idx >= 5120LL) continue;
// CHECK: memfit_qmap_dynamic[in0[idx]] * in1[idx / 512LL]
// CHECK: q0[e] = [[V:v[0-9]+]];
// CHECK-NEXT: a0 = memfit_max(a0, fabsf(q0[e]));
// CHECK: a0 = memfit_block_max(a0, scratch);
// CHECK: out0[idx] = memfit_qenc_dynamic(q0[e], a0);
// CHECK: if (threadIdx.x == 0) out1[blockIdx.x] = a0;
// MANIFEST-LABEL: "name": "k0_dequantize_add_quantize"
// MANIFEST: "grid": [10, 1, 1]
// MANIFEST: "block": [256, 1, 1]
func.func @update(%c: tensor<5120xui8>, %a: tensor<10xf32>, %g: tensor<64x80xf32>) -> (tensor<5120xui8>, tensor<10xf32>) {
  %k:2 = memfit.kernel(%c, %a, %g) : (tensor<5120xui8>, tensor<10xf32>, tensor<64x80xf32>) -> (tensor<5120xui8>, tensor<10xf32>) {
  ^bb0(%c0: tensor<5120xui8>, %a0: tensor<10xf32>, %g0: tensor<64x80xf32>):
    %m = memfit.dequantize dynamic %c0, %a0 {block_size = 512 : i64} : (tensor<5120xui8>, tensor<10xf32>) -> tensor<64x80xf32>
    %m1 = memfit.add %m, %g0 : tensor<64x80xf32>, tensor<64x80xf32> -> tensor<64x80xf32>
    %q, %s = memfit.quantize dynamic %m1 {block_size = 512 : i64} : tensor<64x80xf32> -> tensor<5120xui8>, tensor<10xf32>
    memfit.yield %q, %s : tensor<5120xui8>, tensor<10xf32>
  }
  return %k#0, %k#1 : tensor<5120xui8>, tensor<10xf32>
}

// A standalone 4-bit quantize of an odd count: 64 threads, the last block
// shorter, the last byte's low nibble 0.
// CHECK-LABEL: extern "C" __global__ void k1_quantize(const float* __restrict__ in0, unsigned char* __restrict__ out0, float* __restrict__ out1)
// CHECK: __shared__ unsigned char nibbles0[64];
// CHECK: nibbles0[local] = memfit_qenc_nf4(q0[e], a0);
// CHECK: __syncthreads();
// CHECK-NEXT: for (long long j = threadIdx.x; 2 * j < 64LL && base + 2 * j < 101LL; j += 64) {
// CHECK-NEXT: const unsigned char low = base + 2 * j + 1 < 101LL ? nibbles0[2 * j + 1] : 0;
// CHECK-NEXT: out0[base / 2 + j] = (unsigned char)((nibbles0[2 * j] << 4) | low);
// MANIFEST-LABEL: "name": "k1_quantize"
// MANIFEST: "grid": [2, 1, 1]
// MANIFEST: "block": [64, 1, 1]
func.func @four_bit(%x: tensor<101xf32>) -> (tensor<51xui8>, tensor<2xf32>) {
  %c, %a = memfit.quantize nf4 %x {block_size = 64 : i64} : tensor<101xf32> -> tensor<51xui8>, tensor<2xf32>
  return %c, %a : tensor<51xui8>, tensor<2xf32>
}

// Dequantized 4-bit weights feeding a matmul: a pointwise kernel that
// picks each element's nibble.
// CHECK-LABEL: extern "C" __global__ void k2_dequantize(
// CHECK: memfit_qmap_nf4[(in0[idx >> 1] >> ((~idx & 1) << 2)) & 15] * in1[idx / 64LL]
func.func @weights(%c: tensor<2048xui8>, %a: tensor<64xf32>, %x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w = memfit.dequantize nf4 %c, %a {block_size = 64 : i64} : (tensor<2048xui8>, tensor<64xf32>) -> tensor<64x64xf32>
  %y = memfit.matmul %x, %w : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// The other schemes, so that every encoder compiles with g++ and NVRTC.
// CHECK-LABEL: void k6_dequantize(
// CHECK: ((float)in0[idx] / 127.0f) * in1[idx / 16LL]
func.func @schemes(%x: tensor<64xf32>, %c: tensor<64xi8>, %a: tensor<4xf32>) -> (tensor<64xi8>, tensor<4xf32>, tensor<32xui8>, tensor<4xf32>, tensor<64xui8>, tensor<4xf32>, tensor<64xf32>) {
  %l, %la = memfit.quantize linear %x {block_size = 16 : i64} : tensor<64xf32> -> tensor<64xi8>, tensor<4xf32>
  %f, %fa = memfit.quantize fp4 %x {block_size = 16 : i64} : tensor<64xf32> -> tensor<32xui8>, tensor<4xf32>
  %u, %ua = memfit.quantize dynamic_unsigned %x {block_size = 16 : i64} : tensor<64xf32> -> tensor<64xui8>, tensor<4xf32>
  %y = memfit.dequantize linear %c, %a {block_size = 16 : i64} : (tensor<64xi8>, tensor<4xf32>) -> tensor<64xf32>
  return %l, %la, %f, %fa, %u, %ua, %y : tensor<64xi8>, tensor<4xf32>, tensor<32xui8>, tensor<4xf32>, tensor<64xui8>, tensor<4xf32>, tensor<64xf32>
}
