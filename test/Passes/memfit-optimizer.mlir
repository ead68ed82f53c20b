// memfit-optimizer on the output of memfit-autodiff: one update kernel per
// parameter, states as zero-initialized parameters, in-place assignments,
// the learning rate as an input, gradient accumulation as two functions.
// RUN: memfit-opt %s -split-input-file --memfit-optimizer | FileCheck %s --check-prefix=ADAMW
// RUN: memfit-opt %s -split-input-file --memfit-optimizer='optimizer=sgd momentum=0.9 nesterov=true weight-decay=0.5' | FileCheck %s --check-prefix=SGD
// RUN: memfit-opt %s -split-input-file --memfit-optimizer='accumulate=4 clip-norm=1.0' | FileCheck %s --check-prefix=ACC
// RUN: memfit-opt %s -split-input-file --memfit-optimizer='loss-scale-interval=3' | FileCheck %s --check-prefix=SCALE
// RUN: memfit-opt %s -split-input-file --memfit-optimizer='optimizer=sgd clip-norm=1.0' | FileCheck %s --check-prefix=STATIC
// RUN: not memfit-opt %s -split-input-file --memfit-optimizer='optimizer=lion' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not memfit-opt %s -split-input-file --memfit-optimizer='optimizer=adamw8bit' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-RULE
// RUN: not memfit-opt %s -split-input-file --memfit-optimizer='accumulate=0' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-ACC
// RUN: not memfit-opt %s -split-input-file --memfit-optimizer='optimizer=adamw nesterov=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-NESTEROV

memfit.parameter @w = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> {memfit.role = "parameter"}
memfit.parameter @frozen = dense<1.0> : tensor<4xf32> {memfit.role = "frozen"}

