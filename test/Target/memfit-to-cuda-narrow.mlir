// The CUDA C++ of the element types that NumPy and CUDA's headers lack and
// of the wider integers: the 8-bit floats (f8E4M3FN, f8E4M3FNUZ, f8E5M2,
// f8E5M2FNUZ) and f4E2M1FN are `unsigned char` buffers that loads decode
// to float (memfit_fp_decode) and stores encode, rounding to nearest even
// (memfit_fp_encode); a cast to them rounds once from a double
// (memfit_fp_round), saturating unless `saturate = false`. The 4- and
// 2-bit integers sit in a byte's low bits: loads sign-extend (i4, i2) or
// mask, computation is in int, stores mask (they wrap). i16, u16, u32 and
// u64 are short, unsigned short, unsigned int and unsigned long long
// buffers; u16 computes in unsigned int so that products do not overflow.
// A cast from f64 to f16 rounds once, and so does one from i64 to an 8-bit
// float (to bf16 it is refused: emit-errors.mlir). Numerics against ONNX's own test
// data: test/Import/onnx-node-tests.test (the Cast, CastLike and integer
// cases).
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels \
// RUN:   | memfit-translate -split-input-file --memfit-to-cuda | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels \
// RUN:   | memfit-translate -split-input-file --memfit-to-manifest \
// RUN:   | FileCheck %s --check-prefix=MANIFEST
//
// The whole file as one source compiles with g++ through the host
// backend's emulation header and, where NVRTC is, for sm_80 and sm_90.
// RUN: memfit-opt %s --memfit-form-kernels | memfit-translate --memfit-to-cuda -o %t.cu
// RUN: %cxx -std=c++17 -fsyntax-only -w \
// RUN:   -include %memfit_src_root/runtime/src/host/memfit_cuda_host.h -include %memfit_src_root/runtime/src/host/memfit_thread_loops.h -x c++ %t.cu
// RUN: %if nvrtc %{ memfit-nvrtc --arch=sm_80 --arch=sm_90 %t.cu 2>/dev/null | FileCheck %s --check-prefix=NVRTC %}
// NVRTC: sm_80: {{[1-9][0-9]*}} bytes of CUBIN
// NVRTC-NEXT: sm_90: {{[1-9][0-9]*}} bytes of CUBIN

// CHECK-LABEL: extern "C" __global__ void k0_cast(const float* __restrict__ in0, unsigned char* __restrict__ out0) {
// CHECK: const float v1 = (float)memfit_fp_round((double)v0, 3, 7, 448.0, 1, true);
// CHECK-NEXT: out0[idx] = (unsigned char)memfit_fp_encode(v1, 4, 3, 7, 448.0, 1);
// CHECK-LABEL: extern "C" __global__ void k1_cast(const float* __restrict__ in0, unsigned char* __restrict__ out0) {
// CHECK: const float v1 = (float)memfit_fp_round((double)v0, 2, 15, 57344.0, 0, false);
// CHECK-NEXT: out0[idx] = (unsigned char)memfit_fp_encode(v1, 5, 2, 15, 57344.0, 0);
// MANIFEST: "dtype": "f32",
// MANIFEST: "dtype": "f8e4m3fn",
// MANIFEST: "dtype": "f8e5m2",
func.func @to_f8(%x: tensor<4xf32>) -> (tensor<4xf8E4M3FN>, tensor<4xf8E5M2>) {
  %0 = memfit.cast %x : tensor<4xf32> to tensor<4xf8E4M3FN>
  %1 = memfit.cast %x {saturate = false} : tensor<4xf32> to tensor<4xf8E5M2>
  return %0, %1 : tensor<4xf8E4M3FN>, tensor<4xf8E5M2>
}

// -----

// CHECK-LABEL: extern "C" __global__ void k0_cast(const unsigned char* __restrict__ in0, __half* __restrict__ out0) {
// CHECK: const float v0 = memfit_fp_decode(in0[idx], 4, 3, 8, 2);
// CHECK-NEXT: const float v1 = __half2float(__float2half_rn((float)v0));
// CHECK-LABEL: extern "C" __global__ void k1_cast(const unsigned char* __restrict__ in0, float* __restrict__ out0) {
// CHECK: const float v0 = memfit_fp_decode(in0[idx], 2, 1, 1, 3);
// MANIFEST: "dtype": "f8e4m3fnuz",
// MANIFEST: "dtype": "f4e2m1",
func.func @from_small_floats(%x: tensor<4xf8E4M3FNUZ>, %y: tensor<4xf4E2M1FN>) -> (tensor<4xf16>, tensor<4xf32>) {
  %0 = memfit.cast %x : tensor<4xf8E4M3FNUZ> to tensor<4xf16>
  %1 = memfit.cast %y : tensor<4xf4E2M1FN> to tensor<4xf32>
  return %0, %1 : tensor<4xf16>, tensor<4xf32>
}

