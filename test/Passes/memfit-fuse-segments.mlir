// memfit-fuse's multi-tensor kernels: consecutive independent pointwise
// kernels (the optimizer's per-parameter updates) run as one kernel of
// several segments; a kernel that reads another's result, or a parameter
// that another updates, starts a new one.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-fuse | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=max-ops=3' | FileCheck %s --check-prefix=MAX
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=multi-tensor=false' | FileCheck %s --check-prefix=OFF
// The CUDA source: each block updates a chunk of 8,192 elements of one
// segment (found by bisection on the block index), its threads striding
// over the chunk, in place (no __restrict__).
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-fuse | memfit-translate --split-input-file --memfit-to-cuda | FileCheck %s --check-prefix=CUDA

// Two SGD updates of parameters of different shapes, with their loads and
// in-place updates between them: one kernel of two segments (one result
// each) at the second update's place, both assigns after it. The scalar
// learning rate is one input of both.
memfit.parameter @a = dense<1.000000e+00> : tensor<2x3xf32>
memfit.parameter @b = dense<2.000000e+00> : tensor<5xf32>
// CHECK-LABEL: func.func @updates
// CHECK-SAME: (%[[GA:.+]]: tensor<2x3xf32>, %[[GB:.+]]: tensor<5xf32>, %[[LR:.+]]: tensor<f32>)
// CHECK-NEXT: %[[A:.+]] = memfit.load_parameter @a
// CHECK-NEXT: %[[B:.+]] = memfit.load_parameter @b
// CHECK-NEXT: %[[K:.+]]:2 = memfit.kernel(%[[GA]], %[[LR]], %[[A]], %[[GB]], %[[B]]) {memfit.segments = array<i64: 1, 1>} : (tensor<2x3xf32>, tensor<f32>, tensor<2x3xf32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<2x3xf32>, tensor<5xf32>) {
// CHECK-NEXT: ^bb0(%[[I0:.+]]: tensor<2x3xf32>, %[[I1:.+]]: tensor<f32>, %[[I2:.+]]: tensor<2x3xf32>, %[[I3:.+]]: tensor<5xf32>, %[[I4:.+]]: tensor<5xf32>):
// CHECK-NEXT: %[[S0:.+]] = memfit.mul %[[I0]], %[[I1]]
// CHECK-NEXT: %[[U0:.+]] = memfit.sub %[[I2]], %[[S0]]
// CHECK-NEXT: %[[S1:.+]] = memfit.mul %[[I3]], %[[I1]]
// CHECK-NEXT: %[[U1:.+]] = memfit.sub %[[I4]], %[[S1]]
// CHECK-NEXT: memfit.yield %[[U0]], %[[U1]]
// CHECK-NEXT: }
// CHECK-NEXT: memfit.assign @a, %[[K]]#0
// CHECK-NEXT: memfit.assign @b, %[[K]]#1
// With max-ops=3 the two updates (two ops each) stay apart.
// MAX-LABEL: func.func @updates
// MAX-NOT: memfit.segments
// MAX: return
// OFF-LABEL: func.func @updates
// OFF-NOT: memfit.segments
// OFF: return
// CUDA: extern "C" __global__ void k0_mul_sub_mul_4ops(const float* in0, const float* in1, const float* in2, const float* in3, const float* in4, float* out0, float* out1) {
// CUDA-NEXT: const long long block = blockIdx.x;
// CUDA-NEXT: if (block < 1LL) {
// CUDA-NEXT: {
// CUDA-NEXT: const long long first = (block - 0LL) * 8192LL;
// CUDA-NEXT: const long long last = first + 8192LL < 6LL ? first + 8192LL : 6LL;
// CUDA-NEXT: MEMFIT_BLOCK_STRIDE(idx, first, last) {
// CUDA: out0[idx] =
// CUDA-NEXT: }
// CUDA-NEXT: }
// CUDA-NEXT: } else {
// CUDA-NEXT: {
// CUDA-NEXT: const long long first = (block - 1LL) * 8192LL;
// CUDA-NEXT: const long long last = first + 8192LL < 5LL ? first + 8192LL : 5LL;
// CUDA: out1[idx] =
// CUDA-NEXT: }
// CUDA-NEXT: }
// CUDA-NEXT: }
// CUDA-NEXT: }
func.func @updates(%ga: tensor<2x3xf32>, %gb: tensor<5xf32>, %lr: tensor<f32>) {
  %a = memfit.load_parameter @a : tensor<2x3xf32>
  %sa = memfit.mul %ga, %lr : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %na = memfit.sub %a, %sa : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  memfit.assign @a, %na : tensor<2x3xf32>
  %b = memfit.load_parameter @b : tensor<5xf32>
  %sb = memfit.mul %gb, %lr : tensor<5xf32>, tensor<f32> -> tensor<5xf32>
  %nb = memfit.sub %b, %sb : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
  memfit.assign @b, %nb : tensor<5xf32>
  return
}

// -----

// Not merged: the first update reads @b, which the second updates in
// place (in one launch, the read would race with the write).
memfit.parameter @a = dense<1.000000e+00> : tensor<4xf32>
memfit.parameter @b = dense<2.000000e+00> : tensor<4xf32>
// CHECK-LABEL: func.func @reads_updated
// CHECK-NOT: memfit.segments
// CHECK: return
func.func @reads_updated(%g: tensor<4xf32>) {
  %a = memfit.load_parameter @a : tensor<4xf32>
  %b = memfit.load_parameter @b : tensor<4xf32>
  %s = memfit.mul %g, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %na = memfit.sub %a, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  memfit.assign @a, %na : tensor<4xf32>
  %nb = memfit.sub %b, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  memfit.assign @b, %nb : tensor<4xf32>
  return
}

