// memfit-memory-plan writes a parameter's update into the parameter's own
// bytes when the kernel that computes it reads the old value only at the
// index it writes, in the same segment; otherwise it refuses, naming the
// step.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics -o /dev/null \
// RUN:   --pass-pipeline='builtin.module(memfit-memory-plan{buffers=true})' \
// RUN:   | FileCheck %s

// A fused optimizer kernel that transposes a gradient (the tied LM head's)
// before it updates the weight: the weight itself is read element by
// element, so the update goes in place (buffer 3 at the weight's offset).
memfit.parameter @w = dense<1.000000e+00> : tensor<2x3xf32>
// CHECK-LABEL: memory plan for @transpose_elsewhere: 1 steps, 4 buffers
// CHECK: buffer 2: weights parameters offset 0 bytes 24 steps 0..1 w
// CHECK-NEXT: buffer 3: weights parameters offset 0 bytes 24 steps 1..1 memfit.kernel
func.func @transpose_elsewhere(%gt: tensor<3x2xf32>, %g: tensor<2x3xf32>) {
  %w = memfit.load_parameter @w : tensor<2x3xf32>
  %u = memfit.kernel(%gt, %g, %w) : (tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<3x2xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>):
    %t = memfit.transpose %a {perm = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
    %s = memfit.add %b, %t : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %n = memfit.sub %c, %s : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    memfit.yield %n : tensor<2x3xf32>
  }
  memfit.assign @w, %u : tensor<2x3xf32>
  return
}

// -----

// AdamW's two states and the weight in one segment: each old value feeds
// the other results of its segment too, at the same index.
memfit.parameter @w = dense<1.000000e+00> : tensor<4xf32>
memfit.parameter @m = dense<0.000000e+00> : tensor<4xf32>
// CHECK-LABEL: memory plan for @one_segment: 1 steps, 6 buffers
// CHECK: buffer 4: weights parameters offset 0 bytes 16 steps 1..1 memfit.kernel
// CHECK-NEXT: buffer 5: weights parameters offset 256 bytes 16 steps 1..1 memfit.kernel
func.func @one_segment(%g: tensor<4xf32>, %lr: tensor<f32>) {
  %w = memfit.load_parameter @w : tensor<4xf32>
  %m = memfit.load_parameter @m : tensor<4xf32>
  %u:2 = memfit.kernel(%g, %lr, %w, %m) : (tensor<4xf32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %r: tensor<f32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
    %nm = memfit.add %c, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %s = memfit.mul %nm, %r : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
    %nw = memfit.sub %b, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    memfit.yield %nw, %nm : tensor<4xf32>, tensor<4xf32>
  }
  memfit.assign @w, %u#0 : tensor<4xf32>
  memfit.assign @m, %u#1 : tensor<4xf32>
  return
}

// -----

// The kernel reads the weight transposed: thread (i, j) would read the
// element that thread (j, i) overwrites.
memfit.parameter @w = dense<1.000000e+00> : tensor<2x2xf32>
func.func @reads_transposed() {
  %w = memfit.load_parameter @w : tensor<2x2xf32>
  %u = memfit.kernel(%w) : (tensor<2x2xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<2x2xf32>):
    %t = memfit.transpose %a {perm = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
    %n = memfit.sub %a, %t : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    memfit.yield %n : tensor<2x2xf32>
  }
  // expected-error @+1 {{cannot update @w in place: step 1 reads the old value after step 1 writes the new one}}
  memfit.assign @w, %u : tensor<2x2xf32>
  return
}

// -----

// A multi-tensor kernel whose first segment reads @b while its second
// updates @b: the blocks of the two segments race.
memfit.parameter @a = dense<1.000000e+00> : tensor<4xf32>
memfit.parameter @b = dense<2.000000e+00> : tensor<4xf32>
func.func @other_segment(%g: tensor<4xf32>) {
  %a = memfit.load_parameter @a : tensor<4xf32>
  %b = memfit.load_parameter @b : tensor<4xf32>
  %u:2 = memfit.kernel(%a, %b, %g) {memfit.segments = array<i64: 1, 1>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>):
    %na = memfit.sub %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %nb = memfit.sub %y, %z : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    memfit.yield %na, %nb : tensor<4xf32>, tensor<4xf32>
  }
  memfit.assign @a, %u#0 : tensor<4xf32>
  // expected-error @+1 {{cannot update @b in place: step 1 reads the old value after step 1 writes the new one}}
  memfit.assign @b, %u#1 : tensor<4xf32>
  return
}

