// The runtime manifest (JSON) of a function formed into kernels: buffers with
// their region and offset from the memory plan, kernels with their launch
// shape, contractions, the call sequence, bindings and memory categories.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --mlir-print-debuginfo \
// RUN:   | memfit-translate -split-input-file --memfit-to-manifest | FileCheck %s

// A matmul broadcasting its batch dimensions: [2,1,4,8] x [3,8,5] has
// m = 4, k = 8, n = 5 and batch shape broadcast([2,1], [3]) = [2,3]. A's
// matrices are 4 x 8 = 32 elements apart along its dimension of 2, and its
// dimension of 1 broadcasts (stride 0); B has no dimension for the leading
// batch dimension (stride 0) and 8 x 5 = 40 elements per matrix.
// Plan: y (480 bytes, steps 0..1) @0; mm (480, 1..2) overlaps y -> @512;
// x (256, 0..1) overlaps both -> @1024 (992 aligned up). Peak 1024 + 256.
// Buffers are numbered in the order the steps name them: A, B, result.
// CHECK-LABEL: "schema": "memfit-executable"
// CHECK-NEXT: "version": 4,
// CHECK-NEXT: "model": "",
// CHECK-NEXT: "weightsBytes": 0,
// CHECK-NEXT: "arenaBytes": 1280,
// CHECK-NEXT: "trainableParameters": 0,
// CHECK-NEXT: "frozenParameters": 0,
// CHECK-NEXT: "quantizedParameters": 0,
// CHECK-NEXT: "buffers": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "x",
// CHECK-NEXT: "region": "arena",
// CHECK-NEXT: "offset": 1024,
// CHECK-NEXT: "bytes": 256,
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "shape": [2, 1, 4, 8]
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "y",
// CHECK-NEXT: "region": "arena",
// CHECK-NEXT: "offset": 0,
// CHECK-NEXT: "bytes": 480,
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "shape": [3, 8, 5]
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "mm",
// CHECK-NEXT: "region": "arena",
// CHECK-NEXT: "offset": 512,
// CHECK-NEXT: "bytes": 480,
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "shape": [2, 3, 4, 5]
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "kernels": [],
// CHECK-NEXT: "contractions": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "c0_matmul",
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "m": 4,
// CHECK-NEXT: "n": 5,
// CHECK-NEXT: "k": 8,
// CHECK-NEXT: "transA": false,
// CHECK-NEXT: "transB": false,
// CHECK-NEXT: "alpha": 1.0,
// CHECK-NEXT: "beta": 0.0,
// CHECK-NEXT: "batchShape": [2, 3],
// CHECK-NEXT: "batchStridesA": [32, 0],
// CHECK-NEXT: "batchStridesB": [0, 40],
// CHECK-NEXT: "batchStridesOut": [60, 20],
// CHECK-NEXT: "offsets": [0, 0, 0],
// CHECK-NEXT: "ld": [8, 5, 5],
// CHECK-NEXT: "onnxNodes": [
// CHECK-NEXT: "mm"
// CHECK-NEXT: ],
// The cost model's bytes (A [2,1,4,8], B [1,3,8,5] and the output
// [2,3,4,5] in f32: 256 + 480 + 480) and FLOPs (2 x 4 x 5 x 8 x 6); the
// entry's lower bound is the same bytes.
// CHECK-NEXT: "bytes": 1216,
// CHECK-NEXT: "flops": 1920
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "entries": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "batched_matmul",
// Inputs and outputs are named by the onnx.name attributes.
// CHECK-NEXT: "steps": [
// CHECK-NEXT: {
// CHECK-NEXT: "kind": "contraction",
// CHECK-NEXT: "index": 0,
// CHECK-NEXT: "buffers": [0, 1, 2]
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "inputs": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "x",
// CHECK-NEXT: "buffer": 0
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "y",
// CHECK-NEXT: "buffer": 1
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "outputs": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "z",
// CHECK-NEXT: "buffer": 2
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "boundBytes": 1216
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "variables": [],
// CHECK-NEXT: "loraAdapters": [],
// CHECK-NEXT: "memory": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "parameters",
// CHECK-NEXT: "bytes": 0
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "constants",
// CHECK-NEXT: "bytes": 0
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "inputs",
// CHECK-NEXT: "bytes": 736
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "outputs",
// CHECK-NEXT: "bytes": 480
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "weights region",
// CHECK-NEXT: "bytes": 0
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "arena peak",
// CHECK-NEXT: "bytes": 1280
// CHECK-NEXT: }
// CHECK-NEXT: ]
// CHECK-NEXT: }
func.func @batched_matmul(%x: tensor<2x1x4x8xf32> {onnx.name = "x"}, %y: tensor<3x8x5xf32> {onnx.name = "y"}) -> (tensor<2x3x4x5xf32> {onnx.name = "z"}) {
  %0 = memfit.matmul %x, %y : tensor<2x1x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x3x4x5xf32> loc("mm")
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// A gemm with a bias: a kernel broadcasts the bias into the result, then the
// contraction accumulates onto it with beta. op(B) = B^T is 8 x 6, so
// m = 2, k = 8, n = 6.
// Weights: w (192 bytes) @0, the bias (24 bytes) @256; 216 aligned: 512.
// Arena: a (64 bytes, steps 0..1) @0; the result (48, 1..2) @256; peak 512.
// CHECK-LABEL: "schema": "memfit-executable"
// CHECK: "weightsBytes": 512,
// CHECK-NEXT: "arenaBytes": 512,
// CHECK-NEXT: "trainableParameters": 0,
// CHECK-NEXT: "frozenParameters": 0,
// CHECK-NEXT: "quantizedParameters": 0,
// CHECK-NEXT: "buffers": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "bias",
// CHECK-NEXT: "region": "weights",
// CHECK-NEXT: "offset": 256,
// CHECK-NEXT: "bytes": 24,
// CHECK: "name": "fc",
// CHECK-NEXT: "region": "arena",
// CHECK-NEXT: "offset": 256,
// CHECK-NEXT: "bytes": 48,
// CHECK: "name": "a",
// CHECK-NEXT: "region": "arena",
// CHECK-NEXT: "offset": 0,
// CHECK-NEXT: "bytes": 64,
// CHECK: "name": "w",
// CHECK-NEXT: "region": "weights",
// CHECK-NEXT: "offset": 0,
// CHECK-NEXT: "bytes": 192,
// The bias kernel: 12 elements, one block of 256 threads.
// CHECK: "kernels": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "k0_gemm_bias",
// CHECK-NEXT: "grid": [1, 1, 1],
// CHECK-NEXT: "block": [256, 1, 1],
// CHECK-NEXT: "sharedBytes": 0,
// CHECK-NEXT: "usesBarriers": false,
// CHECK-NEXT: "threadLoops": true,
// CHECK-NEXT: "onnxNodes": [
// CHECK-NEXT: "fc"
// CHECK-NEXT: ],
// It reads the bias (24 bytes) and writes the output (48).
// CHECK-NEXT: "bytes": 72
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "contractions": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "c0_gemm",
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "m": 2,
// CHECK-NEXT: "n": 6,
// CHECK-NEXT: "k": 8,
// CHECK-NEXT: "transA": false,
// CHECK-NEXT: "transB": true,
// CHECK-NEXT: "alpha": 2.0,
// CHECK-NEXT: "beta": 0.5,
// CHECK-NEXT: "batchShape": [],
// CHECK-NEXT: "batchStridesA": [],
// CHECK-NEXT: "batchStridesB": [],
// Bias kernel (bias -> result), then the contraction (a, w -> result).
// CHECK: "steps": [
// CHECK-NEXT: {
// CHECK-NEXT: "kind": "kernel",
// CHECK-NEXT: "index": 0,
// CHECK-NEXT: "buffers": [0, 1]
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "kind": "contraction",
// CHECK-NEXT: "index": 0,
// CHECK-NEXT: "buffers": [2, 3, 1]
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "inputs": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "a",
// CHECK-NEXT: "buffer": 2
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "outputs": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "y",
// CHECK-NEXT: "buffer": 1
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "boundBytes": 328
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK-NEXT: "variables": [],
// CHECK-NEXT: "loraAdapters": [],
// CHECK-NEXT: "memory": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "parameters",
// CHECK-NEXT: "bytes": 192
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "constants",
// CHECK-NEXT: "bytes": 24
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "inputs",
// CHECK-NEXT: "bytes": 64
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "outputs",
// CHECK-NEXT: "bytes": 48
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "weights region",
// CHECK-NEXT: "bytes": 512
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "name": "arena peak",
// CHECK-NEXT: "bytes": 512
// CHECK-NEXT: }
// CHECK-NEXT: ]
memfit.parameter @w = dense<1.0> : tensor<6x8xf32>

func.func @gemm_bias(%a: tensor<2x8xf32> {onnx.name = "a"}) -> (tensor<2x6xf32> {onnx.name = "y"}) {
  %w = memfit.load_parameter @w : tensor<6x8xf32>
  %c = memfit.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32> loc("bias")
  %0 = memfit.gemm %a, %w, %c {alpha = 2.0 : f32, beta = 0.5 : f32, trans_b = true} : (tensor<2x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<2x6xf32> loc("fc")
  return %0 : tensor<2x6xf32>
}

// -----

// 1-D operands are promoted as numpy does: [8] x [8,5] is a 1 x 8 by 8 x 5
// product without batch; [3,8,5] x [5] is 3 products of 8 x 5 by 5 x 1,
// 40 elements apart in A, B broadcast; [8] x [3,8,5] broadcasts A.
// Outputs without onnx.name are named by position.
// CHECK-LABEL: "schema": "memfit-executable"
// CHECK: "contractions": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "c0_matmul",
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "m": 1,
// CHECK-NEXT: "n": 5,
// CHECK-NEXT: "k": 8,
// CHECK: "batchShape": [],
// CHECK-NEXT: "batchStridesA": [],
// CHECK-NEXT: "batchStridesB": [],
// CHECK-NEXT: "batchStridesOut": [],
// CHECK-NEXT: "offsets": [0, 0, 0],
// CHECK-NEXT: "ld": [8, 5, 5],
// CHECK-NEXT: "onnxNodes": [
// CHECK-NEXT: "vecmat"
// CHECK: "name": "c1_matmul",
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "m": 8,
// CHECK-NEXT: "n": 1,
// CHECK-NEXT: "k": 5,
// CHECK: "batchShape": [3],
// CHECK-NEXT: "batchStridesA": [40],
// CHECK-NEXT: "batchStridesB": [0],
// CHECK: "name": "c2_matmul",
// CHECK-NEXT: "dtype": "f64",
// CHECK-NEXT: "m": 1,
// CHECK-NEXT: "n": 5,
// CHECK-NEXT: "k": 8,
// CHECK: "batchShape": [3],
// CHECK-NEXT: "batchStridesA": [0],
// CHECK-NEXT: "batchStridesB": [40],
// CHECK: "outputs": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "output0",
// CHECK: "name": "output1",
// CHECK: "name": "output2",
func.func @vector_operands(%v: tensor<8xf32>, %m: tensor<8x5xf32>, %b: tensor<3x8x5xf32>, %u: tensor<5xf32>, %v64: tensor<8xf64>, %b64: tensor<3x8x5xf64>) -> (tensor<5xf32>, tensor<3x8xf32>, tensor<3x5xf64>) {
  %0 = memfit.matmul %v, %m : tensor<8xf32>, tensor<8x5xf32> -> tensor<5xf32> loc("vecmat")
  %1 = memfit.matmul %b, %u : tensor<3x8x5xf32>, tensor<5xf32> -> tensor<3x8xf32> loc("matvec")
  %2 = memfit.matmul %v64, %b64 : tensor<8xf64>, tensor<3x8x5xf64> -> tensor<3x5xf64> loc("vecbatch")
  return %0, %1, %2 : tensor<5xf32>, tensor<3x8xf32>, tensor<3x5xf64>
}

// -----

// Launch shapes. Pointwise: one thread per element, blocks of 256, so
// 300 elements need 2 blocks. Row kernels whose rows have at most 4,096
// bytes: a warp per row, 4 rows a block of 128 threads: softmax over 100
// (3 rows) -> 1 block; log_softmax over 20 (10 rows) -> 3 blocks. Longer
// rows: one block per row, the block the smallest power of two >= 32 that
// covers the row, at most 256: reduce_sum over 1,100 f32 (4,400 bytes) ->
// 256 x 2. A reduced loss runs in one block of 256; an unreduced one is
// pointwise over its 4 x 3 positions.
// CHECK-LABEL: "schema": "memfit-executable"
// CHECK: "kernels": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "k0_exp",
// CHECK-NEXT: "grid": [2, 1, 1],
// CHECK-NEXT: "block": [256, 1, 1],
// CHECK-NEXT: "sharedBytes": 0,
// CHECK-NEXT: "usesBarriers": false,
// CHECK: "name": "k1_softmax",
// CHECK-NEXT: "grid": [1, 1, 1],
// CHECK-NEXT: "block": [128, 1, 1],
// CHECK-NEXT: "sharedBytes": 0,
// CHECK-NEXT: "usesBarriers": true,
// CHECK: "name": "k2_log_softmax",
// CHECK-NEXT: "grid": [3, 1, 1],
// CHECK-NEXT: "block": [128, 1, 1],
// CHECK-NEXT: "sharedBytes": 0,
// CHECK-NEXT: "usesBarriers": true,
// CHECK: "name": "k3_reduce_sum",
// CHECK-NEXT: "grid": [2, 1, 1],
// CHECK-NEXT: "block": [256, 1, 1],
// CHECK-NEXT: "sharedBytes": 0,
// CHECK-NEXT: "usesBarriers": true,
// CHECK: "name": "k4_softmax_cross_entropy_loss",
// CHECK-NEXT: "grid": [1, 1, 1],
// CHECK-NEXT: "block": [256, 1, 1],
// CHECK-NEXT: "sharedBytes": 0,
// CHECK-NEXT: "usesBarriers": true,
// CHECK: "name": "k5_negative_log_likelihood_loss",
// CHECK-NEXT: "grid": [1, 1, 1],
// CHECK-NEXT: "block": [256, 1, 1],
// CHECK-NEXT: "sharedBytes": 0,
// CHECK-NEXT: "usesBarriers": false,
// CHECK: "contractions": [],
func.func @launch_shapes(%r: tensor<3x100xf32>, %q: tensor<10x20xf32>, %s: tensor<2x1100xf32>, %x: tensor<4x7x3xf32>, %l: tensor<4x3xi64>) -> (tensor<3x100xf32>, tensor<10x20xf32>, tensor<2x1xf32>, tensor<f32>, tensor<4x3xf32>) {
  %0 = memfit.exp %r : tensor<3x100xf32> loc("exp")
  %1 = memfit.softmax %0 {axis = -1 : i64} : tensor<3x100xf32> loc("softmax")
  %2 = memfit.log_softmax %q {axis = 1 : i64} : tensor<10x20xf32> loc("log_softmax")
  %3 = memfit.reduce_sum %s {axes = array<i64: 1>} : tensor<2x1100xf32> -> tensor<2x1xf32> loc("sum")
  %4 = memfit.softmax_cross_entropy_loss mean %x, %l : (tensor<4x7x3xf32>, tensor<4x3xi64>) -> tensor<f32> loc("sce")
  %5 = memfit.negative_log_likelihood_loss none %x, %l : (tensor<4x7x3xf32>, tensor<4x3xi64>) -> tensor<4x3xf32> loc("nll")
  return %1, %2, %3, %4, %5 : tensor<3x100xf32>, tensor<10x20xf32>, tensor<2x1xf32>, tensor<f32>, tensor<4x3xf32>
}
