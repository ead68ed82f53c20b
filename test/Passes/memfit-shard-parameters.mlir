// ZeRO stage 3 (memfit-optimizer under memfit-shard zero=3), rank 1 of 2,
// on a weight of 3 rows: the rank keeps rows 2 and 3 of the padded 4 (its
// value cut from the module's: row 2, then a zero row) and records the
// whole weight's rows. Under bf16 the working copy's cast runs on the
// rank's rows before the gather, so the gather moves bf16; the padding row
// is cut off after it. The gradient (3 rows) is padded to 4 and
// reduce-scattered to the rank's 2.
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=sgd world-size=2 zero=3 rank=1 precision=bf16' | FileCheck %s

// CHECK: memfit.parameter @w = dense<{{\[\[}}5.000000e+00, 6.000000e+00], [0.000000e+00, 0.000000e+00]]> : tensor<2x2xf32> {memfit.role = "parameter", memfit.whole_rows = 3 : i64}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[R:.+]] = memfit.load_parameter @w : tensor<2x2xf32>
// CHECK: %[[C:.+]] = memfit.kernel(%[[R]])
// CHECK: memfit.cast %{{.+}} {reason = "working-copy"} : tensor<2x2xf32> to tensor<2x2xbf16>
// CHECK: %[[G:.+]] = memfit.all_gather %[[C]] {group_size = 2 : i64, memfit.regather = 0 : i64} : tensor<2x2xbf16> -> tensor<4x2xbf16>
// CHECK: %[[V:.+]] = memfit.strided_view %[[G]] {offset = 0 : i64, strides = array<i64: 2, 1>} : tensor<4x2xbf16> -> tensor<3x2xbf16>
// CHECK: memfit.matmul %{{.+}}, %[[V]] : tensor<4x3xbf16>, tensor<3x2xbf16> -> tensor<4x2xbf16>
// CHECK: memfit.reduce_scatter mean %{{.+}} : tensor<4x2xf32> -> tensor<2x2xf32>
// CHECK: memfit.assign @w, %{{.+}} : tensor<2x2xf32>

memfit.parameter @w = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %w = memfit.load_parameter @w : tensor<3x2xf32>
  %y = memfit.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %t = memfit.tanh %y : tensor<4x2xf32>
  %l = memfit.reduce_sum %t {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
