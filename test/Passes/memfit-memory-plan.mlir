// memfit-memory-plan: the schedule and arena plan of each function formed
// into kernels.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics -o /dev/null \
// RUN:   --pass-pipeline='builtin.module(func.func(memfit-form-kernels),memfit-memory-plan{buffers=true})' \
// RUN:   | FileCheck %s
// Without `buffers`, only the totals:
// RUN: memfit-opt %s -split-input-file -verify-diagnostics -o /dev/null \
// RUN:   --pass-pipeline='builtin.module(func.func(memfit-form-kernels),memfit-memory-plan)' \
// RUN:   | FileCheck %s --check-prefix=TOTALS
// With `output`, the plan goes to a file; every split rewrites it, so it holds
// the last case's plan:
// RUN: memfit-opt %s -split-input-file -verify-diagnostics -o /dev/null \
// RUN:   --pass-pipeline='builtin.module(func.func(memfit-form-kernels),memfit-memory-plan{buffers=true output=%t.plan})' \
// RUN:   | FileCheck %s --check-prefix=STDOUT --allow-empty
// RUN: FileCheck %s --check-prefix=FILE --input-file=%t.plan
//
// Steps are the kernels and contractions in op order, numbered from 1; inputs
// are live from step 0 and stay live until the end, step (number of steps + 1),
// so that a session can run again on the same inputs; returned values are
// also live until that step.
// Arena buffers are placed largest first (ties: earliest first step) at the
// lowest 256-byte-aligned offset free over their live range.

// STDOUT-NOT: memory plan

// A chain x -> a -> b -> c -> d of 40-byte buffers (10 x f32): the input x
// is live to the end (0..5) and holds offset 0; every other value is live
// from the step that writes it to the step that reads it, so the activations
// alternate between two offsets above the input, 256 and 512 (40 bytes
// aligned up):
//   x 0..5 @0; a 1..2 -> @256; b 2..3 overlaps x and a -> @512;
//   c 3..4 overlaps x and b -> @256; d 4..5 overlaps x and c -> @512.
// Peak: 512 + 40 aligned = 768; unshared: 5 x 40 = 200.
// CHECK-LABEL: memory plan for @chain: 4 steps, 5 buffers
// CHECK-NEXT: weights region: 0 bytes (parameters 0, constants 0)
// CHECK-NEXT: arena peak: 768 bytes (inputs 40, outputs 40, activations 120; 200 bytes if nothing were shared)
// CHECK-NEXT: total: 768 bytes
// CHECK-NEXT: buffer 0: arena inputs offset 0 bytes 40 steps 0..5 %arg0
// CHECK-NEXT: buffer 1: arena activations offset 256 bytes 40 steps 1..2 a
// CHECK-NEXT: buffer 2: arena activations offset 512 bytes 40 steps 2..3 b
// CHECK-NEXT: buffer 3: arena activations offset 256 bytes 40 steps 3..4 c
// CHECK-NEXT: buffer 4: arena outputs offset 512 bytes 40 steps 4..5 d
// TOTALS-LABEL: memory plan for @chain: 4 steps, 5 buffers
// TOTALS-NEXT: weights region: 0 bytes (parameters 0, constants 0)
// TOTALS-NEXT: arena peak: 768 bytes
// TOTALS-NEXT: total: 768 bytes
// TOTALS-NOT: {{^ *}}buffer {{[0-9]+}}:
func.func @chain(%x: tensor<10xf32>) -> tensor<10xf32> {
  %a = memfit.exp %x : tensor<10xf32> loc("a")
  %b = memfit.exp %a : tensor<10xf32> loc("b")
  %c = memfit.exp %b : tensor<10xf32> loc("c")
  %d = memfit.exp %c : tensor<10xf32> loc("d")
  return %d : tensor<10xf32>
}

// -----

