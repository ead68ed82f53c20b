// memfit-fuse views (`views`, on by default): a matmul or kernel operand
// that kernels only transposed or split off another value becomes a
// memfit.strided_view of that value, and a kernel that only transposes a matmul's result
// (keeping the last dimension last) becomes the matmul's result_perm. The
// library call reads and writes those in place (the manifest's offsets, ld
// and batch strides); the copies go.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=multi-tensor=false' | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=multi-tensor=false views=false' | FileCheck %s --check-prefix=OFF
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=multi-tensor=false' | memfit-translate -split-input-file --memfit-to-manifest | FileCheck %s --check-prefix=MANIFEST
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=multi-tensor=false' | memfit-translate -split-input-file --memfit-to-cuda | FileCheck %s --check-prefix=CUDA

// Attention as exporters write it: the QKV projection [2, 8, 3 * 2 * 4]
// reshaped to [2, 8, 3, 2, 4], its heads moved forward and split into Q, K
// and V; S = Q K^T, O = S V, O's heads merged back and projected. Q, K and
// V become views of the projection (K read transposed: the flag flips),
// O is written merged (result_perm), and no kernel is left but the
// projections'.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x16xf32>, %[[W:.+]]: tensor<16x24xf32>, %[[P:.+]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[QKV:.+]] = memfit.matmul %[[X]], %[[W]] : tensor<2x8x16xf32>, tensor<16x24xf32> -> tensor<2x8x24xf32>
// CHECK-NEXT: %[[Q:.+]] = memfit.strided_view %[[QKV]] {offset = 0 : i64, strides = array<i64: 192, 4, 24, 1>} : tensor<2x8x24xf32> -> tensor<2x2x8x4xf32>
// CHECK-NEXT: %[[K:.+]] = memfit.strided_view %[[QKV]] {offset = 8 : i64, strides = array<i64: 192, 4, 24, 1>} : tensor<2x8x24xf32> -> tensor<2x2x8x4xf32>
// CHECK-NEXT: %[[S:.+]] = memfit.matmul %[[Q]], %[[K]] {trans_b = true} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
// CHECK-NEXT: %[[V:.+]] = memfit.strided_view %[[QKV]] {offset = 16 : i64, strides = array<i64: 192, 4, 24, 1>} : tensor<2x8x24xf32> -> tensor<2x2x8x4xf32>
// CHECK-NEXT: %[[O:.+]] = memfit.matmul %[[S]], %[[V]] {result_perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x8x2x4xf32>
// CHECK-NEXT: %[[M:.+]] = memfit.reshape %[[O]] : tensor<2x8x2x4xf32> to tensor<2x8x8xf32>
// CHECK-NEXT: %[[Y:.+]] = memfit.matmul %[[M]], %[[P]]
// CHECK-NEXT: return %[[Y]]
// OFF-LABEL: func.func @attention
// OFF-COUNT-3: memfit.transpose
// OFF: memfit.split
// OFF-NOT: strided_view
// OFF-NOT: result_perm
// The contractions as the library calls them: Q at offset 0 with rows 24
// apart and heads 4 apart, K at 8 read transposed, V at 16; O's rows 8
// apart in the merged [2, 8, 8], its heads 4 apart and its batches 64.
// MANIFEST-LABEL: "contractions": [
// MANIFEST: "name": "c1_matmul",
// MANIFEST: "m": 8,
// MANIFEST-NEXT: "n": 8,
// MANIFEST-NEXT: "k": 4,
// MANIFEST-NEXT: "transA": false,
// MANIFEST-NEXT: "transB": true,
// MANIFEST: "batchShape": [2, 2],
// MANIFEST-NEXT: "batchStridesA": [192, 4],
// MANIFEST-NEXT: "batchStridesB": [192, 4],
// MANIFEST-NEXT: "batchStridesOut": [128, 64],
// MANIFEST-NEXT: "offsets": [0, 8, 0],
// MANIFEST-NEXT: "ld": [24, 24, 8],
// MANIFEST: "name": "c2_matmul",
// MANIFEST: "m": 8,
// MANIFEST-NEXT: "n": 4,
// MANIFEST-NEXT: "k": 8,
// MANIFEST-NEXT: "transA": false,
// MANIFEST-NEXT: "transB": false,
// MANIFEST: "batchShape": [2, 2],
// MANIFEST-NEXT: "batchStridesA": [128, 64],
// MANIFEST-NEXT: "batchStridesB": [192, 4],
// MANIFEST-NEXT: "batchStridesOut": [64, 4],
// MANIFEST-NEXT: "offsets": [0, 16, 0],
// MANIFEST-NEXT: "ld": [8, 24, 8],
func.func @attention(%x: tensor<2x8x16xf32>, %w: tensor<16x24xf32>, %p: tensor<8x8xf32>) -> tensor<2x8x8xf32> {
  %qkv = memfit.matmul %x, %w : tensor<2x8x16xf32>, tensor<16x24xf32> -> tensor<2x8x24xf32>
  %r = memfit.reshape %qkv : tensor<2x8x24xf32> to tensor<2x8x3x2x4xf32>
  %t = memfit.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : tensor<2x8x3x2x4xf32> -> tensor<3x2x2x8x4xf32>
  %s:3 = memfit.split %t {axis = 0 : i64, sizes = array<i64: 1, 1, 1>} : tensor<3x2x2x8x4xf32> -> tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>
  %q = memfit.squeeze %s#0 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %k = memfit.squeeze %s#1 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %v = memfit.squeeze %s#2 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %kt = memfit.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<2x2x8x4xf32> -> tensor<2x2x4x8xf32>
  %scores = memfit.matmul %q, %kt : tensor<2x2x8x4xf32>, tensor<2x2x4x8xf32> -> tensor<2x2x8x8xf32>
  %o = memfit.matmul %scores, %v : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %ot = memfit.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x8x4xf32> -> tensor<2x8x2x4xf32>
  %m = memfit.reshape %ot : tensor<2x8x2x4xf32> to tensor<2x8x8xf32>
  %y = memfit.matmul %m, %p : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// -----

// An element-wise kernel reads a view in place too: the split and the
// transpose go, exp reads its piece at the view's strides.
// CHECK-LABEL: func.func @elementwise_reader
// CHECK-NOT: memfit.transpose
// CHECK-NOT: memfit.split
// CHECK: %[[Q:.+]] = memfit.strided_view %{{.+}} {offset = 0 : i64, strides = array<i64: 128, 4, 16, 1>}
// CHECK-NEXT: memfit.kernel(%[[Q]])
// CHECK: memfit.exp
// CHECK: return
// CUDA-LABEL: // k0_exp: (no ONNX node)
// CUDA: const float [[E:v[0-9]+]] = in0[0LL + c0 * 128LL + c1 * 4LL + c2 * 16LL + c3 * 1LL];
// CUDA-NEXT: const float [[R:v[0-9]+]] = expf([[E]]);
// CUDA-NEXT: out0[idx] = [[R]];
func.func @elementwise_reader(%qkv: tensor<2x8x16xf32>, %w: tensor<2x4x8xf32>) -> (tensor<2x2x8x4xf32>, tensor<2x2x8x8xf32>) {
  %r = memfit.reshape %qkv : tensor<2x8x16xf32> to tensor<2x8x2x2x4xf32>
  %t = memfit.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : tensor<2x8x2x2x4xf32> -> tensor<2x2x2x8x4xf32>
  %s:2 = memfit.split %t {axis = 0 : i64, sizes = array<i64: 1, 1>} : tensor<2x2x2x8x4xf32> -> tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>
  %q = memfit.squeeze %s#0 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %k = memfit.squeeze %s#1 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %e = memfit.exp %q : tensor<2x2x8x4xf32>
  %p = memfit.matmul %k, %w : tensor<2x2x8x4xf32>, tensor<2x4x8xf32> -> tensor<2x2x8x8xf32>
  return %e, %p : tensor<2x2x8x4xf32>, tensor<2x2x8x8xf32>
}

// -----

// A split whose piece a reduction's template also reads keeps its copies
// (the template reads its input's buffer packed; the view would not remove
// the copies, and the projection would live longer).
// CHECK-LABEL: func.func @other_reader
// CHECK: memfit.transpose
// CHECK: memfit.split
// CHECK-NOT: memfit.strided_view
// CHECK: return
func.func @other_reader(%qkv: tensor<2x8x16xf32>, %w: tensor<2x4x8xf32>) -> (tensor<2x2x8x1xf32>, tensor<2x2x8x8xf32>) {
  %r = memfit.reshape %qkv : tensor<2x8x16xf32> to tensor<2x8x2x2x4xf32>
  %t = memfit.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : tensor<2x8x2x2x4xf32> -> tensor<2x2x2x8x4xf32>
  %s:2 = memfit.split %t {axis = 0 : i64, sizes = array<i64: 1, 1>} : tensor<2x2x2x8x4xf32> -> tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>
  %q = memfit.squeeze %s#0 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %k = memfit.squeeze %s#1 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %e = memfit.reduce_sum %q {axes = array<i64: 3>} : tensor<2x2x8x4xf32> -> tensor<2x2x8x1xf32>
  %p = memfit.matmul %k, %w : tensor<2x2x8x4xf32>, tensor<2x4x8xf32> -> tensor<2x2x8x8xf32>
  return %e, %p : tensor<2x2x8x1xf32>, tensor<2x2x8x8xf32>
}

// -----

// Attention's kernels read Q, K and V split off a QKV projection in place
// (offsets 0, HD and 2HD of the projection's rows, strides
// [S * 3HD, D, 3HD, 1]: row (b, h, i) of a head at b * S * 3HD + h * D +
// i * 3HD); no copy is left.
// CHECK-LABEL: func.func @attention_kernel
// CHECK-NOT: memfit.transpose
// CHECK-NOT: memfit.split
// CHECK-DAG: %[[Q:.+]] = memfit.strided_view %[[QKV:.+]] {offset = 0 : i64, strides = array<i64: 192, 4, 24, 1>}
// CHECK-DAG: %[[K:.+]] = memfit.strided_view %[[QKV]] {offset = 8 : i64, strides = array<i64: 192, 4, 24, 1>}
// CHECK-DAG: %[[V:.+]] = memfit.strided_view %[[QKV]] {offset = 16 : i64, strides = array<i64: 192, 4, 24, 1>}
// CHECK: memfit.kernel(%[[Q]], %[[K]], %[[V]])
// CHECK: memfit.attention
// CHECK: return
// CUDA-LABEL: // k0_attention: (no ONNX node)
// CUDA: const long long hk = h / 1LL;
// CUDA: q[k] = (float)in0[0LL + b * 192LL + h * 4LL + i * 24LL + k];
// CUDA: dot0 += q[0] * (float)in1[8LL + b * 192LL + hk * 4LL + j * 24LL + 0];
// CUDA: o[e] += p * (float)in2[16LL + b * 192LL + hk * 4LL + (j0 + jj) * 24LL + e];
// CUDA: out0[t * 4LL + e] =
// MANIFEST: "name": "k0_attention"
func.func @attention_kernel(%x: tensor<2x8x16xf32>, %w: tensor<16x24xf32>) -> tensor<2x2x8x4xf32> {
  %qkv = memfit.matmul %x, %w : tensor<2x8x16xf32>, tensor<16x24xf32> -> tensor<2x8x24xf32>
  %r = memfit.reshape %qkv : tensor<2x8x24xf32> to tensor<2x8x3x2x4xf32>
  %t = memfit.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : tensor<2x8x3x2x4xf32> -> tensor<3x2x2x8x4xf32>
  %s:3 = memfit.split %t {axis = 0 : i64, sizes = array<i64: 1, 1, 1>} : tensor<3x2x2x8x4xf32> -> tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>
  %q = memfit.squeeze %s#0 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %k = memfit.squeeze %s#1 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %v = memfit.squeeze %s#2 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %o, %lse = memfit.attention causal %q, %k, %v scale 0.5 : (tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>) -> (tensor<2x2x8x4xf32>, tensor<2x2x8xf32>)
  return %o : tensor<2x2x8x4xf32>
}

// -----

// A transposed result that another op also reads stays a copy; a transpose
// that moves the last dimension is not a result_perm (the library writes
// rows of adjacent columns).
// CHECK-LABEL: func.func @results
// CHECK-NOT: result_perm
// CHECK: memfit.transpose {{.*}}perm = array<i64: 0, 2, 1, 3>
// CHECK-NOT: result_perm
// CHECK: memfit.transpose {{.*}}perm = array<i64: 3, 1, 2, 0>
// CHECK-NOT: result_perm
// CHECK: return
func.func @results(%a: tensor<2x3x8x4xf32>, %b: tensor<2x3x4x5xf32>) -> (tensor<2x8x3x5xf32>, tensor<2x3x8x5xf32>, tensor<5x3x8x2xf32>) {
  %c = memfit.matmul %a, %b : tensor<2x3x8x4xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x8x5xf32>
  %t = memfit.transpose %c {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x8x5xf32> -> tensor<2x8x3x5xf32>
  %d = memfit.matmul %a, %b : tensor<2x3x8x4xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x8x5xf32>
  %u = memfit.transpose %d {perm = array<i64: 3, 1, 2, 0>} : tensor<2x3x8x5xf32> -> tensor<5x3x8x2xf32>
  return %t, %c, %u : tensor<2x8x3x5xf32>, tensor<2x3x8x5xf32>, tensor<5x3x8x2xf32>
}

// -----

// The view reads a parameter that an in-place update writes between the
// copy and the matmul: the copy stays (it holds the old value).
// CHECK-LABEL: func.func @updated
// CHECK: memfit.transpose
// CHECK-NOT: memfit.strided_view
// CHECK: return
memfit.parameter @w = dense<1.0> : tensor<2x4x3xf32>
func.func @updated(%x: tensor<4x3x5xf32>) -> tensor<4x2x5xf32> {
  %w = memfit.load_parameter @w : tensor<2x4x3xf32>
  %t = memfit.transpose %w {perm = array<i64: 1, 0, 2>} : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  %n = memfit.neg %w : tensor<2x4x3xf32>
  memfit.assign @w, %n : tensor<2x4x3xf32>
  %y = memfit.matmul %t, %x : tensor<4x2x3xf32>, tensor<4x3x5xf32> -> tensor<4x2x5xf32>
  return %y : tensor<4x2x5xf32>
}

// -----

// The same with the update after the matmul: the matmul reads W's rows in
// place, the heads' dimension 12 apart.
// CHECK-LABEL: func.func @updated_later
// CHECK: %[[W:.+]] = memfit.load_parameter @w
// CHECK-NEXT: %[[V:.+]] = memfit.strided_view %[[W]] {offset = 0 : i64, strides = array<i64: 3, 12, 1>} : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: memfit.matmul %[[V]]
// CHECK-NOT: memfit.transpose
// CHECK: memfit.assign @w
memfit.parameter @w = dense<1.0> : tensor<2x4x3xf32>
func.func @updated_later(%x: tensor<4x3x5xf32>) -> tensor<4x2x5xf32> {
  %w = memfit.load_parameter @w : tensor<2x4x3xf32>
  %t = memfit.transpose %w {perm = array<i64: 1, 0, 2>} : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  %y = memfit.matmul %t, %x : tensor<4x2x3xf32>, tensor<4x3x5xf32> -> tensor<4x2x5xf32>
  %n = memfit.neg %w : tensor<2x4x3xf32>
  memfit.assign @w, %n : tensor<2x4x3xf32>
  return %y : tensor<4x2x5xf32>
}

// -----

// The gradients of Q, K and V joined and moved back into the projection's
// layout (as autodiff writes the split's and transpose's gradients): each
// matmul writes its result with its heads merged (result_perm), and one
// kernel concatenates them along the transposed axis; the concatenation
// in the heads' layout is not stored.
// CHECK-LABEL: func.func @joined_gradients
// CHECK: %[[DQ:.+]] = memfit.matmul %{{.+}}, %{{.+}} {result_perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x8x2x4xf32>
// CHECK-NEXT: %[[RQ:.+]] = memfit.reshape %[[DQ]] : tensor<2x8x2x4xf32> to tensor<2x8x1x2x4xf32>
// CHECK: %[[DK:.+]] = memfit.matmul %{{.+}}, %{{.+}} {result_perm = array<i64: 0, 2, 1, 3>, trans_a = true}
// CHECK-NEXT: %[[RK:.+]] = memfit.reshape %[[DK]]
// CHECK: %[[DV:.+]] = memfit.matmul %{{.+}}, %{{.+}} {result_perm = array<i64: 0, 2, 1, 3>, trans_a = true}
// CHECK-NEXT: %[[RV:.+]] = memfit.reshape %[[DV]]
// CHECK-NEXT: %[[J:.+]] = memfit.kernel(%[[RQ]], %[[RK]], %[[RV]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.concat {{.*}}{axis = 2 : i64} : tensor<2x8x1x2x4xf32>, tensor<2x8x1x2x4xf32>, tensor<2x8x1x2x4xf32> -> tensor<2x8x3x2x4xf32>
// CHECK-NEXT: memfit.yield
// CHECK-NEXT: }
// CHECK-NEXT: memfit.reshape %[[J]] : tensor<2x8x3x2x4xf32> to tensor<2x8x24xf32>
// CHECK-NOT: memfit.transpose
// CHECK: return
func.func @joined_gradients(%ds: tensor<2x2x8x8xf32>, %k: tensor<2x2x8x4xf32>, %q: tensor<2x2x8x4xf32>, %p: tensor<2x2x8x8xf32>, %do: tensor<2x2x8x4xf32>, %w: tensor<16x24xf32>) -> tensor<2x8x16xf32> {
  %dq = memfit.matmul %ds, %k : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %dk = memfit.matmul %ds, %q {trans_a = true} : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %dv = memfit.matmul %p, %do {trans_a = true} : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %rq = memfit.reshape %dq : tensor<2x2x8x4xf32> to tensor<1x2x2x8x4xf32>
  %rk = memfit.reshape %dk : tensor<2x2x8x4xf32> to tensor<1x2x2x8x4xf32>
  %rv = memfit.reshape %dv : tensor<2x2x8x4xf32> to tensor<1x2x2x8x4xf32>
  %j = memfit.concat %rq, %rk, %rv {axis = 0 : i64} : tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32> -> tensor<3x2x2x8x4xf32>
  %t = memfit.transpose %j {perm = array<i64: 1, 3, 0, 2, 4>} : tensor<3x2x2x8x4xf32> -> tensor<2x8x3x2x4xf32>
  %g = memfit.reshape %t : tensor<2x8x3x2x4xf32> to tensor<2x8x24xf32>
  %dx = memfit.matmul %g, %w {trans_b = true} : tensor<2x8x24xf32>, tensor<16x24xf32> -> tensor<2x8x16xf32>
  return %dx : tensor<2x8x16xf32>
}

// -----

// The split and the concatenation of the two cases above with their axis
// counted from the end (-5 for 0): the same views and the same kernel.
// CHECK-LABEL: func.func @attention_negative_axis
// CHECK-DAG: memfit.strided_view %{{.+}} {offset = 8 : i64, strides = array<i64: 192, 4, 24, 1>}
// CHECK-DAG: memfit.strided_view %{{.+}} {offset = 16 : i64, strides = array<i64: 192, 4, 24, 1>}
// CHECK-NOT: memfit.split
// CHECK: return
func.func @attention_negative_axis(%x: tensor<2x8x16xf32>, %w: tensor<16x24xf32>) -> tensor<2x2x8x8xf32> {
  %qkv = memfit.matmul %x, %w : tensor<2x8x16xf32>, tensor<16x24xf32> -> tensor<2x8x24xf32>
  %r = memfit.reshape %qkv : tensor<2x8x24xf32> to tensor<2x8x3x2x4xf32>
  %t = memfit.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : tensor<2x8x3x2x4xf32> -> tensor<3x2x2x8x4xf32>
  %s:3 = memfit.split %t {axis = -5 : i64, sizes = array<i64: 1, 1, 1>} : tensor<3x2x2x8x4xf32> -> tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>
  %k = memfit.squeeze %s#1 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %v = memfit.squeeze %s#2 {axes = array<i64: 0>} : tensor<1x2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %kt = memfit.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<2x2x8x4xf32> -> tensor<2x2x4x8xf32>
  %scores = memfit.matmul %v, %kt : tensor<2x2x8x4xf32>, tensor<2x2x4x8xf32> -> tensor<2x2x8x8xf32>
  return %scores : tensor<2x2x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @joined_gradients_negative_axis
// CHECK: memfit.concat {{.*}}{axis = 2 : i64} : tensor<2x8x1x2x4xf32>, tensor<2x8x1x2x4xf32>, tensor<2x8x1x2x4xf32> -> tensor<2x8x3x2x4xf32>
// CHECK-NOT: memfit.transpose
// CHECK: return
func.func @joined_gradients_negative_axis(%ds: tensor<2x2x8x8xf32>, %k: tensor<2x2x8x4xf32>, %q: tensor<2x2x8x4xf32>, %p: tensor<2x2x8x8xf32>, %do: tensor<2x2x8x4xf32>, %w: tensor<16x24xf32>) -> tensor<2x8x16xf32> {
  %dq = memfit.matmul %ds, %k : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %dk = memfit.matmul %ds, %q {trans_a = true} : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %dv = memfit.matmul %p, %do {trans_a = true} : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %rq = memfit.reshape %dq : tensor<2x2x8x4xf32> to tensor<1x2x2x8x4xf32>
  %rk = memfit.reshape %dk : tensor<2x2x8x4xf32> to tensor<1x2x2x8x4xf32>
  %rv = memfit.reshape %dv : tensor<2x2x8x4xf32> to tensor<1x2x2x8x4xf32>
  %j = memfit.concat %rq, %rk, %rv {axis = -5 : i64} : tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32>, tensor<1x2x2x8x4xf32> -> tensor<3x2x2x8x4xf32>
  %t = memfit.transpose %j {perm = array<i64: 1, 3, 0, 2, 4>} : tensor<3x2x2x8x4xf32> -> tensor<2x8x3x2x4xf32>
  %g = memfit.reshape %t : tensor<2x8x3x2x4xf32> to tensor<2x8x24xf32>
  %dx = memfit.matmul %g, %w {trans_b = true} : tensor<2x8x24xf32>, tensor<16x24xf32> -> tensor<2x8x16xf32>
  return %dx : tensor<2x8x16xf32>
}

// -----

// A kernel that only transposes an attention gradient's result (the heads
// merged back) goes: the attention kernel yields the result transposed and
// writes each row at the merged layout's strides (row (b, h, i) of
// [B, H, S, D] = [2, 2, 8, 4] at b * 64 + i * 8 + h * 4).
// CHECK-LABEL: func.func @attention_gradient_merged
// CHECK: %[[DQ:.+]] = memfit.kernel
// CHECK: %[[G:.+]] = memfit.attention_grad_query
// CHECK-NEXT: %[[T:.+]] = memfit.transpose %[[G]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: memfit.yield %[[T]] : tensor<2x8x2x4xf32>
// CHECK-NOT: memfit.kernel
// CHECK: return %[[DQ]]
// CUDA-LABEL: // k0_attention_grad_query_transpose: (no ONNX node)
// CUDA: out0[b * 64LL + h * 4LL + i * 8LL + c] =
func.func @attention_gradient_merged(%q: tensor<2x2x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>, %lse: tensor<2x2x8xf32>, %delta: tensor<2x2x8xf32>, %g: tensor<2x2x8x4xf32>) -> tensor<2x8x2x4xf32> {
  %dq = memfit.attention_grad_query causal %q, %k, %v, %lse, %delta, %g scale 0.5 : (tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x8x4xf32>
  %t = memfit.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x8x4xf32> -> tensor<2x8x2x4xf32>
  return %t : tensor<2x8x2x4xf32>
}

// -----

// Rows sliced off a value (a chunked loss's rows of the hidden states)
// are read in place by memfit.gemm at an offset, where the plan does not
// grow; the slices' copies go.
// CHECK-LABEL: func.func @gemm_rows
// CHECK-NOT: memfit.slice
// CHECK: %[[A:.+]] = memfit.strided_view %arg0 {offset = 0 : i64, strides = array<i64: 4, 1>} : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: memfit.gemm %[[A]], %arg1
// CHECK: %[[B:.+]] = memfit.strided_view %arg0 {offset = 16 : i64, strides = array<i64: 4, 1>} : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: memfit.gemm %[[B]], %arg1
// MANIFEST: "name": "c1_gemm"
// MANIFEST: "offsets": [16, 0, 0]
func.func @gemm_rows(%h: tensor<8x4xf32>, %w: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %a = memfit.slice %h {starts = array<i64: 0>, ends = array<i64: 4>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<8x4xf32> -> tensor<4x4xf32>
  %y0 = memfit.gemm %a, %w : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %b = memfit.slice %h {starts = array<i64: 4>, ends = array<i64: 8>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<8x4xf32> -> tensor<4x4xf32>
  %y1 = memfit.gemm %b, %w : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y0, %y1 : tensor<4x3xf32>, tensor<4x3xf32>
}
