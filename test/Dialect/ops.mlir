// Round trip of every memfit op: custom form, print->parse->print stability,
// and the generic form parsed back into the custom form.
// RUN: memfit-opt %s -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file | memfit-opt -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file -mlir-print-op-generic | memfit-opt -split-input-file | FileCheck %s
// The printed form is a fixed point of print->parse->print:
// RUN: memfit-opt %s -split-input-file > %t.1.mlir
// RUN: memfit-opt %t.1.mlir -split-input-file > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// The generic and bytecode forms round-trip to the same IR:
// RUN: memfit-opt %s -split-input-file -verify-roundtrip -o %t.rt.mlir

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// CHECK: memfit.parameter @w = dense<{{\[}}[1.000000e+00, 2.000000e+00]]> : tensor<1x2xf32>
memfit.parameter @w = dense<[[1.0, 2.0]]> : tensor<1x2xf32>

// CHECK-LABEL: func.func @load_parameter
// CHECK: %[[W:.+]] = memfit.load_parameter @w : tensor<1x2xf32>
// CHECK: return %[[W]]
func.func @load_parameter() -> tensor<1x2xf32> {
  %0 = memfit.load_parameter @w : tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// A weight held in a dense_resource blob, named like an ONNX initializer.
// CHECK: memfit.parameter @wte.weight = dense_resource<wte> : tensor<2xi32>
memfit.parameter @"wte.weight" = dense_resource<wte> : tensor<2xi32>

// A name that is not a bare identifier stays quoted.
// CHECK: memfit.parameter @"model/h.0:bias" = dense<0.000000e+00> : tensor<2x3xf16>
memfit.parameter @"model/h.0:bias" = dense<0.0> : tensor<2x3xf16>

// CHECK-LABEL: func.func @load_parameter_resource
// CHECK: %[[W:.+]] = memfit.load_parameter @wte.weight : tensor<2xi32>
// CHECK: %[[B:.+]] = memfit.load_parameter @"model/h.0:bias" : tensor<2x3xf16>
// CHECK: return %[[W]], %[[B]]
func.func @load_parameter_resource() -> (tensor<2xi32>, tensor<2x3xf16>) {
  %0 = memfit.load_parameter @"wte.weight" : tensor<2xi32>
  %1 = memfit.load_parameter @"model/h.0:bias" : tensor<2x3xf16>
  return %0, %1 : tensor<2xi32>, tensor<2x3xf16>
}

// CHECK: dialect_resources
// CHECK: wte: "0x040000000100000002000000"
{-#
  dialect_resources: {
    builtin: {
      wte: "0x040000000100000002000000"
    }
  }
#-}

// -----

// CHECK-LABEL: func.func @constant
// CHECK-DAG: memfit.constant dense<[2, 16, 4, 8]> : tensor<4xi64>
// CHECK-DAG: memfit.constant dense<1.500000e+00> : tensor<f32>
// CHECK-DAG: memfit.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: memfit.constant dense<0.000000e+00> : tensor<2x3xbf16>
// CHECK-DAG: memfit.constant dense<> : tensor<0xf32>
func.func @constant() -> (tensor<4xi64>, tensor<f32>, tensor<2xi1>, tensor<2x3xbf16>, tensor<0xf32>) {
  %0 = memfit.constant dense<[2, 16, 4, 8]> : tensor<4xi64>
  %1 = memfit.constant dense<1.5> : tensor<f32>
  %2 = memfit.constant dense<[true, false]> : tensor<2xi1>
  %3 = memfit.constant dense<0.0> : tensor<2x3xbf16>
  %4 = memfit.constant dense<> : tensor<0xf32>
  return %0, %1, %2, %3, %4 : tensor<4xi64>, tensor<f32>, tensor<2xi1>, tensor<2x3xbf16>, tensor<0xf32>
}

// -----

// CHECK-LABEL: func.func @range
// CHECK: memfit.range {delta = 1 : i64, start = 0 : i64} : tensor<16xi64>
// CHECK: memfit.range {delta = -3 : i32, start = 5 : i32} : tensor<2xi32>
// CHECK: memfit.range {delta = -2.500000e-01 : f32, start = 5.000000e-01 : f32} : tensor<4xf32>
func.func @range() -> (tensor<16xi64>, tensor<2xi32>, tensor<4xf32>) {
  %0 = memfit.range {start = 0 : i64, delta = 1 : i64} : tensor<16xi64>
  %1 = memfit.range {start = 5 : i32, delta = -3 : i32} : tensor<2xi32>
  %2 = memfit.range {start = 0.5 : f32, delta = -0.25 : f32} : tensor<4xf32>
  return %0, %1, %2 : tensor<16xi64>, tensor<2xi32>, tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Element-wise unary ops
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @neg
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>, %[[I:[^:]+]]: tensor<4xi64>)
// CHECK: memfit.neg %[[X]] : tensor<2x3xf32>
// CHECK: memfit.neg %[[I]] : tensor<4xi64>
func.func @neg(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<2x3xf32>, tensor<4xi64>) {
  %0 = memfit.neg %x : tensor<2x3xf32>
  %1 = memfit.neg %i : tensor<4xi64>
  return %0, %1 : tensor<2x3xf32>, tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @exp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK: %[[R:.+]] = memfit.exp %[[X]] : tensor<2x3xf32>
// CHECK: return %[[R]]
func.func @exp(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = memfit.exp %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @log
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf64>)
// CHECK: memfit.log %[[X]] : tensor<2x3xf64>
func.func @log(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = memfit.log %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// -----

// CHECK-LABEL: func.func @sqrt
// CHECK-SAME: (%[[X:[^:]+]]: tensor<f16>)
// CHECK: memfit.sqrt %[[X]] : tensor<f16>
func.func @sqrt(%x: tensor<f16>) -> tensor<f16> {
  %0 = memfit.sqrt %x : tensor<f16>
  return %0 : tensor<f16>
}

// -----

// CHECK-LABEL: func.func @reciprocal
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xbf16>)
// CHECK: memfit.reciprocal %[[X]] : tensor<2x3xbf16>
func.func @reciprocal(%x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %0 = memfit.reciprocal %x : tensor<2x3xbf16>
  return %0 : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func.func @erf
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK: memfit.erf %[[X]] : tensor<2x3xf32>
func.func @erf(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = memfit.erf %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @tanh
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK: memfit.tanh %[[X]] : tensor<2x3xf32>
func.func @tanh(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = memfit.tanh %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sigmoid
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK: memfit.sigmoid %[[X]] : tensor<2x3xf32>
func.func @sigmoid(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = memfit.sigmoid %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK: memfit.relu %[[X]] : tensor<2x3xf32>
func.func @relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = memfit.relu %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sin
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK: memfit.sin %[[X]] : tensor<2x3xf32>
func.func @sin(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = memfit.sin %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @cos
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>)
// CHECK: memfit.cos %[[X]] : tensor<2x3xf32>
func.func @cos(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = memfit.cos %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @not
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x16xi1>)
// CHECK: memfit.not %[[X]] : tensor<16x16xi1>
func.func @not(%x: tensor<16x16xi1>) -> tensor<16x16xi1> {
  %0 = memfit.not %x : tensor<16x16xi1>
  return %0 : tensor<16x16xi1>
}

// -----

// The approximation prints as a keyword.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x128xf32>)
// CHECK: memfit.gelu none %[[X]] : tensor<2x16x128xf32>
// CHECK: memfit.gelu tanh %[[X]] : tensor<2x16x128xf32>
func.func @gelu(%x: tensor<2x16x128xf32>) -> (tensor<2x16x128xf32>, tensor<2x16x128xf32>) {
  %0 = memfit.gelu none %x : tensor<2x16x128xf32>
  %1 = memfit.gelu tanh %x : tensor<2x16x128xf32>
  return %0, %1 : tensor<2x16x128xf32>, tensor<2x16x128xf32>
}

// -----

// The step operand (a 0-d i64 tensor, its type not printed) is optional.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x32xf32>, %[[S:[^:]+]]: tensor<i64>)
// CHECK: memfit.dropout %[[X]] {ratio = 1.000000e-01 : f32} : tensor<2x16x32xf32>
// CHECK: memfit.dropout %[[X]] {ratio = 0.000000e+00 : f32, seed = 42 : i64} : tensor<2x16x32xf32>
// CHECK: memfit.dropout %[[X]] step %[[S]] {ratio = 1.000000e-01 : f32, stream = 3 : i64} : tensor<2x16x32xf32>
// CHECK: memfit.dropout_mask %[[X]] step %[[S]] {ratio = 1.000000e-01 : f32, stream = 3 : i64} : tensor<2x16x32xf32> -> tensor<2x16x32xi1>
func.func @dropout(%x: tensor<2x16x32xf32>, %s: tensor<i64>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xi1>) {
  %0 = memfit.dropout %x {ratio = 0.1 : f32} : tensor<2x16x32xf32>
  %1 = memfit.dropout %x {seed = 42 : i64, ratio = 0.0 : f32} : tensor<2x16x32xf32>
  %2 = memfit.dropout %x step %s {ratio = 0.1 : f32, stream = 3 : i64} : tensor<2x16x32xf32>
  %3 = memfit.dropout_mask %x step %s {ratio = 0.1 : f32, stream = 3 : i64} : tensor<2x16x32xf32> -> tensor<2x16x32xi1>
  return %0, %1, %2, %3 : tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xi1>
}

// -----

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[I:[^:]+]]: tensor<2x16xi64>, %[[X:[^:]+]]: tensor<2x16xf32>)
// CHECK: memfit.cast %[[I]] : tensor<2x16xi64> to tensor<2x16xf32>
// CHECK: memfit.cast %[[X]] : tensor<2x16xf32> to tensor<2x16xi1>
// CHECK: memfit.cast %[[X]] : tensor<2x16xf32> to tensor<2x16xbf16>
// CHECK: memfit.cast %[[I]] : tensor<2x16xi64> to tensor<2x16xui8>
func.func @cast(%i: tensor<2x16xi64>, %x: tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<2x16xi1>, tensor<2x16xbf16>, tensor<2x16xui8>) {
  %0 = memfit.cast %i : tensor<2x16xi64> to tensor<2x16xf32>
  %1 = memfit.cast %x : tensor<2x16xf32> to tensor<2x16xi1>
  %2 = memfit.cast %x : tensor<2x16xf32> to tensor<2x16xbf16>
  %3 = memfit.cast %i : tensor<2x16xi64> to tensor<2x16xui8>
  return %0, %1, %2, %3 : tensor<2x16xf32>, tensor<2x16xi1>, tensor<2x16xbf16>, tensor<2x16xui8>
}

// -----

// Default-valued attributes (upper = true, k = 0) are elided when printing.
// CHECK-LABEL: func.func @trilu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x16xf32>, %[[B:[^:]+]]: tensor<2x4x8xi1>)
// CHECK: memfit.trilu %[[X]] : tensor<16x16xf32>
// CHECK: memfit.trilu %[[X]] : tensor<16x16xf32>
// CHECK: memfit.trilu %[[X]] {k = -1 : i64, upper = false} : tensor<16x16xf32>
// CHECK: memfit.trilu %[[B]] {k = 2 : i64} : tensor<2x4x8xi1>
func.func @trilu(%x: tensor<16x16xf32>, %b: tensor<2x4x8xi1>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<2x4x8xi1>) {
  %0 = memfit.trilu %x : tensor<16x16xf32>
  %1 = memfit.trilu %x {upper = true, k = 0 : i64} : tensor<16x16xf32>
  %2 = memfit.trilu %x {upper = false, k = -1 : i64} : tensor<16x16xf32>
  %3 = memfit.trilu %b {k = 2 : i64} : tensor<2x4x8xi1>
  return %0, %1, %2, %3 : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<2x4x8xi1>
}

//===----------------------------------------------------------------------===//
// Element-wise ops with broadcasting
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x32xf32>, %[[Y:[^:]+]]: tensor<32xf32>, %[[S:[^:]+]]: tensor<f32>)
// CHECK: memfit.add %[[X]], %[[Y]] : tensor<2x16x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
// CHECK: memfit.add %[[S]], %[[X]] : tensor<f32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>
// CHECK: memfit.add %[[S]], %[[S]] : tensor<f32>, tensor<f32> -> tensor<f32>
func.func @add(%x: tensor<2x16x32xf32>, %y: tensor<32xf32>, %s: tensor<f32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<f32>) {
  %0 = memfit.add %x, %y : tensor<2x16x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
  %1 = memfit.add %s, %x : tensor<f32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>
  %2 = memfit.add %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  return %0, %1, %2 : tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<f32>
}

// -----

// Two-way broadcasting: both operands grow.
// CHECK-LABEL: func.func @sub
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x1xi64>, %[[Y:[^:]+]]: tensor<1x3xi64>)
// CHECK: memfit.sub %[[X]], %[[Y]] : tensor<4x1xi64>, tensor<1x3xi64> -> tensor<4x3xi64>
func.func @sub(%x: tensor<4x1xi64>, %y: tensor<1x3xi64>) -> tensor<4x3xi64> {
  %0 = memfit.sub %x, %y : tensor<4x1xi64>, tensor<1x3xi64> -> tensor<4x3xi64>
  return %0 : tensor<4x3xi64>
}

// -----

// CHECK-LABEL: func.func @mul
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x1x16xf16>, %[[Y:[^:]+]]: tensor<4x1xf16>)
// CHECK: memfit.mul %[[X]], %[[Y]] : tensor<2x1x16xf16>, tensor<4x1xf16> -> tensor<2x4x16xf16>
func.func @mul(%x: tensor<2x1x16xf16>, %y: tensor<4x1xf16>) -> tensor<2x4x16xf16> {
  %0 = memfit.mul %x, %y : tensor<2x1x16xf16>, tensor<4x1xf16> -> tensor<2x4x16xf16>
  return %0 : tensor<2x4x16xf16>
}

// -----

// CHECK-LABEL: func.func @div
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8xui32>, %[[Y:[^:]+]]: tensor<1xui32>)
// CHECK: memfit.div %[[X]], %[[Y]] : tensor<8xui32>, tensor<1xui32> -> tensor<8xui32>
func.func @div(%x: tensor<8xui32>, %y: tensor<1xui32>) -> tensor<8xui32> {
  %0 = memfit.div %x, %y : tensor<8xui32>, tensor<1xui32> -> tensor<8xui32>
  return %0 : tensor<8xui32>
}

// -----

// The exponent may have another (integer) element type; the result is typed
// like the base.
// CHECK-LABEL: func.func @pow
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>, %[[E:[^:]+]]: tensor<i64>, %[[F:[^:]+]]: tensor<3xf32>)
// CHECK: memfit.pow %[[X]], %[[E]] : tensor<2x3xf32>, tensor<i64> -> tensor<2x3xf32>
// CHECK: memfit.pow %[[X]], %[[F]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
func.func @pow(%x: tensor<2x3xf32>, %e: tensor<i64>, %f: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = memfit.pow %x, %e : tensor<2x3xf32>, tensor<i64> -> tensor<2x3xf32>
  %1 = memfit.pow %x, %f : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @equal
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16xi64>, %[[Y:[^:]+]]: tensor<i64>, %[[B:[^:]+]]: tensor<2xi1>)
// CHECK: memfit.equal %[[X]], %[[Y]] : tensor<2x16xi64>, tensor<i64> -> tensor<2x16xi1>
// CHECK: memfit.equal %[[B]], %[[B]] : tensor<2xi1>, tensor<2xi1> -> tensor<2xi1>
func.func @equal(%x: tensor<2x16xi64>, %y: tensor<i64>, %b: tensor<2xi1>) -> (tensor<2x16xi1>, tensor<2xi1>) {
  %0 = memfit.equal %x, %y : tensor<2x16xi64>, tensor<i64> -> tensor<2x16xi1>
  %1 = memfit.equal %b, %b : tensor<2xi1>, tensor<2xi1> -> tensor<2xi1>
  return %0, %1 : tensor<2x16xi1>, tensor<2xi1>
}

