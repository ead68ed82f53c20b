// memfit-early-updates: an update runs as soon as its gradient is complete
// and its weight has been read for the last time; the state loads only it
// reads move with it, its assigns right after it.
// RUN: memfit-opt %s -split-input-file --memfit-early-updates | FileCheck %s

memfit.parameter @w1 = dense<1.0> : tensor<4x4xf32> {memfit.role = "parameter"}
memfit.parameter @w2 = dense<1.0> : tensor<4x4xf32> {memfit.role = "parameter"}
memfit.parameter @w2.m = dense<0.0> : tensor<4x4xf32> {memfit.role = "optimizer_state"}

// @w2's gradient is complete before @w1's, and nothing reads @w2 after it:
// its update (with its state's load) moves to just after the gradient,
// ahead of @w1's backward. @w1's update stays last: its gradient is.
// CHECK-LABEL: func.func @two_layers
// CHECK: %[[G2:.+]] = memfit.matmul %{{.+}}, %{{.+}} {memfit.backward}
// CHECK-NEXT: %[[M:.+]] = memfit.load_parameter @w2.m
// CHECK-NEXT: %[[U2:.+]]:2 = memfit.kernel(%{{.+}}, %[[G2]], %[[M]])
// CHECK: memfit.assign @w2, %[[U2]]#0
// CHECK-NEXT: memfit.assign @w2.m, %[[U2]]#1
// CHECK-NEXT: %[[G1:.+]] = memfit.matmul %{{.+}}, %[[G2]] {memfit.backward}
// CHECK-NEXT: %[[U1:.+]] = memfit.sub %{{.+}}, %[[G1]]
// CHECK-NEXT: memfit.assign @w1, %[[U1]]
// CHECK-NEXT: return
func.func @two_layers(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %w1 = memfit.load_parameter @w1 : tensor<4x4xf32>
  %w2 = memfit.load_parameter @w2 : tensor<4x4xf32>
  %h = memfit.matmul %x, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %y = memfit.matmul %h, %w2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %g2 = memfit.matmul %h, %y {memfit.backward} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %g1 = memfit.matmul %x, %g2 {memfit.backward} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %m = memfit.load_parameter @w2.m : tensor<4x4xf32>
  %u2:2 = memfit.kernel(%w2, %g2, %m) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  ^bb0(%w0: tensor<4x4xf32>, %g0: tensor<4x4xf32>, %m0: tensor<4x4xf32>):
    %m1 = memfit.add %m0, %g0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %w3 = memfit.sub %w0, %m1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    memfit.yield %w3, %m1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
  %u1 = memfit.sub %w1, %g1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  memfit.assign @w2, %u2#0 : tensor<4x4xf32>
  memfit.assign @w2.m, %u2#1 : tensor<4x4xf32>
  memfit.assign @w1, %u1 : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

memfit.parameter @w1 = dense<1.0> : tensor<4x4xf32> {memfit.role = "parameter"}
memfit.parameter @w2 = dense<1.0> : tensor<4x4xf32> {memfit.role = "parameter"}

// @w2 is read again after its gradient (a layer's recomputation, a tied
// weight), here through a view of it (a reshape aliases its bytes): its
// update waits for that last reader. An update scaled by a norm of every
// gradient waits for the norm: @w1's stays last.
// CHECK-LABEL: func.func @last_reader
// CHECK: %[[V:.+]] = memfit.reshape %{{.+}} : tensor<4x4xf32> to tensor<2x8xf32>
// CHECK-NEXT: %[[R:.+]] = memfit.matmul %{{.+}}, %[[V]] {memfit.backward}
// CHECK-NEXT: %[[U2:.+]] = memfit.sub
// CHECK-NEXT: memfit.assign @w2, %[[U2]]
// CHECK: %[[N:.+]] = memfit.add
// CHECK: memfit.sub
// CHECK-NEXT: memfit.assign @w1
// CHECK-NEXT: return
func.func @last_reader(%x: tensor<4x4xf32>, %z: tensor<4x2xf32>, %zz: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %w1 = memfit.load_parameter @w1 : tensor<4x4xf32>
  %w2 = memfit.load_parameter @w2 : tensor<4x4xf32>
  %y = memfit.matmul %x, %w2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %g2 = memfit.matmul %x, %y {memfit.backward} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %v = memfit.reshape %w2 : tensor<4x4xf32> to tensor<2x8xf32>
  %r = memfit.matmul %z, %v {memfit.backward} : tensor<4x2xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  %q = memfit.matmul %r, %zz {memfit.backward} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %g1 = memfit.matmul %x, %q {memfit.backward} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %n = memfit.add %g1, %g2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %s = memfit.mul %g1, %n : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %u1 = memfit.sub %w1, %s : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %u2 = memfit.sub %w2, %g2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  memfit.assign @w1, %u1 : tensor<4x4xf32>
  memfit.assign @w2, %u2 : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

memfit.parameter @w = dense<1.0> : tensor<4x4xf32> {memfit.role = "parameter"}
memfit.parameter @step = dense<0.0> : tensor<f32> {memfit.role = "counter"}

// The step counter's kernel, whose result the update also reads, is not
// moved to the top of the step (its result would live through the
// forward): the update pulls it along to just before itself.
// CHECK-LABEL: func.func @counter
// CHECK: %[[G:.+]] = memfit.matmul %{{.+}}, %{{.+}} {memfit.backward}
// CHECK-NEXT: %[[S:.+]] = memfit.load_parameter @step
// CHECK-NEXT: %[[C:.+]] = memfit.exp %[[S]]
// CHECK-NEXT: memfit.assign @step, %[[C]]
// CHECK-NEXT: %[[K:.+]] = memfit.kernel(%{{.+}}, %[[G]], %[[C]])
// CHECK: memfit.assign @w, %[[K]]
// CHECK-NEXT: %[[Y2:.+]] = memfit.matmul %[[G]], %[[G]]
// CHECK-NEXT: return %[[Y2]]
func.func @counter(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %w = memfit.load_parameter @w : tensor<4x4xf32>
  %y = memfit.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %g = memfit.matmul %x, %y {memfit.backward} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %y2 = memfit.matmul %g, %g : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %s = memfit.load_parameter @step : tensor<f32>
  %c = memfit.exp %s : tensor<f32>
  %k = memfit.kernel(%w, %g, %c) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32> {
  ^bb0(%w0: tensor<4x4xf32>, %g0: tensor<4x4xf32>, %c0: tensor<f32>):
    %u = memfit.sub %w0, %g0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %v = memfit.mul %u, %c0 : tensor<4x4xf32>, tensor<f32> -> tensor<4x4xf32>
    memfit.yield %v : tensor<4x4xf32>
  }
  memfit.assign @step, %c : tensor<f32>
  memfit.assign @w, %k : tensor<4x4xf32>
  return %y2 : tensor<4x4xf32>
}
