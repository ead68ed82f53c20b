// Round trip of memfit.linear_cross_entropy and its gradient op, and their
// costs (the logits are never stored, so their bytes are not counted).
// RUN: memfit-opt %s | FileCheck %s
// RUN: memfit-opt %s -mlir-print-op-generic | memfit-opt | FileCheck %s
// RUN: memfit-opt %s -verify-roundtrip -o /dev/null
// RUN: memfit-opt %s --memfit-op-cost -o /dev/null | FileCheck %s --check-prefix=COST

// CHECK-LABEL: func.func @head
// CHECK: %[[L:.+]] = memfit.linear_cross_entropy mean %{{.+}}, %{{.+}}, %{{.+}} {ignore_index = -100 : i64} : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>) -> tensor<f32>
// CHECK: memfit.linear_cross_entropy_grad mean %{{.+}}, %{{.+}}, %{{.+}}, %[[L]] {ignore_index = -100 : i64} : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>, tensor<f32>) -> (tensor<16x32xbf16>, tensor<32x96xbf16>)
// 16 x 96 logits: (2 * 32 + 5) FLOPs each for the loss; bytes: 1 KiB of
// hidden states, 6 KiB of weight, 128 B of labels, 4 B of loss.
// COST: op=memfit.linear_cross_entropy {{.*}} class=loss flops=105984 bytes=7300
// The gradient: (6 * 32 + 7) FLOPs a logit; the operands (7,300 bytes)
// and the two gradients (7,168).
// COST: op=memfit.linear_cross_entropy_grad {{.*}} class=loss flops=305664 bytes=14468
func.func @head(%h: tensor<16x32xbf16>, %w: tensor<32x96xbf16>, %labels: tensor<16xi64>) -> (tensor<f32>, tensor<16x32xbf16>, tensor<32x96xbf16>) {
  %l = memfit.linear_cross_entropy mean %h, %w, %labels {ignore_index = -100 : i64} : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>) -> tensor<f32>
  %dh, %dw = memfit.linear_cross_entropy_grad mean %h, %w, %labels, %l {ignore_index = -100 : i64} : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>, tensor<f32>) -> (tensor<16x32xbf16>, tensor<32x96xbf16>)
  return %l, %dh, %dw : tensor<f32>, tensor<16x32xbf16>, tensor<32x96xbf16>
}

// With a bias [V] (BERT's masked-LM head): the gradient op has a third
// result, the bias's gradient. One more FLOP a logit for the loss (the
// add), two more for the gradient (the add and the bias's row sum); the
// bias's 192 bytes counted once more each, and its gradient's.
// CHECK-LABEL: func.func @head_bias
// CHECK: %[[L:.+]] = memfit.linear_cross_entropy mean %{{.+}}, %{{.+}}, %{{.+}} bias %{{.+}} {ignore_index = -100 : i64} : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>, tensor<96xbf16>) -> tensor<f32>
// CHECK: memfit.linear_cross_entropy_grad mean %{{.+}}, %{{.+}}, %{{.+}}, %[[L]] bias %{{.+}} {ignore_index = -100 : i64} : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>, tensor<f32>, tensor<96xbf16>) -> (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<96xbf16>)
// COST: op=memfit.linear_cross_entropy {{.*}} class=loss flops=107520 bytes=7492
// COST: op=memfit.linear_cross_entropy_grad {{.*}} class=loss flops=308736 bytes=14852
func.func @head_bias(%h: tensor<16x32xbf16>, %w: tensor<32x96xbf16>, %labels: tensor<16xi64>, %b: tensor<96xbf16>) -> (tensor<f32>, tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<96xbf16>) {
  %l = memfit.linear_cross_entropy mean %h, %w, %labels bias %b {ignore_index = -100 : i64} : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>, tensor<96xbf16>) -> tensor<f32>
  %dh, %dw, %db = memfit.linear_cross_entropy_grad mean %h, %w, %labels, %l bias %b {ignore_index = -100 : i64} : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>, tensor<f32>, tensor<96xbf16>) -> (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<96xbf16>)
  return %l, %dh, %dw, %db : tensor<f32>, tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<96xbf16>
}