// -----

// CHECK-LABEL: func.func @less
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x1xi64>, %[[Y:[^:]+]]: tensor<16xi64>)
// CHECK: memfit.less %[[X]], %[[Y]] : tensor<16x1xi64>, tensor<16xi64> -> tensor<16x16xi1>
func.func @less(%x: tensor<16x1xi64>, %y: tensor<16xi64>) -> tensor<16x16xi1> {
  %0 = memfit.less %x, %y : tensor<16x1xi64>, tensor<16xi64> -> tensor<16x16xi1>
  return %0 : tensor<16x16xi1>
}

// -----

// CHECK-LABEL: func.func @greater
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xf32>, %[[Y:[^:]+]]: tensor<f32>)
// CHECK: memfit.greater %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xi1>
func.func @greater(%x: tensor<2x3xf32>, %y: tensor<f32>) -> tensor<2x3xi1> {
  %0 = memfit.greater %x, %y : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// Three-way broadcasting of condition and branches.
// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[M:[^:]+]]: tensor<16x16xi1>, %[[X:[^:]+]]: tensor<2x4x16x16xf32>, %[[N:[^:]+]]: tensor<f32>, %[[C:[^:]+]]: tensor<2x1x1xi1>, %[[I:[^:]+]]: tensor<3xi64>)
// CHECK: memfit.where %[[M]], %[[X]], %[[N]] : tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32> -> tensor<2x4x16x16xf32>
// CHECK: memfit.where %[[C]], %[[I]], %[[I]] : tensor<2x1x1xi1>, tensor<3xi64>, tensor<3xi64> -> tensor<2x1x3xi64>
func.func @where(%m: tensor<16x16xi1>, %x: tensor<2x4x16x16xf32>, %n: tensor<f32>, %c: tensor<2x1x1xi1>, %i: tensor<3xi64>) -> (tensor<2x4x16x16xf32>, tensor<2x1x3xi64>) {
  %0 = memfit.where %m, %x, %n : tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32> -> tensor<2x4x16x16xf32>
  %1 = memfit.where %c, %i, %i : tensor<2x1x1xi1>, tensor<3xi64>, tensor<3xi64> -> tensor<2x1x3xi64>
  return %0, %1 : tensor<2x4x16x16xf32>, tensor<2x1x3xi64>
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x32xf32>, %[[W:[^:]+]]: tensor<32x96xf32>)
// CHECK: memfit.matmul %[[X]], %[[W]] : tensor<2x16x32xf32>, tensor<32x96xf32> -> tensor<2x16x96xf32>
func.func @matmul(%x: tensor<2x16x32xf32>, %w: tensor<32x96xf32>) -> tensor<2x16x96xf32> {
  %0 = memfit.matmul %x, %w : tensor<2x16x32xf32>, tensor<32x96xf32> -> tensor<2x16x96xf32>
  return %0 : tensor<2x16x96xf32>
}

// -----

// Batch dimensions broadcast against each other.
// CHECK-LABEL: func.func @matmul_batch_broadcast
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x1x4x8xf32>, %[[B:[^:]+]]: tensor<3x8x5xf32>, %[[Q:[^:]+]]: tensor<2x4x16x8xf32>, %[[K:[^:]+]]: tensor<2x4x8x16xf32>)
// CHECK: memfit.matmul %[[A]], %[[B]] : tensor<2x1x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x3x4x5xf32>
// CHECK: memfit.matmul %[[Q]], %[[K]] : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x16x16xf32>
func.func @matmul_batch_broadcast(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>, %q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x4x16x16xf32>) {
  %0 = memfit.matmul %a, %b : tensor<2x1x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x3x4x5xf32>
  %1 = memfit.matmul %q, %k : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x16x16xf32>
  return %0, %1 : tensor<2x3x4x5xf32>, tensor<2x4x16x16xf32>
}

