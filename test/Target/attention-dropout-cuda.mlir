// The CUDA C++ of memfit.attention and its gradient ops with a dropout on
// the probabilities: each pair's keep test is memfit.dropout's
// memfit_dropout_keep, with the seed and stream combined as memfit.dropout
// combines them (seed * 1000003 + stream), of the step (the dropout_step
// operand's element, 0 without one) and of the pair's flat index in the
// [B, Hq, S, T] probabilities (query row * T + key). A ratio of 0 writes
// the kernels of attention-cuda.mlir: no keep test.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels \
// RUN:   | memfit-translate -split-input-file --memfit-to-cuda | FileCheck %s
//
// The whole file as one module, one source: it compiles with g++ through
// the host backend's emulation header and, where NVRTC is, to CUBIN for
// sm_80 and sm_90.
// RUN: memfit-opt %s --memfit-form-kernels | memfit-translate --memfit-to-cuda -o %t.cu
// RUN: %cxx -std=c++17 -fsyntax-only -w \
// RUN:   -include %memfit_src_root/runtime/src/host/memfit_cuda_host.h -include %memfit_src_root/runtime/src/host/memfit_thread_loops.h -x c++ %t.cu
// RUN: %if nvrtc %{ memfit-nvrtc --arch=sm_80 --arch=sm_90 %t.cu | FileCheck %s --check-prefix=NVRTC %}
// NVRTC: sm_80: {{[1-9][0-9]*}} bytes of CUBIN
// NVRTC-NEXT: sm_90: {{[1-9][0-9]*}} bytes of CUBIN

// The forward, bf16, uniform_hidden_rows: a dropped key adds no value; the
// row's sum of exponentials (and so its log-sum-exp) counts every key; the
// kept values' sum is scaled by 1 / (1 - 0.1) with the output. A row that
// sees no key averages the kept values of all 8 keys.
// CHECK-LABEL: __global__ void k0_attention(
// CHECK: const float p = expf(s[jj] - mNew);
// CHECK-NEXT: l += p;
// CHECK-NEXT: if (!memfit_dropout_keep(3000014ull, 0LL, t * 8LL + j0 + jj, 0.100000001f)) continue;
// CHECK-NEXT: for (int e = 0; e < 16; ++e) o[e] += p * __bfloat162float(in2[(kv + j0 + jj) * 16LL + e]);
// CHECK: if (l == 0) {
// CHECK-NEXT: for (long long j = 0; j < 8LL; ++j) {
// CHECK-NEXT: if (!memfit_dropout_keep(3000014ull, 0LL, t * 8LL + j, 0.100000001f)) continue;
// CHECK-NEXT: for (int e = 0; e < 16; ++e) o[e] += __bfloat162float(in2[(kv + j) * 16LL + e]);
// CHECK-NEXT: }
// CHECK-NEXT: l = 8;
// CHECK: const float inv = l > 0 ? 1.11111111f / l : 0;
// CHECK-NEXT: out0[t * 16LL + e] = __float2bfloat16_rn(o[e] * inv);
// CHECK-NEXT: out1[t] = l > 0 ? (float)(m + logf(l)) : __int_as_float((int)0xff800000u);
func.func @attention(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xbf16>, %m: tensor<1x1x1x8xi1>) -> (tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>) {
  %o, %lse = memfit.attention causal uniform_hidden_rows %q, %k, %v mask %m scale 0.25 {dropout_ratio = 0.1 : f32, dropout_seed = 3 : i64, dropout_stream = 5 : i64} : (tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x1x1x8xi1>) -> (tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>)
  return %o, %lse : tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
}

// -----

// The gradients, no seed (stream 9 alone), of the step %s (kernel input
// 6, after the mask-less operands): the pair's factor z (1 / (1 -
// 0.25) kept, 0 dropped) scales dresult . value and the pair's share of
// dvalue; ds = p * (dp - delta) with the undropped p. The queries' kernel
// indexes the pair by its row t, the keys' kernel by the query row r.
// CHECK-LABEL: __global__ void k0_attention_grad_query(
// CHECK: const float p = expf(x - lse);
// CHECK: const float dpv = (((dpv0 + dpv1) + (dpv2 + dpv3)) + ((dpv4 + dpv5) + (dpv6 + dpv7)));
// CHECK-NEXT: const float z = memfit_dropout_keep(9ull, in6[0], t * 4LL + j, 0.25f) ? 1.33333333f : 0.0f;
// CHECK-NEXT: const float dp = dpv * z;
// CHECK-NEXT: const float ds = p * (dp - delta);
// CHECK-LABEL: __global__ void k1_attention_grad_key_value(
// CHECK: p = expf(x - lse);
// CHECK: const float dpv = (((dpv0 + dpv1) + (dpv2 + dpv3)) + ((dpv4 + dpv5) + (dpv6 + dpv7)));
// CHECK-NEXT: const float z = memfit_dropout_keep(9ull, in6[0], r * 4LL + j, 0.25f) ? 1.33333333f : 0.0f;
// CHECK-NEXT: const float dp = dpv * z;
// CHECK-NEXT: const float pz = p * z;
// CHECK-NEXT: for (int e = 0; e < 8; ++e) dv[e] += pz * (float)in5[r * 8LL + e];
// CHECK-NEXT: const float ds = p * (dp - (float)in4[r]);
func.func @grads(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>, %delta: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf32>, %s: tensor<i64>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %dq = memfit.attention_grad_query causal %q, %k, %v, %lse, %delta, %do dropout_step %s scale 0.5 {dropout_ratio = 0.25 : f32, dropout_stream = 9 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<i64>) -> tensor<1x2x4x8xf32>
  %dk, %dv = memfit.attention_grad_key_value causal %q, %k, %v, %lse, %delta, %do dropout_step %s scale 0.5 {dropout_ratio = 0.25 : f32, dropout_stream = 9 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<i64>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// A ratio of 0 (a seed and stream notwithstanding) is no dropout.
// CHECK-LABEL: __global__ void k0_attention(
// CHECK-NOT: memfit_dropout_keep
// CHECK: const float inv = l > 0 ? 1 / l : 0;
// CHECK-NOT: memfit_dropout_keep
// CHECK: }
func.func @ratio_zero(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) {
  %o, %lse = memfit.attention %q, %k, %v scale 0.5 {dropout_ratio = 0.0 : f32, dropout_seed = 3 : i64, dropout_stream = 5 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return %o, %lse : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
}
