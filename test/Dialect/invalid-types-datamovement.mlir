// Element types of the data-movement ops: indices are i32 or i64, data of
// any element type memfit holds (and the result of the data's), cumsum and
// topk_indices numbers, gather_grad floats. One case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

// Every element type memfit holds moves: the 8- and 4-bit floats and the
// 4- and 2-bit integers too (no diagnostic).
func.func @moves_every_element_type(%a: tensor<2x3xf8E4M3FN>, %b: tensor<4xf4E2M1FN>, %c: tensor<4xi4>, %d: tensor<4xui2>, %i: tensor<2xi32>) -> (tensor<3x2xf8E4M3FN>, tensor<2xf4E2M1FN>, tensor<2x2xi4>, tensor<8xui2>) {
  %0 = memfit.transpose %a {perm = array<i64: 1, 0>} : tensor<2x3xf8E4M3FN> -> tensor<3x2xf8E4M3FN>
  %1 = memfit.gather %b, %i {axis = 0 : i64} : tensor<4xf4E2M1FN>, tensor<2xi32> -> tensor<2xf4E2M1FN>
  %2 = memfit.reshape %c : tensor<4xi4> to tensor<2x2xi4>
  %3 = memfit.concat %d, %d {axis = 0 : i64} : tensor<4xui2>, tensor<4xui2> -> tensor<8xui2>
  return %0, %1, %2, %3 : tensor<3x2xf8E4M3FN>, tensor<2xf4E2M1FN>, tensor<2x2xi4>, tensor<8xui2>
}

// -----