// -----

// Transposed operands (memfit-fuse's flags) are read with their last two
// dimensions swapped.
// CHECK-LABEL: func.func @matmul_transposed
// CHECK: memfit.matmul %{{.+}}, %{{.+}} {trans_b = true} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
// CHECK: memfit.matmul %{{.+}}, %{{.+}} {trans_a = true, trans_b = true} : tensor<2x8x16xf32>, tensor<5x8xf32> -> tensor<2x16x5xf32>
func.func @matmul_transposed(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %a: tensor<2x8x16xf32>, %b: tensor<5x8xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x16x5xf32>) {
  %0 = memfit.matmul %q, %k {trans_b = true} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
  %1 = memfit.matmul %a, %b {trans_a = true, trans_b = true} : tensor<2x8x16xf32>, tensor<5x8xf32> -> tensor<2x16x5xf32>
  return %0, %1 : tensor<2x4x16x16xf32>, tensor<2x16x5xf32>
}

// -----

// 1-D operands are promoted to matrices and the added dimension is dropped.
// CHECK-LABEL: func.func @matmul_vector
// CHECK-SAME: (%[[V:[^:]+]]: tensor<8xi32>, %[[M:[^:]+]]: tensor<8x5xi32>, %[[N:[^:]+]]: tensor<3x4x8xi32>)
// CHECK: memfit.matmul %[[V]], %[[M]] : tensor<8xi32>, tensor<8x5xi32> -> tensor<5xi32>
// CHECK: memfit.matmul %[[N]], %[[V]] : tensor<3x4x8xi32>, tensor<8xi32> -> tensor<3x4xi32>
// CHECK: memfit.matmul %[[V]], %[[V]] : tensor<8xi32>, tensor<8xi32> -> tensor<i32>
func.func @matmul_vector(%v: tensor<8xi32>, %m: tensor<8x5xi32>, %n: tensor<3x4x8xi32>) -> (tensor<5xi32>, tensor<3x4xi32>, tensor<i32>) {
  %0 = memfit.matmul %v, %m : tensor<8xi32>, tensor<8x5xi32> -> tensor<5xi32>
  %1 = memfit.matmul %n, %v : tensor<3x4x8xi32>, tensor<8xi32> -> tensor<3x4xi32>
  %2 = memfit.matmul %v, %v : tensor<8xi32>, tensor<8xi32> -> tensor<i32>
  return %0, %1, %2 : tensor<5xi32>, tensor<3x4xi32>, tensor<i32>
}