// A view shares its source's buffer and keeps it live for the view's users:
// `a` is read at step 3 through the reshape, so it is live 1..3 and `c`
// (2..4) cannot take its bytes. All buffers are 64 bytes (2 x 8 x f32).
//   x 0..4 @0; a 1..3 overlaps x -> @256; c 2..4 overlaps x and a -> @512;
//   d 3..4 overlaps x, a and c -> @768. Peak: 768 + 64 aligned = 1024.
// Were `a` dead after step 1, c would take offset 256 and d 512 (peak 768).
// CHECK-LABEL: memory plan for @view_extends_liveness: 3 steps, 4 buffers
// CHECK-NEXT: weights region: 0 bytes (parameters 0, constants 0)
// CHECK-NEXT: arena peak: 1024 bytes (inputs 64, outputs 128, activations 64; 256 bytes if nothing were shared)
// CHECK-NEXT: total: 1024 bytes
// CHECK-NEXT: buffer 0: arena inputs offset 0 bytes 64 steps 0..4 %arg0
// CHECK-NEXT: buffer 1: arena activations offset 256 bytes 64 steps 1..3 a
// CHECK-NEXT: buffer 2: arena outputs offset 512 bytes 64 steps 2..4 c
// CHECK-NEXT: buffer 3: arena outputs offset 768 bytes 64 steps 3..4 d
func.func @view_extends_liveness(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<16xf32>) {
  %a = memfit.exp %x : tensor<2x8xf32> loc("a")
  %v = memfit.reshape %a : tensor<2x8xf32> to tensor<16xf32> loc("v")
  %c = memfit.neg %x : tensor<2x8xf32> loc("c")
  %d = memfit.exp %v : tensor<16xf32> loc("d")
  return %c, %d : tensor<2x8xf32>, tensor<16xf32>
}

// -----

// Parameters fill the weights region in module order, then the constants,
// each at a 256-byte boundary (their live ranges do not matter): w1 (12
// bytes) @0, w2 (400 bytes) @256, the table (12 bytes) @768; 780 bytes
// aligned up: 1024. The second load of w1 maps
// to w1's buffer, and the splat 0.5 became a literal of its kernel.
// Arena (steps: a 1, b 2, c 3, s 4, e 5, f 6): 12-byte buffers first; the
// input x is live to the end and holds offset 0, and the others alternate
// above it:
//   x 0..7 @0; a 1..2 @256; b 2..3 @512; c 3..5 @256; e 5..6 @512;
//   f 6..7 @256;
// then the 4-byte s 4..5, which overlaps x (@0), c (@256) and e (@512): @768.
// Peak: 768 + 4 aligned = 1024; total 1024 + 1024.
// CHECK-LABEL: memory plan for @weights: 6 steps, 10 buffers
// CHECK-NEXT: weights region: 1024 bytes (parameters 412, constants 12)
// CHECK-NEXT: arena peak: 1024 bytes (inputs 12, outputs 12, activations 52; 76 bytes if nothing were shared)
// CHECK-NEXT: total: 2048 bytes
// CHECK-NEXT: buffer 0: arena inputs offset 0 bytes 12 steps 0..7 %arg0
// CHECK-NEXT: buffer 1: weights parameters offset 0 bytes 12 steps 0..2 w1
// CHECK-NEXT: buffer 2: weights constants offset 768 bytes 12 steps 0..3 table
// CHECK-NEXT: buffer 3: weights parameters offset 256 bytes 400 steps 0..4 w2
// CHECK-NEXT: buffer 4: arena activations offset 256 bytes 12 steps 1..2 a
// CHECK-NEXT: buffer 5: arena activations offset 512 bytes 12 steps 2..3 b
// CHECK-NEXT: buffer 6: arena activations offset 256 bytes 12 steps 3..5 c
// CHECK-NEXT: buffer 7: arena activations offset 768 bytes 4 steps 4..5 s
// CHECK-NEXT: buffer 8: arena activations offset 512 bytes 12 steps 5..6 e
// CHECK-NEXT: buffer 9: arena outputs offset 256 bytes 12 steps 6..7 f
// CHECK-NOT: buffer 10
memfit.parameter @w1 = dense<1.0> : tensor<3xf32>
memfit.parameter @w2 = dense<2.0> : tensor<100xf32>

