// memfit-autodiff: choosing the trainable parameters, attaching a loss,
// summing the gradients of a parameter read twice (an embedding tied to the
// output projection), the new signature, and freezing a parameter that does
// not reach the loss. Every case runs with each loss: cross-entropy (CHECK),
// mse (MSE) and the default loss=output, whose diagnostics are verified.
// RUN: memfit-opt %s -split-input-file --memfit-autodiff='loss=cross-entropy frozen=head.*' | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-autodiff='loss=mse trainable=scale' | FileCheck %s --check-prefix=MSE
// RUN: memfit-opt %s -split-input-file -verify-diagnostics --memfit-autodiff -o /dev/null
// Loss scaling: the backward starts from the state @loss_scale, not 1.
// RUN: memfit-opt %s -split-input-file --memfit-autodiff='loss=cross-entropy loss-scale=dynamic loss-scale-init=1024' | FileCheck %s --check-prefix=DYNAMIC
// RUN: memfit-opt %s -split-input-file --memfit-autodiff='loss=cross-entropy loss-scale=128' | FileCheck %s --check-prefix=FIXED
// RUN: not memfit-opt %s -split-input-file --memfit-autodiff='loss=cross-entropy loss-scale=lots' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADSCALE
// DYNAMIC: memfit.parameter @loss_scale = dense<1.024000e+03> : tensor<f32> {memfit.loss_scale = "scale", memfit.role = "counter"}
// DYNAMIC-NEXT: memfit.parameter @loss_scale_growth_tracker = dense<0.000000e+00> : tensor<f32> {memfit.loss_scale = "growth_tracker", memfit.role = "counter"}
// DYNAMIC: %[[SEED:.+]] = memfit.load_parameter @loss_scale {memfit.backward} : tensor<f32>
// DYNAMIC-NEXT: memfit.softmax_cross_entropy_grad mean %{{.+}}, %{{.+}}, %[[SEED]]
// FIXED: memfit.parameter @loss_scale = dense<1.280000e+02> : tensor<f32> {memfit.loss_scale = "scale", memfit.role = "counter"}
// FIXED-NOT: growth_tracker
// FIXED: memfit.load_parameter @loss_scale {memfit.backward}
// BADSCALE: error: loss-scale must be none, dynamic or a positive number, not 'lots'

memfit.parameter @emb = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
memfit.parameter @scale = dense<[0.5, 2.0]> : tensor<2xf32>
memfit.parameter @head.bias = dense<[0.1, 0.2, 0.3]> : tensor<3xf32>

