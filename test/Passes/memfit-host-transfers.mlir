// memfit-host-transfers: what a host kernel (memfit.on_host) reads from the
// device is copied to host memory before it, once per value, by a kernel
// marked memfit.to_host; what is already in host memory (a parameter kept
// there, another host kernel's result, a view of either) is read in place.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(func.func(memfit-host-transfers))' | FileCheck %s

// CHECK-LABEL: func.func @step
// CHECK: %[[MASTER:.*]] = memfit.load_parameter @master
// CHECK: %[[DEV:.*]] = memfit.load_parameter @device
// CHECK: %[[G:.*]] = memfit.kernel(%[[DEV]]) : {{.*}} {
// CHECK: %[[GH:.*]] = memfit.kernel(%[[G]]) {memfit.to_host}
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4xf32>):
// CHECK-NEXT: memfit.yield %[[A]]
// CHECK: %[[DH:.*]] = memfit.kernel(%[[DEV]]) {memfit.to_host}
// CHECK: %[[U:.*]] = memfit.kernel(%[[MASTER]], %[[GH]], %[[DH]]) {memfit.on_host}
// CHECK: %[[V:.*]] = memfit.reshape %[[MASTER]]
// CHECK-NOT: memfit.to_host
// CHECK: memfit.kernel(%[[U]], %[[GH]], %[[V]]) {memfit.on_host}
// CHECK: memfit.assign @master


memfit.parameter @master = dense<1.000000e+00> : tensor<4xf32> {memfit.memory_space = "host", memfit.role = "parameter"}
memfit.parameter @device = dense<2.000000e+00> : tensor<4xf32> {memfit.role = "parameter"}
func.func @step() {
  %m = memfit.load_parameter @master : tensor<4xf32>
  %d = memfit.load_parameter @device : tensor<4xf32>
  %g = memfit.kernel(%d) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %t = memfit.tanh %a : tensor<4xf32>
    memfit.yield %t : tensor<4xf32>
  }
  %u = memfit.kernel(%m, %g, %d) {memfit.on_host} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
    %s = memfit.sub %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %t = memfit.add %s, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    memfit.yield %t : tensor<4xf32>
  }
  %v = memfit.reshape %m : tensor<4xf32> to tensor<4xf32>
  %w = memfit.kernel(%u, %g, %v) {memfit.on_host} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
    %s = memfit.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %t = memfit.add %s, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    memfit.yield %t : tensor<4xf32>
  }
  memfit.assign @master, %w : tensor<4xf32>
  return
}