// -----

// Default alpha, beta, trans_a and trans_b are elided.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x32xf32>, %[[B:[^:]+]]: tensor<32x3xf32>)
// CHECK: memfit.gemm %[[A]], %[[B]] : (tensor<2x32xf32>, tensor<32x3xf32>) -> tensor<2x3xf32>
// CHECK: memfit.gemm %[[A]], %[[B]] : (tensor<2x32xf32>, tensor<32x3xf32>) -> tensor<2x3xf32>
func.func @gemm(%a: tensor<2x32xf32>, %b: tensor<32x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = memfit.gemm %a, %b : (tensor<2x32xf32>, tensor<32x3xf32>) -> tensor<2x3xf32>
  %1 = memfit.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<2x32xf32>, tensor<32x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @gemm_bias_trans
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x32xf32>, %[[W:[^:]+]]: tensor<3x32xf32>, %[[C:[^:]+]]: tensor<3xf32>, %[[AT:[^:]+]]: tensor<32x2xf32>, %[[S:[^:]+]]: tensor<f32>, %[[CC:[^:]+]]: tensor<2x1xf32>)
// CHECK: memfit.gemm %[[A]], %[[W]], %[[C]] {trans_b = true} : (tensor<2x32xf32>, tensor<3x32xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: memfit.gemm %[[AT]], %[[W]], %[[S]] {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = true, trans_b = true} : (tensor<32x2xf32>, tensor<3x32xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK: memfit.gemm %[[A]], %[[W]], %[[CC]] {trans_b = true} : (tensor<2x32xf32>, tensor<3x32xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
func.func @gemm_bias_trans(%a: tensor<2x32xf32>, %w: tensor<3x32xf32>, %c: tensor<3xf32>, %at: tensor<32x2xf32>, %s: tensor<f32>, %cc: tensor<2x1xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = memfit.gemm %a, %w, %c {trans_b = true} : (tensor<2x32xf32>, tensor<3x32xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = memfit.gemm %at, %w, %s {trans_a = true, trans_b = true, alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<32x2xf32>, tensor<3x32xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = memfit.gemm %a, %w, %cc {trans_b = true} : (tensor<2x32xf32>, tensor<3x32xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

// -----

// The default axis (-1) is elided.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x16x16xf32>)
// CHECK: memfit.softmax %[[X]] : tensor<2x4x16x16xf32>
// CHECK: memfit.softmax %[[X]] : tensor<2x4x16x16xf32>
// CHECK: memfit.softmax %[[X]] {axis = 1 : i64} : tensor<2x4x16x16xf32>
// CHECK: memfit.softmax %[[X]] {axis = -4 : i64} : tensor<2x4x16x16xf32>
func.func @softmax(%x: tensor<2x4x16x16xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) {
  %0 = memfit.softmax %x : tensor<2x4x16x16xf32>
  %1 = memfit.softmax %x {axis = -1 : i64} : tensor<2x4x16x16xf32>
  %2 = memfit.softmax %x {axis = 1 : i64} : tensor<2x4x16x16xf32>
  %3 = memfit.softmax %x {axis = -4 : i64} : tensor<2x4x16x16xf32>
  return %0, %1, %2, %3 : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32x96xf32>)
// CHECK: memfit.log_softmax %[[X]] : tensor<32x96xf32>
// CHECK: memfit.log_softmax %[[X]] {axis = 0 : i64} : tensor<32x96xf32>
func.func @log_softmax(%x: tensor<32x96xf32>) -> (tensor<32x96xf32>, tensor<32x96xf32>) {
  %0 = memfit.log_softmax %x {axis = -1 : i64} : tensor<32x96xf32>
  %1 = memfit.log_softmax %x {axis = 0 : i64} : tensor<32x96xf32>
  return %0, %1 : tensor<32x96xf32>, tensor<32x96xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x32xf32>, %[[G:[^:]+]]: tensor<32xf32>, %[[B:[^:]+]]: tensor<32xf32>, %[[G2:[^:]+]]: tensor<16x1xf32>)
// CHECK: memfit.layer_norm %[[X]], %[[G]], %[[B]] : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK: memfit.layer_norm %[[X]], %[[G]] {epsilon = 9.99999997E-7 : f32} : tensor<2x16x32xf32>, tensor<32xf32>
// CHECK: memfit.layer_norm %[[X]], %[[G2]], %[[B]] {axis = 1 : i64} : tensor<2x16x32xf32>, tensor<16x1xf32>, tensor<32xf32>
func.func @layer_norm(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %g2: tensor<16x1xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>) {
  %0 = memfit.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>
  %1 = memfit.layer_norm %x, %g {epsilon = 1.0e-6 : f32} : tensor<2x16x32xf32>, tensor<32xf32>
  %2 = memfit.layer_norm %x, %g2, %b {axis = 1 : i64} : tensor<2x16x32xf32>, tensor<16x1xf32>, tensor<32xf32>
  return %0, %1, %2 : tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x64xf32>, %[[G:[^:]+]]: tensor<64xf32>, %[[G2:[^:]+]]: tensor<1x64xf32>)
// CHECK: memfit.rms_norm %[[X]], %[[G]] {epsilon = 9.99999997E-7 : f32} : tensor<2x16x64xf32>, tensor<64xf32>
// CHECK: memfit.rms_norm %[[X]], %[[G2]] {axis = -2 : i64} : tensor<2x16x64xf32>, tensor<1x64xf32>
func.func @rms_norm(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %g2: tensor<1x64xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>) {
  %0 = memfit.rms_norm %x, %g {axis = -1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<2x16x64xf32>, tensor<64xf32>
  %1 = memfit.rms_norm %x, %g2 {axis = -2 : i64} : tensor<2x16x64xf32>, tensor<1x64xf32>
  return %0, %1 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

// keepdims = true is the default and is elided.
// CHECK-LABEL: func.func @reduce_sum
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x32xf32>)
// CHECK: memfit.reduce_sum %[[X]] {axes = array<i64: -1>} : tensor<2x16x32xf32> -> tensor<2x16x1xf32>
// CHECK: memfit.reduce_sum %[[X]] {axes = array<i64: 0, -1>} : tensor<2x16x32xf32> -> tensor<1x16x1xf32>
// CHECK: memfit.reduce_sum %[[X]] {axes = array<i64: 2, 0>, keepdims = false} : tensor<2x16x32xf32> -> tensor<16xf32>
func.func @reduce_sum(%x: tensor<2x16x32xf32>) -> (tensor<2x16x1xf32>, tensor<1x16x1xf32>, tensor<16xf32>) {
  %0 = memfit.reduce_sum %x {axes = array<i64: -1>, keepdims = true} : tensor<2x16x32xf32> -> tensor<2x16x1xf32>
  %1 = memfit.reduce_sum %x {axes = array<i64: 0, -1>} : tensor<2x16x32xf32> -> tensor<1x16x1xf32>
  %2 = memfit.reduce_sum %x {axes = array<i64: 2, 0>, keepdims = false} : tensor<2x16x32xf32> -> tensor<16xf32>
  return %0, %1, %2 : tensor<2x16x1xf32>, tensor<1x16x1xf32>, tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_mean
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x64xf32>)
// CHECK: memfit.reduce_mean %[[X]] {axes = array<i64: -1>} : tensor<2x16x64xf32> -> tensor<2x16x1xf32>
// CHECK: memfit.reduce_mean %[[X]] {axes = array<i64: -2>, keepdims = false} : tensor<2x16x64xf32> -> tensor<2x64xf32>
func.func @reduce_mean(%x: tensor<2x16x64xf32>) -> (tensor<2x16x1xf32>, tensor<2x64xf32>) {
  %0 = memfit.reduce_mean %x {axes = array<i64: -1>} : tensor<2x16x64xf32> -> tensor<2x16x1xf32>
  %1 = memfit.reduce_mean %x {axes = array<i64: -2>, keepdims = false} : tensor<2x16x64xf32> -> tensor<2x64xf32>
  return %0, %1 : tensor<2x16x1xf32>, tensor<2x64xf32>
}

// -----

// Empty axes reduce every dimension.
// CHECK-LABEL: func.func @reduce_max
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xi64>, %[[S:[^:]+]]: tensor<f32>)
// CHECK: memfit.reduce_max %[[X]] {axes = array<i64>} : tensor<2x3xi64> -> tensor<1x1xi64>
// CHECK: memfit.reduce_max %[[X]] {axes = array<i64>, keepdims = false} : tensor<2x3xi64> -> tensor<i64>
// CHECK: memfit.reduce_max %[[X]] {axes = array<i64: 1>, keepdims = false} : tensor<2x3xi64> -> tensor<2xi64>
// CHECK: memfit.reduce_max %[[S]] {axes = array<i64>} : tensor<f32> -> tensor<f32>
func.func @reduce_max(%x: tensor<2x3xi64>, %s: tensor<f32>) -> (tensor<1x1xi64>, tensor<i64>, tensor<2xi64>, tensor<f32>) {
  %0 = memfit.reduce_max %x {axes = array<i64>} : tensor<2x3xi64> -> tensor<1x1xi64>
  %1 = memfit.reduce_max %x {axes = array<i64>, keepdims = false} : tensor<2x3xi64> -> tensor<i64>
  %2 = memfit.reduce_max %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3xi64> -> tensor<2xi64>
  %3 = memfit.reduce_max %s {axes = array<i64>} : tensor<f32> -> tensor<f32>
  return %0, %1, %2, %3 : tensor<1x1xi64>, tensor<i64>, tensor<2xi64>, tensor<f32>
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x4x8xf32>, %[[M:[^:]+]]: tensor<3x5xi1>)
// CHECK: memfit.transpose %[[X]] {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
// CHECK: memfit.transpose %[[M]] {perm = array<i64: 1, 0>} : tensor<3x5xi1> -> tensor<5x3xi1>
func.func @transpose(%x: tensor<2x16x4x8xf32>, %m: tensor<3x5xi1>) -> (tensor<2x4x16x8xf32>, tensor<5x3xi1>) {
  %0 = memfit.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %1 = memfit.transpose %m {perm = array<i64: 1, 0>} : tensor<3x5xi1> -> tensor<5x3xi1>
  return %0, %1 : tensor<2x4x16x8xf32>, tensor<5x3xi1>
}

// -----

// CHECK-LABEL: func.func @rotary
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x16x8xf32>, %[[C:[^:]+]]: tensor<1x1x16x8xf32>, %[[S:[^:]+]]: tensor<16x8xf32>)
// CHECK: memfit.rotary %[[X]], %[[C]], %[[S]] : tensor<2x4x16x8xf32>, tensor<1x1x16x8xf32>, tensor<16x8xf32>
// CHECK: memfit.rotary %[[X]], %[[C]], %[[S]] {inverse} : tensor<2x4x16x8xf32>, tensor<1x1x16x8xf32>, tensor<16x8xf32>
func.func @rotary(%x: tensor<2x4x16x8xf32>, %c: tensor<1x1x16x8xf32>, %s: tensor<16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
  %0 = memfit.rotary %x, %c, %s : tensor<2x4x16x8xf32>, tensor<1x1x16x8xf32>, tensor<16x8xf32>
  %1 = memfit.rotary %x, %c, %s {inverse} : tensor<2x4x16x8xf32>, tensor<1x1x16x8xf32>, tensor<16x8xf32>
  return %0, %1 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x32xf32>, %[[S:[^:]+]]: tensor<i64>)
// CHECK: memfit.reshape %[[X]] : tensor<2x16x32xf32> to tensor<2x16x4x8xf32>
// CHECK: memfit.reshape %[[S]] : tensor<i64> to tensor<1x1xi64>
func.func @reshape(%x: tensor<2x16x32xf32>, %s: tensor<i64>) -> (tensor<2x16x4x8xf32>, tensor<1x1xi64>) {
  %0 = memfit.reshape %x : tensor<2x16x32xf32> to tensor<2x16x4x8xf32>
  %1 = memfit.reshape %s : tensor<i64> to tensor<1x1xi64>
  return %0, %1 : tensor<2x16x4x8xf32>, tensor<1x1xi64>
}

// -----

// The default axis (1) is elided; axis may be the rank or negative.
// CHECK-LABEL: func.func @flatten
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>)
// CHECK: memfit.flatten %[[X]] : tensor<2x3x4xf32> -> tensor<2x12xf32>
// CHECK: memfit.flatten %[[X]] {axis = 0 : i64} : tensor<2x3x4xf32> -> tensor<1x24xf32>
// CHECK: memfit.flatten %[[X]] {axis = 3 : i64} : tensor<2x3x4xf32> -> tensor<24x1xf32>
// CHECK: memfit.flatten %[[X]] {axis = -1 : i64} : tensor<2x3x4xf32> -> tensor<6x4xf32>
func.func @flatten(%x: tensor<2x3x4xf32>) -> (tensor<2x12xf32>, tensor<1x24xf32>, tensor<24x1xf32>, tensor<6x4xf32>) {
  %0 = memfit.flatten %x {axis = 1 : i64} : tensor<2x3x4xf32> -> tensor<2x12xf32>
  %1 = memfit.flatten %x {axis = 0 : i64} : tensor<2x3x4xf32> -> tensor<1x24xf32>
  %2 = memfit.flatten %x {axis = 3 : i64} : tensor<2x3x4xf32> -> tensor<24x1xf32>
  %3 = memfit.flatten %x {axis = -1 : i64} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  return %0, %1, %2, %3 : tensor<2x12xf32>, tensor<1x24xf32>, tensor<24x1xf32>, tensor<6x4xf32>
}

// -----

// Empty axes remove every dimension of size 1.
// CHECK-LABEL: func.func @squeeze
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x1x16x1xf32>)
// CHECK: memfit.squeeze %[[X]] {axes = array<i64: 1>} : tensor<2x1x16x1xf32> -> tensor<2x16x1xf32>
// CHECK: memfit.squeeze %[[X]] {axes = array<i64: -1, 1>} : tensor<2x1x16x1xf32> -> tensor<2x16xf32>
// CHECK: memfit.squeeze %[[X]] {axes = array<i64>} : tensor<2x1x16x1xf32> -> tensor<2x16xf32>
func.func @squeeze(%x: tensor<2x1x16x1xf32>) -> (tensor<2x16x1xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
  %0 = memfit.squeeze %x {axes = array<i64: 1>} : tensor<2x1x16x1xf32> -> tensor<2x16x1xf32>
  %1 = memfit.squeeze %x {axes = array<i64: -1, 1>} : tensor<2x1x16x1xf32> -> tensor<2x16xf32>
  %2 = memfit.squeeze %x {axes = array<i64>} : tensor<2x1x16x1xf32> -> tensor<2x16xf32>
  return %0, %1, %2 : tensor<2x16x1xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}

// -----

// Axes index the output; negative axes count from the output's back.
// CHECK-LABEL: func.func @unsqueeze
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16xi64>, %[[S:[^:]+]]: tensor<f32>)
// CHECK: memfit.unsqueeze %[[X]] {axes = array<i64: 1, 2>} : tensor<2x16xi64> -> tensor<2x1x1x16xi64>
// CHECK: memfit.unsqueeze %[[X]] {axes = array<i64: -1, 0>} : tensor<2x16xi64> -> tensor<1x2x16x1xi64>
// CHECK: memfit.unsqueeze %[[S]] {axes = array<i64: 0>} : tensor<f32> -> tensor<1xf32>
func.func @unsqueeze(%x: tensor<2x16xi64>, %s: tensor<f32>) -> (tensor<2x1x1x16xi64>, tensor<1x2x16x1xi64>, tensor<1xf32>) {
  %0 = memfit.unsqueeze %x {axes = array<i64: 1, 2>} : tensor<2x16xi64> -> tensor<2x1x1x16xi64>
  %1 = memfit.unsqueeze %x {axes = array<i64: -1, 0>} : tensor<2x16xi64> -> tensor<1x2x16x1xi64>
  %2 = memfit.unsqueeze %s {axes = array<i64: 0>} : tensor<f32> -> tensor<1xf32>
  return %0, %1, %2 : tensor<2x1x1x16xi64>, tensor<1x2x16x1xi64>, tensor<1xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x8xf32>, %[[B:[^:]+]]: tensor<2x3xf32>, %[[C:[^:]+]]: tensor<5x8xf32>)