// -----

// Not merged: a kernel that reads the other's result (vertical fusion
// cannot merge them either: the exp's other reader, the softmax, is a row
// kernel that comes first), and kernels with a contraction between them.
// CHECK-LABEL: func.func @dependent
// CHECK-NOT: memfit.segments
// CHECK: return
func.func @dependent(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %e = memfit.exp %x : tensor<4x4xf32>
  %s = memfit.softmax %e : tensor<4x4xf32>
  %n = memfit.neg %e : tensor<4x4xf32>
  %m = memfit.matmul %s, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %t = memfit.tanh %y : tensor<4x4xf32>
  return %s, %n, %m, %t : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Kernels that compute from weights alone (mixed precision's casts of the
// master weights before each matmul) run as one kernel of several
// segments per transformer layer, at the layer's first cast: h.0's two
// casts are one kernel before h.0's first matmul, h.1's another; the loads
// move before it. (The step returns the casts, as a backward that reads
// them again would keep them: their bytes live to the end either way, so
// the plan does not grow.)
memfit.parameter @h.0.a = dense<1.0> : tensor<4x4xf32>
memfit.parameter @h.0.b = dense<2.0> : tensor<4x4xf32>
memfit.parameter @h.1.a = dense<3.0> : tensor<4x4xf32>
memfit.parameter @h.1.b = dense<4.0> : tensor<4x4xf32>
// CHECK-LABEL: func.func @weight_casts
// CHECK: %[[A0:.+]] = memfit.load_parameter @h.0.a
// CHECK: %[[B0:.+]] = memfit.load_parameter @h.0.b
// CHECK: %[[C0:.+]]:2 = memfit.kernel(%[[A0]], %[[B0]]) {memfit.segments = array<i64: 1, 1>}
// CHECK-COUNT-2: memfit.cast
// CHECK: memfit.matmul %{{.+}}, %[[C0]]#0
// CHECK: memfit.matmul %{{.+}}, %[[C0]]#1
// CHECK: %[[C1:.+]]:2 = memfit.kernel({{.+}}) {memfit.segments = array<i64: 1, 1>}
// CHECK: memfit.matmul %{{.+}}, %[[C1]]#0
// CHECK: memfit.matmul %{{.+}}, %[[C1]]#1
// CHECK-NOT: memfit.kernel
// CHECK: return
// OFF-LABEL: func.func @weight_casts
// OFF-COUNT-4: memfit.cast
func.func @weight_casts(%x: tensor<4x4xbf16>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>) {
  %a0 = memfit.load_parameter @h.0.a : tensor<4x4xf32>
  %ca0 = memfit.cast %a0 : tensor<4x4xf32> to tensor<4x4xbf16> loc("h.0.a")
  %y0 = memfit.matmul %x, %ca0 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %b0 = memfit.load_parameter @h.0.b : tensor<4x4xf32>
  %cb0 = memfit.cast %b0 : tensor<4x4xf32> to tensor<4x4xbf16> loc("h.0.b")
  %z0 = memfit.matmul %y0, %cb0 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %a1 = memfit.load_parameter @h.1.a : tensor<4x4xf32>
  %ca1 = memfit.cast %a1 : tensor<4x4xf32> to tensor<4x4xbf16> loc("h.1.a")
  %y1 = memfit.matmul %z0, %ca1 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %b1 = memfit.load_parameter @h.1.b : tensor<4x4xf32>
  %cb1 = memfit.cast %b1 : tensor<4x4xf32> to tensor<4x4xbf16> loc("h.1.b")
  %z1 = memfit.matmul %y1, %cb1 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  return %z1, %ca0, %cb0, %ca1, %cb1 : tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>
}

// -----

// The same casts, each read once: merged, the later casts' bytes would
// live from their layer's first cast on, and the plan would grow by more
// than the 0.1% allowed (a 256-byte buffer in a plan of a few KB); they
// stay kernels of their own.
memfit.parameter @h.0.a = dense<1.0> : tensor<4x4xf32>
memfit.parameter @h.0.b = dense<2.0> : tensor<4x4xf32>
memfit.parameter @h.1.a = dense<3.0> : tensor<4x4xf32>
memfit.parameter @h.1.b = dense<4.0> : tensor<4x4xf32>
// CHECK-LABEL: func.func @weight_casts_kept
// CHECK-NOT: memfit.segments
// CHECK: return
func.func @weight_casts_kept(%x: tensor<4x4xbf16>) -> tensor<4x4xbf16> {
  %a0 = memfit.load_parameter @h.0.a : tensor<4x4xf32>
  %ca0 = memfit.cast %a0 : tensor<4x4xf32> to tensor<4x4xbf16> loc("h.0.a")
  %y0 = memfit.matmul %x, %ca0 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %b0 = memfit.load_parameter @h.0.b : tensor<4x4xf32>
  %cb0 = memfit.cast %b0 : tensor<4x4xf32> to tensor<4x4xbf16> loc("h.0.b")
  %z0 = memfit.matmul %y0, %cb0 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %a1 = memfit.load_parameter @h.1.a : tensor<4x4xf32>
  %ca1 = memfit.cast %a1 : tensor<4x4xf32> to tensor<4x4xbf16> loc("h.1.a")
  %y1 = memfit.matmul %z0, %ca1 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %b1 = memfit.load_parameter @h.1.b : tensor<4x4xf32>
  %cb1 = memfit.cast %b1 : tensor<4x4xf32> to tensor<4x4xbf16> loc("h.1.b")
  %z1 = memfit.matmul %y1, %cb1 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  return %z1 : tensor<4x4xbf16>
}
