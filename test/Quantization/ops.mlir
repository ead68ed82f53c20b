// memfit.quantize and memfit.dequantize: round trip through the printer and
// the parser (generic form too), and each verifier rule broken once.
// RUN: memfit-opt %s -split-input-file | memfit-opt -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file -mlir-print-op-generic | memfit-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @eight_bit
// CHECK: %[[C:.*]], %[[A:.*]] = memfit.quantize dynamic %arg0 {block_size = 256 : i64} : tensor<64x80xf32> -> tensor<5120xui8>, tensor<20xf32>
// CHECK: memfit.dequantize dynamic %[[C]], %[[A]] {block_size = 256 : i64} : (tensor<5120xui8>, tensor<20xf32>) -> tensor<64x80xf32>
// CHECK: memfit.quantize dynamic_unsigned
// CHECK: memfit.quantize linear %arg0 {block_size = 80 : i64} : tensor<64x80xf32> -> tensor<5120xi8>, tensor<64xf32>
func.func @eight_bit(%x: tensor<64x80xf32>) -> (tensor<64x80xf32>, tensor<5120xui8>, tensor<5120xi8>) {
  %c, %a = memfit.quantize dynamic %x {block_size = 256 : i64} : tensor<64x80xf32> -> tensor<5120xui8>, tensor<20xf32>
  %y = memfit.dequantize dynamic %c, %a {block_size = 256 : i64} : (tensor<5120xui8>, tensor<20xf32>) -> tensor<64x80xf32>
  %u, %ua = memfit.quantize dynamic_unsigned %x {block_size = 4096 : i64} : tensor<64x80xf32> -> tensor<5120xui8>, tensor<2xf32>
  %l, %la = memfit.quantize linear %x {block_size = 80 : i64} : tensor<64x80xf32> -> tensor<5120xi8>, tensor<64xf32>
  return %y, %u, %l : tensor<64x80xf32>, tensor<5120xui8>, tensor<5120xi8>
}

// -----

// Four bits: two codes per byte; an odd count rounds the bytes up. The
// dequantized values may be bf16.
// CHECK-LABEL: func.func @four_bit
// CHECK: memfit.quantize nf4 %arg0 {block_size = 64 : i64} : tensor<3x7xf32> -> tensor<11xui8>, tensor<1xf32>
// CHECK: memfit.dequantize fp4 %{{.*}} : (tensor<11xui8>, tensor<1xf32>) -> tensor<3x7xbf16>
func.func @four_bit(%x: tensor<3x7xf32>) -> (tensor<11xui8>, tensor<3x7xbf16>) {
  %c, %a = memfit.quantize nf4 %x {block_size = 64 : i64} : tensor<3x7xf32> -> tensor<11xui8>, tensor<1xf32>
  %y = memfit.dequantize fp4 %c, %a {block_size = 64 : i64} : (tensor<11xui8>, tensor<1xf32>) -> tensor<3x7xbf16>
  return %c, %y : tensor<11xui8>, tensor<3x7xbf16>
}
