// The CUDA C++ of each kind of kernel. Only the lines that carry an op's
// semantics are checked: index mappings, math functions, accumulators.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --mlir-print-debuginfo \
// RUN:   | memfit-translate -split-input-file --memfit-to-cuda | FileCheck %s
//
// The comment above each kernel lists the ONNX nodes (the NameLoc names) it
// computes; kernels are numbered in schedule order, from 0 in each function.

//===----------------------------------------------------------------------===//
// Element-wise (pointwise kernels: one thread per element of the result)
//===----------------------------------------------------------------------===//

// The prelude, once per source: the helpers the kernels call.
// CHECK: // Helpers shared by the kernels below.
// CHECK: static __device__ __forceinline__ float memfit_max(float a, float b)
// CHECK: static __device__ __forceinline__ double memfit_max(double a, double b)
// CHECK: static __device__ __forceinline__ long long memfit_max(long long a, long long b)
// CHECK: template <typename T> static __device__ __forceinline__ T memfit_warp_sum(T v)
// CHECK: template <typename T> static __device__ __forceinline__ T memfit_block_sum(T v, T* scratch)
// CHECK: template <typename T> static __device__ __forceinline__ T memfit_block_max(T v, T* scratch)
// CHECK: static __device__ __forceinline__ bool memfit_dropout_keep(unsigned long long seed, long long step, long long i, float ratio)

// A [4] operand against a [2,4] result reads at the last coordinate only; a
// scalar operand reads element 0.
// CHECK-LABEL: // k0_add: add_node
// CHECK-NEXT: extern "C" __global__ void k0_add(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0) {
// CHECK-NEXT: MEMFIT_THREAD_LOOP(idx, 8LL) {
// CHECK-NEXT: const long long c0 = (long long)((unsigned)(idx) / 4U);
// CHECK-NEXT: const long long c1 = (long long)((unsigned)(idx) / 1U % 4U);
// CHECK-NEXT: const float v0 = in0[idx];
// CHECK-NEXT: const float v1 = in1[c1 * 1LL];
// CHECK-NEXT: const float v2 = v0 + v1;
// CHECK-NEXT: out0[idx] = v2;
// CHECK-NEXT: }
// CHECK-LABEL: // k1_mul: mul_node
// CHECK: const float v1 = in1[0];
// CHECK-NEXT: const float v2 = v0 * v1;
// A [2,1] operand broadcasts along its dimension of 1.
// CHECK-LABEL: // k2_sub: sub_node
// CHECK: const float v0 = in0[idx];
// CHECK-NEXT: const float v1 = in1[c0 * 1LL];
// CHECK-NEXT: const float v2 = v0 - v1;
func.func @broadcasting(%x: tensor<2x4xf32>, %b: tensor<4xf32>, %s: tensor<f32>, %col: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = memfit.add %x, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32> loc("add_node")
  %1 = memfit.mul %0, %s : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32> loc("mul_node")
  %2 = memfit.sub %1, %col : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32> loc("sub_node")
  return %2 : tensor<2x4xf32>
}

// -----

// From 2^31 elements the coordinates divide in 64 bits (an index past the
// last element of a block would not fit 32); below, in 32. A block of 256
// threads never crosses an innermost dimension of 65,536: the outer
// coordinates are the block's first element's, the innermost is that one's
// plus the thread's distance from it (a bias read as a vector on the host).
// CHECK-LABEL: // k0_add: wide
// CHECK-NEXT: extern "C" __global__ void k0_add(
// CHECK-NEXT: MEMFIT_THREAD_LOOP(idx, 2147483648LL) {
// CHECK-NEXT: const long long c0 = (long long)((unsigned long long)((long long)blockIdx.x * blockDim.x) / 65536ULL);
// CHECK-NEXT: const long long c1 = (long long)((unsigned long long)((long long)blockIdx.x * blockDim.x) % 65536ULL) + (idx - ((long long)blockIdx.x * blockDim.x));
// CHECK-NEXT: const float v0 = in0[idx];
// CHECK-NEXT: const float v1 = in1[c1 * 1LL];
// CHECK-LABEL: // k1_add: narrow
// CHECK-NEXT: extern "C" __global__ void k1_add(
// CHECK-NEXT: MEMFIT_THREAD_LOOP(idx, 2147418112LL) {
// CHECK-NEXT: const long long c0 = (long long)((unsigned)((long long)blockIdx.x * blockDim.x) / 65536U);
// CHECK-NEXT: const long long c1 = (long long)((unsigned)((long long)blockIdx.x * blockDim.x) % 65536U) + (idx - ((long long)blockIdx.x * blockDim.x));
// An innermost dimension that a block can cross (6): coordinates of the
// index itself.
// CHECK-LABEL: // k2_add: crossing
// CHECK-NEXT: extern "C" __global__ void k2_add(
// CHECK-NEXT: MEMFIT_THREAD_LOOP(idx, 600LL) {
// CHECK-NEXT: const long long c0 = (long long)((unsigned)(idx) / 6U);
// CHECK-NEXT: const long long c1 = (long long)((unsigned)(idx) / 1U % 6U);
func.func @wide(%x: tensor<32768x65536xf32>, %b: tensor<65536xf32>, %y: tensor<32767x65536xf32>, %z: tensor<100x6xf32>, %c: tensor<6xf32>) -> (tensor<32768x65536xf32>, tensor<32767x65536xf32>, tensor<100x6xf32>) {
  %0 = memfit.add %x, %b : tensor<32768x65536xf32>, tensor<65536xf32> -> tensor<32768x65536xf32> loc("wide")
  %1 = memfit.add %y, %b : tensor<32767x65536xf32>, tensor<65536xf32> -> tensor<32767x65536xf32> loc("narrow")
  %2 = memfit.add %z, %c : tensor<100x6xf32>, tensor<6xf32> -> tensor<100x6xf32> loc("crossing")
  return %0, %1, %2 : tensor<32768x65536xf32>, tensor<32767x65536xf32>, tensor<100x6xf32>
}

// -----

