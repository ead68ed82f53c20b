// RUN: memfit-opt %s --memfit-autodiff -split-input-file | FileCheck %s

// 2-D scores without class weights: the fused gradient op.
// CHECK-LABEL: func.func @sce_2d
// CHECK-SAME: (%[[LABELS:.+]]: tensor<8xi64>)
// CHECK: %[[W:.+]] = memfit.load_parameter @w
// CHECK: %[[G:.+]] = memfit.constant {memfit.backward{{.*}}} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[D:.+]] = memfit.softmax_cross_entropy_grad mean %[[W]], %[[LABELS]], %[[G]] {ignore_index = -100 : i64, memfit.backward{{.*}}} : (tensor<8x5xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x5xf32>
// CHECK: return %{{.+}}, %[[D]]
memfit.parameter @w = dense<1.0> : tensor<8x5xf32>
func.func @sce_2d(%labels: tensor<8xi64>) -> tensor<f32> {
  %w = memfit.load_parameter @w : tensor<8x5xf32>
  %l = memfit.softmax_cross_entropy_loss mean %w, %labels {ignore_index = -100 : i64} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Scores of rank 3: (softmax - onehot) * scale along the class axis, the
// scale zero for ignored labels and divided by the count of the others.
// CHECK-LABEL: func.func @sce_rank3
// CHECK-SAME: (%[[LABELS:.+]]: tensor<2x3xi64>)
// CHECK: %[[IGN:.+]] = memfit.constant {memfit.backward{{.*}}} dense<-1> : tensor<i64>
// CHECK: %[[EQ:.+]] = memfit.equal %[[LABELS]], %[[IGN]]
// CHECK: %[[NOT:.+]] = memfit.not %[[EQ]]
// CHECK: %[[KEEP:.+]] = memfit.cast %[[NOT]] {memfit.backward{{.*}}} : tensor<2x3xi1> to tensor<2x3xf32>
// CHECK: %[[COUNT:.+]] = memfit.reduce_sum %[[KEEP]]
// CHECK: %[[MEAN:.+]] = memfit.div %{{.+}}, %[[COUNT]]
// CHECK: %[[SCALE:.+]] = memfit.mul %[[MEAN]], %[[KEEP]]
// CHECK: %[[P:.+]] = memfit.softmax %[[W:.+]] {axis = 1 : i64, memfit.backward{{.*}}} : tensor<2x5x3xf32>
// CHECK: %[[CLASSES:.+]] = memfit.constant {memfit.backward{{.*}}} dense<{{\[\[}}0], [1], [2], [3], [4]]> : tensor<5x1xi64>
// CHECK: %[[L:.+]] = memfit.unsqueeze %[[LABELS]] {axes = array<i64: 1>, memfit.backward{{.*}}} : tensor<2x3xi64> -> tensor<2x1x3xi64>
// CHECK: %[[HOT:.+]] = memfit.equal %[[L]], %[[CLASSES]] {memfit.backward{{.*}}} : tensor<2x1x3xi64>, tensor<5x1xi64> -> tensor<2x5x3xi1>
// CHECK: %[[HOTF:.+]] = memfit.cast %[[HOT]]
// CHECK: %[[S:.+]] = memfit.unsqueeze %[[SCALE]]
// CHECK: %[[DIFF:.+]] = memfit.sub %[[P]], %[[HOTF]]
// CHECK: %[[D:.+]] = memfit.mul %[[DIFF]], %[[S]]
// CHECK: return %{{.+}}, %[[D]]
memfit.parameter @w = dense<1.0> : tensor<2x5x3xf32>
func.func @sce_rank3(%labels: tensor<2x3xi64>) -> tensor<f32> {
  %w = memfit.load_parameter @w : tensor<2x5x3xf32>
  %l = memfit.softmax_cross_entropy_loss mean %w, %labels {ignore_index = -1 : i64} : (tensor<2x5x3xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// negative_log_likelihood_loss: -scale at each sample's label.
// CHECK-LABEL: func.func @nll_sum
// CHECK-SAME: (%[[LABELS:.+]]: tensor<8xi32>)
// CHECK: %[[G:.+]] = memfit.constant {memfit.backward{{.*}}} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[ZERO:.+]] = memfit.constant {memfit.backward{{.*}}} dense<0.000000e+00> : tensor<f32>
// CHECK: %[[NEG:.+]] = memfit.neg %[[G]]
// CHECK: %[[CLASSES:.+]] = memfit.constant {memfit.backward{{.*}}} dense<[0, 1, 2, 3, 4]> : tensor<5xi32>
// CHECK: %[[L:.+]] = memfit.unsqueeze %[[LABELS]]
// CHECK: %[[HOT:.+]] = memfit.equal %[[L]], %[[CLASSES]]
// CHECK: %[[D:.+]] = memfit.where %[[HOT]], %[[NEG]], %[[ZERO]]
// CHECK: return %{{.+}}, %[[D]]
memfit.parameter @w = dense<1.0> : tensor<8x5xf32>
func.func @nll_sum(%labels: tensor<8xi32>) -> tensor<f32> {
  %w = memfit.load_parameter @w : tensor<8x5xf32>
  %l = memfit.negative_log_likelihood_loss sum %w, %labels : (tensor<8x5xf32>, tensor<8xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