// CHECK: memfit.concat %[[A]], %[[B]], %[[A]] {axis = -1 : i64} : tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x8xf32> -> tensor<2x19xf32>
// CHECK: memfit.concat %[[A]], %[[C]] {axis = 0 : i64} : tensor<2x8xf32>, tensor<5x8xf32> -> tensor<7x8xf32>
// CHECK: memfit.concat %[[A]] {axis = 1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
func.func @concat(%a: tensor<2x8xf32>, %b: tensor<2x3xf32>, %c: tensor<5x8xf32>) -> (tensor<2x19xf32>, tensor<7x8xf32>, tensor<2x8xf32>) {
  %0 = memfit.concat %a, %b, %a {axis = -1 : i64} : tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x8xf32> -> tensor<2x19xf32>
  %1 = memfit.concat %a, %c {axis = 0 : i64} : tensor<2x8xf32>, tensor<5x8xf32> -> tensor<7x8xf32>
  %2 = memfit.concat %a {axis = 1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0, %1, %2 : tensor<2x19xf32>, tensor<7x8xf32>, tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @split
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x96xf32>)
// CHECK: %[[R:.+]]:3 = memfit.split %[[X]] {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
// CHECK: %[[S:.+]]:2 = memfit.split %[[X]] {axis = -2 : i64, sizes = array<i64: 10, 6>} : tensor<2x16x96xf32> -> tensor<2x10x96xf32>, tensor<2x6x96xf32>
// CHECK: %[[Z:.+]]:2 = memfit.split %[[X]] {axis = 0 : i64, sizes = array<i64: 0, 2>} : tensor<2x16x96xf32> -> tensor<0x16x96xf32>, tensor<2x16x96xf32>
// CHECK: return %[[R]]#0, %[[R]]#2, %[[S]]#1, %[[Z]]#0
func.func @split(%x: tensor<2x16x96xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x6x96xf32>, tensor<0x16x96xf32>) {
  %q, %k, %v = memfit.split %x {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
  %a, %b = memfit.split %x {axis = -2 : i64, sizes = array<i64: 10, 6>} : tensor<2x16x96xf32> -> tensor<2x10x96xf32>, tensor<2x6x96xf32>
  %e, %f = memfit.split %x {axis = 0 : i64, sizes = array<i64: 0, 2>} : tensor<2x16x96xf32> -> tensor<0x16x96xf32>, tensor<2x16x96xf32>
  return %q, %v, %b, %e : tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x6x96xf32>, tensor<0x16x96xf32>
}

// -----

// Negative starts/ends count from the back and are clamped as in ONNX;
// INT64_MAX means "to the end" and INT64_MIN with a negative step "to the
// front".
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[M:[^:]+]]: tensor<1x1x64x64xi1>, %[[X:[^:]+]]: tensor<4x10xf32>)
// CHECK: memfit.slice %[[M]] {axes = array<i64: 2>, ends = array<i64: 16>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<1x1x64x64xi1> -> tensor<1x1x16x64xi1>
// CHECK: memfit.slice %[[X]] {axes = array<i64: -1, 0>, ends = array<i64: 9223372036854775807, -1>, starts = array<i64: -3, 0>, steps = array<i64: 2, 1>} : tensor<4x10xf32> -> tensor<3x2xf32>
// CHECK: memfit.slice %[[X]] {axes = array<i64: 1>, ends = array<i64: -9223372036854775808>, starts = array<i64: -1>, steps = array<i64: -3>} : tensor<4x10xf32> -> tensor<4x4xf32>
// CHECK: memfit.slice %[[X]] {axes = array<i64: 1>, ends = array<i64: 100>, starts = array<i64: 20>, steps = array<i64: 1>} : tensor<4x10xf32> -> tensor<4x0xf32>
// CHECK: memfit.slice %[[X]] {axes = array<i64>, ends = array<i64>, starts = array<i64>, steps = array<i64>} : tensor<4x10xf32> -> tensor<4x10xf32>
func.func @slice(%m: tensor<1x1x64x64xi1>, %x: tensor<4x10xf32>) -> (tensor<1x1x16x64xi1>, tensor<3x2xf32>, tensor<4x4xf32>, tensor<4x0xf32>, tensor<4x10xf32>) {
  %0 = memfit.slice %m {starts = array<i64: 0>, ends = array<i64: 16>, axes = array<i64: 2>, steps = array<i64: 1>} : tensor<1x1x64x64xi1> -> tensor<1x1x16x64xi1>
  %1 = memfit.slice %x {starts = array<i64: -3, 0>, ends = array<i64: 9223372036854775807, -1>, axes = array<i64: -1, 0>, steps = array<i64: 2, 1>} : tensor<4x10xf32> -> tensor<3x2xf32>
  %2 = memfit.slice %x {starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, axes = array<i64: 1>, steps = array<i64: -3>} : tensor<4x10xf32> -> tensor<4x4xf32>
  %3 = memfit.slice %x {starts = array<i64: 20>, ends = array<i64: 100>, axes = array<i64: 1>, steps = array<i64: 1>} : tensor<4x10xf32> -> tensor<4x0xf32>
  %4 = memfit.slice %x {starts = array<i64>, ends = array<i64>, axes = array<i64>, steps = array<i64>} : tensor<4x10xf32> -> tensor<4x10xf32>
  return %0, %1, %2, %3, %4 : tensor<1x1x16x64xi1>, tensor<3x2xf32>, tensor<4x4xf32>, tensor<4x0xf32>, tensor<4x10xf32>
}