// CHECK-LABEL: // k0_exp: exp
// CHECK: const float v1 = expf(v0);
// CHECK-LABEL: // k1_log: log
// CHECK: const float v1 = logf(v0);
// CHECK-LABEL: // k2_sqrt: sqrt
// CHECK: const float v1 = sqrtf(v0);
// CHECK-LABEL: // k3_erf: erf
// CHECK: const float v1 = erff(v0);
// CHECK-LABEL: // k4_tanh: tanh
// CHECK: const float v1 = tanhf(v0);
// CHECK-LABEL: // k5_sigmoid: sigmoid
// CHECK: const float v1 = 1.0f / (1.0f + expf(-v0));
// CHECK-LABEL: // k6_relu: relu
// CHECK: const float v1 = ((v0 > (float)0 || v0 != v0) ? v0 : (float)0);
// CHECK-LABEL: // k7_sin: sin
// CHECK: const float v1 = sinf(v0);
// CHECK-LABEL: // k8_cos: cos
// CHECK: const float v1 = cosf(v0);
// CHECK-LABEL: // k9_neg: neg
// CHECK: const float v1 = -v0;
// CHECK-LABEL: // k10_reciprocal: reciprocal
// CHECK: const float v1 = 1.0f / v0;
// CHECK-LABEL: // k11_pow: pow
// CHECK: const float v1 = powf(v0, 2.0f);
func.func @unary(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %two = memfit.constant dense<2.0> : tensor<f32>
  %0 = memfit.exp %x : tensor<4xf32> loc("exp")
  %1 = memfit.log %x : tensor<4xf32> loc("log")
  %2 = memfit.sqrt %x : tensor<4xf32> loc("sqrt")
  %3 = memfit.erf %x : tensor<4xf32> loc("erf")
  %4 = memfit.tanh %x : tensor<4xf32> loc("tanh")
  %5 = memfit.sigmoid %x : tensor<4xf32> loc("sigmoid")
  %6 = memfit.relu %x : tensor<4xf32> loc("relu")
  %7 = memfit.sin %x : tensor<4xf32> loc("sin")
  %8 = memfit.cos %x : tensor<4xf32> loc("cos")
  %9 = memfit.neg %x : tensor<4xf32> loc("neg")
  %10 = memfit.reciprocal %x : tensor<4xf32> loc("reciprocal")
  %11 = memfit.pow %x, %two : tensor<4xf32>, tensor<f32> -> tensor<4xf32> loc("pow")
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// f64 calls the double functions and writes double literals.
// CHECK-LABEL: // k0_exp: exp64
// CHECK-NEXT: extern "C" __global__ void k0_exp(const double* __restrict__ in0, double* __restrict__ out0) {
// CHECK: const double v1 = exp(v0);
// CHECK-LABEL: // k1_sigmoid: sigmoid64
// CHECK: const double v1 = 1.0 / (1.0 + exp(-v0));
// CHECK-LABEL: // k2_log: log64
// CHECK: const double v1 = log(v0);
// CHECK-LABEL: // k3_pow: pow64
// CHECK: const double v2 = pow(v0, v1);
func.func @f64(%x: tensor<4xf64>, %y: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  %0 = memfit.exp %x : tensor<4xf64> loc("exp64")
  %1 = memfit.sigmoid %x : tensor<4xf64> loc("sigmoid64")
  %2 = memfit.log %x : tensor<4xf64> loc("log64")
  %3 = memfit.pow %x, %y : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64> loc("pow64")
  return %0, %1, %2, %3 : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}

// -----

// gelu none: x/2 (1 + erf(x / sqrt 2)); tanh: x/2 (1 + tanh(sqrt(2/pi)
// (x + 0.044715 x^3))).
// CHECK-LABEL: // k0_gelu: gelu_erf
// CHECK: const float v1 = 0.5f * v0 * (1.0f + erff(v0 * 0.707106781f));
// CHECK-LABEL: // k1_gelu: gelu_tanh
// CHECK: const float v1 = 0.5f * v0 * (1.0f + tanhf(0.797884561f * (v0 + 0.044715f * v0 * v0 * v0)));
// CHECK-LABEL: // k2_gelu: gelu_tanh64
// CHECK: const double v1 = 0.5 * v0 * (1.0 + tanh(0.79788456080286541 * (v0 + 0.044714999999999998 * v0 * v0 * v0)));
func.func @gelu(%x: tensor<4xf32>, %y: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf64>) {
  %0 = memfit.gelu none %x : tensor<4xf32> loc("gelu_erf")
  %1 = memfit.gelu tanh %x : tensor<4xf32> loc("gelu_tanh")
  %2 = memfit.gelu tanh %y : tensor<4xf64> loc("gelu_tanh64")
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf64>
}

// -----

// Dropout keeps an element by a hash of the seed, the step (0 without a
// step operand; a constant step is a literal, a step input its element)
// and its index and scales the kept ones by 1 / (1 - ratio); its mask is
// the same keep test.
// CHECK-LABEL: // k0_dropout: dropout
// CHECK: const float v1 = (memfit_dropout_keep(7000042ull, 0LL, idx, 0.25f) ? v0 * 1.33333333f : (float)0);
// CHECK-LABEL: // k1_dropout: stepped
// CHECK: const float v1 = (memfit_dropout_keep(7000042ull, ((long long)5LL), idx, 0.25f) ? v0 * 1.33333333f : (float)0);
// CHECK-LABEL: // k2_dropout_mask: mask
// CHECK: const long long v1 = in1[0];
// CHECK-NEXT: const bool v2 = memfit_dropout_keep(7000042ull, v1, idx, 0.25f);
func.func @dropout(%x: tensor<4xf32>, %s: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
  %0 = memfit.dropout %x {ratio = 2.500000e-01 : f32, seed = 7 : i64, stream = 21 : i64} : tensor<4xf32> loc("dropout")
  %c5 = memfit.constant dense<5> : tensor<i64>
  %1 = memfit.dropout %x step %c5 {ratio = 2.500000e-01 : f32, seed = 7 : i64, stream = 21 : i64} : tensor<4xf32> loc("stepped")
  %2 = memfit.dropout_mask %x step %s {ratio = 2.500000e-01 : f32, seed = 7 : i64, stream = 21 : i64} : tensor<4xf32> -> tensor<4xi1> loc("mask")
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi1>
}

// -----

// CHECK-LABEL: // k0_cast: to_bool
// CHECK-NEXT: extern "C" __global__ void k0_cast(const float* __restrict__ in0, bool* __restrict__ out0) {
// CHECK: const bool v1 = (v0 != 0);
// CHECK-LABEL: // k1_cast: from_bool
// CHECK-NEXT: extern "C" __global__ void k1_cast(const bool* __restrict__ in0, float* __restrict__ out0) {
// CHECK: const float v1 = (v0 ? (float)1 : (float)0);
// CHECK-LABEL: // k2_cast: to_int
// CHECK-NEXT: extern "C" __global__ void k2_cast(const float* __restrict__ in0, long long* __restrict__ out0) {
// CHECK: const long long v1 = (long long)v0;
// CHECK-LABEL: // k3_cast: to_f64
// CHECK: const double v1 = (double)v0;
// CHECK-LABEL: // k4_cast: to_i32
// CHECK-NEXT: extern "C" __global__ void k4_cast(const long long* __restrict__ in0, int* __restrict__ out0) {
// CHECK: const int v1 = (int)v0;
func.func @cast(%x: tensor<4xf32>, %b: tensor<4xi1>, %i: tensor<4xi64>) -> (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>, tensor<4xf64>, tensor<4xi32>) {
  %0 = memfit.cast %x : tensor<4xf32> to tensor<4xi1> loc("to_bool")
  %1 = memfit.cast %b : tensor<4xi1> to tensor<4xf32> loc("from_bool")
  %2 = memfit.cast %x : tensor<4xf32> to tensor<4xi64> loc("to_int")
  %3 = memfit.cast %x : tensor<4xf32> to tensor<4xf64> loc("to_f64")
  %4 = memfit.cast %i : tensor<4xi64> to tensor<4xi32> loc("to_i32")
  return %0, %1, %2, %3, %4 : tensor<4xi1>, tensor<4xf32>, tensor<4xi64>, tensor<4xf64>, tensor<4xi32>
}

// -----

// Three-way broadcasting; the splat -inf is a literal.
// CHECK-LABEL: // k0_where: where
// CHECK-NEXT: extern "C" __global__ void k0_where(const bool* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0) {
// CHECK: const bool v0 = (*(const unsigned char *)&in0[c1 * 4LL + c2 * 1LL] != 0);
// CHECK-NEXT: const float v1 = in1[idx];
// CHECK-NEXT: const float v2 = (v0 ? v1 : __int_as_float((int)0xff800000u));
func.func @where(%m: tensor<4x4xi1>, %x: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %ninf = memfit.constant dense<0xFF800000> : tensor<f32>
  %0 = memfit.where %m, %x, %ninf : tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32> -> tensor<2x4x4xf32> loc("where")
  return %0 : tensor<2x4x4xf32>
}

// -----

// Trilu compares the diagonal offset (column - row) of the last two
// coordinates with k.
// CHECK-LABEL: // k0_trilu: triu
// CHECK: const long long c1 = (long long)((unsigned)(idx) / 4U % 4U);
// CHECK-NEXT: const long long c2 = (long long)((unsigned)(idx) / 1U % 4U);
// CHECK: const float v1 = ((c2 - c1) >= 1LL ? v0 : (float)0);
// CHECK-LABEL: // k1_trilu: tril
// CHECK: const float v1 = ((c2 - c1) <= 0LL ? v0 : (float)0);
// A negative k is a signed literal (regression: it printed as 2^64 - 1).
// CHECK-LABEL: // k2_trilu: tril_below
// CHECK: const float v1 = ((c2 - c1) <= (-1LL) ? v0 : (float)0);
func.func @trilu(%x: tensor<3x4x4xf32>) -> (tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>) {
  %0 = memfit.trilu %x {upper = true, k = 1 : i64} : tensor<3x4x4xf32> loc("triu")
  %1 = memfit.trilu %x {upper = false} : tensor<3x4x4xf32> loc("tril")
  %2 = memfit.trilu %x {upper = false, k = -1 : i64} : tensor<3x4x4xf32> loc("tril_below")
  return %0, %1, %2 : tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>
}

// -----

// CHECK-LABEL: // k0_equal: eq
// CHECK-NEXT: extern "C" __global__ void k0_equal(const float* __restrict__ in0, const float* __restrict__ in1, bool* __restrict__ out0) {
// CHECK: const bool v2 = (v0 == v1);
// CHECK-LABEL: // k1_less: lt
// CHECK: const bool v2 = (v0 < v1);
// CHECK-LABEL: // k2_greater: gt
// CHECK: const bool v2 = (v0 > v1);
// CHECK-LABEL: // k3_not: not
// CHECK: const bool v1 = !v0;
func.func @compare(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = memfit.equal %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1> loc("eq")
  %1 = memfit.less %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1> loc("lt")
  %2 = memfit.greater %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1> loc("gt")
  %3 = memfit.not %0 : tensor<4xi1> loc("not")
  return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Integer arithmetic in long long; an integer splat is a typed literal.
// CHECK-LABEL: // k0_sub: isub
// CHECK-NEXT: extern "C" __global__ void k0_sub(const long long* __restrict__ in0, const long long* __restrict__ in1, long long* __restrict__ out0) {
// CHECK: const long long v0 = in0[idx];
// CHECK-NEXT: const long long v1 = in1[idx];
// CHECK-NEXT: const long long v2 = v0 - v1;
// CHECK-LABEL: // k1_div: idiv
// CHECK: const long long v2 = memfit_idiv((long long)v0, (long long)v1);
// CHECK-LABEL: // k2_mul: imul
// CHECK-NEXT: extern "C" __global__ void k2_mul(const long long* __restrict__ in0, long long* __restrict__ out0) {
// CHECK: const long long v1 = v0 * ((long long)(-3LL));
func.func @int64(%x: tensor<4xi64>, %y: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
  %c = memfit.constant dense<-3> : tensor<i64>
  %0 = memfit.sub %x, %y : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64> loc("isub")
  %1 = memfit.div %x, %y : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64> loc("idiv")
  %2 = memfit.mul %x, %c : tensor<4xi64>, tensor<i64> -> tensor<4xi64> loc("imul")
  return %0, %1, %2 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
}

// -----

// A kernel fusing element-wise ops (written by hand: fusion is a later pass)
// composes them as scalar expressions over one thread per element, and lists
// every node in its comment.
// CHECK-LABEL: // k0_mul_add: scale, shift
// CHECK-NEXT: extern "C" __global__ void k0_mul_add(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0, float* __restrict__ out1) {
// CHECK: const float v0 = in0[idx];
// CHECK-NEXT: const float v1 = v0 * 0.5f;
// CHECK-NEXT: const float v2 = in1[c1 * 1LL];
// CHECK-NEXT: const float v3 = v1 + v2;
// CHECK-NEXT: out0[idx] = v1;
// CHECK-NEXT: out1[idx] = v3;
func.func @fused(%x: tensor<2x4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0:2 = memfit.kernel(%x, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  ^bb0(%a: tensor<2x4xf32>, %c: tensor<4xf32>):
    %half = memfit.constant dense<5.000000e-01> : tensor<f32>
    %m = memfit.mul %a, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32> loc("scale")
    %s = memfit.add %m, %c : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32> loc("shift")
    memfit.yield %m, %s : tensor<2x4xf32>, tensor<2x4xf32>
  }
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Data movement (pointwise kernels reading at a mapped index)
//===----------------------------------------------------------------------===//

// Output dimension d reads input dimension perm[d]: input [2,3,4] has
// strides [12,4,1], so perm [2,0,1] gives strides [1,12,4].
// CHECK-LABEL: // k0_transpose: transpose
// CHECK: MEMFIT_THREAD_LOOP(idx, 24LL) {
// CHECK-NEXT: const long long c0 = (long long)((unsigned)(idx) / 6U);
// CHECK-NEXT: const long long c1 = (long long)((unsigned)(idx) / 3U % 2U);
// CHECK-NEXT: const long long c2 = (long long)((unsigned)(idx) / 1U % 3U);
// CHECK-NEXT: const float v0 = in0[c0 * 1LL + c1 * 12LL + c2 * 4LL];
// CHECK-NEXT: out0[idx] = v0;
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = memfit.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32> loc("transpose")
  return %0 : tensor<4x2x3xf32>
}

// -----

// Rotary embeddings: element c2 of the last dimension (8) reads x at c2 and
// at its partner p0 (c2 + 4 below 4, else c2 - 4), cos and sin broadcast
// over the first dimension (stride 0). Forward: x cos - x[p] sin below the
// middle, + above; the inverse (the gradient) reads sin at the partner and
// has the signs the other way round.
// CHECK-LABEL: // k0_rotary: rope
// CHECK: const long long c2 = (long long)((unsigned)(idx) / 1U % 8U);
// CHECK-NEXT: const long long p0 = c2 < 4LL ? c2 + 4LL : c2 - 4LL;
// CHECK-NEXT: const float v1 = (in0[c0 * 24LL + c1 * 8LL + c2 * 1LL] * in1[c0 * 0LL + c1 * 8LL + c2 * 1LL] + (c2 < 4LL ? -(in0[c0 * 24LL + c1 * 8LL + p0 * 1LL] * in2[c0 * 0LL + c1 * 8LL + c2 * 1LL]) : (in0[c0 * 24LL + c1 * 8LL + p0 * 1LL] * in2[c0 * 0LL + c1 * 8LL + c2 * 1LL])));
// CHECK-LABEL: // k1_rotary: rope_grad
// CHECK: const float v1 = (in0[c0 * 24LL + c1 * 8LL + c2 * 1LL] * in1[c0 * 0LL + c1 * 8LL + c2 * 1LL] + (c2 < 4LL ? (in0[c0 * 24LL + c1 * 8LL + p0 * 1LL] * in2[c0 * 0LL + c1 * 8LL + p0 * 1LL]) : -(in0[c0 * 24LL + c1 * 8LL + p0 * 1LL] * in2[c0 * 0LL + c1 * 8LL + p0 * 1LL])));
func.func @rotary(%x: tensor<2x3x8xf32>, %cos: tensor<3x8xf32>, %sin: tensor<3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %0 = memfit.rotary %x, %cos, %sin : tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> loc("rope")
  %1 = memfit.rotary %x, %cos, %sin {inverse} : tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> loc("rope_grad")
  return %0, %1 : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}

// -----

// starts -1, ends 0, step -2 on a dimension of 10 takes 9, 7, 5, 3, 1.
// CHECK-LABEL: // k0_slice: slice
// CHECK: MEMFIT_THREAD_LOOP(idx, 20LL) {
// CHECK: const float v0 = in0[(0LL + c0 * 1LL) * 10LL + (9LL + c1 * -2LL) * 1LL];
func.func @slice(%x: tensor<4x10xf32>) -> tensor<4x5xf32> {
  %0 = memfit.slice %x {starts = array<i64: -1>, ends = array<i64: 0>, axes = array<i64: 1>, steps = array<i64: -2>} : tensor<4x10xf32> -> tensor<4x5xf32> loc("slice")
  return %0 : tensor<4x5xf32>
}

// -----

// A negative index counts from the back; an index still out of range is
// recorded in the index-error word (the run fails) and reads zero.
// CHECK-LABEL: // k0_gather: embed
// CHECK-NEXT: extern "C" __global__ void k0_gather(const float* __restrict__ in0, const long long* __restrict__ in1, float* __restrict__ out0, unsigned long long* memfit_err) {
// CHECK: long long g0 = (long long)in1[c0 * 3LL + c1 * 1LL];
// CHECK-NEXT: if (g0 < -10LL || g0 >= 10LL) memfit_index_error(memfit_err, 0x1ull, g0);
// CHECK-NEXT: if (g0 < 0) g0 += 10LL;
// CHECK-NEXT: const float v1 = ((g0 >= 0 && g0 < 10LL) ? in0[g0 * 8LL + c2 * 1LL] : (float)0);
// Along axis 1 of [4,10,8] with 3 indices: result [4,3,8]; the index is at
// result coordinate 1, data dimensions 0 and 2 at coordinates 0 and 2.
// CHECK-LABEL: // k1_gather: select
// CHECK-NEXT: extern "C" __global__ void k1_gather(const float* __restrict__ in0, const int* __restrict__ in1, float* __restrict__ out0, unsigned long long* memfit_err) {
// CHECK: long long g0 = (long long)in1[c1 * 1LL];
// CHECK-NEXT: if (g0 < -10LL || g0 >= 10LL) memfit_index_error(memfit_err, 0x100000001ull, g0);
// CHECK-NEXT: if (g0 < 0) g0 += 10LL;
// CHECK-NEXT: const float v1 = ((g0 >= 0 && g0 < 10LL) ? in0[g0 * 8LL + c0 * 80LL + c2 * 1LL] : (float)0);
func.func @gather(%w: tensor<10x8xf32>, %ids: tensor<2x3xi64>, %d: tensor<4x10x8xf32>, %sel: tensor<3xi32>) -> (tensor<2x3x8xf32>, tensor<4x3x8xf32>) {
  %0 = memfit.gather %w, %ids {axis = 0 : i64} : tensor<10x8xf32>, tensor<2x3xi64> -> tensor<2x3x8xf32> loc("embed")
  %1 = memfit.gather %d, %sel {axis = 1 : i64} : tensor<4x10x8xf32>, tensor<3xi32> -> tensor<4x3x8xf32> loc("select")
  return %0, %1 : tensor<2x3x8xf32>, tensor<4x3x8xf32>
}

// -----

// Each input owns a range of the concatenated axis; the last needs no test.
// CHECK-LABEL: // k0_concat: concat
// CHECK-NEXT: extern "C" __global__ void k0_concat(const float* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, float* __restrict__ out0) {
// CHECK: float v0;
// CHECK-NEXT: if (c1 < 3LL) v0 = in0[c0 * 3LL + (c1 - 0LL) * 1LL];
// CHECK-NEXT: else if (c1 < 4LL) v0 = in1[c0 * 1LL + (c1 - 3LL) * 1LL];
// CHECK-NEXT: else v0 = in2[c0 * 4LL + (c1 - 4LL) * 1LL];
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %0 = memfit.concat %a, %b, %c {axis = -1 : i64} : tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x4xf32> -> tensor<2x8xf32> loc("concat")
  return %0 : tensor<2x8xf32>
}

// -----

// [1,4,1] expanded to [2,4,3] reads at the coordinate of its dimension of 4.
// CHECK-LABEL: // k0_expand: expand
// CHECK-NEXT: extern "C" __global__ void k0_expand(const bool* __restrict__ in0, bool* __restrict__ out0) {
// CHECK: MEMFIT_THREAD_LOOP(idx, 24LL) {
// CHECK: const bool v0 = (*(const unsigned char *)&in0[c1 * 1LL] != 0);
// CHECK-NEXT: out0[idx] = v0;
func.func @expand(%x: tensor<1x4x1xi1>) -> tensor<2x4x3xi1> {
  %0 = memfit.expand %x : tensor<1x4x1xi1> to tensor<2x4x3xi1> loc("expand")
  return %0 : tensor<2x4x3xi1>
}

// -----

// Split: one thread per input element, written to the result that owns its
// coordinate along the axis.
// CHECK-LABEL: // k0_split: split
// CHECK-NEXT: extern "C" __global__ void k0_split(const float* __restrict__ in0, float* __restrict__ out0, float* __restrict__ out1) {
// CHECK: MEMFIT_THREAD_LOOP(idx, 12LL) {
// CHECK: const float v = in0[idx];
// CHECK-NEXT: if (c1 < 2LL) out0[c0 * 2LL + (c1 - 0LL) * 1LL] = v;
// CHECK-NEXT: else if (c1 < 6LL) out1[c0 * 4LL + (c1 - 2LL) * 1LL] = v;
func.func @split(%x: tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  %0:2 = memfit.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>} : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32> loc("split")
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x4xf32>
}

