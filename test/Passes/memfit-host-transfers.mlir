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

// The host cannot write device memory: a host kernel's result that is
// stored into a parameter on the device (the new working copy) or read by a
// device kernel is copied there, once, by a kernel marked memfit.to_device
// right after it; its store into the host's master reads it in place.
// CHECK-LABEL: func.func @update
// CHECK: %[[NEW:.*]]:2 = memfit.kernel({{.*}}) {memfit.on_host}
// CHECK: %[[UP:.*]] = memfit.kernel(%[[NEW]]#1) {memfit.to_device}
// CHECK-NEXT: ^bb0(%[[B:.*]]: tensor<4xbf16>):
// CHECK-NEXT: memfit.yield %[[B]]
// CHECK-NOT: memfit.to_device
// CHECK: memfit.kernel(%[[UP]])
// CHECK: memfit.assign @master, %[[NEW]]#0
// CHECK: memfit.assign @master.working, %[[UP]]
memfit.parameter @master.working = dense<1.000000e+00> : tensor<4xbf16> {memfit.role = "working_copy", memfit.working_copy_of = @master}
func.func @update() {
  %m = memfit.load_parameter @master : tensor<4xf32>
  %u:2 = memfit.kernel(%m) {memfit.on_host} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xbf16>) {
  ^bb0(%a: tensor<4xf32>):
    %t = memfit.add %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %c = memfit.cast %t : tensor<4xf32> to tensor<4xbf16>
    memfit.yield %t, %c : tensor<4xf32>, tensor<4xbf16>
  }
  %d = memfit.kernel(%u#1) : (tensor<4xbf16>) -> tensor<4xbf16> {
  ^bb0(%a: tensor<4xbf16>):
    %t = memfit.tanh %a : tensor<4xbf16>
    memfit.yield %t : tensor<4xbf16>
  }
  memfit.assign @master, %u#0 : tensor<4xf32>
  memfit.assign @master.working, %u#1 : tensor<4xbf16>
  return
}