// -----

// The default axis (0) is elided.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[W:[^:]+]]: tensor<96x32xf32>, %[[I:[^:]+]]: tensor<2x16xi64>, %[[J:[^:]+]]: tensor<3xi32>, %[[S:[^:]+]]: tensor<i64>)
// CHECK: memfit.gather %[[W]], %[[I]] : tensor<96x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
// CHECK: memfit.gather %[[W]], %[[J]] {axis = 1 : i64} : tensor<96x32xf32>, tensor<3xi32> -> tensor<96x3xf32>
// CHECK: memfit.gather %[[W]], %[[S]] {axis = -1 : i64} : tensor<96x32xf32>, tensor<i64> -> tensor<96xf32>
func.func @gather(%w: tensor<96x32xf32>, %i: tensor<2x16xi64>, %j: tensor<3xi32>, %s: tensor<i64>) -> (tensor<2x16x32xf32>, tensor<96x3xf32>, tensor<96xf32>) {
  %0 = memfit.gather %w, %i {axis = 0 : i64} : tensor<96x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
  %1 = memfit.gather %w, %j {axis = 1 : i64} : tensor<96x32xf32>, tensor<3xi32> -> tensor<96x3xf32>
  %2 = memfit.gather %w, %s {axis = -1 : i64} : tensor<96x32xf32>, tensor<i64> -> tensor<96xf32>
  return %0, %1, %2 : tensor<2x16x32xf32>, tensor<96x3xf32>, tensor<96xf32>
}

