// memfit-quantize weights=...: a weight holding a NaN or an infinity keeps
// its values, with a remark (codes cannot stand for them: the encoder
// converted a NaN to an integer code, undefined behaviour that
// memfit-compile-fuzz found under UBSan).
// RUN: memfit-opt %s -split-input-file --memfit-quantize='weights=int8 min-weight-size=1' 2>/dev/null | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-quantize='weights=nf4 double-quant=true min-weight-size=1' 2>/dev/null | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-quantize='weights=nf4 min-weight-size=1' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// REMARK-COUNT-2: remark: weight 'w' holds a NaN or an infinity: it is not quantized

// CHECK-NOT: memfit.dequantize
// CHECK: memfit.parameter @w = dense<{{.*}}0x7FC00000
// CHECK-NOT: memfit.dequantize
// CHECK: memfit.matmul
memfit.parameter @w = dense<[[1.0, 0x7FC00000], [2.0, 3.0]]> : tensor<2x2xf32>

func.func @main(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %w = memfit.load_parameter @w : tensor<2x2xf32>
  %y = memfit.matmul %x, %w : tensor<4x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// CHECK-NOT: memfit.dequantize
// CHECK: memfit.parameter @w = dense<{{.*}}0x7F800000
// CHECK-NOT: memfit.dequantize
// CHECK: memfit.matmul
memfit.parameter @w = dense<[[1.0, 0x7F800000], [2.0, 3.0]]> : tensor<2x2xf32>

func.func @main(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %w = memfit.load_parameter @w : tensor<2x2xf32>
  %y = memfit.matmul %x, %w : tensor<4x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