// expected-error @+1 {{loss=output needs exactly one float scalar output, the function has 0; attach one with loss=cross-entropy or loss=mse}}
func.func @tied_embedding(%ids: tensor<4xi64> {onnx.name = "ids"}) -> (tensor<4x3xf32> {onnx.name = "logits"}) {
  %e = memfit.load_parameter @emb : tensor<3x2xf32>
  %h = memfit.gather %e, %ids : tensor<3x2xf32>, tensor<4xi64> -> tensor<4x2xf32>
  %s = memfit.load_parameter @scale : tensor<2xf32>
  %hs = memfit.mul %h, %s : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %et = memfit.transpose %e {perm = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
  %l = memfit.matmul %hs, %et : tensor<4x2xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  %b = memfit.load_parameter @head.bias : tensor<3xf32>
  %o = memfit.add %l, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %o : tensor<4x3xf32>
}

// Cross-entropy adds an int64 `labels` input; the frozen bias gets no
// gradient and nothing is built for it.
// CHECK: memfit.parameter @emb = {{.*}} {memfit.role = "parameter"}
// CHECK: memfit.parameter @scale = {{.*}} {memfit.role = "parameter"}
// CHECK: memfit.parameter @head.bias = {{.*}} {memfit.role = "frozen"}
// CHECK-LABEL: func.func @tied_embedding(
// CHECK-SAME: %[[IDS:.+]]: tensor<4xi64> {onnx.name = "ids"}, %[[LABELS:.+]]: tensor<4xi64> {onnx.name = "labels"})
// CHECK-SAME: -> (tensor<f32> {onnx.name = "loss"}, tensor<3x2xf32> {memfit.gradient_of = @emb, onnx.name = "grad.emb"}, tensor<2xf32> {memfit.gradient_of = @scale, onnx.name = "grad.scale"})
// CHECK: %[[LOGITS:.+]] = memfit.add
// CHECK: %[[LOSS:.+]] = memfit.softmax_cross_entropy_loss mean %[[LOGITS]], %[[LABELS]] {ignore_index = -100 : i64}
// The seed, then the ops in reverse.
// CHECK: %[[ONE:.+]] = memfit.constant {memfit.backward} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DLOGITS:.+]] = memfit.softmax_cross_entropy_grad mean %[[LOGITS]], %[[LABELS]], %[[ONE]]
// CHECK-NOT: head.bias
// CHECK: %[[DET:.+]] = memfit.gemm %[[DLOGITS]], %{{.*}} {memfit.backward, trans_b = true}
// CHECK: %[[DT:.+]] = memfit.gemm %{{.*}}, %[[DLOGITS]] {memfit.backward, trans_a = true}
// CHECK: %[[DE1:.+]] = memfit.transpose %[[DT]] {memfit.backward, perm = array<i64: 1, 0>}
// CHECK: %[[DSCALE:.+]] = memfit.reduce_sum {{.*}}memfit.gradient_of = @scale
// CHECK: %[[DE2:.+]] = memfit.gather_grad {{.*}}, %[[IDS]] {axis = 0 : i64, memfit.backward}
// Both reads of @emb add up.
// CHECK: %[[DE:.+]] = memfit.add %[[DE1]], %[[DE2]] {memfit.backward, memfit.gradient_of = @emb}
// CHECK: return %[[LOSS]], %[[DE]], %[[DSCALE]]

// MSE adds a `target` shaped like the output; only @scale is trained.
// MSE: memfit.parameter @emb = {{.*}} {memfit.role = "frozen"}
// MSE: memfit.parameter @scale = {{.*}} {memfit.role = "parameter"}
// MSE-LABEL: func.func @tied_embedding(
// MSE-SAME: %{{.*}}: tensor<4xi64> {onnx.name = "ids"}, %[[T:.+]]: tensor<4x3xf32> {onnx.name = "target"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<2xf32> {memfit.gradient_of = @scale, onnx.name = "grad.scale"})
// MSE: %[[D:.+]] = memfit.sub %{{.*}}, %[[T]]
// MSE: %[[SQ:.+]] = memfit.mul %[[D]], %[[D]]
// MSE: memfit.reduce_mean %[[SQ]] {axes = array<i64>, keepdims = false}
// MSE-NOT: gather_grad

// -----

// A parameter that does not reach the loss is frozen with a warning; with
// nothing left to train the pass fails. With loss=output the loss is the
// scalar result, which does not read @scale; cross-entropy and mse attach
// theirs to the first result, which does.
// expected-warning @+1 {{parameter 'scale' does not affect the loss; it is frozen}}
memfit.parameter @scale = dense<1.0> : tensor<4xf32>

// expected-error @+1 {{no trainable parameter reaches the loss}}
func.func @unused_parameter(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<f32>) {
  %s = memfit.load_parameter @scale : tensor<4xf32>
  %y = memfit.mul %x, %s : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %l = memfit.reduce_sum %x {axes = array<i64>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %y, %l : tensor<2x4xf32>, tensor<f32>
}

// CHECK: memfit.parameter @scale = {{.*}} {memfit.role = "parameter"}
// CHECK-LABEL: func.func @unused_parameter(
// CHECK-SAME: {onnx.name = "labels"}
// CHECK-SAME: {memfit.gradient_of = @scale, onnx.name = "grad.scale"}
// MSE: memfit.parameter @scale = {{.*}} {memfit.role = "parameter"}
// MSE-LABEL: func.func @unused_parameter(
// MSE-SAME: {onnx.name = "target"}
// MSE-SAME: {memfit.gradient_of = @scale, onnx.name = "grad.scale"}
