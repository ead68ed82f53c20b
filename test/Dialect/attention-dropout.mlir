// Dropout on memfit.attention's probabilities: the round trip of the
// dropout attributes on the op and its gradient ops, their cost (a random
// number per pair that a query sees). The ratio's verifier is in
// attention-invalid.mlir.
// RUN: memfit-opt %s -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file -mlir-print-op-generic | memfit-opt -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file -verify-roundtrip -o /dev/null
// RUN: memfit-opt %s -split-input-file --memfit-op-cost -o /dev/null | FileCheck %s --check-prefix=COST

// Causal 16 x 16: 136 pairs a head, 2 x 4 heads; each pair's (2 * 8 +
// 2 * 8 + 5) FLOPs and 4 for its random number (memfit.dropout's count).
// CHECK-LABEL: func.func @forward
// CHECK: memfit.attention causal %{{.+}}, %{{.+}}, %{{.+}} scale 1.250000e-01 {dropout_ratio = 1.000000e-01 : f32, dropout_seed = 7 : i64, dropout_stream = 3 : i64} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
// COST-LABEL: function @forward
// COST: op=memfit.attention {{.*}} flops=44608 bytes=16896
func.func @forward(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>) {
  %o, %lse = memfit.attention causal %q, %k, %v scale 0.125 {dropout_ratio = 0.1 : f32, dropout_seed = 7 : i64, dropout_stream = 3 : i64} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
  return %o, %lse : tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
}

// -----

// A ratio of 0 is no dropout: the attribute is elided and costs nothing
// (the 40256 FLOPs of test/Dialect/attention.mlir's @causal).
// CHECK-LABEL: func.func @ratio_zero
// CHECK: memfit.attention causal %{{.+}}, %{{.+}}, %{{.+}} scale 1.250000e-01 : (
// COST-LABEL: function @ratio_zero
// COST: op=memfit.attention {{.*}} flops=40256 bytes=16896
func.func @ratio_zero(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>) {
  %o, %lse = memfit.attention causal %q, %k, %v scale 0.125 {dropout_ratio = 0.0 : f32} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
  return %o, %lse : tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
}

// -----

// The gradient ops take the forward's dropout attributes. Causal 4 x 4: 10
// pairs a head, 2 heads; (4 * 8 + 2 * 8 + 5 + 4) FLOPs a pair for the
// queries, (4 * 8 + 4 * 8 + 5 + 4) for the keys and values.
// CHECK-LABEL: func.func @grads
// CHECK: memfit.attention_grad_query causal {{.*}} scale 5.000000e-01 {dropout_ratio = 2.500000e-01 : f32, dropout_stream = 9 : i64}
// CHECK: memfit.attention_grad_key_value causal {{.*}} scale 5.000000e-01 {dropout_ratio = 2.500000e-01 : f32, dropout_stream = 9 : i64}
// COST-LABEL: function @grads
// COST: op=memfit.attention_grad_query {{.*}} flops=1140 bytes=1344
// COST: op=memfit.attention_grad_key_value {{.*}} flops=1460 bytes=1600
func.func @grads(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>, %delta: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %dq = memfit.attention_grad_query causal %q, %k, %v, %lse, %delta, %do scale 0.5 {dropout_ratio = 0.25 : f32, dropout_stream = 9 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %dk, %dv = memfit.attention_grad_key_value causal %q, %k, %v, %lse, %delta, %do scale 0.5 {dropout_ratio = 0.25 : f32, dropout_stream = 9 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// The dropout's step: an operand after the mask, printed by keyword.
// CHECK-LABEL: func.func @stepped
// CHECK-SAME: %[[M:[^:]+]]: tensor<1x1x4x4xi1>, %[[S:[^:]+]]: tensor<i64>
// CHECK: memfit.attention causal %{{.+}}, %{{.+}}, %{{.+}} mask %[[M]] dropout_step %[[S]] scale 5.000000e-01 {dropout_ratio = 2.500000e-01 : f32, dropout_stream = 9 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xi1>, tensor<i64>)
// CHECK: memfit.attention_grad_query causal %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} dropout_step %[[S]] scale
func.func @stepped(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4xi1>, %s: tensor<i64>, %delta: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %o, %lse = memfit.attention causal %q, %k, %v mask %m dropout_step %s scale 0.5 {dropout_ratio = 0.25 : f32, dropout_stream = 9 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xi1>, tensor<i64>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  %dq = memfit.attention_grad_query causal %q, %k, %v, %lse, %delta, %do dropout_step %s scale 0.5 {dropout_ratio = 0.25 : f32, dropout_stream = 9 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<i64>) -> tensor<1x2x4x8xf32>
  return %o, %dq : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
