// The CUDA C++ of memfit.attention and its gradient ops: one thread per
// query row (forward, dquery) or key row (dkey, dvalue), no score stored.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels \
// RUN:   | memfit-translate -split-input-file --memfit-to-cuda | FileCheck %s

// Causal, 4 query heads over 2 key heads, a key padding mask [1,1,1,T],
// bf16 with f32 registers: the keys in tiles of 32 with one rescale of the
// running sum and output per tile; the log-sum-exp written in f32.
// CHECK-LABEL: __global__ void k0_attention(const __nv_bfloat16* __restrict__ in0, const __nv_bfloat16* __restrict__ in1, const __nv_bfloat16* __restrict__ in2, const bool* __restrict__ in3, __nv_bfloat16* __restrict__ out0, float* __restrict__ out1)
// CHECK: const long long kv = (b * 2LL + h / 2LL) * 8LL;
// CHECK-NEXT: const long long keyEnd = i + 1 < 8LL ? i + 1 : 8LL;
// CHECK: for (long long j0 = 0; j0 < keyEnd; j0 += 32) {
// CHECK: if (!in3[j * 1LL]) continue;
// CHECK: float dot0 = 0, dot1 = 0, dot2 = 0, dot3 = 0, dot4 = 0, dot5 = 0, dot6 = 0, dot7 = 0;
// CHECK-NEXT: for (int k = 0; k < 16; k += 8) {
// CHECK-NEXT: dot0 += q[k + 0] * __bfloat162float(in1[(kv + j) * 16LL + k + 0]);
// CHECK: dot7 += q[k + 7] * __bfloat162float(in1[(kv + j) * 16LL + k + 7]);
// CHECK-NEXT: }
// CHECK-NEXT: const float dot = (((dot0 + dot1) + (dot2 + dot3)) + ((dot4 + dot5) + (dot6 + dot7)));
// CHECK-NEXT: const float x = dot * 0.25f;
// CHECK: const float mNew = memfit_max(m, tileMax);
// CHECK-NEXT: const float c = expf(m - mNew);
// CHECK: out0[t * 16LL + e] = __float2bfloat16_rn(o[e] * inv);
// CHECK-NEXT: out1[t] = l > 0 ? (float)(m + logf(l)) : __int_as_float((int)0xff800000u);
func.func @attention(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xbf16>, %m: tensor<1x1x1x8xi1>) -> (tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>) {
  %o, %lse = memfit.attention causal %q, %k, %v mask %m scale 0.25 : (tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x1x1x8xi1>) -> (tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>)
  return %o, %lse : tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
}

// -----

// An additive mask [S, T] of the queries' type; the probabilities
// recomputed from the log-sum-exp; dquery scaled once at the end.
// CHECK-LABEL: __global__ void k0_attention_grad_query(
// CHECK: const float lse = (float)in3[t];
// CHECK-NEXT: const float delta = (float)in4[t];
// CHECK: dot0 += q[k + 0] * (float)in1[(kv + j) * 8LL + k + 0];
// CHECK: const float x = dot * 0.5f + (float)in6[i * 4LL + j * 1LL];
// CHECK-NEXT: if (x == __int_as_float((int)0xff800000u)) continue;
// CHECK-NEXT: const float p = expf(x - lse);
// CHECK: const float ds = p * (dp - delta);
// CHECK: out0[t * 8LL + c] = dq[c] * 0.5f;
// Each key row goes over the queries that see it (i >= j) of each head of
// its group; rows that saw no key (log-sum-exp -inf) add nothing.
// CHECK-LABEL: __global__ void k1_attention_grad_key_value(
// CHECK: for (long long h = hk * 1LL; h < (hk + 1) * 1LL; ++h) {
// CHECK: for (long long i = j; i < 4LL; ++i) {
// CHECK: if (lse == __int_as_float((int)0xff800000u)) continue;
// CHECK: dp0 += vr[k + 0] * (float)in5[r * 8LL + k + 0];
// CHECK: for (int e = 0; e < 8; ++e) dv[e] += p * (float)in5[r * 8LL + e];
// CHECK: out0[t * 8LL + c] = dk[c] * 0.5f;
// CHECK-NEXT: out1[t * 8LL + e] = dv[e];
func.func @grads(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>, %delta: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf32>, %m: tensor<4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %dq = memfit.attention_grad_query causal %q, %k, %v, %lse, %delta, %do mask %m scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  %dk, %dv = memfit.attention_grad_key_value causal %q, %k, %v, %lse, %delta, %do mask %m scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// uniform_hidden_rows: a row that sees no key averages every value and
// gets a log-sum-exp of +inf, from which the gradient ops take p = 1 / T
// for every key, the ones before the diagonal too.
// CHECK-LABEL: __global__ void k0_attention(
// CHECK: if (l == 0) {
// CHECK-NEXT: for (long long j = 0; j < 4LL; ++j)
// CHECK: l = 4;
// CHECK-NEXT: m = __int_as_float(0x7f800000);
// CHECK-LABEL: __global__ void k1_attention_grad_query(
// CHECK: if (lse == __int_as_float(0x7f800000))
// CHECK-NEXT: for (long long j = 0; j < 4LL; ++j) {
// CHECK: const float ds = (dp - delta) / 4;
// CHECK: else
// CHECK-NEXT: if (lse != __int_as_float((int)0xff800000u))
// CHECK-LABEL: __global__ void k2_attention_grad_key_value(
// CHECK: for (long long i = 0; i < 4LL; ++i) {
// CHECK: float p = 1.0f / 4;
// CHECK-NEXT: if (lse != __int_as_float(0x7f800000)) {
// CHECK-NEXT: if (i < j) continue;
func.func @uniform(%q: tensor<1x2x4x8xf32>, %m: tensor<1x1x1x4xi1>, %do: tensor<1x2x4x8xf32>, %delta: tensor<1x2x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %o, %lse = memfit.attention causal uniform_hidden_rows %q, %q, %q mask %m scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  %dq = memfit.attention_grad_query causal uniform_hidden_rows %q, %q, %q, %lse, %delta, %do mask %m scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xi1>) -> tensor<1x2x4x8xf32>
  %dk, %dv = memfit.attention_grad_key_value causal uniform_hidden_rows %q, %q, %q, %lse, %delta, %do mask %m scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return %o, %dq, %dk, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
