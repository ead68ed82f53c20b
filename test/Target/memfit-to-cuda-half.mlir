// The CUDA C++ of f16 and bf16 kernels. Buffers are __half and
// __nv_bfloat16; every load is widened to float (__half2float,
// __bfloat162float), arithmetic and accumulators are float, every store
// rounds to nearest even (__float2half_rn, __float2bfloat16_rn).
// Contractions in f16 and bf16 are manifest entries of their 16-bit dtype
// (cuBLASLt with fp32 accumulation on CUDA, fp32 BLAS on widened inputs on
// the host). Numerics: test/Runtime/ops-half.test.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --mlir-print-debuginfo \
// RUN:   | memfit-translate -split-input-file --memfit-to-cuda | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --mlir-print-debuginfo \
// RUN:   | memfit-translate -split-input-file --memfit-to-manifest \
// RUN:   | FileCheck %s --check-prefix=MANIFEST
//
// The whole file as one module, one source: it compiles with g++ through
// the host backend's emulation header and, where NVRTC is, to CUBIN for
// sm_80 and sm_90 with CUDA's cuda_fp16.h and cuda_bf16.h.
// RUN: memfit-opt %s --memfit-form-kernels | memfit-translate --memfit-to-cuda -o %t.cu
// RUN: %cxx -std=c++17 -fsyntax-only -w \
// RUN:   -include %memfit_src_root/runtime/src/host/memfit_cuda_host.h -include %memfit_src_root/runtime/src/host/memfit_thread_loops.h -x c++ %t.cu
// RUN: %if nvrtc %{ memfit-nvrtc --arch=sm_80 --arch=sm_90 %t.cu | FileCheck %s --check-prefix=NVRTC %}
// NVRTC: sm_80: {{[1-9][0-9]*}} bytes of CUBIN
// NVRTC-NEXT: sm_90: {{[1-9][0-9]*}} bytes of CUBIN

//===----------------------------------------------------------------------===//
// The include guard
//===----------------------------------------------------------------------===//

// A source without f16 or bf16 values includes neither header.
// CHECK: // kernel's input buffers followed by its output buffers.
// CHECK-NOT: #include
// CHECK: // Helpers shared by the kernels below.
// CHECK-LABEL: // k0_exp: exp_f32
// CHECK-NEXT: extern "C" __global__ void k0_exp(const float* __restrict__ in0, float* __restrict__ out0) {
func.func @f32_only(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = memfit.exp %x : tensor<4xf32> loc("exp_f32")
  return %0 : tensor<4xf32>
}

// -----