func.func @gather_float_indices(%x: tensor<4x3xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = memfit.gather %x, %i {axis = 0 : i64} : tensor<4x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @gather_boolean_indices(%x: tensor<4x3xf32>, %i: tensor<2xi1>) {
  // expected-error @+1 {{'memfit.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = memfit.gather %x, %i {axis = 0 : i64} : tensor<4x3xf32>, tensor<2xi1> -> tensor<2x3xf32>
  return
}

// -----

func.func @gather_result_of_another_type(%x: tensor<4x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{'memfit.gather' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf16>'}}
  // expected-error @+1 {{'memfit.gather' op failed to infer returned types}}
  %0 = memfit.gather %x, %i {axis = 0 : i64} : tensor<4x3xf32>, tensor<2xi64> -> tensor<2x3xf16>
  return
}

// -----

func.func @gather_elements_float_indices(%x: tensor<2x4xf32>, %i: tensor<2x2xf32>) {
  // expected-error @+1 {{'memfit.gather_elements' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x2xf32>'}}
  %0 = memfit.gather_elements %x, %i {axis = 1 : i64} : tensor<2x4xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @gather_nd_16_bit_indices(%x: tensor<4x4xf32>, %i: tensor<2x1xi16>) {
  // expected-error @+1 {{'memfit.gather_nd' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x1xi16>'}}
  %0 = memfit.gather_nd %x, %i : tensor<4x4xf32>, tensor<2x1xi16> -> tensor<2x4xf32>
  return
}

// -----

func.func @scatter_elements_float_indices(%x: tensor<2x8xf32>, %i: tensor<2x3xf32>, %u: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.scatter_elements' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x3xf32>'}}
  %0 = memfit.scatter_elements %x, %i, %u {axis = 1 : i64} : tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @scatter_elements_updates_of_another_type(%x: tensor<2x8xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf16>) {
  // expected-error @+2 {{scatter_elements needs updates of the data's element type}}
  // expected-error @+1 {{'memfit.scatter_elements' op failed to infer returned types}}
  %0 = memfit.scatter_elements %x, %i, %u {axis = 1 : i64} : tensor<2x8xf32>, tensor<2x3xi64>, tensor<2x3xf16> -> tensor<2x8xf32>
  return
}

// -----

func.func @scatter_nd_unsigned_indices(%x: tensor<4x4xf32>, %i: tensor<2x1xui64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{'memfit.scatter_nd' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x1xui64>'}}
  %0 = memfit.scatter_nd %x, %i, %u : tensor<4x4xf32>, tensor<2x1xui64>, tensor<2x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_nd_reduction_of_booleans(%x: tensor<4xi1>, %i: tensor<2x1xi64>, %u: tensor<2xi1>) {
  // expected-error @+2 {{scatter_nd of booleans takes no reduction}}
  // expected-error @+1 {{'memfit.scatter_nd' op failed to infer returned types}}
  %0 = memfit.scatter_nd %x, %i, %u {reduction = "add"} : tensor<4xi1>, tensor<2x1xi64>, tensor<2xi1> -> tensor<4xi1>
  return
}

// -----

func.func @topk_of_booleans(%x: tensor<3x4xi1>) {
  // expected-error @+1 {{'memfit.topk_indices' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<3x4xi1>'}}
  %0 = memfit.topk_indices %x {axis = 1 : i64, k = 2 : i64} : tensor<3x4xi1> -> tensor<3x2xi64>
  return
}

// -----

func.func @topk_float_positions(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'memfit.topk_indices' op result #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3x2xf32>'}}
  %0 = memfit.topk_indices %x {axis = 1 : i64, k = 2 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @cumsum_of_booleans(%x: tensor<2x16xi1>) {
  // expected-error @+1 {{'memfit.cumsum' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<2x16xi1>'}}
  %0 = memfit.cumsum %x {axis = 1 : i64} : tensor<2x16xi1>
  return
}

// -----

func.func @transpose_of_index(%x: tensor<2x3xindex>) {
  // expected-error @+1 {{'memfit.transpose' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<2x3xindex>'}}
  %0 = memfit.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xindex> -> tensor<3x2xindex>
  return
}

// -----

func.func @slice_of_128_bit_integers(%x: tensor<4xi128>) {
  // expected-error @+1 {{'memfit.slice' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<4xi128>'}}
  %0 = memfit.slice %x {starts = array<i64: 0>, ends = array<i64: 2>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<4xi128> -> tensor<2xi128>
  return
}

// -----

func.func @split_of_complex(%x: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{'memfit.split' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<4xcomplex<f32>>'}}
  %0, %1 = memfit.split %x {axis = 0 : i64, sizes = array<i64: 2, 2>} : tensor<4xcomplex<f32>> -> tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>>
  return
}

// -----

func.func @squeeze_of_explicitly_signed(%x: tensor<1x4xsi32>) {
  // expected-error @+1 {{'memfit.squeeze' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<1x4xsi32>'}}
  %0 = memfit.squeeze %x {axes = array<i64: 0>} : tensor<1x4xsi32> -> tensor<4xsi32>
  return
}

// -----

func.func @unsqueeze_changes_element_type(%x: tensor<4xf32>) {
  // expected-error @+2 {{'memfit.unsqueeze' op inferred type(s) 'tensor<1x4xf32>' are incompatible with return type(s) of operation 'tensor<1x4xf16>'}}
  // expected-error @+1 {{'memfit.unsqueeze' op failed to infer returned types}}
  %0 = memfit.unsqueeze %x {axes = array<i64: 0>} : tensor<4xf32> -> tensor<1x4xf16>
  return
}

// -----

func.func @flatten_of_tf32(%x: tensor<2x3xtf32>) {
  // expected-error @+1 {{'memfit.flatten' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<2x3xtf32>'}}
  %0 = memfit.flatten %x {axis = 1 : i64} : tensor<2x3xtf32> -> tensor<2x3xtf32>
  return
}

// -----

func.func @reshape_changes_element_type(%x: tensor<4xi64>) {
  // expected-error @+1 {{'memfit.reshape' op element type changes from 'i64' to 'i32'}}
  %0 = memfit.reshape %x : tensor<4xi64> to tensor<2x2xi32>
  return
}

// -----

func.func @expand_changes_element_type(%x: tensor<1x4xi1>) {
  // expected-error @+1 {{'memfit.expand' op element type changes from 'i1' to 'i8'}}
  %0 = memfit.expand %x : tensor<1x4xi1> to tensor<2x4xi8>
  return
}

// -----

func.func @strided_view_changes_element_type(%x: tensor<4x8xf32>, %w: tensor<4x2xbf16>) {
  // expected-error @+1 {{'memfit.strided_view' op element type changes from 'f32' to 'bf16'}}
  %v = memfit.strided_view %x {offset = 0 : i64, strides = array<i64: 8, 1>} : tensor<4x8xf32> -> tensor<2x4xbf16>
  %0 = memfit.matmul %v, %w : tensor<2x4xbf16>, tensor<4x2xbf16> -> tensor<2x2xbf16>
  return
}

// -----

func.func @concat_of_two_types(%a: tensor<2xi64>, %b: tensor<2xi32>) {
  // expected-error @+1 {{'memfit.concat' op input 1 element type 'i32' differs from input 0's 'i64'}}
  %0 = memfit.concat %a, %b {axis = 0 : i64} : tensor<2xi64>, tensor<2xi32> -> tensor<4xi64>
  return
}

// -----

func.func @gather_grad_of_integers(%g: tensor<2x4xi32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'memfit.gather_grad' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x4xi32>'}}
  %0 = memfit.gather_grad %g, %i {axis = 0 : i64} : (tensor<2x4xi32>, tensor<2xi64>) -> tensor<8x4xi32>
  return
}

// -----

func.func @gather_grad_float_indices(%g: tensor<2x4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.gather_grad' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = memfit.gather_grad %g, %i {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @gather_grad_gradient_of_another_type(%g: tensor<2x4xbf16>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'memfit.gather_grad' op gradient element type 'bf16' differs from the result's 'f32'}}
  %0 = memfit.gather_grad %g, %i {axis = 0 : i64} : (tensor<2x4xbf16>, tensor<2xi64>) -> tensor<8x4xf32>
  return
}

// -----

func.func @gather_grad_into_another_type(%g: tensor<2x4xf32>, %i: tensor<2xi64>, %init: tensor<8x4xf16>) {
  // expected-error @+1 {{'memfit.gather_grad' op init element type 'f16' differs from the result's 'f32'}}
  %0 = memfit.gather_grad %g, %i into %init {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>, tensor<8x4xf16>) -> tensor<8x4xf32>
  return
}