func.func @weights(%x: tensor<3xf32>) -> tensor<3xf32> {
  %p = memfit.load_parameter @w1 : tensor<3xf32>
  %t = memfit.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> loc("table")
  %q = memfit.load_parameter @w2 : tensor<100xf32>
  %p2 = memfit.load_parameter @w1 : tensor<3xf32>
  %h = memfit.constant dense<0.5> : tensor<f32>
  %a = memfit.add %x, %p : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32> loc("a")
  %b = memfit.mul %a, %p2 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32> loc("b")
  %c = memfit.add %b, %t : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32> loc("c")
  %s = memfit.reduce_sum %q {axes = array<i64: 0>} : tensor<100xf32> -> tensor<1xf32> loc("s")
  %e = memfit.mul %c, %s : tensor<3xf32>, tensor<1xf32> -> tensor<3xf32> loc("e")
  %f = memfit.mul %e, %h : tensor<3xf32>, tensor<f32> -> tensor<3xf32> loc("f")
  return %f : tensor<3xf32>
}

// -----

// A returned input stays an input (it is counted under inputs, not
// outputs), and a returned view makes its source an output. Every input
// lives to the end (step 2), returned or not, so y, last read at step 1,
// keeps its bytes as x does. All buffers are 16 bytes:
//   x 0..2 @0; y 0..2 @256; a 1..2 overlaps both -> @512. Peak 768.
// CHECK-LABEL: memory plan for @returned_input: 1 steps, 3 buffers
// CHECK-NEXT: weights region: 0 bytes (parameters 0, constants 0)
// CHECK-NEXT: arena peak: 768 bytes (inputs 32, outputs 16, activations 0; 48 bytes if nothing were shared)
// CHECK-NEXT: total: 768 bytes
// CHECK-NEXT: buffer 0: arena inputs offset 0 bytes 16 steps 0..2 %arg0
// CHECK-NEXT: buffer 1: arena inputs offset 256 bytes 16 steps 0..2 %arg1
// CHECK-NEXT: buffer 2: arena outputs offset 512 bytes 16 steps 1..2 a
func.func @returned_input(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<1x4xf32>) {
  %a = memfit.exp %y : tensor<4xf32> loc("a")
  %u = memfit.unsqueeze %a {axes = array<i64: 0>} : tensor<4xf32> -> tensor<1x4xf32>
  return %x, %u : tensor<4xf32>, tensor<1x4xf32>
}

// -----

// Only kernels, contractions, views, parameters and constants have a place
// in the plan; memfit-form-kernels leaves a call alone.
func.func private @external(tensor<4xf32>) -> tensor<4xf32>

func.func @not_formed(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.call' has no place in a memory plan: run memfit-form-kernels first}}
  %0 = func.call @external(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The plan needs static shapes; a dynamic function argument is reported on
// the function.
// expected-error @+1 {{memory plan needs static tensor types, got 'tensor<?xf32>'}}
func.func @dynamic_shape(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// -----

// A contraction is one step; i64 and i1 values are 8 and 1 bytes per
// element. Sizes: x 2x8xf32 64, w 8x4xf32 128, m 2x4xf32 32, k 2x4xi1 8.
//   w 0..3 @0 (largest); x 0..3 @256; m 1..2 overlaps both -> @512;
//   k 2..3 overlaps w, x (inputs, live to the end) and m -> @768.
// Peak: 768 + 8 aligned = 1024.
// CHECK-LABEL: memory plan for @contraction: 2 steps, 4 buffers
// CHECK-NEXT: weights region: 0 bytes (parameters 0, constants 0)
// CHECK-NEXT: arena peak: 1024 bytes (inputs 192, outputs 8, activations 32; 232 bytes if nothing were shared)
// CHECK-NEXT: total: 1024 bytes
// CHECK-NEXT: buffer 0: arena inputs offset 256 bytes 64 steps 0..3 %arg0
// CHECK-NEXT: buffer 1: arena inputs offset 0 bytes 128 steps 0..3 %arg1
// CHECK-NEXT: buffer 2: arena activations offset 512 bytes 32 steps 1..2 m
// CHECK-NEXT: buffer 3: arena outputs offset 768 bytes 8 steps 2..3 k
// FILE: memory plan for @contraction: 2 steps, 4 buffers
// FILE: buffer 3: arena outputs offset 768 bytes 8 steps 2..3 k
func.func @contraction(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4xi1> {
  %m = memfit.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32> loc("m")
  %k = memfit.cast %m : tensor<2x4xf32> to tensor<2x4xi1> loc("k")
  return %k : tensor<2x4xi1>
}
