// Verifier diagnostics of memfit.quantize and memfit.dequantize, one rule
// each.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @block_size_zero(%x: tensor<8xf32>) {
  // expected-error @+1 {{'memfit.quantize' op block_size must be positive, got 0}}
  %c, %a = memfit.quantize dynamic %x {block_size = 0 : i64} : tensor<8xf32> -> tensor<8xui8>, tensor<1xf32>
  return
}

// -----

func.func @four_bit_odd_block(%x: tensor<8xf32>) {
  // expected-error @+1 {{4-bit codes need an even block_size (a block's codes start at a byte), got 3}}
  %c, %a = memfit.quantize nf4 %x {block_size = 3 : i64} : tensor<8xf32> -> tensor<4xui8>, tensor<3xf32>
  return
}

// -----

func.func @codes_count(%x: tensor<8xf32>) {
  // expected-error @+1 {{codes of 8 values quantized nf4 must be 'tensor<4xui8>', got 'tensor<8xui8>'}}
  %c, %a = memfit.quantize nf4 %x {block_size = 4 : i64} : tensor<8xf32> -> tensor<8xui8>, tensor<2xf32>
  return
}

// -----

func.func @codes_type_linear(%x: tensor<8xf32>) {
  // expected-error @+1 {{codes of 8 values quantized linear must be 'tensor<8xi8>', got 'tensor<8xui8>'}}
  %c, %a = memfit.quantize linear %x {block_size = 8 : i64} : tensor<8xf32> -> tensor<8xui8>, tensor<1xf32>
  return
}

// -----

func.func @codes_rank(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{codes of 8 values quantized dynamic must be 'tensor<8xui8>', got 'tensor<2x4xui8>'}}
  %c, %a = memfit.quantize dynamic %x {block_size = 4 : i64} : tensor<2x4xf32> -> tensor<2x4xui8>, tensor<2xf32>
  return
}

// -----

func.func @absmax_count(%x: tensor<10xf32>) {
  // expected-error @+1 {{absmax of 10 values in blocks of 4 must be 'tensor<3xf32>', got 'tensor<2xf32>'}}
  %c, %a = memfit.quantize dynamic %x {block_size = 4 : i64} : tensor<10xf32> -> tensor<10xui8>, tensor<2xf32>
  return
}

// -----

func.func @dequantize_absmax(%c: tensor<10xui8>, %a: tensor<3xf16>) {
  // expected-error @+1 {{'memfit.dequantize' op operand #1 must be statically shaped tensor of 32-bit float values}}
  %y = memfit.dequantize dynamic %c, %a {block_size = 4 : i64} : (tensor<10xui8>, tensor<3xf16>) -> tensor<10xf32>
  return
}

// -----

func.func @dequantize_result_size(%c: tensor<10xui8>, %a: tensor<3xf32>) {
  // expected-error @+1 {{codes of 12 values quantized dynamic must be 'tensor<12xui8>', got 'tensor<10xui8>'}}
  %y = memfit.dequantize dynamic %c, %a {block_size = 4 : i64} : (tensor<10xui8>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @unknown_scheme(%x: tensor<8xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'scheme' [linear, dynamic, dynamic_unsigned, nf4, fp4]}}
  %c, %a = memfit.quantize int3 %x {block_size = 8 : i64} : tensor<8xf32> -> tensor<8xui8>, tensor<1xf32>
  return
}
