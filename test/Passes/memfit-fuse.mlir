// memfit-fuse: a pointwise kernel is merged into the kernel that first reads
// its results (which also yields those that later ops read), when that
// keeps no more bytes live and moves no read past an in-place update.
// (Multi-tensor kernels are in memfit-fuse-segments.mlir, row kernels in
// memfit-fuse-rows.mlir.)
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=multi-tensor=false rows=false' | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=max-ops=2 multi-tensor=false rows=false' | FileCheck %s --check-prefix=MAX
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=report=- multi-tensor=false rows=false' -o /dev/null | FileCheck %s --check-prefix=REPORT

// A chain of three element-wise ops (a bias add, exp, a product) becomes one
// kernel that reads x and b and writes the product. With max-ops=2 the
// chain stops at two ops.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[B:.+]]: tensor<4xf32>)
// CHECK-NEXT: %[[K:.+]] = memfit.kernel(%[[X]], %[[B]]) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.+]]: tensor<2x4xf32>, %[[A1:.+]]: tensor<4xf32>):
// CHECK-NEXT: %[[S:.+]] = memfit.add %[[A0]], %[[A1]]
// CHECK-NEXT: %[[E:.+]] = memfit.exp %[[S]]
// CHECK-NEXT: %[[M:.+]] = memfit.mul %[[E]], %[[A0]]
// CHECK-NEXT: memfit.yield %[[M]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
// MAX-LABEL: func.func @chain
// MAX: memfit.kernel
// MAX-NEXT: ^bb0
// MAX-NEXT: memfit.add
// MAX-NEXT: memfit.exp
// MAX-NEXT: memfit.yield
// MAX: memfit.kernel
// MAX-NEXT: ^bb0
// MAX-NEXT: memfit.mul
// MAX-NEXT: memfit.yield
// REPORT: memfit-fuse: 3 kernels -> 1
func.func @chain(%x: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = memfit.add %x, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %1 = memfit.exp %0 : tensor<2x4xf32>
  %2 = memfit.mul %1, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// -----

// Kernels formed already (remat's, with their attributes): the merged
// kernel keeps the consumer's attributes, as the step it replaces.
// CHECK-LABEL: func.func @attributes
// CHECK: memfit.kernel(%{{.+}}) {memfit.recomputed_from = ["n"]}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.exp
// CHECK-NEXT: memfit.neg
// REPORT: memfit-fuse: 2 kernels -> 1
func.func @attributes(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = memfit.kernel(%x) {memfit.saved = "e"} : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    %e = memfit.exp %a : tensor<8xf32>
    memfit.yield %e : tensor<8xf32>
  }
  %1 = memfit.kernel(%0) {memfit.recomputed_from = ["n"]} : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    %n = memfit.neg %a : tensor<8xf32>
    memfit.yield %n : tensor<8xf32>
  }
  return %1 : tensor<8xf32>
}

// -----

// A value that several ops read: the producer merges into its first
// reader, and the merged kernel also yields the value for the later ones
// (multi-output). Here all three kernels become one with two results.
// CHECK-LABEL: func.func @two_readers
// CHECK: %[[K:.+]]:2 = memfit.kernel(%{{.+}}) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[E:.+]] = memfit.exp
// CHECK-NEXT: %[[N:.+]] = memfit.neg %[[E]]
// CHECK-NEXT: %[[S:.+]] = memfit.sqrt %[[E]]
// CHECK-NEXT: memfit.yield %[[S]], %[[N]]
// CHECK: return %[[K]]#1, %[[K]]#0
// REPORT: memfit-fuse: 3 kernels -> 1
func.func @two_readers(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = memfit.exp %x : tensor<8xf32>
  %1 = memfit.neg %0 : tensor<8xf32>
  %2 = memfit.sqrt %0 : tensor<8xf32>
  return %1, %2 : tensor<8xf32>, tensor<8xf32>
}

// -----

