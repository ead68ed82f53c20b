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