func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<4xf32> {memfit.gradient_of = @w, onnx.name = "grad.w"}) {
  %w = memfit.load_parameter @w : tensor<4xf32>
  %f = memfit.load_parameter @frozen : tensor<4xf32>
  %a = memfit.add %w, %f : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %p = memfit.mul %a, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = memfit.reduce_sum %p {axes = array<i64>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// AdamW: moments next to their parameter, a step counter, nothing for the
// frozen parameter. The function becomes train_step(x, lr) -> loss.
// ADAMW: memfit.parameter @w =
// ADAMW-NEXT: memfit.parameter @w.exp_avg = dense<0.000000e+00> : tensor<4xf32> {memfit.role = "optimizer_state", memfit.state_of = @w}
// ADAMW-NEXT: memfit.parameter @w.exp_avg_sq = dense<0.000000e+00> : tensor<4xf32> {memfit.nonnegative, memfit.role = "optimizer_state", memfit.state_of = @w}
// ADAMW-NEXT: memfit.parameter @step = dense<0.000000e+00> : tensor<f32> {memfit.role = "counter"}
// ADAMW-NEXT: memfit.parameter @frozen
// ADAMW-NOT: frozen.exp_avg
// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: %[[X:.+]]: tensor<4xf32> {onnx.name = "x"}, %[[LR:.+]]: tensor<f32> {onnx.name = "lr"}) -> (tensor<f32> {onnx.name = "loss"})
// The shared scalars: t + 1, lr / (1 - b1^t), sqrt(1 - b2^t), 1 - lr * wd.
// ADAMW: %[[T:.+]] = memfit.load_parameter @step
// ADAMW: %[[S:.+]]:4 = memfit.kernel(%[[T]], %[[LR]])
// ADAMW: memfit.pow
// ADAMW: memfit.yield
// ADAMW: memfit.assign @step, %[[S]]#0
// One kernel reads w, its gradient (here x) and both moments.
// ADAMW: %[[W:.+]] = memfit.load_parameter @w :
// ADAMW: %[[M:.+]] = memfit.load_parameter @w.exp_avg :
// ADAMW: %[[V:.+]] = memfit.load_parameter @w.exp_avg_sq :
// ADAMW: %[[U:.+]]:3 = memfit.kernel(%[[W]], %[[X]], %[[M]], %[[V]], %[[S]]#1, %[[S]]#2, %[[S]]#3)
// m + (1 - b1) (g - m):
// ADAMW: memfit.constant dense<1.000000e-01>
// ADAMW: memfit.sqrt
// ADAMW: memfit.yield
// ADAMW-NEXT: }
// ADAMW-NEXT: memfit.assign @w, %[[U]]#0
// ADAMW-NEXT: memfit.assign @w.exp_avg, %[[U]]#1
// ADAMW-NEXT: memfit.assign @w.exp_avg_sq, %[[U]]#2
// ADAMW-NEXT: return %{{.*}} : tensor<f32>

// SGD with Nesterov momentum and L2 weight decay: one buffer, the counter.
// SGD: memfit.parameter @w.momentum_buffer = dense<0.000000e+00> : tensor<4xf32> {memfit.role = "optimizer_state", memfit.state_of = @w}
// SGD-NEXT: memfit.parameter @step
// SGD-NOT: exp_avg
// SGD-LABEL: func.func @train_step(
// SGD: %[[U:.+]]:2 = memfit.kernel(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
// g + wd * w:
// SGD: memfit.constant dense<5.000000e-01>
// SGD: memfit.constant dense<0.899999976>
// SGD: memfit.yield
// SGD: memfit.assign @w, %[[U]]#0
// SGD-NEXT: memfit.assign @w.momentum_buffer, %[[U]]#1

// Accumulation over 4 micro-batches: accumulate(x) adds grad / 4 into
// @w.grad and returns the loss; apply(lr) clips by the global norm, updates
// w and its moments and zeroes the accumulator, returning the norm.
// ACC: memfit.parameter @w.grad = dense<0.000000e+00> : tensor<4xf32> {memfit.role = "gradient_accumulator"}
// ACC-LABEL: func.func @accumulate(
// ACC-SAME: %[[X:.+]]: tensor<4xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"})
// ACC: %[[G:.+]] = memfit.load_parameter @w.grad
// ACC-NEXT: %[[SUM:.+]] = memfit.kernel(%[[G]], %[[X]])
// ACC: memfit.constant dense<2.500000e-01>
// ACC: memfit.assign @w.grad, %[[SUM]]
// ACC-NEXT: return
// ACC-LABEL: func.func @apply(
// ACC-SAME: %[[LR:.+]]: tensor<f32> {onnx.name = "lr"}) -> (tensor<f32> {onnx.name = "grad_norm"})
// ACC: %[[ACC:.+]] = memfit.load_parameter @w.grad
// ACC: %[[SQ:.+]] = memfit.mul %[[ACC]], %[[ACC]]
// ACC: memfit.reduce_sum %[[SQ]]
// ACC: %[[CLIP:.+]]:2 = memfit.kernel
// ACC: memfit.less
// ACC: memfit.where
// ACC: %[[U:.+]]:4 = memfit.kernel({{.*}}, %[[ACC]], {{.*}}, %[[CLIP]]#1)
// ACC: memfit.expand
// ACC: memfit.assign @w, %[[U]]#0
// ACC-NEXT: memfit.assign @w.exp_avg, %[[U]]#1
// ACC-NEXT: memfit.assign @w.exp_avg_sq, %[[U]]#2
// ACC-NEXT: memfit.assign @w.grad, %[[U]]#3
// ACC-NEXT: return %[[CLIP]]#0

// BAD: for the --optimizer option: unknown optimizer 'lion'; expected adamw, adamw8bit, sgd or none
// BAD-RULE: error: optimizer adamw8bit is not an update rule of memfit-optimizer; expected adamw or sgd
// BAD-NESTEROV: error: nesterov needs SGD with momentum

// -----

// Dynamic loss scaling (the states memfit-autodiff loss-scale=dynamic
// makes): the gradients arrive scaled; their sums decide whether the step
// applies; the update kernel unscales and keeps the old values on overflow;
// the scale backs off or grows (every 3 good steps here); AdamW counts
// applied steps in adamw_step; the step returns loss_scale and skipped.
memfit.parameter @w = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> {memfit.role = "parameter"}
memfit.parameter @loss_scale = dense<65536.0> : tensor<f32> {memfit.loss_scale = "scale", memfit.role = "counter"}
memfit.parameter @loss_scale_growth_tracker = dense<0.0> : tensor<f32> {memfit.loss_scale = "growth_tracker", memfit.role = "counter"}

func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<4xf32> {memfit.gradient_of = @w, onnx.name = "grad.w"}) {
  %w = memfit.load_parameter @w : tensor<4xf32>
  %p = memfit.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = memfit.reduce_sum %p {axes = array<i64>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// SCALE: memfit.parameter @adamw_step = dense<0.000000e+00> : tensor<f32> {memfit.role = "counter"}
// SCALE-NEXT: memfit.parameter @loss_scale = dense<6.553600e+04>
// SCALE: func.func @train_step(
// SCALE-SAME: %[[X:.+]]: tensor<4xf32> {onnx.name = "x"}, %[[LR:.+]]: tensor<f32> {onnx.name = "lr"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<f32> {onnx.name = "loss_scale"}, tensor<f32> {onnx.name = "skipped"})
// SCALE: %[[SC:.+]] = memfit.load_parameter @loss_scale
// SCALE: %[[TOTAL:.+]] = memfit.reduce_sum %[[X]] {axes = array<i64>, keepdims = false}
// SCALE: %[[GOOD:.+]] = memfit.load_parameter @loss_scale_growth_tracker
// SCALE: %[[K:.+]]:6 = memfit.kernel(%[[SC]], %[[GOOD]], %[[TOTAL]])
// An inf or NaN total makes total - total a NaN, not 0:
// SCALE: %[[D:.+]] = memfit.sub %arg{{[0-9]+}}, %arg{{[0-9]+}}
// SCALE-NEXT: %[[OK:.+]] = memfit.equal %[[D]]
// SCALE: memfit.constant dense<3.000000e+00>
// SCALE: memfit.div
// SCALE: memfit.yield {{.*}} : tensor<f32>, tensor<i1>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
// SCALE: memfit.assign @loss_scale, %[[K]]#2
// SCALE-NEXT: memfit.assign @loss_scale_growth_tracker, %[[K]]#3
// SCALE: %[[S:.+]]:5 = memfit.kernel(%{{.+}}, %[[LR]], %{{.+}}, %[[K]]#1)
// SCALE: memfit.assign @step, %[[S]]#0
// SCALE-NEXT: memfit.assign @adamw_step, %[[S]]#1
// SCALE: %[[U:.+]]:3 = memfit.kernel({{.*}}, %[[X]], {{.*}}, %[[K]]#0, %[[K]]#1)
// The unscaled gradient, and the old values kept on a skipped step:
// SCALE: memfit.mul %{{.+}}, %arg{{[0-9]+}} : tensor<4xf32>, tensor<f32>
// SCALE: memfit.where %arg{{[0-9]+}}, %{{.+}}, %arg{{[0-9]+}} : tensor<i1>, tensor<4xf32>, tensor<4xf32>
// SCALE: memfit.where
// SCALE: memfit.where
// SCALE: memfit.assign @w, %[[U]]#0
// SCALE: return %{{.+}}, %[[K]]#5, %[[K]]#4 : tensor<f32>, tensor<f32>, tensor<f32>

// -----

// A fixed loss scale (a scale without a growth tracker): unscaled, never
// skipped; the clipping norm is unscaled too.
memfit.parameter @w = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> {memfit.role = "parameter"}
memfit.parameter @loss_scale = dense<1024.0> : tensor<f32> {memfit.loss_scale = "scale", memfit.role = "counter"}

func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<4xf32> {memfit.gradient_of = @w, onnx.name = "grad.w"}) {
  %w = memfit.load_parameter @w : tensor<4xf32>
  %p = memfit.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = memfit.reduce_sum %p {axes = array<i64>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// STATIC: memfit.parameter @loss_scale = dense<1.024000e+03>
// STATIC-NOT: adamw_step
// STATIC: func.func @train_step(
// STATIC-SAME: -> (tensor<f32> {onnx.name = "loss"}, tensor<f32> {onnx.name = "grad_norm"})
// STATIC: %[[SC:.+]] = memfit.load_parameter @loss_scale
// STATIC: %[[INV:.+]] = memfit.kernel(%[[SC]])
// STATIC: memfit.div
// STATIC: %[[CLIP:.+]]:2 = memfit.kernel(%{{.+}}, %[[INV]])
// STATIC: memfit.sqrt
// STATIC-NEXT: memfit.mul
// STATIC: %[[G:.+]] = memfit.kernel(%[[INV]], %[[CLIP]]#1)
// STATIC: memfit.kernel({{.*}}, %[[G]])
// STATIC-NOT: memfit.where {{.*}}tensor<i1>, tensor<4xf32>
// STATIC: return
// BAD-ACC: error: accumulate must be at least 1, got 0