// -----

// CHECK-LABEL: func.func @expand
// CHECK-SAME: (%[[M:[^:]+]]: tensor<1x1x16x16xi1>, %[[X:[^:]+]]: tensor<3x1xf32>)
// CHECK: memfit.expand %[[M]] : tensor<1x1x16x16xi1> to tensor<2x4x16x16xi1>
// CHECK: memfit.expand %[[X]] : tensor<3x1xf32> to tensor<2x3x5xf32>
// CHECK: memfit.expand %[[X]] : tensor<3x1xf32> to tensor<3x1xf32>
func.func @expand(%m: tensor<1x1x16x16xi1>, %x: tensor<3x1xf32>) -> (tensor<2x4x16x16xi1>, tensor<2x3x5xf32>, tensor<3x1xf32>) {
  %0 = memfit.expand %m : tensor<1x1x16x16xi1> to tensor<2x4x16x16xi1>
  %1 = memfit.expand %x : tensor<3x1xf32> to tensor<2x3x5xf32>
  %2 = memfit.expand %x : tensor<3x1xf32> to tensor<3x1xf32>
  return %0, %1, %2 : tensor<2x4x16x16xi1>, tensor<2x3x5xf32>, tensor<3x1xf32>
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

// The reduction prints as a keyword; `none` keeps the labels' shape, `sum`
// and `mean` give a scalar.
// CHECK-LABEL: func.func @softmax_cross_entropy_loss
// CHECK-SAME: (%[[S:[^:]+]]: tensor<32x96xf32>, %[[L:[^:]+]]: tensor<32xi64>, %[[W:[^:]+]]: tensor<96xf32>)
// CHECK: memfit.softmax_cross_entropy_loss mean %[[S]], %[[L]] {ignore_index = -100 : i64} : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
// CHECK: memfit.softmax_cross_entropy_loss sum %[[S]], %[[L]], %[[W]] : (tensor<32x96xf32>, tensor<32xi64>, tensor<96xf32>) -> tensor<f32>
// CHECK: memfit.softmax_cross_entropy_loss none %[[S]], %[[L]], %[[W]] {ignore_index = 0 : i64} : (tensor<32x96xf32>, tensor<32xi64>, tensor<96xf32>) -> tensor<32xf32>
func.func @softmax_cross_entropy_loss(%s: tensor<32x96xf32>, %l: tensor<32xi64>, %w: tensor<96xf32>) -> (tensor<f32>, tensor<f32>, tensor<32xf32>) {
  %0 = memfit.softmax_cross_entropy_loss mean %s, %l {ignore_index = -100 : i64} : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
  %1 = memfit.softmax_cross_entropy_loss sum %s, %l, %w : (tensor<32x96xf32>, tensor<32xi64>, tensor<96xf32>) -> tensor<f32>
  %2 = memfit.softmax_cross_entropy_loss none %s, %l, %w {ignore_index = 0 : i64} : (tensor<32x96xf32>, tensor<32xi64>, tensor<96xf32>) -> tensor<32xf32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<32xf32>
}

// -----

// Scores [N, C, d1] against labels [N, d1].
// CHECK-LABEL: func.func @softmax_cross_entropy_loss_spatial
// CHECK-SAME: (%[[S:[^:]+]]: tensor<2x5x16xf16>, %[[L:[^:]+]]: tensor<2x16xi32>)
// CHECK: memfit.softmax_cross_entropy_loss none %[[S]], %[[L]] : (tensor<2x5x16xf16>, tensor<2x16xi32>) -> tensor<2x16xf16>
// CHECK: memfit.softmax_cross_entropy_loss mean %[[S]], %[[L]] : (tensor<2x5x16xf16>, tensor<2x16xi32>) -> tensor<f16>
func.func @softmax_cross_entropy_loss_spatial(%s: tensor<2x5x16xf16>, %l: tensor<2x16xi32>) -> (tensor<2x16xf16>, tensor<f16>) {
  %0 = memfit.softmax_cross_entropy_loss none %s, %l : (tensor<2x5x16xf16>, tensor<2x16xi32>) -> tensor<2x16xf16>
  %1 = memfit.softmax_cross_entropy_loss mean %s, %l : (tensor<2x5x16xf16>, tensor<2x16xi32>) -> tensor<f16>
  return %0, %1 : tensor<2x16xf16>, tensor<f16>
}

// -----

// CHECK-LABEL: func.func @negative_log_likelihood_loss
// CHECK-SAME: (%[[P:[^:]+]]: tensor<32x96xf32>, %[[T:[^:]+]]: tensor<32xi64>, %[[W:[^:]+]]: tensor<96xf32>, %[[P3:[^:]+]]: tensor<2x5x16xf32>, %[[T3:[^:]+]]: tensor<2x16xi32>)
// CHECK: memfit.negative_log_likelihood_loss mean %[[P]], %[[T]] : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
// CHECK: memfit.negative_log_likelihood_loss sum %[[P]], %[[T]], %[[W]] {ignore_index = -1 : i64} : (tensor<32x96xf32>, tensor<32xi64>, tensor<96xf32>) -> tensor<f32>
// CHECK: memfit.negative_log_likelihood_loss none %[[P]], %[[T]] : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<32xf32>
// CHECK: memfit.negative_log_likelihood_loss none %[[P3]], %[[T3]] {ignore_index = 3 : i64} : (tensor<2x5x16xf32>, tensor<2x16xi32>) -> tensor<2x16xf32>
func.func @negative_log_likelihood_loss(%p: tensor<32x96xf32>, %t: tensor<32xi64>, %w: tensor<96xf32>, %p3: tensor<2x5x16xf32>, %t3: tensor<2x16xi32>) -> (tensor<f32>, tensor<f32>, tensor<32xf32>, tensor<2x16xf32>) {
  %0 = memfit.negative_log_likelihood_loss mean %p, %t : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
  %1 = memfit.negative_log_likelihood_loss sum %p, %t, %w {ignore_index = -1 : i64} : (tensor<32x96xf32>, tensor<32xi64>, tensor<96xf32>) -> tensor<f32>
  %2 = memfit.negative_log_likelihood_loss none %p, %t : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<32xf32>
  %3 = memfit.negative_log_likelihood_loss none %p3, %t3 {ignore_index = 3 : i64} : (tensor<2x5x16xf32>, tensor<2x16xi32>) -> tensor<2x16xf32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<32xf32>, tensor<2x16xf32>
}

// -----

// Steps at the ends of the int64 range take one element.
// CHECK-LABEL: func.func @slice_extreme_steps
// CHECK: memfit.slice {{.*}} -> tensor<4x1xf32>
// CHECK: memfit.slice {{.*}} -> tensor<4x1xf32>
func.func @slice_extreme_steps(%x: tensor<4x10xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %0 = memfit.slice %x {starts = array<i64: 0>, ends = array<i64: 10>, axes = array<i64: 1>, steps = array<i64: 9223372036854775807>} : tensor<4x10xf32> -> tensor<4x1xf32>
  %1 = memfit.slice %x {starts = array<i64: 9>, ends = array<i64: -9223372036854775808>, axes = array<i64: 1>, steps = array<i64: -9223372036854775808>} : tensor<4x10xf32> -> tensor<4x1xf32>
  return %0, %1 : tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// CHECK-LABEL: func.func @logical
// CHECK-SAME: (%[[A:.+]]: tensor<2x16xi1>, %[[B:.+]]: tensor<16xi1>)
// CHECK: memfit.and %[[A]], %[[B]] : tensor<2x16xi1>, tensor<16xi1> -> tensor<2x16xi1>
// CHECK: memfit.or %[[B]], %[[A]] : tensor<16xi1>, tensor<2x16xi1> -> tensor<2x16xi1>
// CHECK: memfit.xor %[[A]], %[[A]] : tensor<2x16xi1>, tensor<2x16xi1> -> tensor<2x16xi1>
func.func @logical(%a: tensor<2x16xi1>, %b: tensor<16xi1>) -> (tensor<2x16xi1>, tensor<2x16xi1>, tensor<2x16xi1>) {
  %0 = memfit.and %a, %b : tensor<2x16xi1>, tensor<16xi1> -> tensor<2x16xi1>
  %1 = memfit.or %b, %a : tensor<16xi1>, tensor<2x16xi1> -> tensor<2x16xi1>
  %2 = memfit.xor %a, %a : tensor<2x16xi1>, tensor<2x16xi1> -> tensor<2x16xi1>
  return %0, %1, %2 : tensor<2x16xi1>, tensor<2x16xi1>, tensor<2x16xi1>
}

// -----

// CHECK-LABEL: func.func @gather_elements_nd
// CHECK-SAME: (%[[D:.+]]: tensor<1x64xi64>, %[[P:.+]]: tensor<1x16xi64>, %[[M:.+]]: tensor<2x16xi1>, %[[I:.+]]: tensor<2x1x1x16x2xi64>, %[[X:.+]]: tensor<3x4x5xf32>, %[[J:.+]]: tensor<3x2x1xi32>)
// CHECK: memfit.gather_elements %[[D]], %[[P]] {axis = 1 : i64} : tensor<1x64xi64>, tensor<1x16xi64> -> tensor<1x16xi64>
// CHECK: memfit.gather_nd %[[M]], %[[I]] : tensor<2x16xi1>, tensor<2x1x1x16x2xi64> -> tensor<2x1x1x16xi1>
// CHECK: memfit.gather_nd %[[X]], %[[J]] {batch_dims = 1 : i64} : tensor<3x4x5xf32>, tensor<3x2x1xi32> -> tensor<3x2x5xf32>
func.func @gather_elements_nd(%d: tensor<1x64xi64>, %p: tensor<1x16xi64>, %m: tensor<2x16xi1>, %i: tensor<2x1x1x16x2xi64>, %x: tensor<3x4x5xf32>, %j: tensor<3x2x1xi32>) -> (tensor<1x16xi64>, tensor<2x1x1x16xi1>, tensor<3x2x5xf32>) {
  %0 = memfit.gather_elements %d, %p {axis = 1 : i64} : tensor<1x64xi64>, tensor<1x16xi64> -> tensor<1x16xi64>
  %1 = memfit.gather_nd %m, %i : tensor<2x16xi1>, tensor<2x1x1x16x2xi64> -> tensor<2x1x1x16xi1>
  %2 = memfit.gather_nd %x, %j {batch_dims = 1 : i64} : tensor<3x4x5xf32>, tensor<3x2x1xi32> -> tensor<3x2x5xf32>
  return %0, %1, %2 : tensor<1x16xi64>, tensor<2x1x1x16xi1>, tensor<3x2x5xf32>
}

// -----

// CHECK-LABEL: func.func @nan_inf
// CHECK: memfit.is_nan %{{.+}} : tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK: memfit.is_inf %{{.+}} {detect_negative = false} : tensor<2x3xf32> -> tensor<2x3xi1>
func.func @nan_inf(%x: tensor<2x3xf32>) -> (tensor<2x3xi1>, tensor<2x3xi1>) {
  %0 = memfit.is_nan %x : tensor<2x3xf32> -> tensor<2x3xi1>
  %1 = memfit.is_inf %x {detect_negative = false} : tensor<2x3xf32> -> tensor<2x3xi1>
  return %0, %1 : tensor<2x3xi1>, tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @max_min_cumsum
// CHECK: memfit.max %{{.+}}, %{{.+}} : tensor<2x16xf32>, tensor<16xf32> -> tensor<2x16xf32>
// CHECK: memfit.min %{{.+}}, %{{.+}} : tensor<2x16xi64>, tensor<i64> -> tensor<2x16xi64>
// CHECK: memfit.cumsum %{{.+}} {axis = -1 : i64, exclusive = true, reverse = true} : tensor<2x16xi64>
func.func @max_min_cumsum(%x: tensor<2x16xf32>, %b: tensor<16xf32>, %i: tensor<2x16xi64>, %s: tensor<i64>) -> (tensor<2x16xf32>, tensor<2x16xi64>, tensor<2x16xi64>) {
  %0 = memfit.max %x, %b : tensor<2x16xf32>, tensor<16xf32> -> tensor<2x16xf32>
  %1 = memfit.min %i, %s : tensor<2x16xi64>, tensor<i64> -> tensor<2x16xi64>
  %2 = memfit.cumsum %i {axis = -1 : i64, exclusive = true, reverse = true} : tensor<2x16xi64>
  return %0, %1, %2 : tensor<2x16xf32>, tensor<2x16xi64>, tensor<2x16xi64>
}

// -----

// gather_grad scatters rows into zeros, or into another value.
// CHECK-LABEL: func.func @gather_grad
// CHECK-SAME: (%[[DY:.+]]: tensor<2x16x32xf32>, %[[I:.+]]: tensor<2x16xi64>, %[[G:.+]]: tensor<96x32xf32>)
// CHECK: memfit.gather_grad %[[DY]], %[[I]] {axis = 0 : i64} : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<96x32xf32>
// CHECK: memfit.gather_grad %[[DY]], %[[I]] into %[[G]] {axis = 0 : i64} : (tensor<2x16x32xf32>, tensor<2x16xi64>, tensor<96x32xf32>) -> tensor<96x32xf32>
func.func @gather_grad(%dy: tensor<2x16x32xf32>, %i: tensor<2x16xi64>, %g: tensor<96x32xf32>) -> (tensor<96x32xf32>, tensor<96x32xf32>) {
  %0 = memfit.gather_grad %dy, %i {axis = 0 : i64} : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<96x32xf32>
  %1 = memfit.gather_grad %dy, %i into %g {axis = 0 : i64} : (tensor<2x16x32xf32>, tensor<2x16xi64>, tensor<96x32xf32>) -> tensor<96x32xf32>
  return %0, %1 : tensor<96x32xf32>, tensor<96x32xf32>
}
