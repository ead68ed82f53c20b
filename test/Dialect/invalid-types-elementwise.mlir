// Element types of the element-wise ops: math on the floats kernels
// compute in (f16, bf16, f32, f64), arithmetic and ordering on numbers
// (not booleans), logic on booleans, one element type for both operands
// of a binary op, and casts between any two types memfit holds. One case
// per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

// What is allowed (no diagnostic): casts to and from the small types,
// equality and selection of booleans, a triangle of booleans, an integer
// power of floats.
func.func @allowed(%x: tensor<4x4xf32>, %b: tensor<4x4xi1>, %n: tensor<4x4xi32>) -> (tensor<4x4xf8E5M2>, tensor<4x4xi4>, tensor<4x4xi1>, tensor<4x4xi1>, tensor<4x4xi1>, tensor<4x4xf32>) {
  %0 = memfit.cast %x : tensor<4x4xf32> to tensor<4x4xf8E5M2>
  %1 = memfit.cast %0 : tensor<4x4xf8E5M2> to tensor<4x4xi4>
  %2 = memfit.equal %b, %b : tensor<4x4xi1>, tensor<4x4xi1> -> tensor<4x4xi1>
  %3 = memfit.where %b, %b, %2 : tensor<4x4xi1>, tensor<4x4xi1>, tensor<4x4xi1> -> tensor<4x4xi1>
  %4 = memfit.trilu %3 {upper = false} : tensor<4x4xi1>
  %5 = memfit.pow %x, %n : tensor<4x4xf32>, tensor<4x4xi32> -> tensor<4x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x4xf8E5M2>, tensor<4x4xi4>, tensor<4x4xi1>, tensor<4x4xi1>, tensor<4x4xi1>, tensor<4x4xf32>
}

// -----

func.func @log_of_an_8_bit_float(%x: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{'memfit.log' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xf8E4M3FN>'}}
  %0 = memfit.log %x : tensor<4xf8E4M3FN>
  return
}

// -----

func.func @sqrt_of_integers(%x: tensor<4xi64>) {
  // expected-error @+1 {{'memfit.sqrt' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi64>'}}
  %0 = memfit.sqrt %x : tensor<4xi64>
  return
}

// -----

func.func @sigmoid_changes_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.sigmoid' op requires the same type for all operands and results}}
  %0 = "memfit.sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @neg_of_booleans(%x: tensor<4xi1>) {
  // expected-error @+1 {{'memfit.neg' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<4xi1>'}}
  %0 = memfit.neg %x : tensor<4xi1>
  return
}

// -----

func.func @not_of_integers(%x: tensor<4xi8>) {
  // expected-error @+1 {{'memfit.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = memfit.not %x : tensor<4xi8>
  return
}

// -----

func.func @is_nan_of_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{'memfit.is_nan' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = memfit.is_nan %x : tensor<4xi32> -> tensor<4xi1>
  return
}

// -----

func.func @is_inf_float_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.is_inf' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = memfit.is_inf %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @gelu_of_a_4_bit_float(%x: tensor<4xf4E2M1FN>) {
  // expected-error @+1 {{'memfit.gelu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xf4E2M1FN>'}}
  %0 = memfit.gelu none %x : tensor<4xf4E2M1FN>
  return
}

// -----

func.func @dropout_of_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{'memfit.dropout' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = memfit.dropout %x {ratio = 1.000000e-01 : f32} : tensor<4xi32>
  return
}

// -----

func.func @dropout_mask_float_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.dropout_mask' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = memfit.dropout_mask %x {ratio = 1.000000e-01 : f32} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @cast_to_index(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.cast' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<4xindex>'}}
  %0 = memfit.cast %x : tensor<4xf32> to tensor<4xindex>
  return
}

// -----

func.func @cast_from_a_3_bit_integer(%x: tensor<4xi3>) {
  // expected-error @+1 {{'memfit.cast' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<4xi3>'}}
  %0 = memfit.cast %x : tensor<4xi3> to tensor<4xf32>
  return
}

// -----

func.func @trilu_of_f80(%x: tensor<4x4xf80>) {
  // expected-error @+1 {{'memfit.trilu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<4x4xf80>'}}
  %0 = memfit.trilu %x : tensor<4x4xf80>
  return
}

