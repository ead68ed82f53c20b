// memfit-fuse's row kernels: a reduction merges with its element-wise
// prologue (what computes its input) and epilogue (what reads its result),
// and reductions of one frame (one input shape, the same axes) chain in one
// kernel, which runs a block per row.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-fuse | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=rows=false' | FileCheck %s --check-prefix=OFF
// The report: each step's bytes read and written (each input once, the
// intermediates stay in registers), FLOPs and ops, then the totals and the
// lower bound (here the input read once, the outputs written once: the
// fused kernel moves exactly that).
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=report=-' -o /dev/null | FileCheck %s --check-prefix=REPORT
// REPORT: memfit-fuse: 6 kernels -> 1
// REPORT-NEXT: @prologue_epilogue:
// REPORT-NEXT: step kind read written FLOPs ops [ONNX nodes]
// REPORT-NEXT: 1 kernel 128 144 {{[0-9]+}} mul+reduce_mean+add+sqrt+reciprocal+mul
// REPORT-NEXT: @prologue_epilogue: 1 steps (1 kernels, 0 contractions), {{[0-9]+}} FLOPs, 272 bytes moved (0 by contractions)
// REPORT-NEXT: @prologue_epilogue: lower bound 272 bytes (inputs 128, weights and states read 0, outputs 144, updates 0, saved activations 0 written and read); moved / lower bound = 1.00
// REPORT: memfit-fuse: 15 kernels -> 1
// REPORT: reduce_mean+sub+mul+reduce_mean+add+sqrt+reciprocal+mul +7 more ops
// The CUDA source of the first: the prologue computed in the reduction's
// loop, the epilogue once per row, the row value read in the last loop.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-fuse --mlir-print-debuginfo | memfit-translate --split-input-file --memfit-to-cuda | FileCheck %s --check-prefix=CUDA

