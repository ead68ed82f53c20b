// RUN: memfit-opt %s -split-input-file --memfit-autodiff | FileCheck %s

// Attention's gradient, FlashAttention-2's backward: delta, each query
// row's sum of dresult * result in f32, then the queries' gradient op and
// the keys' and values' one, both reading the saved log-sum-exp; no score
// matrix. Grouped-query heads (4 over 2) in bf16.
// CHECK-LABEL: func.func @gqa
// CHECK-SAME: (%[[V:.+]]: tensor<1x2x8x16xbf16>)
// CHECK: %[[Q:.+]] = memfit.load_parameter @q
// CHECK: %[[K:.+]] = memfit.load_parameter @k
// CHECK: %[[O:.+]], %[[LSE:.+]] = memfit.attention causal %[[Q]], %[[K]], %[[V]] scale 2.500000e-01
// CHECK: %[[DO:.+]] = memfit.expand
// CHECK: %[[OF:.+]] = memfit.cast %[[O]] {memfit.backward} : tensor<1x4x8x16xbf16> to tensor<1x4x8x16xf32>
// CHECK: %[[DOF:.+]] = memfit.cast %[[DO]] {memfit.backward} : tensor<1x4x8x16xbf16> to tensor<1x4x8x16xf32>
// CHECK: %[[P:.+]] = memfit.mul %[[DOF]], %[[OF]]
// CHECK: %[[DELTA:.+]] = memfit.reduce_sum %[[P]] {axes = array<i64: 3>, keepdims = false, memfit.backward} : tensor<1x4x8x16xf32> -> tensor<1x4x8xf32>
// CHECK: %[[DQ:.+]] = memfit.attention_grad_query causal %[[Q]], %[[K]], %[[V]], %[[LSE]], %[[DELTA]], %[[DO]] scale 2.500000e-01
// CHECK: %[[DK:.+]], %{{.+}} = memfit.attention_grad_key_value causal %[[Q]], %[[K]], %[[V]], %[[LSE]], %[[DELTA]], %[[DO]] scale 2.500000e-01
// CHECK: return %{{.+}}, %[[DQ]], %[[DK]]
memfit.parameter @q = dense<0.5> : tensor<1x4x8x16xbf16>
memfit.parameter @k = dense<0.25> : tensor<1x2x8x16xbf16>
func.func @gqa(%v: tensor<1x2x8x16xbf16>) -> tensor<bf16> {
  %q = memfit.load_parameter @q : tensor<1x4x8x16xbf16>
  %k = memfit.load_parameter @k : tensor<1x2x8x16xbf16>
  %o, %lse = memfit.attention causal %q, %k, %v scale 0.25 : (tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> (tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>)
  %s = memfit.reduce_sum %o {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : tensor<1x4x8x16xbf16> -> tensor<bf16>
  return %s : tensor<bf16>
}

// -----

// With a dropout on the probabilities, both gradient ops draw the forward's
// dropout (its ratio, seed and stream); delta is still sum(dresult *
// result).
// CHECK-LABEL: func.func @dropout
// CHECK: %[[O:.+]], %[[LSE:.+]] = memfit.attention %{{.+}}, %{{.+}}, %{{.+}} scale 5.000000e-01 {dropout_ratio = 1.000000e-01 : f32, dropout_seed = 4 : i64, dropout_stream = 6 : i64}
// CHECK: %[[DELTA:.+]] = memfit.reduce_sum %{{.+}} {axes = array<i64: 3>
// CHECK: memfit.attention_grad_query %{{.+}}, %{{.+}}, %{{.+}}, %[[LSE]], %[[DELTA]], %{{.+}} scale 5.000000e-01 {dropout_ratio = 1.000000e-01 : f32, dropout_seed = 4 : i64, dropout_stream = 6 : i64,
// CHECK: memfit.attention_grad_key_value %{{.+}}, %{{.+}}, %{{.+}}, %[[LSE]], %[[DELTA]], %{{.+}} scale 5.000000e-01 {dropout_ratio = 1.000000e-01 : f32, dropout_seed = 4 : i64, dropout_stream = 6 : i64,
memfit.parameter @q = dense<0.5> : tensor<1x2x4x8xf32>
memfit.parameter @k = dense<0.25> : tensor<1x2x4x8xf32>
func.func @dropout(%v: tensor<1x2x4x8xf32>) -> tensor<f32> {
  %q = memfit.load_parameter @q : tensor<1x2x4x8xf32>
  %k = memfit.load_parameter @k : tensor<1x2x4x8xf32>
  %o, %lse = memfit.attention %q, %k, %v scale 0.5 {dropout_ratio = 0.1 : f32, dropout_seed = 4 : i64, dropout_stream = 6 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  %s = memfit.reduce_sum %o {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : tensor<1x2x4x8xf32> -> tensor<f32>
  return %s : tensor<f32>
}