// -----

func.func @add_of_booleans(%x: tensor<4xi1>) {
  // expected-error @+1 {{'memfit.add' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<4xi1>'}}
  %0 = memfit.add %x, %x : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return
}

// -----

func.func @add_of_two_types(%x: tensor<4xi32>, %y: tensor<4xi64>) {
  // expected-error @+2 {{add operands have different element types 'i32' and 'i64'}}
  // expected-error @+1 {{'memfit.add' op failed to infer returned types}}
  %0 = memfit.add %x, %y : tensor<4xi32>, tensor<4xi64> -> tensor<4xi32>
  return
}

// -----

func.func @sub_of_index(%x: tensor<4xindex>) {
  // expected-error @+1 {{'memfit.sub' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<4xindex>'}}
  %0 = memfit.sub %x, %x : tensor<4xindex>, tensor<4xindex> -> tensor<4xindex>
  return
}

// -----

func.func @mul_of_small_floats(%x: tensor<4xf8E5M2>) {
  // expected-error @+1 {{'memfit.mul' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<4xf8E5M2>'}}
  %0 = memfit.mul %x, %x : tensor<4xf8E5M2>, tensor<4xf8E5M2> -> tensor<4xf8E5M2>
  return
}

// -----

func.func @div_of_two_types(%x: tensor<4xf32>, %y: tensor<4xbf16>) {
  // expected-error @+2 {{div operands have different element types 'f32' and 'bf16'}}
  // expected-error @+1 {{'memfit.div' op failed to infer returned types}}
  %0 = memfit.div %x, %y : tensor<4xf32>, tensor<4xbf16> -> tensor<4xf32>
  return
}

// -----

func.func @pow_boolean_exponent(%x: tensor<4xf32>, %e: tensor<4xi1>) {
  // expected-error @+1 {{'memfit.pow' op operand #1 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<4xi1>'}}
  %0 = memfit.pow %x, %e : tensor<4xf32>, tensor<4xi1> -> tensor<4xf32>
  return
}

// -----

func.func @fmod_of_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{'memfit.fmod' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = memfit.fmod %x, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return
}

// -----

func.func @max_of_booleans(%x: tensor<4xi1>) {
  // expected-error @+1 {{'memfit.max' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<4xi1>'}}
  %0 = memfit.max %x, %x : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return
}

// -----

func.func @min_of_two_types(%x: tensor<4xui8>, %y: tensor<4xi8>) {
  // expected-error @+2 {{min operands have different element types 'ui8' and 'i8'}}
  // expected-error @+1 {{'memfit.min' op failed to infer returned types}}
  %0 = memfit.min %x, %y : tensor<4xui8>, tensor<4xi8> -> tensor<4xui8>
  return
}

// -----

func.func @less_of_booleans(%x: tensor<4xi1>) {
  // expected-error @+1 {{'memfit.less' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<4xi1>'}}
  %0 = memfit.less %x, %x : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return
}

// -----

func.func @greater_integer_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.greater' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = memfit.greater %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xi8>
  return
}

// -----

func.func @equal_of_two_types(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+2 {{equal operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'memfit.equal' op failed to infer returned types}}
  %0 = memfit.equal %x, %y : tensor<4xf32>, tensor<4xf16> -> tensor<4xi1>
  return
}

// -----

func.func @and_of_floats(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.and' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = memfit.and %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  return
}

// -----

func.func @xor_of_integers(%x: tensor<4xi8>) {
  // expected-error @+1 {{'memfit.xor' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = memfit.xor %x, %x : tensor<4xi8>, tensor<4xi8> -> tensor<4xi1>
  return
}

// -----

func.func @where_float_condition(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = memfit.where %c, %x, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @where_branches_of_two_types(%c: tensor<4xi1>, %x: tensor<4xi64>, %y: tensor<4xi32>) {
  // expected-error @+2 {{where branches have different element types 'i64' and 'i32'}}
  // expected-error @+1 {{'memfit.where' op failed to infer returned types}}
  %0 = memfit.where %c, %x, %y : tensor<4xi1>, tensor<4xi64>, tensor<4xi32> -> tensor<4xi64>
  return
}