// -----

// A kernel without inputs.
// CHECK-LABEL: // k0_range: range
// CHECK-NEXT: extern "C" __global__ void k0_range(long long* __restrict__ out0) {
// CHECK: MEMFIT_THREAD_LOOP(idx, 5LL) {
// CHECK: const long long v0 = (((long long)2LL) + (long long)idx * ((long long)(-3LL)));
// CHECK-LABEL: // k1_range: range_f32
// CHECK: const float v0 = (0.5f + (float)idx * 0.25f);
func.func @range() -> (tensor<5xi64>, tensor<3xf32>) {
  %0 = memfit.range {start = 2 : i64, delta = -3 : i64} : tensor<5xi64> loc("range")
  %1 = memfit.range {start = 0.5 : f32, delta = 0.25 : f32} : tensor<3xf32> loc("range_f32")
  return %0, %1 : tensor<5xi64>, tensor<3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Row kernels (a warp per row of at most 4 KiB, else a block per row)
//===----------------------------------------------------------------------===//

// Softmax along the last axis: rows are contiguous. Rows of 40 f32 take a
// warp each; the lanes combine their partials with shuffles alone. Each
// lane takes 4 adjacent elements (16 bytes of float) at a time, in the
// order of a fused row kernel's vectors.
// CHECK-LABEL: // k0_softmax: softmax
// CHECK-NOT: __shared__
// CHECK: MEMFIT_WARP_ROWS(row, 6LL) {
// CHECK-NEXT: const long long base = (row / 1LL) * 40LL + row % 1LL;
// CHECK-NEXT: MEMFIT_PARTIAL(float, [[M:pm[0-9]+]], __int_as_float((int)0xff800000u));
// CHECK-NEXT: MEMFIT_WARP_STRIDE_VEC(j0, 0LL, 40LL, 4) {
// CHECK-NEXT: for (int k = 0; k < 4; ++k) {
// CHECK-NEXT: const long long j = j0 + k;
// CHECK-NEXT: MEMFIT_LANE([[M]], j0) = memfit_max(MEMFIT_LANE([[M]], j0), (float)in0[base + j * 1LL]);
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: const float m = memfit_warp_max([[M]]);
// CHECK: MEMFIT_LANE([[S:ps[0-9]+]], j0) = MEMFIT_LANE([[S]], j0) + expf((float)in0[base + j * 1LL] - m);
// CHECK: const float s = memfit_warp_sum([[S]]);
// CHECK: out0[base + j * 1LL] = expf((float)in0[base + j * 1LL] - m) / s;
// Rows of 1,100 f32 (4,400 bytes) take a block each, whose warps meet in
// shared memory.
// CHECK-LABEL: // k1_softmax: softmax_long
// CHECK: __shared__ float scratch[32];
// CHECK-NEXT: const long long row = blockIdx.x;
// CHECK-NEXT: const long long base = (row / 1LL) * 1100LL + row % 1LL;
// CHECK-NEXT: MEMFIT_PARTIAL(float, [[M:pm[0-9]+]], __int_as_float((int)0xff800000u));
// CHECK-NEXT: MEMFIT_BLOCK_STRIDE_VEC(j0, 0LL, 1100LL, 4) {
// CHECK: const float m = memfit_block_max([[M]], scratch);
// CHECK: const float s = memfit_block_sum({{ps[0-9]+}}, scratch);
func.func @softmax_last(%x: tensor<2x3x40xf32>, %y: tensor<2x1100xf32>) -> (tensor<2x3x40xf32>, tensor<2x1100xf32>) {
  %0 = memfit.softmax %x {axis = -1 : i64} : tensor<2x3x40xf32> loc("softmax")
  %1 = memfit.softmax %y {axis = -1 : i64} : tensor<2x1100xf32> loc("softmax_long")
  return %0, %1 : tensor<2x3x40xf32>, tensor<2x1100xf32>
}

// -----

// Softmax along axis 1 of [2,5,4]: 8 rows of 5 elements, 4 apart; row r
// starts at (r / 4) * 20 + r % 4.
// CHECK-LABEL: // k0_softmax: softmax_mid
// CHECK: const long long base = (row / 4LL) * 20LL + row % 4LL;
// CHECK: MEMFIT_WARP_STRIDE(j, 0LL, 5LL)
// CHECK-NEXT: MEMFIT_LANE([[M:pm[0-9]+]], j) = memfit_max(MEMFIT_LANE([[M]], j), (float)in0[base + j * 4LL]);
// CHECK: out0[base + j * 4LL] = expf((float)in0[base + j * 4LL] - m) / s;
func.func @softmax_middle(%x: tensor<2x5x4xf32>) -> tensor<2x5x4xf32> {
  %0 = memfit.softmax %x {axis = 1 : i64} : tensor<2x5x4xf32> loc("softmax_mid")
  return %0 : tensor<2x5x4xf32>
}

// -----

// log_softmax subtracts max + log(sum); f64 accumulates in double.
// CHECK-LABEL: // k0_log_softmax: log_softmax
// CHECK: MEMFIT_PARTIAL(double, {{pm[0-9]+}}, __longlong_as_double((long long)0xfff0000000000000ULL));
// CHECK: MEMFIT_WARP_STRIDE_VEC(j0, 0LL, 8LL, 2) {
// CHECK: MEMFIT_LANE([[S:ps[0-9]+]], j0) = MEMFIT_LANE([[S]], j0) + exp((double)in0[base + j * 1LL] - m);
// CHECK: const double shift = m + log(s);
// CHECK-NEXT: MEMFIT_WARP_STRIDE(j, 0LL, 8LL)
// CHECK-NEXT: out0[base + j * 1LL] = (double)in0[base + j * 1LL] - shift;
func.func @log_softmax(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %0 = memfit.log_softmax %x {axis = -1 : i64} : tensor<4x8xf64> loc("log_softmax")
  return %0 : tensor<4x8xf64>
}

// -----

// Layer norm over the last 8 elements: mean, then the centred variance.
// CHECK-LABEL: // k0_layer_norm: ln
// CHECK-NEXT: extern "C" __global__ void k0_layer_norm(const float* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, float* __restrict__ out0) {
// CHECK: const long long base = row * 8LL;
// CHECK: MEMFIT_LANE([[SUM:ps[0-9]+]], j0) = MEMFIT_LANE([[SUM]], j0) + (float)in0[base + j];
// CHECK: const float mean = memfit_warp_sum([[SUM]]) / 8.0f;
// CHECK: MEMFIT_LANE([[SQ:ps[0-9]+]], j0) = MEMFIT_LANE([[SQ]], j0) + ((float)in0[base + j] - mean) * ((float)in0[base + j] - mean);
// CHECK: const float inv = 1.0f / sqrtf(memfit_warp_sum([[SQ]]) / 8.0f + 9.99999975e-06f);
// CHECK: out0[base + j] = ((float)in0[base + j] - mean) * inv * in1[j] + in2[j];
// Without bias, over the last two dimensions (axis 1: 3 x 8 = 24).
// CHECK-LABEL: // k1_layer_norm: ln_nobias
// CHECK-NEXT: extern "C" __global__ void k1_layer_norm(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0) {
// CHECK: const long long base = row * 24LL;
// CHECK: out0[base + j] = ((float)in0[base + j] - mean) * inv * in1[j];
// A scale [8] and a bias [3,1] smaller than the normalized shape [3,8] read
// through the coordinates s0, s1 of j in [3,8].
// CHECK-LABEL: // k2_layer_norm: ln_broadcast
// CHECK: const float inv =
// CHECK-NEXT: MEMFIT_WARP_STRIDE(j, 0LL, 24LL) {
// CHECK-NEXT: const long long s0 = (long long)((unsigned)(j) / 8U);
// CHECK-NEXT: const long long s1 = (long long)((unsigned)(j) / 1U % 8U);
// CHECK-NEXT: out0[base + j] = ((float)in0[base + j] - mean) * inv * in1[s1 * 1LL] + in2[s0 * 1LL];
func.func @layer_norm(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %g2: tensor<3x8xf32>, %b2: tensor<3x1xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %0 = memfit.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32> loc("ln")
  %1 = memfit.layer_norm %x, %g2 {axis = 1 : i64} : tensor<2x3x8xf32>, tensor<3x8xf32> loc("ln_nobias")
  %2 = memfit.layer_norm %x, %g, %b2 {axis = 1 : i64} : tensor<2x3x8xf32>, tensor<8xf32>, tensor<3x1xf32> loc("ln_broadcast")
  return %0, %1, %2 : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>
}

// -----

// RMS norm: no mean; x * rsqrt(mean(x^2) + eps) * scale. Rows of 1,100
// f32 take a block each.
// CHECK-LABEL: // k0_rms_norm: rms
// CHECK-NOT: mean
// CHECK: const long long row = blockIdx.x;
// CHECK: MEMFIT_LANE([[SQ:ps[0-9]+]], j0) = MEMFIT_LANE([[SQ]], j0) + (float)in0[base + j] * (float)in0[base + j];
// CHECK: const float inv = 1.0f / sqrtf(memfit_block_sum([[SQ]], scratch) / 1100.0f + 9.99999997e-07f);
// CHECK: out0[base + j] = ((float)in0[base + j]) * inv * in1[j];
func.func @rms_norm(%x: tensor<4x1100xf32>, %g: tensor<1100xf32>) -> tensor<4x1100xf32> {
  %0 = memfit.rms_norm %x, %g {axis = -1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<4x1100xf32>, tensor<1100xf32> loc("rms")
  return %0 : tensor<4x1100xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Reductions (a warp or a block per kept element)
//===----------------------------------------------------------------------===//

// Reduced dimensions at the back: row r reads elements r * 50 ... r * 50 + 49
// (not a whole number of 4-element vectors: a lane at a time).
// CHECK-LABEL: // k0_reduce_sum: sum_last
// CHECK: MEMFIT_WARP_ROWS(row, 12LL) {
// CHECK-NEXT: const long long base = row * 50LL;
// CHECK-NEXT: MEMFIT_PARTIAL(float, [[P:ps[0-9]+]], 0);
// CHECK-NEXT: MEMFIT_WARP_STRIDE(j, 0LL, 50LL)
// CHECK-NEXT: MEMFIT_LANE([[P]], j) = MEMFIT_LANE([[P]], j) + (float)in0[base + j];
// CHECK: const float a = memfit_warp_sum([[P]]);
// CHECK-NEXT: if (MEMFIT_LANE0) out0[row] = (float)(a);
func.func @sum_last(%x: tensor<3x4x50xf32>) -> tensor<3x4x1xf32> {
  %0 = memfit.reduce_sum %x {axes = array<i64: -1>} : tensor<3x4x50xf32> -> tensor<3x4x1xf32> loc("sum_last")
  return %0 : tensor<3x4x1xf32>
}

// -----

// Reducing the leading axis of [6,2,5]: the row's kept coordinates k0, k1
// give its base, the reduced coordinate r0 steps by the stride 10.
// CHECK-LABEL: // k0_reduce_sum: sum_lead
// CHECK: const long long k0 = (long long)((unsigned)(row) / 5U);
// CHECK-NEXT: const long long k1 = (long long)((unsigned)(row) / 1U % 5U);
// CHECK-NEXT: const long long base = k0 * 5LL + k1 * 1LL;
// CHECK: MEMFIT_WARP_STRIDE(j, 0LL, 6LL) {
// CHECK-NEXT: const long long r0 = (long long)((unsigned)(j) / 1U);
// CHECK-NEXT: MEMFIT_LANE(p, j) += (float)in0[base + r0 * 10LL];
func.func @sum_lead(%x: tensor<6x2x5xf32>) -> tensor<2x5xf32> {
  %0 = memfit.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : tensor<6x2x5xf32> -> tensor<2x5xf32> loc("sum_lead")
  return %0 : tensor<2x5xf32>
}

// -----

// Max starts from -inf (floats), INT64_MIN (integers) or false (booleans,
// ONNX's max over no elements).
// CHECK-LABEL: // k0_reduce_max: max
// CHECK: MEMFIT_PARTIAL(float, [[P:pm[0-9]+]], __int_as_float((int)0xff800000u));
// CHECK: MEMFIT_LANE([[P]], j0) = memfit_max(MEMFIT_LANE([[P]], j0), (float)in0[base + j]);
// CHECK: const float a = memfit_warp_max([[P]]);
// CHECK-LABEL: // k1_reduce_max: imax
// CHECK: MEMFIT_PARTIAL(long long, [[P:pm[0-9]+]], (-9223372036854775807LL - 1));
// CHECK: MEMFIT_WARP_STRIDE_VEC(j0, 0LL, 8LL, 2) {
// CHECK: MEMFIT_LANE([[P]], j0) = memfit_max(MEMFIT_LANE([[P]], j0), (long long)in0[base + j]);
// CHECK-LABEL: // k2_reduce_max: bmax
// CHECK: MEMFIT_PARTIAL(long long, {{pm[0-9]+}}, 0LL);
func.func @reduce_max(%x: tensor<4x8xf32>, %i: tensor<4x8xi64>, %b: tensor<4x0xi1>) -> (tensor<4x1xf32>, tensor<4x1xi64>, tensor<4x1xi1>) {
  %0 = memfit.reduce_max %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32> loc("max")
  %1 = memfit.reduce_max %i {axes = array<i64: 1>} : tensor<4x8xi64> -> tensor<4x1xi64> loc("imax")
  %2 = memfit.reduce_max %b {axes = array<i64: 1>} : tensor<4x0xi1> -> tensor<4x1xi1> loc("bmax")
  return %0, %1, %2 : tensor<4x1xf32>, tensor<4x1xi64>, tensor<4x1xi1>
}

// -----

// The mean divides the sum by the reduced count.
// CHECK-LABEL: // k0_reduce_mean: mean
// CHECK: if (MEMFIT_LANE0) out0[row] = (float)(a / 8.0f);
// CHECK-LABEL: // k1_reduce_mean: imean
// CHECK: if (MEMFIT_LANE0) out0[row] = (int)(a / 8LL);
func.func @reduce_mean(%x: tensor<4x8xf32>, %i: tensor<4x8xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %0 = memfit.reduce_mean %x {axes = array<i64: -1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32> loc("mean")
  %1 = memfit.reduce_mean %i {axes = array<i64: -1>, keepdims = false} : tensor<4x8xi32> -> tensor<4xi32> loc("imean")
  return %0, %1 : tensor<4xf32>, tensor<4xi32>
}

// -----

// Integers accumulate in long long; no axes reduces everything (one row).
// CHECK-LABEL: // k0_reduce_sum: isum
// CHECK-NEXT: extern "C" __global__ void k0_reduce_sum(const int* __restrict__ in0, int* __restrict__ out0) {
// CHECK-NEXT: MEMFIT_WARP_ROWS(row, 1LL) {
// CHECK: const long long base = row * 32LL;
// CHECK-NEXT: MEMFIT_PARTIAL(long long, [[P:ps[0-9]+]], 0);
// CHECK: MEMFIT_LANE([[P]], j0) = MEMFIT_LANE([[P]], j0) + (long long)in0[base + j];
// CHECK: if (MEMFIT_LANE0) out0[row] = (int)(a);
func.func @integer_sum(%x: tensor<4x8xi32>) -> tensor<i32> {
  %0 = memfit.reduce_sum %x {axes = array<i64>, keepdims = false} : tensor<4x8xi32> -> tensor<i32> loc("isum")
  return %0 : tensor<i32>
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// Mean with class weights and ignore_index: ignored labels add neither loss
// nor weight; the result is the weighted loss over the weight.
// CHECK-LABEL: // k0_softmax_cross_entropy_loss: sce_mean
// CHECK-NEXT: extern "C" __global__ void k0_softmax_cross_entropy_loss(const float* __restrict__ in0, const long long* __restrict__ in1, const float* __restrict__ in2, float* __restrict__ out0) {
// CHECK: MEMFIT_BLOCK_STRIDE(r, 0LL, 4LL) {
// CHECK-NEXT: const long long base = (r / 1LL) * 10LL + r % 1LL;
// CHECK-NEXT: const long long label = (long long)in1[r];
// CHECK-NEXT: float loss = 0, w = 0;
// CHECK-NEXT: if (label != (-100LL)) {
// CHECK-NEXT: if (label < 0 || label >= 10LL) {
// CHECK-NEXT: loss = __int_as_float(0x7fc00000);
// CHECK: w = (float)in2[label];
// CHECK: for (long long c = 0; c < 10LL; ++c) m = memfit_max(m, (float)in0[base + (c) * 1LL]);
// CHECK: for (long long c = 0; c < 10LL; ++c) s += expf((float)in0[base + (c) * 1LL] - m);
// CHECK-NEXT: loss = (m + logf(s) - (float)in0[base + (label) * 1LL]) * w;
// CHECK: MEMFIT_LANE(totals, r) += loss;
// CHECK-NEXT: MEMFIT_LANE(weights, r) += w;
// CHECK: const float total = memfit_block_sum(totals, scratch);
// CHECK-NEXT: const float weight = memfit_block_sum(weights, scratch);
// CHECK-NEXT: if (threadIdx.x == 0) out0[0] = total / weight;
// Sum without weights or ignore_index.
// CHECK-LABEL: // k1_softmax_cross_entropy_loss: sce_sum
// CHECK-NOT: if (label !=
// CHECK: w = 1.0f;
// CHECK: if (threadIdx.x == 0) out0[0] = total;
// None: one thread per label, the loss of each written in place.
// CHECK-LABEL: // k2_softmax_cross_entropy_loss: sce_none
// CHECK: MEMFIT_THREAD_LOOP(r, 4LL) {
// CHECK: out0[r] = loss;
func.func @softmax_cross_entropy(%x: tensor<4x10xf32>, %l: tensor<4xi64>, %w: tensor<10xf32>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>) {
  %0 = memfit.softmax_cross_entropy_loss mean %x, %l, %w {ignore_index = -100 : i64} : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32> loc("sce_mean")
  %1 = memfit.softmax_cross_entropy_loss sum %x, %l : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> loc("sce_sum")
  %2 = memfit.softmax_cross_entropy_loss none %x, %l : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32> loc("sce_none")
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<4xf32>
}

// -----

// NLL on [N=2, C=5, d=3]: position r is sample r / 3, position r % 3; class
// c is 3 elements apart. The loss is minus the log-probability of the label.
// CHECK-LABEL: // k0_negative_log_likelihood_loss: nll
// CHECK: MEMFIT_BLOCK_STRIDE(r, 0LL, 6LL) {
// CHECK-NEXT: const long long base = (r / 3LL) * 15LL + r % 3LL;
// CHECK: if (label != 1LL) {
// CHECK: loss = -(float)in0[base + (label) * 3LL] * w;
// CHECK: if (threadIdx.x == 0) out0[0] = total / weight;
func.func @nll(%x: tensor<2x5x3xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
  %0 = memfit.negative_log_likelihood_loss mean %x, %t {ignore_index = 1 : i64} : (tensor<2x5x3xf32>, tensor<2x3xi64>) -> tensor<f32> loc("nll")
  return %0 : tensor<f32>
}

// -----

// A gemm's bias is broadcast into its result by a kernel named after the
// gemm's node; an op without a NameLoc has no ONNX node to name.
// CHECK-LABEL: // k0_gemm_bias: bias of fc
// CHECK-NEXT: extern "C" __global__ void k0_gemm_bias(const float* __restrict__ in0, float* __restrict__ out0) {
// CHECK: MEMFIT_THREAD_LOOP(idx, 12LL) {
// CHECK: out0[idx] = in0[c1 * 1LL];
// CHECK-LABEL: // k1_exp: (no ONNX node)
// CHECK-NEXT: extern "C" __global__ void k1_exp(
func.func @gemm_bias(%a: tensor<2x8xf32>, %b: tensor<8x6xf32>, %c: tensor<6xf32>) -> tensor<2x6xf32> {
  %0 = memfit.gemm %a, %b, %c : (tensor<2x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<2x6xf32> loc("fc")
  %1 = memfit.exp %0 : tensor<2x6xf32>
  return %1 : tensor<2x6xf32>
}

// -----

// A splat constant scale of a layer norm is a buffer like any other input.
// CHECK-LABEL: // k0_layer_norm: ln_const_scale
// CHECK: out0[base + j] = ((float)in0[base + j] - mean) * inv * in1[j];
func.func @layer_norm_constant_scale(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %ones = memfit.constant dense<1.0> : tensor<4xf32>
  %0 = memfit.layer_norm %x, %ones : tensor<2x4xf32>, tensor<4xf32> loc("ln_const_scale")
  return %0 : tensor<2x4xf32>
}

// -----

// Ops whose results are empty compute nothing and get no kernel
// (regression: row kernels on empty tensors still ran one block and wrote
// out of bounds); the other kernels keep their numbering.
// CHECK-LABEL: // k0_exp: nonempty
// CHECK-NEXT: extern "C" __global__ void k0_exp(
// CHECK-NOT: __global__ void
func.func @empty_results(%x: tensor<0x4xf32>, %y: tensor<3x0xf32>, %z: tensor<4xf32>) -> (tensor<0x4xf32>, tensor<3x0xf32>, tensor<4xf32>) {
  %0 = memfit.exp %x : tensor<0x4xf32> loc("empty_exp")
  %1 = memfit.softmax %y {axis = 0 : i64} : tensor<3x0xf32> loc("empty_softmax")
  %2 = memfit.exp %z : tensor<4xf32> loc("nonempty")
  return %0, %1, %2 : tensor<0x4xf32>, tensor<3x0xf32>, tensor<4xf32>
}

// -----

// Node names go into `//` comments with control characters and backslashes
// replaced, so a name cannot end the comment or continue it onto the next
// line.
// CHECK-LABEL: // k0_relu: a?b?c
// CHECK-NEXT: extern "C" __global__ void k0_relu(
func.func @node_name_in_comment(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = memfit.relu %x : tensor<4xf32> loc("a\0Ab\\c")
  return %0 : tensor<4xf32>
}