// A function whose only 16-bit values are its arguments needs the headers
// too (regression: only op results were looked at, and NVRTC failed on
// __nv_bfloat16).
// CHECK: // kernel's input buffers followed by its output buffers.
// CHECK-EMPTY:
// CHECK-NEXT: // __half and __nv_bfloat16; the host backend's emulation header defines them.
// CHECK-LABEL: // k0_cast: widen_argument
// CHECK-NEXT: extern "C" __global__ void k0_cast(const __nv_bfloat16* __restrict__ in0, float* __restrict__ out0) {
func.func @widen_argument(%x: tensor<4xbf16>) -> tensor<4xf32> {
  %0 = memfit.cast %x : tensor<4xbf16> to tensor<4xf32> loc("widen_argument")
  return %0 : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

// With f16 or bf16 values CUDA's headers come first; the host backend's
// emulation header defines MEMFIT_CUDA_HOST_H and the same types instead.
// CHECK: // kernel's input buffers followed by its output buffers.
// CHECK-EMPTY:
// CHECK-NEXT: // __half and __nv_bfloat16; the host backend's emulation header defines them.
// CHECK-NEXT: #ifndef MEMFIT_CUDA_HOST_H
// CHECK-NEXT: #include <cuda_fp16.h>
// CHECK-NEXT: #include <cuda_bf16.h>
// CHECK-NEXT: #endif
// CHECK-EMPTY:
// CHECK-NEXT: // Helpers shared by the kernels below.
// Loads widen at their broadcast offsets; the sum is a float register,
// rounded once by the store.
// CHECK-LABEL: // k0_add: add_bf16
// CHECK-NEXT: extern "C" __global__ void k0_add(const __nv_bfloat16* __restrict__ in0, const __nv_bfloat16* __restrict__ in1, __nv_bfloat16* __restrict__ out0) {
// CHECK-NEXT: MEMFIT_THREAD_LOOP(idx, 8LL) {
// CHECK-NEXT: const long long c0 = (long long)((unsigned)(idx) / 4U);
// CHECK-NEXT: const long long c1 = (long long)((unsigned)(idx) / 1U % 4U);
// CHECK-NEXT: const float v0 = __bfloat162float(in0[idx]);
// CHECK-NEXT: const float v1 = __bfloat162float(in1[c1 * 1LL]);
// CHECK-NEXT: const float v2 = v0 + v1;
// CHECK-NEXT: out0[idx] = __float2bfloat16_rn(v2);
// CHECK-NEXT: }
// A splat f16 constant is a float literal of its f16 value (0.1 is
// 0.0999755859375 in f16).
// CHECK-LABEL: // k1_mul: mul_f16
// CHECK-NEXT: extern "C" __global__ void k1_mul(const __half* __restrict__ in0, __half* __restrict__ out0) {
// CHECK: const float v0 = __half2float(in0[idx]);
// CHECK-NEXT: const float v1 = v0 * 0.0999755859f;
// CHECK-NEXT: out0[idx] = __float2half_rn(v1);
// Math functions are the float ones.
// CHECK-LABEL: // k2_sigmoid: sigmoid_f16
// CHECK: const float v0 = __half2float(in0[idx]);
// CHECK-NEXT: const float v1 = 1.0f / (1.0f + expf(-v0));
// CHECK-NEXT: out0[idx] = __float2half_rn(v1);
// CHECK-LABEL: // k3_gelu: gelu_bf16
// CHECK: const float v1 = 0.5f * v0 * (1.0f + tanhf(0.797884561f * (v0 + 0.044715f * v0 * v0 * v0)));
// CHECK-NEXT: out0[idx] = __float2bfloat16_rn(v1);
// A comparison reads 16-bit operands and stores bool, unrounded.
// CHECK-LABEL: // k4_less: less_bf16
// CHECK-NEXT: extern "C" __global__ void k4_less(const __nv_bfloat16* __restrict__ in0, const __nv_bfloat16* __restrict__ in1, bool* __restrict__ out0) {
// CHECK: const bool v2 = (v0 < v1);
// CHECK-NEXT: out0[idx] = v2;
func.func @pointwise(%x: tensor<2x4xbf16>, %b: tensor<4xbf16>, %h: tensor<4xf16>) -> (tensor<2x4xbf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xbf16>, tensor<4xi1>) {
  %tenth = memfit.constant dense<0.1> : tensor<f16>
  %0 = memfit.add %x, %b : tensor<2x4xbf16>, tensor<4xbf16> -> tensor<2x4xbf16> loc("add_bf16")
  %1 = memfit.mul %h, %tenth : tensor<4xf16>, tensor<f16> -> tensor<4xf16> loc("mul_f16")
  %2 = memfit.sigmoid %h : tensor<4xf16> loc("sigmoid_f16")
  %3 = memfit.gelu tanh %b : tensor<4xbf16> loc("gelu_bf16")
  %4 = memfit.less %b, %3 : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xi1> loc("less_bf16")
  return %0, %1, %2, %3, %4 : tensor<2x4xbf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xbf16>, tensor<4xi1>
}

// -----

// A kernel fusing element-wise ops (written by hand) keeps the bf16
// intermediate in a float register: the result is rounded once, at the
// store, not after every op.
// CHECK-LABEL: // k0_mul_add: scale, shift
// CHECK-NEXT: extern "C" __global__ void k0_mul_add(const __nv_bfloat16* __restrict__ in0, const __nv_bfloat16* __restrict__ in1, __nv_bfloat16* __restrict__ out0) {
// CHECK: const float v0 = __bfloat162float(in0[idx]);
// CHECK-NEXT: const float v1 = v0 * 0.5f;
// CHECK-NEXT: const float v2 = __bfloat162float(in1[c1 * 1LL]);
// CHECK-NEXT: const float v3 = v1 + v2;
// CHECK-NEXT: out0[idx] = __float2bfloat16_rn(v3);
// CHECK-NEXT: }
func.func @fused(%x: tensor<2x4xbf16>, %b: tensor<4xbf16>) -> tensor<2x4xbf16> {
  %0 = memfit.kernel(%x, %b) : (tensor<2x4xbf16>, tensor<4xbf16>) -> tensor<2x4xbf16> {
  ^bb0(%a: tensor<2x4xbf16>, %c: tensor<4xbf16>):
    %half = memfit.constant dense<5.000000e-01> : tensor<bf16>
    %m = memfit.mul %a, %half : tensor<2x4xbf16>, tensor<bf16> -> tensor<2x4xbf16> loc("scale")
    %s = memfit.add %m, %c : tensor<2x4xbf16>, tensor<4xbf16> -> tensor<2x4xbf16> loc("shift")
    memfit.yield %s : tensor<2x4xbf16>
  }
  return %0 : tensor<2x4xbf16>
}

// -----

// Casts inside a kernel: to a 16-bit type the value is rounded and held
// widened in a float register (a later use sees the rounded value); from
// one it is the register as it is; f16 to bf16 rounds once from the exact
// float of the f16 value.
// CHECK-LABEL: // k0_cast_cast_cast_4ops: to_bf16, from_bf16, to_f16, f16_to_bf16
// CHECK-NEXT: extern "C" __global__ void k0_cast_cast_cast_4ops(const float* __restrict__ in0, const __half* __restrict__ in1, __nv_bfloat16* __restrict__ out0, float* __restrict__ out1, __half* __restrict__ out2, __nv_bfloat16* __restrict__ out3) {
// CHECK: const float v0 = in0[idx];
// CHECK-NEXT: const float v1 = __bfloat162float(__float2bfloat16_rn((float)v0));
// CHECK-NEXT: const float v2 = (float)v1;
// CHECK-NEXT: const float v3 = __half2float(__float2half_rn((float)v0));
// CHECK-NEXT: const float v4 = __half2float(in1[idx]);
// CHECK-NEXT: const float v5 = __bfloat162float(__float2bfloat16_rn((float)v4));
// CHECK-NEXT: out0[idx] = __float2bfloat16_rn(v1);
// CHECK-NEXT: out1[idx] = v2;
// CHECK-NEXT: out2[idx] = __float2half_rn(v3);
// CHECK-NEXT: out3[idx] = __float2bfloat16_rn(v5);
// Kernels of their own: bf16 -> f32 widens; f32 -> bf16 rounds (storing the
// rounded register rounds again, exactly).
// CHECK-LABEL: // k1_cast: widen_bf16
// CHECK-NEXT: extern "C" __global__ void k1_cast(const __nv_bfloat16* __restrict__ in0, float* __restrict__ out0) {
// CHECK: const float v0 = __bfloat162float(in0[idx]);
// CHECK-NEXT: const float v1 = (float)v0;
// CHECK-NEXT: out0[idx] = v1;
// CHECK-LABEL: // k2_cast: narrow_bf16
// CHECK-NEXT: extern "C" __global__ void k2_cast(const float* __restrict__ in0, __nv_bfloat16* __restrict__ out0) {
// CHECK: const float v1 = __bfloat162float(__float2bfloat16_rn((float)v0));
// CHECK-NEXT: out0[idx] = __float2bfloat16_rn(v1);
func.func @casts(%x: tensor<4xf32>, %h: tensor<4xf16>, %y: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>) {
  %0:4 = memfit.kernel(%x, %h) : (tensor<4xf32>, tensor<4xf16>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xbf16>) {
  ^bb0(%a: tensor<4xf32>, %c: tensor<4xf16>):
    %b = memfit.cast %a : tensor<4xf32> to tensor<4xbf16> loc("to_bf16")
    %f = memfit.cast %b : tensor<4xbf16> to tensor<4xf32> loc("from_bf16")
    %g = memfit.cast %a : tensor<4xf32> to tensor<4xf16> loc("to_f16")
    %k = memfit.cast %c : tensor<4xf16> to tensor<4xbf16> loc("f16_to_bf16")
    memfit.yield %b, %f, %g, %k : tensor<4xbf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xbf16>
  }
  %1 = memfit.cast %y : tensor<4xbf16> to tensor<4xf32> loc("widen_bf16")
  %2 = memfit.cast %x : tensor<4xf32> to tensor<4xbf16> loc("narrow_bf16")
  return %0#0, %0#1, %0#2, %0#3, %1, %2 : tensor<4xbf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// Row kernels and reductions: float accumulators (and float scratch where
// a block takes a row: a bf16 row of 2,100 elements accumulates 8,400
// bytes of float; 1,024 would fit a warp)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: // k0_softmax: softmax_long_bf16
// CHECK-NEXT: extern "C" __global__ void k0_softmax(const __nv_bfloat16* __restrict__ in0, __nv_bfloat16* __restrict__ out0) {
// CHECK-NEXT: __shared__ float scratch[32];
// CHECK-NEXT: const long long row = blockIdx.x;
// CHECK: const float m = memfit_block_max({{pm[0-9]+}}, scratch);
func.func @long_rows(%x: tensor<2x2100xbf16>) -> tensor<2x2100xbf16> {
  %0 = memfit.softmax %x {axis = -1 : i64} : tensor<2x2100xbf16> loc("softmax_long_bf16")
  return %0 : tensor<2x2100xbf16>
}

// -----

// CHECK-LABEL: // k0_softmax: softmax_bf16
// CHECK-NEXT: extern "C" __global__ void k0_softmax(const __nv_bfloat16* __restrict__ in0, __nv_bfloat16* __restrict__ out0) {
// CHECK-NEXT: MEMFIT_WARP_ROWS(row, 4LL) {
// CHECK: MEMFIT_PARTIAL(float, [[M:pm[0-9]+]], __int_as_float((int)0xff800000u));
// CHECK: MEMFIT_LANE([[M]], j0) = memfit_max(MEMFIT_LANE([[M]], j0), __bfloat162float(in0[base + j * 1LL]));
// CHECK: MEMFIT_PARTIAL(float, [[S:ps[0-9]+]], 0);
// CHECK: MEMFIT_LANE([[S]], j0) = MEMFIT_LANE([[S]], j0) + expf(__bfloat162float(in0[base + j * 1LL]) - m);
// CHECK: out0[base + j * 1LL] = __float2bfloat16_rn(expf(__bfloat162float(in0[base + j * 1LL]) - m) / s);
// The scale and the bias widen like the input.
// CHECK-LABEL: // k1_layer_norm: ln_bf16
// CHECK-NEXT: extern "C" __global__ void k1_layer_norm(const __nv_bfloat16* __restrict__ in0, const __nv_bfloat16* __restrict__ in1, const __nv_bfloat16* __restrict__ in2, __nv_bfloat16* __restrict__ out0) {
// CHECK-NEXT: MEMFIT_WARP_ROWS(row, 4LL) {
// CHECK: MEMFIT_PARTIAL(float, [[SUM:ps[0-9]+]], 0);
// CHECK: MEMFIT_LANE([[SUM]], j0) = MEMFIT_LANE([[SUM]], j0) + __bfloat162float(in0[base + j]);
// CHECK: const float mean = memfit_warp_sum([[SUM]]) / 8.0f;
// CHECK: MEMFIT_LANE([[SQ:ps[0-9]+]], j0) = MEMFIT_LANE([[SQ]], j0) + (__bfloat162float(in0[base + j]) - mean) * (__bfloat162float(in0[base + j]) - mean);
// CHECK: const float inv = 1.0f / sqrtf(memfit_warp_sum([[SQ]]) / 8.0f + 9.99999975e-06f);
// CHECK: out0[base + j] = __float2bfloat16_rn((__bfloat162float(in0[base + j]) - mean) * inv * __bfloat162float(in1[j]) + __bfloat162float(in2[j]));
// A broadcast scale [8] of a normalized shape [3,8] widens at its offset.
// CHECK-LABEL: // k2_layer_norm: ln_broadcast_f16
// CHECK: out0[base + j] = __float2half_rn((__half2float(in0[base + j]) - mean) * inv * __half2float(in1[s1 * 1LL]));
// CHECK-LABEL: // k3_rms_norm: rms_f16
// CHECK-NEXT: extern "C" __global__ void k3_rms_norm(const __half* __restrict__ in0, const __half* __restrict__ in1, __half* __restrict__ out0) {
// CHECK-NEXT: MEMFIT_WARP_ROWS(row, 6LL) {
// CHECK: MEMFIT_LANE([[SQ:ps[0-9]+]], j0) = MEMFIT_LANE([[SQ]], j0) + __half2float(in0[base + j]) * __half2float(in0[base + j]);
// CHECK: out0[base + j] = __float2half_rn((__half2float(in0[base + j])) * inv * __half2float(in1[j]));
// CHECK-LABEL: // k4_log_softmax: log_softmax_f16
// CHECK: const float shift = m + logf(s);
// CHECK: out0[base + j * 1LL] = __float2half_rn(__half2float(in0[base + j * 1LL]) - shift);
// CHECK-LABEL: // k5_reduce_sum: sum_bf16
// CHECK-NEXT: extern "C" __global__ void k5_reduce_sum(const __nv_bfloat16* __restrict__ in0, __nv_bfloat16* __restrict__ out0) {
// CHECK-NEXT: MEMFIT_WARP_ROWS(row, 4LL) {
// CHECK: MEMFIT_PARTIAL(float, [[P:ps[0-9]+]], 0);
// CHECK: MEMFIT_LANE([[P]], j0) = MEMFIT_LANE([[P]], j0) + __bfloat162float(in0[base + j]);
// CHECK: const float a = memfit_warp_sum([[P]]);
// CHECK-NEXT: if (MEMFIT_LANE0) out0[row] = __float2bfloat16_rn(a);
// CHECK-LABEL: // k6_reduce_sum: sum_f16
// CHECK: MEMFIT_LANE(p, j) += __half2float(in0[base + r0 * 10LL]);
// CHECK: if (MEMFIT_LANE0) out0[row] = __float2half_rn(a);
// CHECK-LABEL: // k7_reduce_mean: mean_f16
// CHECK: if (MEMFIT_LANE0) out0[row] = __float2half_rn(a / 8.0f);
// CHECK-LABEL: // k8_reduce_max: max_bf16
// CHECK: MEMFIT_PARTIAL(float, [[P:pm[0-9]+]], __int_as_float((int)0xff800000u));
// CHECK: MEMFIT_LANE([[P]], j0) = memfit_max(MEMFIT_LANE([[P]], j0), __bfloat162float(in0[base + j]));
// CHECK: if (MEMFIT_LANE0) out0[row] = __float2bfloat16_rn(a);
func.func @rows(%x: tensor<4x8xbf16>, %g: tensor<8xbf16>, %b: tensor<8xbf16>, %h: tensor<2x3x8xf16>, %hg: tensor<8xf16>, %l: tensor<6x2x5xf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<2x3x8xf16>, tensor<2x3x8xf16>, tensor<2x3x8xf16>, tensor<4x1xbf16>, tensor<2x5xf16>, tensor<2x3xf16>, tensor<4x1xbf16>) {
  %0 = memfit.softmax %x {axis = -1 : i64} : tensor<4x8xbf16> loc("softmax_bf16")
  %1 = memfit.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16> loc("ln_bf16")
  %2 = memfit.layer_norm %h, %hg {axis = 1 : i64} : tensor<2x3x8xf16>, tensor<8xf16> loc("ln_broadcast_f16")
  %3 = memfit.rms_norm %h, %hg {axis = -1 : i64} : tensor<2x3x8xf16>, tensor<8xf16> loc("rms_f16")
  %4 = memfit.log_softmax %h {axis = -1 : i64} : tensor<2x3x8xf16> loc("log_softmax_f16")
  %5 = memfit.reduce_sum %x {axes = array<i64: 1>} : tensor<4x8xbf16> -> tensor<4x1xbf16> loc("sum_bf16")
  %6 = memfit.reduce_sum %l {axes = array<i64: 0>, keepdims = false} : tensor<6x2x5xf16> -> tensor<2x5xf16> loc("sum_f16")
  %7 = memfit.reduce_mean %h {axes = array<i64: -1>, keepdims = false} : tensor<2x3x8xf16> -> tensor<2x3xf16> loc("mean_f16")
  %8 = memfit.reduce_max %x {axes = array<i64: 1>} : tensor<4x8xbf16> -> tensor<4x1xbf16> loc("max_bf16")
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<2x3x8xf16>, tensor<2x3x8xf16>, tensor<2x3x8xf16>, tensor<4x1xbf16>, tensor<2x5xf16>, tensor<2x3xf16>, tensor<4x1xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// Scores and class weights widen; the loss and the weight accumulate in
// float; the mean is rounded once.
// CHECK-LABEL: // k0_softmax_cross_entropy_loss: sce_bf16
// CHECK-NEXT: extern "C" __global__ void k0_softmax_cross_entropy_loss(const __nv_bfloat16* __restrict__ in0, const long long* __restrict__ in1, const __nv_bfloat16* __restrict__ in2, __nv_bfloat16* __restrict__ out0) {
// CHECK-NEXT: __shared__ float scratch[32];
// CHECK-NEXT: MEMFIT_PARTIAL(float, totals, 0);
// CHECK-NEXT: MEMFIT_PARTIAL(float, weights, 0);
// CHECK: float loss = 0, w = 0;
// CHECK: w = __bfloat162float(in2[label]);
// CHECK: for (long long c = 0; c < 10LL; ++c) m = memfit_max(m, __bfloat162float(in0[base + (c) * 1LL]));
// CHECK: for (long long c = 0; c < 10LL; ++c) s += expf(__bfloat162float(in0[base + (c) * 1LL]) - m);
// CHECK-NEXT: loss = (m + logf(s) - __bfloat162float(in0[base + (label) * 1LL])) * w;
// CHECK: if (threadIdx.x == 0) out0[0] = __float2bfloat16_rn(total / weight);
// None: each loss rounded in place.
// CHECK-LABEL: // k1_softmax_cross_entropy_loss: sce_none_bf16
// CHECK: out0[r] = __float2bfloat16_rn(loss);
// The gradient rounds each element once.
// CHECK-LABEL: // k2_softmax_cross_entropy_grad: sce_grad_bf16
// CHECK: const float g = __bfloat162float(in2[0]) / count;
// CHECK: out0[base + j] = __float2bfloat16_rn(valid ? (expf(__bfloat162float(in0[base + j]) - m) / s - (j == label ? 1.0f : 0.0f)) * g : __int_as_float(0x7fc00000));
func.func @losses(%x: tensor<4x10xbf16>, %l: tensor<4xi64>, %w: tensor<10xbf16>, %dl: tensor<bf16>) -> (tensor<bf16>, tensor<4xbf16>, tensor<4x10xbf16>) {
  %0 = memfit.softmax_cross_entropy_loss mean %x, %l, %w {ignore_index = -100 : i64} : (tensor<4x10xbf16>, tensor<4xi64>, tensor<10xbf16>) -> tensor<bf16> loc("sce_bf16")
  %1 = memfit.softmax_cross_entropy_loss none %x, %l : (tensor<4x10xbf16>, tensor<4xi64>) -> tensor<4xbf16> loc("sce_none_bf16")
  %2 = memfit.softmax_cross_entropy_grad mean %x, %l, %dl {ignore_index = -100 : i64} : (tensor<4x10xbf16>, tensor<4xi64>, tensor<bf16>) -> tensor<4x10xbf16> loc("sce_grad_bf16")
  return %0, %1, %2 : tensor<bf16>, tensor<4xbf16>, tensor<4x10xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// Split copies elements as they are, in the buffer type.
// CHECK-LABEL: // k0_split: split_bf16
// CHECK-NEXT: extern "C" __global__ void k0_split(const __nv_bfloat16* __restrict__ in0, __nv_bfloat16* __restrict__ out0, __nv_bfloat16* __restrict__ out1) {
// CHECK: MEMFIT_THREAD_LOOP(idx, 12LL) {
// CHECK: const __nv_bfloat16 v = in0[idx];
// CHECK-NEXT: if (c1 < 2LL) out0[c0 * 2LL + (c1 - 0LL) * 1LL] = v;
// CHECK-NEXT: else if (c1 < 6LL) out1[c0 * 4LL + (c1 - 2LL) * 1LL] = v;
// Pointwise data movement goes through a float register and back, exact
// for every value but NaNs (which become the canonical NaN).
// CHECK-LABEL: // k1_transpose: transpose_f16
// CHECK: const float v0 = __half2float(in0[c0 * 1LL + c1 * 12LL + c2 * 4LL]);
// CHECK-NEXT: out0[idx] = __float2half_rn(v0);
func.func @movement(%x: tensor<2x6xbf16>, %t: tensor<2x3x4xf16>) -> (tensor<2x2xbf16>, tensor<2x4xbf16>, tensor<4x2x3xf16>) {
  %0:2 = memfit.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>} : tensor<2x6xbf16> -> tensor<2x2xbf16>, tensor<2x4xbf16> loc("split_bf16")
  %1 = memfit.transpose %t {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf16> -> tensor<4x2x3xf16> loc("transpose_f16")
  return %0#0, %0#1, %1 : tensor<2x2xbf16>, tensor<2x4xbf16>, tensor<4x2x3xf16>
}

// -----

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// A bf16 gemm's bias is cuBLASLt's bias epilogue (beta 0, the bias the
// step's fourth buffer); its fallback kernel, which a backend without the
// epilogue runs before the product with beta 1, copies it into the result
// in bf16, and the gemm adds the product to it in the contraction's fp32
// accumulation: one rounding. The f16 matmul has no kernel.
// CHECK-LABEL: // k0_gemm_bias: bias of fc_bf16
// CHECK-NEXT: extern "C" __global__ void k0_gemm_bias(const __nv_bfloat16* __restrict__ in0, __nv_bfloat16* __restrict__ out0) {
// CHECK: MEMFIT_THREAD_LOOP(idx, 12LL) {
// CHECK: out0[idx] = in0[c1 * 1LL];
// CHECK-NEXT: }
// CHECK-NOT: __global__
// MANIFEST-LABEL: "name": "c0_gemm",
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "m": 2,
// MANIFEST-NEXT: "n": 6,
// MANIFEST-NEXT: "k": 8,
// MANIFEST-NEXT: "transA": false,
// MANIFEST-NEXT: "transB": true,
// MANIFEST-NEXT: "alpha": 1.0,
// MANIFEST-NEXT: "beta": 0.0,
// MANIFEST: "epilogue": "bias",
// MANIFEST-NEXT: "fallbackKernel": 0,
// MANIFEST-LABEL: "name": "c1_matmul",
// MANIFEST-NEXT: "dtype": "f16",
// MANIFEST-NEXT: "m": 4,
// MANIFEST-NEXT: "n": 5,
// MANIFEST-NEXT: "k": 8,
// MANIFEST-NEXT: "transA": false,
// MANIFEST-NEXT: "transB": false,
// MANIFEST-NEXT: "alpha": 1.0,
// MANIFEST-NEXT: "beta": 0.0,
// MANIFEST-NEXT: "batchShape": [3],
func.func @contractions(%a: tensor<2x8xbf16>, %w: tensor<6x8xbf16>, %c: tensor<6xbf16>, %x: tensor<3x4x8xf16>, %y: tensor<8x5xf16>) -> (tensor<2x6xbf16>, tensor<3x4x5xf16>) {
  %0 = memfit.gemm %a, %w, %c {trans_b = true} : (tensor<2x8xbf16>, tensor<6x8xbf16>, tensor<6xbf16>) -> tensor<2x6xbf16> loc("fc_bf16")
  %1 = memfit.matmul %x, %y : tensor<3x4x8xf16>, tensor<8x5xf16> -> tensor<3x4x5xf16> loc("mm_f16")
  return %0, %1 : tensor<2x6xbf16>, tensor<3x4x5xf16>
}