// -----

// CHECK-LABEL: extern "C" __global__ void k0_cast(const unsigned char* __restrict__ in0, signed char* __restrict__ out0) {
// CHECK: const int v0 = ((int)(signed char)((in0[idx]) << 4) >> 4);
// CHECK-NEXT: const signed char v1 = (signed char)v0;
// CHECK-LABEL: extern "C" __global__ void k1_cast(const float* __restrict__ in0, unsigned char* __restrict__ out0) {
// Held in an int register, the int4 is wrapped and sign-extended as its
// storage would make it, so that a fused kernel reading it sees the same.
// CHECK: const int v1 = ((int)(signed char)(((unsigned char)((int)((int)v0) & 15)) << 4) >> 4);
// CHECK-NEXT: out0[idx] = (unsigned char)((int)(v1) & 15);
// CHECK-LABEL: extern "C" __global__ void k2_add(const unsigned char* __restrict__ in0, unsigned char* __restrict__ out0) {
// CHECK: const int v0 = ((int)(in0[idx]) & 3);
// CHECK-NEXT: const int v1 = v0 + v0;
// CHECK-NEXT: out0[idx] = (unsigned char)((int)(v1) & 3);
// MANIFEST: "dtype": "i4",
// MANIFEST: "dtype": "u2",
func.func @sub_byte(%x: tensor<4xi4>, %y: tensor<4xui2>, %z: tensor<4xf32>) -> (tensor<4xi8>, tensor<4xi4>, tensor<4xui2>) {
  %0 = memfit.cast %x : tensor<4xi4> to tensor<4xi8>
  %1 = memfit.cast %z : tensor<4xf32> to tensor<4xi4>
  %2 = memfit.add %y, %y : tensor<4xui2>, tensor<4xui2> -> tensor<4xui2>
  return %0, %1, %2 : tensor<4xi8>, tensor<4xi4>, tensor<4xui2>
}

// -----

// CHECK-LABEL: extern "C" __global__ void k0_div(const unsigned long long* __restrict__ in0, unsigned long long* __restrict__ out0) {
// CHECK: const unsigned long long v1 = memfit_idiv((unsigned long long)v0, (unsigned long long)v0);
// CHECK-LABEL: extern "C" __global__ void k1_mul(const unsigned short* __restrict__ in0, unsigned short* __restrict__ out0) {
// CHECK: const unsigned int v1 = v0 * v0;
// CHECK-LABEL: extern "C" __global__ void k2_mul(const short* __restrict__ in0, short* __restrict__ out0) {
// CHECK-LABEL: extern "C" __global__ void k3_sub(const unsigned int* __restrict__ in0, unsigned int* __restrict__ out0) {
// CHECK-LABEL: extern "C" __global__ void k4_cast(const double* __restrict__ in0, __half* __restrict__ out0) {
// CHECK: const float v1 = (float)memfit_fp_round((double)v0, 10, 15, 65504.0, 0, false);
// CHECK-NEXT: out0[idx] = __float2half_rn(v1);
// MANIFEST: "dtype": "u64",
// MANIFEST: "dtype": "u16",
// MANIFEST: "dtype": "i16",
// MANIFEST: "dtype": "u32",
// CHECK-LABEL: extern "C" __global__ void k5_cast(const long long* __restrict__ in0, unsigned char* __restrict__ out0) {
// CHECK: const float v1 = (float)memfit_fp_round((double)v0, 3, 7, 448.0, 1, true);
func.func @wide_ints(%a: tensor<4xui64>, %b: tensor<4xui16>, %c: tensor<4xi16>, %d: tensor<4xui32>, %e: tensor<4xf64>, %f: tensor<4xi64>) -> (tensor<4xui64>, tensor<4xui16>, tensor<4xi16>, tensor<4xui32>, tensor<4xf16>, tensor<4xf8E4M3FN>) {
  %0 = memfit.div %a, %a : tensor<4xui64>, tensor<4xui64> -> tensor<4xui64>
  %1 = memfit.mul %b, %b : tensor<4xui16>, tensor<4xui16> -> tensor<4xui16>
  %2 = memfit.mul %c, %c : tensor<4xi16>, tensor<4xi16> -> tensor<4xi16>
  %3 = memfit.sub %d, %d : tensor<4xui32>, tensor<4xui32> -> tensor<4xui32>
  %4 = memfit.cast %e : tensor<4xf64> to tensor<4xf16>
  %5 = memfit.cast %f : tensor<4xi64> to tensor<4xf8E4M3FN>
  return %0, %1, %2, %3, %4, %5 : tensor<4xui64>, tensor<4xui16>, tensor<4xi16>, tensor<4xui32>, tensor<4xf16>, tensor<4xf8E4M3FN>
}

