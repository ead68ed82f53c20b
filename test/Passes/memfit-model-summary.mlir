// memfit-model-summary: parameters, bytes by element type, the functions'
// inputs and outputs and op counts, to standard output or to `output`.
// RUN: memfit-opt %s -split-input-file --memfit-model-summary -o /dev/null | FileCheck %s
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-model-summary{output=%t.txt})' | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s < %t.txt

// CHECK-LABEL: memfit model summary
// CHECK-NEXT: parameters: 1,056 in 2 tensors
// CHECK-NEXT: parameter bytes: 4,160 (bf16: 64) (f32: 4,096)
// CHECK-NEXT: constant bytes: 12 (f32: 4) (i32: 8)
// CHECK-NEXT: function @main
// CHECK-NEXT: input  x: tensor<2x32xf32>
// CHECK-NEXT: output y: tensor<2x32xf32>
// CHECK-NEXT: ops: 7
// CHECK-NEXT: by class: constant 4; contraction 1; elementwise 1; normalization 1;
// CHECK-NEXT: by op: memfit.add 1; memfit.constant 2; memfit.load_parameter 2; memfit.matmul 1; memfit.softmax 1;

// The pass leaves the IR as it was.
// IR: memfit.parameter @w
// IR-LABEL: func.func @main

module {
  memfit.parameter @w = dense<1.0> : tensor<32x32xf32>
  memfit.parameter @g = dense<1.0> : tensor<32xbf16>
  func.func @main(%x: tensor<2x32xf32> {onnx.name = "x"}) -> (tensor<2x32xf32> {onnx.name = "y"}) {
    %w = memfit.load_parameter @w : tensor<32x32xf32>
    %g = memfit.load_parameter @g : tensor<32xbf16>
    %c = memfit.constant dense<2.0> : tensor<f32>
    %s = memfit.constant dense<[2, 32]> : tensor<2xi32>
    %0 = memfit.matmul %x, %w : tensor<2x32xf32>, tensor<32x32xf32> -> tensor<2x32xf32>
    %1 = memfit.add %0, %c : tensor<2x32xf32>, tensor<f32> -> tensor<2x32xf32>
    %2 = memfit.softmax %1 : tensor<2x32xf32>
    return %2 : tensor<2x32xf32>
  }
}
