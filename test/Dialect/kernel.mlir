// Round trip of memfit.kernel and memfit.yield: custom form, print->parse
// stability, the generic form parsed back, and bytecode.
// RUN: memfit-opt %s -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file | memfit-opt -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file -mlir-print-op-generic | memfit-opt -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file -verify-roundtrip -o /dev/null
// The generic form spells the region and the operand/result types:
// RUN: memfit-opt %s -split-input-file -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Several inputs and results; a splat constant inside the body is a literal
// of the kernel and needs no input.
// CHECK-LABEL: func.func @inputs_and_results
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[B:.+]]: tensor<4xf32>)
// CHECK: %[[K:.+]]:2 = memfit.kernel(%[[X]], %[[B]]) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<2x4xf32>, %[[C:.+]]: tensor<4xf32>):
// CHECK-NEXT: %[[H:.+]] = memfit.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[S:.+]] = memfit.add %[[A]], %[[C]] : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: %[[M:.+]] = memfit.mul %[[S]], %[[H]] : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: memfit.yield %[[S]], %[[M]] : tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]#0, %[[K]]#1
// GENERIC-LABEL: sym_name = "inputs_and_results"
// GENERIC: %{{.+}}:2 = "memfit.kernel"(%{{.+}}, %{{.+}}) ({
// GENERIC: "memfit.yield"(%{{.+}}, %{{.+}}) : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
// GENERIC-NEXT: }) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
func.func @inputs_and_results(%x: tensor<2x4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0:2 = memfit.kernel(%x, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  ^bb0(%a: tensor<2x4xf32>, %c: tensor<4xf32>):
    %half = memfit.constant dense<5.000000e-01> : tensor<f32>
    %s = memfit.add %a, %c : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %m = memfit.mul %s, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
    memfit.yield %s, %m : tensor<2x4xf32>, tensor<2x4xf32>
  }
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A kernel without inputs: its block takes no arguments, so no block label
// is printed.
// CHECK-LABEL: func.func @no_inputs
// CHECK: %[[K:.+]] = memfit.kernel() : () -> tensor<8xi64> {
// CHECK-NEXT: %[[R:.+]] = memfit.range {delta = 1 : i64, start = 0 : i64} : tensor<8xi64>
// CHECK-NEXT: memfit.yield %[[R]] : tensor<8xi64>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
// GENERIC-LABEL: sym_name = "no_inputs"
// GENERIC: "memfit.kernel"() ({
// GENERIC-NEXT: "memfit.range"()
// GENERIC: }) : () -> tensor<8xi64>
func.func @no_inputs() -> tensor<8xi64> {
  %0 = memfit.kernel() : () -> tensor<8xi64> {
    %r = memfit.range {start = 0 : i64, delta = 1 : i64} : tensor<8xi64>
    memfit.yield %r : tensor<8xi64>
  }
  return %0 : tensor<8xi64>
}

// -----

// A kernel may forward an input unchanged, and one input may feed several
// ops of the body.
// CHECK-LABEL: func.func @forward_input
// CHECK: memfit.kernel(%{{.+}}) : (tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<4xi1>):
// CHECK-NEXT: %[[N:.+]] = memfit.not %[[A]] : tensor<4xi1>
// CHECK-NEXT: memfit.yield %[[A]], %[[N]] : tensor<4xi1>, tensor<4xi1>
func.func @forward_input(%x: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0:2 = memfit.kernel(%x) : (tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  ^bb0(%a: tensor<4xi1>):
    %n = memfit.not %a : tensor<4xi1>
    memfit.yield %a, %n : tensor<4xi1>, tensor<4xi1>
  }
  return %0#0, %0#1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// Row kernels hold one normalization or reduction; the kernel's own
// attributes print in the attribute dictionary.
// CHECK-LABEL: func.func @row_kernel
// CHECK: memfit.kernel(%{{.+}}) {tag = "row"} : (tensor<2x8xf32>) -> tensor<2x1xf32> {
// CHECK: memfit.reduce_sum %{{.+}} {axes = array<i64: -1>} : tensor<2x8xf32> -> tensor<2x1xf32>
func.func @row_kernel(%x: tensor<2x8xf32>) -> tensor<2x1xf32> {
  %0 = memfit.kernel(%x) {tag = "row"} : (tensor<2x8xf32>) -> tensor<2x1xf32> {
  ^bb0(%a: tensor<2x8xf32>):
    %s = memfit.reduce_sum %a {axes = array<i64: -1>, keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
    memfit.yield %s : tensor<2x1xf32>
  }
  return %0 : tensor<2x1xf32>
}