// RMSNorm spelled out: the square (prologue), the mean, then eps, sqrt and
// reciprocal per row (epilogue) and the product over the row: one kernel
// that also yields the per-row reciprocal (returned).
// CHECK-LABEL: func.func @prologue_epilogue
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.reduce_mean
// CHECK: memfit.add
// CHECK-NEXT: memfit.sqrt
// CHECK-NEXT: memfit.reciprocal
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.yield
// CHECK-NOT: memfit.kernel
// CHECK: return
// OFF-LABEL: func.func @prologue_epilogue
// OFF-COUNT-4: memfit.kernel
// CUDA: __global__ void k0_mul_reduce_mean_add_6ops(const float* __restrict__ in0, float* __restrict__ out0, float* __restrict__ out1) {
// CUDA: MEMFIT_WARP_ROWS(row, 4LL) {
// CUDA-NEXT: const long long base = row * 8LL;
// Rows of 8 f32 are two 16-byte vectors: each lane loads 4 adjacent
// elements at once, folds them into its partial in order, and stores its
// results as one vector.
// CUDA: MEMFIT_PARTIAL(float, [[P:ps[0-9]+]], 0);
// CUDA-NEXT: MEMFIT_WARP_STRIDE_VEC(j0, 0LL, 8LL, 4) {
// CUDA-NEXT: const memfit_vec<float, 4> x0 = memfit_load_vec<float, 4>(in0 + base + j0);
// CUDA-NEXT: for (int k = 0; k < 4; ++k) {
// CUDA-NEXT: const long long j = j0 + k;
// CUDA-NEXT: const long long idx = base + j;
// CUDA: const float [[X:v[0-9]+]] = x0.v[k];
// CUDA-NEXT: const float [[SQ:v[0-9]+]] = [[X]] * [[X]];
// CUDA-NEXT: MEMFIT_LANE([[P]], j0) = MEMFIT_LANE([[P]], j0) + (float)[[SQ]];
// CUDA-NEXT: }
// CUDA-NEXT: }
// CUDA-NEXT: const float [[A:a[0-9]+]] = memfit_warp_sum([[P]]);
// CUDA-NEXT: const float [[M:v[0-9]+]] = (float)([[A]] / 8.0f);
// CUDA-NEXT: const float [[E:v[0-9]+]] = [[M]] + 9.99999975e-06f;
// CUDA-NEXT: const float [[S:v[0-9]+]] = sqrtf([[E]]);
// CUDA-NEXT: const float [[R:v[0-9]+]] = 1.0f / [[S]];
// CUDA-NEXT: MEMFIT_WARP_STRIDE_VEC(j0, 0LL, 8LL, 4) {
// CUDA-NEXT: const memfit_vec<float, 4> x0 = memfit_load_vec<float, 4>(in0 + base + j0);
// CUDA-NEXT: memfit_vec<float, 4> y0;
// CUDA: const float [[Y:v[0-9]+]] = {{v[0-9]+}} * [[R]];
// CUDA-NEXT: y0.v[k] = [[Y]];
// CUDA-NEXT: }
// CUDA-NEXT: memfit_store_vec(out0 + base + j0, y0);
// CUDA-NEXT: }
// CUDA-NEXT: if (MEMFIT_LANE0) {
// CUDA-NEXT: out1[row] = [[R]];
// CUDA-NEXT: }
// CUDA-NEXT: }
func.func @prologue_epilogue(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %eps = memfit.constant dense<9.99999974E-6> : tensor<f32>
  %0 = memfit.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = memfit.reduce_mean %0 {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %2 = memfit.add %1, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %3 = memfit.sqrt %2 : tensor<4x1xf32>
  %4 = memfit.reciprocal %3 : tensor<4x1xf32>
  %5 = memfit.mul %x, %4 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %5, %4 : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Layer norm's backward as autodiff writes it: the mean, the centered
// values, the variance, then two more reductions of the gradient, all over
// the last axis: one kernel.
// CHECK-LABEL: func.func @chained_reductions
// CHECK: memfit.kernel
// CHECK-COUNT-4: memfit.reduce_mean
// CHECK-NOT: memfit.kernel
// CHECK: return
// OFF-LABEL: func.func @chained_reductions
// OFF-COUNT-9: memfit.kernel
func.func @chained_reductions(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %eps = memfit.constant dense<9.99999974E-6> : tensor<f32>
  %m = memfit.reduce_mean %x {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = memfit.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %sq = memfit.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %v = memfit.reduce_mean %sq {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = memfit.add %v, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %s = memfit.sqrt %ve : tensor<4x1xf32>
  %r = memfit.reciprocal %s : tensor<4x1xf32>
  %xh = memfit.mul %d, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %g1 = memfit.reduce_mean %dy {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %p = memfit.mul %dy, %xh : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %g2 = memfit.reduce_mean %p {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %t = memfit.mul %xh, %g2 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %u = memfit.sub %dy, %g1 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %w = memfit.sub %u, %t : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %dx = memfit.mul %w, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}

// -----

// A bias's gradient with its product: the sum over the leading axes
// (without keepdims, the kept axis last) reads the product in its loop.
// CHECK-LABEL: func.func @column_prologue
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.reduce_sum
// CHECK-NEXT: memfit.yield
// CHECK-NOT: memfit.kernel
// CHECK: return
// OFF-LABEL: func.func @column_prologue
// OFF-COUNT-2: memfit.kernel
func.func @column_prologue(%dy: tensor<2x3x8xf32>, %x: tensor<2x3x8xf32>) -> tensor<8xf32> {
  %0 = memfit.mul %dy, %x : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %1 = memfit.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x3x8xf32> -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// The product is also a result: the CUDA kernel writes it in the loop of
// the sum, which computed it, rather than in a second loop over the row
// (GELU's gradient beside its bias's gradient was computed twice).
// CHECK-LABEL: func.func @column_prologue_kept
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.reduce_sum
// CHECK-NEXT: memfit.yield
// CHECK-NOT: memfit.kernel
// CHECK: return
// CUDA-LABEL: // k0_mul_reduce_sum: kept_mul, kept_sum
// CUDA: MEMFIT_WARP_STRIDE(j, 0LL, 6LL) {
// CUDA: const float [[V:v[0-9]+]] = {{.*}} * {{.*}};
// CUDA-NEXT: MEMFIT_LANE({{.*}}) = MEMFIT_LANE({{.*}}) + (float)[[V]];
// CUDA-NEXT: out{{[01]}}[idx] = [[V]];
// CUDA-NEXT: }
// CUDA-NOT: MEMFIT_WARP_STRIDE
// CUDA: memfit_warp_sum
// CUDA-NOT: MEMFIT_WARP_STRIDE
// CUDA: if (MEMFIT_LANE0) {
func.func @column_prologue_kept(%dy: tensor<2x3x8xf32>, %x: tensor<2x3x8xf32>) -> (tensor<8xf32>, tensor<2x3x8xf32>) {
  %0 = memfit.mul %dy, %x : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32> loc("kept_mul")
  %1 = memfit.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x3x8xf32> -> tensor<8xf32> loc("kept_sum")
  return %1, %0 : tensor<8xf32>, tensor<2x3x8xf32>
}

// -----

// Not merged: a sum over the last axis without keepdims has a value per row
// but not the row shape (4x1, or the kept axis last): the product stays a
// pointwise kernel and the sum a reduction of its own, which the CUDA
// emitter takes (fused, it refused the kernel: found by
// memfit-compile-fuzz, the HF GPT-2 export's attention gradient at
// fuse-max-ops=3).
// CHECK-LABEL: func.func @row_prologue_no_keepdims
// CHECK-COUNT-2: memfit.kernel
// CHECK-NOT: memfit.kernel
// CHECK: return
// CUDA-LABEL: k1_reduce_sum
func.func @row_prologue_no_keepdims(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>) -> tensor<2x4xf32> {
  %0 = memfit.mul %dy, %x : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %1 = memfit.reduce_sum %0 {axes = array<i64: 2>, keepdims = false} : tensor<2x4x8xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// The named normalizations and softmax join row kernels too, computed as
// their templates compute them: a residual add before a layer norm, and the
// scale and mask before a softmax, are one kernel each.
// CHECK-LABEL: func.func @norm_prologue
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.add
// CHECK-NEXT: memfit.layer_norm
// CHECK-NEXT: memfit.yield
// CHECK-NOT: memfit.kernel
// CHECK: return
// OFF-LABEL: func.func @norm_prologue
// OFF-COUNT-2: memfit.kernel
// CHECK-LABEL: func.func @softmax_prologue
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK: memfit.mul
// CHECK: memfit.where
// CHECK-NEXT: memfit.softmax
// CHECK-NEXT: memfit.yield
// CHECK-NOT: memfit.kernel
// CHECK: return
// CUDA-LABEL: __global__ void k1_mul_where_softmax(
// CUDA: MEMFIT_LANE([[PM:pm[0-9]+]], j0) = memfit_max(MEMFIT_LANE([[PM]], j0), (float){{v[0-9]+}});
// CUDA: const float [[M:a[0-9]+]] = memfit_warp_max([[PM]]);
// CUDA: MEMFIT_LANE([[PS:ps[0-9]+]], j0) = MEMFIT_LANE([[PS]], j0) + expf((float){{v[0-9]+}} - [[M]]);
// CUDA: const float [[S:a[0-9]+]] = memfit_warp_sum([[PS]]);
// CUDA: = (float)(expf((float){{v[0-9]+}} - [[M]]) / [[S]]);
func.func @norm_prologue(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = memfit.add %x, %r : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = memfit.layer_norm %0, %g, %b : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %1 : tensor<4x8xf32>
}
func.func @softmax_prologue(%s: tensor<4x8xf32>, %m: tensor<4x8xi1>) -> tensor<4x8xf32> {
  %c = memfit.constant dense<1.250000e-01> : tensor<f32>
  %n = memfit.constant dense<-1.000000e+09> : tensor<f32>
  %0 = memfit.mul %s, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = memfit.where %m, %0, %n : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %2 = memfit.softmax %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Siblings: layer norm's bias and scale gradients, two column sums of one
// gradient (the second of its product with the normalized input), run as
// one kernel with two results at the second's place.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[K:.+]]:2 = memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.reduce_sum
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.reduce_sum
// CHECK-NEXT: memfit.yield
// CHECK-NOT: memfit.kernel
// CHECK: return %{{.+}}, %[[K]]#0, %[[K]]#1
// OFF-LABEL: func.func @siblings
// OFF-COUNT-4: memfit.kernel
func.func @siblings(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %db = memfit.reduce_sum %dy {axes = array<i64: 0>, keepdims = false} : tensor<4x8xf32> -> tensor<8xf32>
  %e = memfit.exp %x : tensor<4x8xf32>
  %p = memfit.mul %dy, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %dg = memfit.reduce_sum %p {axes = array<i64: 0>, keepdims = false} : tensor<4x8xf32> -> tensor<8xf32>
  return %e, %dg, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The readers of a merged kernel's results count: the transpose and exp
// merge first; the mean of their result then merges with the sub, which
// reads that result too (so it lives no longer). The transpose cannot join
// a row kernel: two kernels.
// CHECK-LABEL: func.func @merged_readers
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.transpose
// CHECK-NEXT: memfit.exp
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.reduce_mean
// CHECK-NEXT: memfit.sub
// CHECK-NOT: memfit.kernel
// CHECK: return
func.func @merged_readers(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %t = memfit.transpose %x {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %a = memfit.exp %t : tensor<4x8xf32>
  %m = memfit.reduce_mean %a {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = memfit.sub %a, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Not merged: reductions of two frames (the last axis, then the first),
// and element-wise work of 131,072 elements into a kernel of 4 rows (a
// GPU would run it on 4 blocks).
// CHECK-LABEL: func.func @other_frames
// CHECK-COUNT-2: memfit.kernel
// CHECK-NOT: memfit.kernel
// CHECK: return
// CHECK-LABEL: func.func @few_rows
// CHECK-COUNT-2: memfit.kernel
// CHECK-NOT: memfit.kernel
// CHECK: return
func.func @other_frames(%x: tensor<4x8xf32>) -> tensor<1x1xf32> {
  %0 = memfit.reduce_sum %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %1 = memfit.reduce_max %0 {axes = array<i64: 0>} : tensor<4x1xf32> -> tensor<1x1xf32>
  return %1 : tensor<1x1xf32>
}
func.func @few_rows(%x: tensor<4x32768xf32>) -> tensor<4x1xf32> {
  %0 = memfit.exp %x : tensor<4x32768xf32>
  %1 = memfit.reduce_sum %0 {axes = array<i64: 1>} : tensor<4x32768xf32> -> tensor<4x1xf32>
  return %1 : tensor<4x1xf32>
}

// -----

// Not merged: a row kernel that would read a parameter (through the
// prologue) and update it in place; its reads would race with its writes.
// Updating another parameter, the two merge.
memfit.parameter @g = dense<1.000000e+00> : tensor<8xf32>
memfit.parameter @h = dense<1.000000e+00> : tensor<8xf32>
// CHECK-LABEL: func.func @reads_what_it_updates
// CHECK-COUNT-2: memfit.kernel
// CHECK-NOT: memfit.kernel
// CHECK: memfit.assign @g
// CHECK-LABEL: func.func @updates_another
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.reduce_sum
// CHECK-NEXT: memfit.yield
// CHECK-NOT: memfit.kernel
// CHECK: memfit.assign @h
func.func @reads_what_it_updates(%x: tensor<2x3x8xf32>) {
  %g = memfit.load_parameter @g : tensor<8xf32>
  %0 = memfit.mul %x, %g : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %1 = memfit.mul %0, %x : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %2 = memfit.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x3x8xf32> -> tensor<8xf32>
  memfit.assign @g, %2 : tensor<8xf32>
  return
}
func.func @updates_another(%x: tensor<2x3x8xf32>) {
  %g = memfit.load_parameter @g : tensor<8xf32>
  %0 = memfit.mul %x, %g : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %1 = memfit.mul %0, %x : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %2 = memfit.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x3x8xf32> -> tensor<8xf32>
  memfit.assign @h, %2 : tensor<8xf32>
  return
}

// -----

// A row kernel whose first reader is of another frame (a column sum: a
// normalization's scale gradient) merges into its next reader of its own
// frame (the input gradient) when the column sum can run after that one:
// one row kernel for the statistics and the input gradient, then the
// column sum.
// CHECK-LABEL: func.func @first_reader_moved_past
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.reduce_mean
// CHECK-NEXT: memfit.sub
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.reduce_mean
// CHECK-NEXT: memfit.mul
// CHECK-NEXT: memfit.yield
// CHECK: memfit.kernel
// CHECK: memfit.mul
// CHECK-NEXT: memfit.reduce_sum {{.*}}axes = array<i64: 0>
// CHECK-NOT: memfit.kernel
// CHECK: return
func.func @first_reader_moved_past(%x: tensor<64x8xf32>, %dy: tensor<64x8xf32>) -> (tensor<64x8xf32>, tensor<8xf32>) {
  %m = memfit.reduce_mean %x {axes = array<i64: 1>} : tensor<64x8xf32> -> tensor<64x1xf32>
  %xc = memfit.sub %x, %m : tensor<64x8xf32>, tensor<64x1xf32> -> tensor<64x8xf32>
  %g = memfit.mul %dy, %xc : tensor<64x8xf32>, tensor<64x8xf32> -> tensor<64x8xf32>
  %col = memfit.reduce_sum %g {axes = array<i64: 0>, keepdims = false} : tensor<64x8xf32> -> tensor<8xf32>
  %p = memfit.mul %dy, %xc : tensor<64x8xf32>, tensor<64x8xf32> -> tensor<64x8xf32>
  %pm = memfit.reduce_mean %p {axes = array<i64: 1>} : tensor<64x8xf32> -> tensor<64x1xf32>
  %dx = memfit.mul %xc, %pm : tensor<64x8xf32>, tensor<64x1xf32> -> tensor<64x8xf32>
  return %dx, %col : tensor<64x8xf32>, tensor<8xf32>
}