// A reader that is not a kernel comes first (a matmul): the value must
// exist before it, so the producer stays. And a multi-output merge that
// would keep more bytes live across the step's peak: the slice of %p (a
// softmax row, read last by the slice) is also read after the neg, so
// merging it would keep %p (twice the slice's bytes) live through the
// 64x64 product that only the sum between them reads, where the step holds
// the most: refused. The slice's copy goes instead: the neg reads its rows
// of %p in place (views of slices, kept where the plan does not grow).
// CHECK-LABEL: func.func @readers_before
// CHECK-COUNT-5: memfit.kernel
// CHECK-NOT: memfit.kernel
// CHECK: return
// REPORT: memfit-fuse: 6 kernels -> 5
func.func @readers_before(%x: tensor<4x4xf32>, %z: tensor<4x8xf32>, %y: tensor<64x64xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<1x1xf32>) {
  %0 = memfit.exp %x : tensor<4x4xf32>
  %m = memfit.matmul %0, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %1 = memfit.neg %0 : tensor<4x4xf32>
  %p = memfit.softmax %z : tensor<4x8xf32>
  %e = memfit.slice %p {axes = array<i64: 1>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x4xf32>
  %b = memfit.matmul %y, %y : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %r = memfit.reduce_sum %b {axes = array<i64: 0, 1>} : tensor<64x64xf32> -> tensor<1x1xf32>
  %n = memfit.neg %e : tensor<4x4xf32>
  %s = memfit.matmul %e, %n : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %m, %1, %n, %s, %r : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<1x1xf32>
}

// -----

// The same merge where the step's peak is elsewhere (at the end, where
// every result is live): %p lives a step longer, below the peak: merged.
// CHECK-LABEL: func.func @below_peak
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.softmax
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.exp
// CHECK-NEXT: memfit.neg
// CHECK: return
func.func @below_peak(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<64x64xf32>) {
  %p = memfit.softmax %x : tensor<4x4xf32>
  %e = memfit.exp %p : tensor<4x4xf32>
  %n = memfit.neg %e : tensor<4x4xf32>
  %s = memfit.matmul %e, %n : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %big = memfit.exp %x : tensor<4x4xf32>
  %b = memfit.matmul %big, %big : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %c = memfit.constant dense<1.000000e+00> : tensor<64x64xf32>
  %d = memfit.exp %c : tensor<64x64xf32>
  return %n, %s, %d : tensor<4x4xf32>, tensor<4x4xf32>, tensor<64x64xf32>
}

// -----

// A producer result that the consumer broadcasts (a [4] value in a [2x4]
// kernel) exists at another index: not merged. Neither is one that the
// consumer's data movement reads (a transpose), nor a softmax (a row
// kernel), nor dropout (not pure: it draws random numbers).
// CHECK-LABEL: func.func @not_pointwise
// CHECK-COUNT-8: memfit.kernel
// REPORT: memfit-fuse: 8 kernels -> 8
func.func @not_pointwise(%x: tensor<2x4xf32>, %v: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = memfit.exp %v : tensor<4xf32>
  %1 = memfit.add %x, %0 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %2 = memfit.exp %x : tensor<2x4xf32>
  %3 = memfit.transpose %2 {perm = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
  %4 = memfit.neg %x : tensor<2x4xf32>
  %5 = memfit.softmax %4 : tensor<2x4xf32>
  %6 = memfit.dropout %x {ratio = 1.000000e-01 : f32} : tensor<2x4xf32>
  %7 = memfit.exp %6 : tensor<2x4xf32>
  return %1, %3, %5, %7 : tensor<2x4xf32>, tensor<4x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Data movement that reads the producer's own inputs fuses: the transpose
// of x and the add run as one kernel.
// CHECK-LABEL: func.func @transpose_then_add
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.transpose
// CHECK-NEXT: memfit.add
// CHECK-NEXT: memfit.yield
// CHECK-NOT: memfit.kernel
// REPORT: memfit-fuse: 2 kernels -> 1
func.func @transpose_then_add(%x: tensor<2x4xf32>, %y: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = memfit.transpose %x {perm = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
  %1 = memfit.add %0, %y : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}

// -----

// Bytes live: %p and %q are arena values (softmax rows, not fused) that the
// add reads last. Merging the add into its consumer would keep both live
// until then in place of the add's one result, so it is not merged; the exp
// after it is (it keeps %s live in place of its own result).
// CHECK-LABEL: func.func @keeps_bytes_live
// CHECK: %[[P:.+]] = memfit.kernel
// CHECK: %[[Q:.+]] = memfit.kernel
// CHECK: %[[S:.+]] = memfit.kernel(%[[P]], %[[Q]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.add
// CHECK-NEXT: memfit.yield
// CHECK: memfit.matmul
// CHECK: memfit.kernel(%[[S]]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.exp
// CHECK-NEXT: memfit.neg
// CHECK-NEXT: memfit.yield
// REPORT: memfit-fuse: 5 kernels -> 4
func.func @keeps_bytes_live(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %p = memfit.softmax %x : tensor<4x4xf32>
  %q = memfit.softmax %w : tensor<4x4xf32>
  %s = memfit.add %p, %q : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %m = memfit.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %e = memfit.exp %s : tensor<4x4xf32>
  %n = memfit.neg %e : tensor<4x4xf32>
  return %n, %m : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// An in-place update between the two: the producer reads the parameter
// before it is assigned, so the read cannot move after the assign.
memfit.parameter @w = dense<1.000000e+00> : tensor<8xf32>
// CHECK-LABEL: func.func @update_between
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.exp
// CHECK-NEXT: memfit.yield
// CHECK: memfit.assign @w
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.neg
// REPORT: memfit-fuse: 3 kernels -> 3
func.func @update_between(%x: tensor<8xf32>) -> tensor<8xf32> {
  %w = memfit.load_parameter @w : tensor<8xf32>
  %e = memfit.exp %w : tensor<8xf32>
  %u = memfit.add %x, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  memfit.assign @w, %u : tensor<8xf32>
  %n = memfit.neg %e : tensor<8xf32>
  return %n : tensor<8xf32>
}

// -----

// An in-place update of another parameter between the two: the merged
// kernel reads @w where the consumer runs, and @w is unchanged there.
memfit.parameter @w = dense<1.000000e+00> : tensor<8xf32>
memfit.parameter @v = dense<1.000000e+00> : tensor<8xf32>
// CHECK-LABEL: func.func @other_update_between
// CHECK: memfit.assign @v
// CHECK: memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.exp
// CHECK-NEXT: memfit.neg
// CHECK-NEXT: memfit.yield
// REPORT: memfit-fuse: 3 kernels -> 2
func.func @other_update_between(%x: tensor<8xf32>) -> tensor<8xf32> {
  %w = memfit.load_parameter @w : tensor<8xf32>
  %e = memfit.exp %w : tensor<8xf32>
  %u = memfit.add %x, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  memfit.assign @v, %u : tensor<8xf32>
  %n = memfit.neg %e : tensor<8xf32>
  return %n : tensor<8xf32>
}

// -----

// Contractions read transposed matrices in place: a matmul of a batch of
// rows by a transposed weight becomes one gemm with trans_b over the rows
// (views around it), a gemm's transposed operand flips its flag, and the
// transpose kernels go away. A transpose of a contraction's result that
// nothing else reads is the contraction with its operands swapped
// ((a^T b)^T = b^T a): a gemm that writes the transposed result. The new
// contractions keep the memfit.* attributes of the ops they replace.
memfit.parameter @w = dense<1.000000e+00> : tensor<5x4xf32>
// CHECK-LABEL: func.func @transposed_operands
// CHECK: %[[W:.+]] = memfit.load_parameter @w
// CHECK-NOT: memfit.kernel
// CHECK: %[[X2:.+]] = memfit.reshape %{{.+}} : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK-NEXT: %[[Y2:.+]] = memfit.gemm %[[X2]], %[[W]] {memfit.saved = "y", trans_b = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
// CHECK-NEXT: %[[Y:.+]] = memfit.reshape %[[Y2]] : tensor<6x5xf32> to tensor<2x3x5xf32>
// CHECK-NEXT: %[[D:.+]] = memfit.gemm %{{.+}}, %[[W]] {memfit.backward} : (tensor<6x5xf32>, tensor<5x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: %[[G:.+]] = memfit.gemm %{{.+}}, %{{.+}} {memfit.backward, memfit.gradient_of = @w, trans_a = true} : (tensor<6x5xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
// CHECK-NOT: memfit.kernel
// CHECK: return %[[Y]], %[[D]], %[[G]]
// REPORT: memfit-fuse: 2 kernels -> 0
func.func @transposed_operands(%x: tensor<2x3x4xf32>, %dy: tensor<6x5xf32>, %x2: tensor<6x4xf32>) -> (tensor<2x3x5xf32>, tensor<6x4xf32>, tensor<5x4xf32>) {
  %w = memfit.load_parameter @w : tensor<5x4xf32>
  %wt = memfit.transpose %w {perm = array<i64: 1, 0>} : tensor<5x4xf32> -> tensor<4x5xf32>
  %y = memfit.matmul %x, %wt {memfit.saved = "y"} : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %d = memfit.gemm %dy, %wt {memfit.backward, trans_b = true} : (tensor<6x5xf32>, tensor<4x5xf32>) -> tensor<6x4xf32>
  %gt = memfit.gemm %x2, %dy {memfit.backward, trans_a = true} : (tensor<6x4xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %g = memfit.transpose %gt {memfit.backward, memfit.gradient_of = @w, perm = array<i64: 1, 0>} : tensor<4x5xf32> -> tensor<5x4xf32>
  return %y, %d, %g : tensor<2x3x5xf32>, tensor<6x4xf32>, tensor<5x4xf32>
}

// -----

// A batched transpose of the last two dimensions (attention's K^T) feeding
// a matmul becomes the matmul's transpose flag: the library reads K in
// place in each batch.
// CHECK-LABEL: func.func @batched_transpose
// CHECK-SAME: (%[[Q:.+]]: tensor<2x3x4x5xf32>, %[[K:.+]]: tensor<2x3x4x5xf32>)
// CHECK-NEXT: %[[S:.+]] = memfit.matmul %[[Q]], %[[K]] {trans_b = true} : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x4x4xf32>
// CHECK-NEXT: return %[[S]]
// REPORT: memfit-fuse: 1 kernels -> 0
func.func @batched_transpose(%q: tensor<2x3x4x5xf32>, %k: tensor<2x3x4x5xf32>) -> tensor<2x3x4x4xf32> {
  %kt = memfit.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x4x5xf32> -> tensor<2x3x5x4xf32>
  %s = memfit.matmul %q, %kt : tensor<2x3x4x5xf32>, tensor<2x3x5x4xf32> -> tensor<2x3x4x4xf32>
  return %s : tensor<2x3x4x4xf32>
}

// -----

// Attention's backward: the transpose back of K^T is K itself, so both
// matmuls read K in place even though one runs after a parameter update;
// and the gradient of K^T transposed is the product with its operands
// swapped in each batch ((Q^T dS)^T = dS^T Q).
memfit.parameter @p = dense<1.000000e+00> : tensor<4xf32>
// CHECK-LABEL: func.func @attention_transposes
// CHECK-SAME: (%[[Q:.+]]: tensor<2x3x4x5xf32>, %[[K:.+]]: tensor<2x3x4x5xf32>, %[[DS:.+]]: tensor<2x3x4x4xf32>, %{{.+}}: tensor<4xf32>)
// CHECK-NEXT: %[[S:.+]] = memfit.matmul %[[Q]], %[[K]] {trans_b = true} : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x4x4xf32>
// CHECK: memfit.assign @p
// CHECK-NEXT: %[[DQ:.+]] = memfit.matmul %[[DS]], %[[K]] {memfit.backward} : tensor<2x3x4x4xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>
// CHECK-NEXT: %[[DK:.+]] = memfit.matmul %[[DS]], %[[Q]] {memfit.backward, trans_a = true} : tensor<2x3x4x4xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>
// CHECK-NEXT: return %[[S]], %[[DQ]], %[[DK]]
// REPORT: memfit-fuse: 4 kernels -> 1
func.func @attention_transposes(%q: tensor<2x3x4x5xf32>, %k: tensor<2x3x4x5xf32>, %ds: tensor<2x3x4x4xf32>, %x: tensor<4xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  %kt = memfit.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x4x5xf32> -> tensor<2x3x5x4xf32>
  %s = memfit.matmul %q, %kt : tensor<2x3x4x5xf32>, tensor<2x3x5x4xf32> -> tensor<2x3x4x4xf32>
  %u = memfit.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  memfit.assign @p, %u : tensor<4xf32>
  %kb = memfit.transpose %kt {memfit.backward, perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x5x4xf32> -> tensor<2x3x4x5xf32>
  %dq = memfit.matmul %ds, %kb {memfit.backward} : tensor<2x3x4x4xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>
  %dkt = memfit.matmul %q, %ds {memfit.backward, trans_a = true} : tensor<2x3x4x5xf32>, tensor<2x3x4x4xf32> -> tensor<2x3x5x4xf32>
  %dk = memfit.transpose %dkt {memfit.backward, perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x5x4xf32> -> tensor<2x3x4x5xf32>
  return %s, %dq, %dk : tensor<2x3x4x4xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>
}

// -----

// A transposed arena value that an element-wise kernel reads too: the
// kernel reads it in place as well (views), so the copy goes. Not folded:
// a contraction after an in-place update of the transposed parameter.
memfit.parameter @v = dense<1.000000e+00> : tensor<4x4xf32>
// CHECK-LABEL: func.func @transposes_kept
// CHECK: %[[S:.+]] = memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.softmax
// CHECK: %[[T:.+]] = memfit.strided_view %[[S]] {offset = 0 : i64, strides = array<i64: 1, 4>}
// CHECK-NEXT: memfit.matmul %{{.+}}, %[[T]]
// CHECK-NEXT: %[[E:.+]] = memfit.strided_view %[[S]] {offset = 0 : i64, strides = array<i64: 1, 4>}
// CHECK-NEXT: memfit.kernel(%[[E]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.exp
// CHECK: %[[VT:.+]] = memfit.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.transpose
// CHECK: memfit.assign @v
// CHECK-NEXT: memfit.matmul %{{.+}}, %[[VT]]
// REPORT: memfit-fuse: 5 kernels -> 4
func.func @transposes_kept(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %s = memfit.softmax %x : tensor<4x4xf32>
  %t = memfit.transpose %s {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
  %m = memfit.matmul %x, %t : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %e = memfit.exp %t : tensor<4x4xf32>
  %v = memfit.load_parameter @v : tensor<4x4xf32>
  %vt = memfit.transpose %v {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
  %u = memfit.add %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  memfit.assign @v, %u : tensor<4x4xf32>
  %n = memfit.matmul %x, %vt : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %m, %e, %n : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