// -----

// A gather_grad into a kernel input (memfit-fuse's accumulation of a tied
// embedding's rows) writes the input's buffer in place: here a function
// argument, which the step must leave intact.
func.func @accumulate_into_argument(%dy: tensor<2x4xf32>, %ids: tensor<2xi64>, %g: tensor<5x4xf32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{cannot accumulate in place into a value that is not a step's result in the arena (an argument, a parameter or a constant)}}
  %s = memfit.kernel(%dy, %ids, %g) : (tensor<2x4xf32>, tensor<2xi64>, tensor<5x4xf32>) -> tensor<5x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<2xi64>, %c: tensor<5x4xf32>):
    %r = memfit.gather_grad %a, %b into %c {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>, tensor<5x4xf32>) -> tensor<5x4xf32>
    memfit.yield %r : tensor<5x4xf32>
  }
  return %s : tensor<5x4xf32>
}

// -----

// The value added to is read again after the accumulation (through a
// reshape): its old contents are gone by then.
func.func @accumulate_then_read(%dy: tensor<2x4xf32>, %ids: tensor<2xi64>, %x: tensor<5x4xf32>) -> (tensor<5x4xf32>, tensor<20xf32>) {
  %g = memfit.kernel(%x) : (tensor<5x4xf32>) -> tensor<5x4xf32> {
  ^bb0(%a: tensor<5x4xf32>):
    %e = memfit.exp %a : tensor<5x4xf32>
    memfit.yield %e : tensor<5x4xf32>
  }
  %v = memfit.reshape %g : tensor<5x4xf32> to tensor<20xf32>
  // expected-error @+1 {{cannot accumulate in place: step 3 reads the value that step 2 adds to}}
  %s = memfit.kernel(%dy, %ids, %g) : (tensor<2x4xf32>, tensor<2xi64>, tensor<5x4xf32>) -> tensor<5x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<2xi64>, %c: tensor<5x4xf32>):
    %r = memfit.gather_grad %a, %b into %c {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>, tensor<5x4xf32>) -> tensor<5x4xf32>
    memfit.yield %r : tensor<5x4xf32>
  }
  %n = memfit.kernel(%v) : (tensor<20xf32>) -> tensor<20xf32> {
  ^bb0(%a: tensor<20xf32>):
    %e = memfit.neg %a : tensor<20xf32>
    memfit.yield %e : tensor<20xf32>
  }
  return %s, %n : tensor<5x4xf32>, tensor<20xf32>
}

// -----

// Read before the accumulation and not after: the sum takes the value's
// buffer (buffer 3, live from step 1 to the end), no buffer of its own.
// CHECK-LABEL: memory plan for @accumulate_in_place: 3 steps, 5 buffers
// CHECK: buffer 3: arena outputs offset {{[0-9]+}} bytes 80 steps 1..4 memfit.kernel
// CHECK-NEXT: buffer 4: arena outputs offset {{[0-9]+}} bytes 80 steps 2..4 memfit.kernel
func.func @accumulate_in_place(%dy: tensor<2x4xf32>, %ids: tensor<2xi64>, %x: tensor<5x4xf32>) -> (tensor<5x4xf32>, tensor<5x4xf32>) {
  %g = memfit.kernel(%x) : (tensor<5x4xf32>) -> tensor<5x4xf32> {
  ^bb0(%a: tensor<5x4xf32>):
    %e = memfit.exp %a : tensor<5x4xf32>
    memfit.yield %e : tensor<5x4xf32>
  }
  %n = memfit.kernel(%g) : (tensor<5x4xf32>) -> tensor<5x4xf32> {
  ^bb0(%a: tensor<5x4xf32>):
    %e = memfit.neg %a : tensor<5x4xf32>
    memfit.yield %e : tensor<5x4xf32>
  }
  %s = memfit.kernel(%dy, %ids, %g) : (tensor<2x4xf32>, tensor<2xi64>, tensor<5x4xf32>) -> tensor<5x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<2xi64>, %c: tensor<5x4xf32>):
    %r = memfit.gather_grad %a, %b into %c {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>, tensor<5x4xf32>) -> tensor<5x4xf32>
    memfit.yield %r : tensor<5x4xf32>
  }
  return %s, %n : tensor<5x4xf32>, tensor<5x4xf32>
}
