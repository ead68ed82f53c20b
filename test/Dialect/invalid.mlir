// Verifier, parser and shape-inference diagnostics of the memfit ops. Each
// case is named after the rule it breaks.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics
//
// Ops with inferred result types report a failed inference twice: the rule
// that failed (or InferTypeOpInterface's "inferred type(s) ... are
// incompatible with return type(s)"), then "failed to infer returned types".

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

func.func @parameter_not_in_module() {
  // expected-error @+1 {{'memfit.parameter' op expects parent op 'builtin.module'}}
  memfit.parameter @p = dense<1.0> : tensor<2xf32>
  return
}

// -----

// A parameter lives at module level, so the case is the symbol's name.
// expected-error @+1 {{'memfit.parameter' op value must be a statically shaped tensor, got 'vector<2xf32>'}}
memfit.parameter @parameter_value_not_tensor = dense<1.0> : vector<2xf32>

// -----

func.func @load_parameter_unknown_symbol() -> tensor<2xf32> {
  // expected-error @+1 {{'memfit.load_parameter' op 'nope' does not name a memfit.parameter}}
  %0 = memfit.load_parameter @nope : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @load_parameter_not_a_parameter() -> tensor<2xf32> {
  // expected-error @+1 {{'load_parameter_not_a_parameter' does not name a memfit.parameter}}
  %0 = memfit.load_parameter @load_parameter_not_a_parameter : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

memfit.parameter @w = dense<1.0> : tensor<2xf32>

func.func @load_parameter_type_mismatch() -> tensor<3xf32> {
  // expected-error @+1 {{'memfit.load_parameter' op result type 'tensor<3xf32>' differs from parameter type 'tensor<2xf32>'}}
  %0 = memfit.load_parameter @w : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

memfit.parameter @w = dense<1.0> : tensor<2xf32>

func.func @load_parameter_dynamic_shape() -> tensor<?xf32> {
  // expected-error @+1 {{'memfit.load_parameter' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<?xf32>'}}
  %0 = memfit.load_parameter @w : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @constant_type_mismatch() -> tensor<3xf32> {
  // expected-error @+1 {{'memfit.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "memfit.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @constant_not_tensor() {
  // expected-error @+1 {{'memfit.constant' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'vector<2xf32>'}}
  %0 = memfit.constant dense<1.0> : vector<2xf32>
  return
}

// -----

func.func @range_delta_zero() {
  // expected-error @+1 {{'memfit.range' op delta must not be zero}}
  %0 = memfit.range {start = 0 : i64, delta = 0 : i64} : tensor<4xi64>
  return
}

// -----

func.func @range_float_delta_zero() {
  // expected-error @+1 {{'memfit.range' op delta must not be zero}}
  %0 = memfit.range {start = 1.0 : f32, delta = -0.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @range_rank() {
  // expected-error @+1 {{'memfit.range' op result must be 1-D, got 'tensor<2x2xi64>'}}
  %0 = memfit.range {start = 0 : i64, delta = 1 : i64} : tensor<2x2xi64>
  return
}

// -----

func.func @range_start_type() {
  // expected-error @+1 {{'memfit.range' op start and delta must be of the element type 'i64'}}
  %0 = memfit.range {start = 0 : i32, delta = 1 : i64} : tensor<4xi64>
  return
}

// -----

func.func @range_element_type() {
  // expected-error @+1 {{'memfit.range' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = memfit.range {start = 0 : i8, delta = 1 : i8} : tensor<4xi8>
  return
}

// -----

func.func @range_missing_delta() {
  // expected-error @+1 {{'memfit.range' op requires attribute 'delta'}}
  %0 = memfit.range {start = 0 : i64} : tensor<4xi64>
  return
}

//===----------------------------------------------------------------------===//
// Element-wise unary ops
//===----------------------------------------------------------------------===//

// -----

func.func @neg_result_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.neg' op requires the same type for all operands and results}}
  %0 = "memfit.neg"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @neg_signed_integer(%x: tensor<2xsi32>) {
  // expected-error @+1 {{'memfit.neg' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<2xsi32>'}}
  %0 = memfit.neg %x : tensor<2xsi32>
  return
}

// -----

func.func @exp_int_operand(%x: tensor<2xi32>) {
  // expected-error @+1 {{'memfit.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = memfit.exp %x : tensor<2xi32>
  return
}

// -----

func.func @log_result_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.log' op requires the same type for all operands and results}}
  %0 = "memfit.log"(%x) : (tensor<2xf32>) -> tensor<2xf16>
  return
}

// -----

func.func @sqrt_dynamic_shape(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'memfit.sqrt' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<?x4xf32>'}}
  %0 = memfit.sqrt %x : tensor<?x4xf32>
  return
}

// -----

func.func @reciprocal_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'memfit.reciprocal' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<*xf32>'}}
  %0 = "memfit.reciprocal"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// The custom form only parses ranked tensor types.
func.func @reciprocal_unranked_custom(%x: tensor<*xf32>) {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = memfit.reciprocal %x : tensor<*xf32>
  return
}

// -----

func.func @erf_int_operand(%x: tensor<2xi64>) {
  // expected-error @+1 {{'memfit.erf' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi64>'}}
  %0 = memfit.erf %x : tensor<2xi64>
  return
}

// -----

func.func @tanh_bool_operand(%x: tensor<2xi1>) {
  // expected-error @+1 {{'memfit.tanh' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi1>'}}
  %0 = memfit.tanh %x : tensor<2xi1>
  return
}

// -----

func.func @sigmoid_result_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.sigmoid' op requires the same type for all operands and results}}
  %0 = "memfit.sigmoid"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @relu_int_operand(%x: tensor<2xi32>) {
  // expected-error @+1 {{'memfit.relu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = memfit.relu %x : tensor<2xi32>
  return
}

// -----

func.func @sin_vector_operand(%x: vector<2xf32>) {
  // expected-error @+1 {{'memfit.sin' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'vector<2xf32>'}}
  %0 = "memfit.sin"(%x) : (vector<2xf32>) -> vector<2xf32>
  return
}

// -----

func.func @cos_int_operand(%x: tensor<2xi32>) {
  // expected-error @+1 {{'memfit.cos' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = memfit.cos %x : tensor<2xi32>
  return
}

// -----

func.func @not_float_operand(%x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = memfit.not %x : tensor<2xf32>
  return
}

// -----

func.func @gelu_unknown_approximation(%x: tensor<2xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %0 = memfit.gelu exact %x : tensor<2xf32>
  return
}

// -----

func.func @gelu_approximation_twice(%x: tensor<2xf32>) {
  // expected-error @+1 {{attribute 'approximate' occurs more than once in the attribute list}}
  %0 = memfit.gelu none %x {approximate = 1 : i32} : tensor<2xf32>
  return
}

// -----

func.func @gelu_int_operand(%x: tensor<2xi32>) {
  // expected-error @+1 {{'memfit.gelu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = memfit.gelu tanh %x : tensor<2xi32>
  return
}

// -----

func.func @dropout_ratio(%x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.dropout' op ratio must be in [0, 1), got 1.000000e+00}}
  %0 = memfit.dropout %x {ratio = 1.0 : f32} : tensor<2xf32>
  return
}

// -----

func.func @dropout_negative_ratio(%x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.dropout' op ratio must be in [0, 1), got -5.000000e-01}}
  %0 = memfit.dropout %x {ratio = -0.5 : f32} : tensor<2xf32>
  return
}

// -----

func.func @dropout_step_not_i64_scalar(%x: tensor<2xf32>, %s: tensor<1xi64>) {
  // expected-error @+1 {{'memfit.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values, but got 'tensor<1xi64>'}}
  %0 = "memfit.dropout"(%x, %s) {ratio = 0.5 : f32} : (tensor<2xf32>, tensor<1xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @dropout_missing_ratio(%x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.dropout' op requires attribute 'ratio'}}
  %0 = memfit.dropout %x : tensor<2xf32>
  return
}

// -----

func.func @dropout_ratio_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.dropout' op attribute 'ratio' failed to satisfy constraint: 32-bit float attribute}}
  %0 = memfit.dropout %x {ratio = 0.5 : f64} : tensor<2xf32>
  return
}

// -----

func.func @dropout_seed_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.dropout' op attribute 'seed' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = memfit.dropout %x {ratio = 0.5 : f32, seed = 1 : i32} : tensor<2xf32>
  return
}

// -----

func.func @cast_shape_change(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.cast' op requires the same shape for all operands and results}}
  %0 = memfit.cast %x : tensor<2x3xf32> to tensor<6xi32>
  return
}

// -----

func.func @cast_dynamic_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.cast' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<?x3xi32>'}}
  %0 = memfit.cast %x : tensor<2x3xf32> to tensor<?x3xi32>
  return
}

// -----

func.func @trilu_rank(%x: tensor<16xf32>) {
  // expected-error @+1 {{'memfit.trilu' op input must have rank >= 2, got 'tensor<16xf32>'}}
  %0 = memfit.trilu %x : tensor<16xf32>
  return
}

// -----

func.func @trilu_k_type(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'memfit.trilu' op attribute 'k' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = memfit.trilu %x {k = 1 : i32} : tensor<4x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Element-wise ops with broadcasting
//===----------------------------------------------------------------------===//

// -----

func.func @add_broadcast_mismatch(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{shapes 2x3, 4 do not broadcast: dimension 4 does not match 3}}
  // expected-error @+1 {{'memfit.add' op failed to infer returned types}}
  %0 = memfit.add %x, %y : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @add_element_types(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{add operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'memfit.add' op failed to infer returned types}}
  %0 = memfit.add %x, %y : tensor<2xf32>, tensor<2xf16> -> tensor<2xf32>
  return
}

// -----

func.func @sub_result_shape(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'memfit.sub' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'memfit.sub' op failed to infer returned types}}
  %0 = memfit.sub %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

// Dynamic shapes are rejected.
func.func @mul_dynamic_shape(%x: tensor<?x4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.mul' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<?x4xf32>'}}
  %0 = memfit.mul %x, %y : tensor<?x4xf32>, tensor<4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @div_result_element_type(%x: tensor<2xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{'memfit.div' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2xi32>'}}
  // expected-error @+1 {{'memfit.div' op failed to infer returned types}}
  %0 = memfit.div %x, %y : tensor<2xf32>, tensor<2xf32> -> tensor<2xi32>
  return
}

// -----

func.func @pow_result_element_type(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{'memfit.pow' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2xf16>'}}
  // expected-error @+1 {{'memfit.pow' op failed to infer returned types}}
  %0 = memfit.pow %x, %y : tensor<2xf32>, tensor<2xf16> -> tensor<2xf16>
  return
}

// -----

func.func @equal_result_not_bool(%x: tensor<2xi64>, %y: tensor<2xi64>) {
  // expected-error @+1 {{'memfit.equal' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<2xi64>'}}
  %0 = memfit.equal %x, %y : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  return
}

// -----

func.func @equal_element_types(%x: tensor<2xi64>, %y: tensor<2xi1>) {
  // expected-error @+2 {{equal operands have different element types 'i64' and 'i1'}}
  // expected-error @+1 {{'memfit.equal' op failed to infer returned types}}
  %0 = memfit.equal %x, %y : tensor<2xi64>, tensor<2xi1> -> tensor<2xi1>
  return
}

// -----

func.func @less_element_types(%x: tensor<2xi64>, %y: tensor<2xi32>) {
  // expected-error @+2 {{less operands have different element types 'i64' and 'i32'}}
  // expected-error @+1 {{'memfit.less' op failed to infer returned types}}
  %0 = memfit.less %x, %y : tensor<2xi64>, tensor<2xi32> -> tensor<2xi1>
  return
}

// -----

func.func @greater_broadcast_mismatch(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{shapes 2x3, 2 do not broadcast: dimension 2 does not match 3}}
  // expected-error @+1 {{'memfit.greater' op failed to infer returned types}}
  %0 = memfit.greater %x, %y : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xi1>
  return
}

// -----

func.func @where_branch_types(%c: tensor<2xi1>, %x: tensor<2xf32>, %y: tensor<2xf16>) {
  // expected-error @+2 {{where branches have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'memfit.where' op failed to infer returned types}}
  %0 = memfit.where %c, %x, %y : tensor<2xi1>, tensor<2xf32>, tensor<2xf16> -> tensor<2xf32>
  return
}

// -----

func.func @where_condition_not_bool(%c: tensor<2xi32>, %x: tensor<2xf32>) {
  // expected-error @+1 {{'memfit.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<2xi32>'}}
  %0 = memfit.where %c, %x, %x : tensor<2xi32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @where_broadcast_mismatch(%c: tensor<3xi1>, %x: tensor<2x4xf32>, %y: tensor<f32>) {
  // expected-error @+2 {{shapes 3, 2x4, scalar do not broadcast: dimension 4 does not match 3}}
  // expected-error @+1 {{'memfit.where' op failed to infer returned types}}
  %0 = memfit.where %c, %x, %y : tensor<3xi1>, tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_contraction_mismatch(%x: tensor<2x3xf32>, %y: tensor<4x5xf32>) {
  // expected-error @+2 {{matmul contraction dimensions differ: 2x3 times 4x5 (3 vs 4)}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_result_perm_moves_columns(%x: tensor<2x3x4xf32>, %y: tensor<2x4x5xf32>) {
  // expected-error @+2 {{result_perm must permute the 3 dimensions of a product of operands of rank 2 or more and keep the last one last, got [2, 1, 0]}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y {result_perm = array<i64: 2, 1, 0>} : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<5x3x2xf32>
  return
}

// -----

func.func @matmul_result_perm_not_permutation(%x: tensor<2x3x4xf32>, %y: tensor<2x4x5xf32>) {
  // expected-error @+2 {{result_perm must permute the 3 dimensions}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y {result_perm = array<i64: 0, 0, 2>} : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x2x5xf32>
  return
}

// -----

func.func @strided_view_read_by_kernel(%x: tensor<4x6xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'memfit.strided_view' op is read by 'memfit.exp': only memfit.matmul and memfit.gemm (their library call's strides) and memfit.kernel (its code's) read a strided view}}
  %v = memfit.strided_view %x {offset = 1 : i64, strides = array<i64: 12, 2>} : tensor<4x6xf32> -> tensor<2x3xf32>
  %e = memfit.exp %v : tensor<2x3xf32>
  return %e : tensor<2x3xf32>
}

// -----

func.func @strided_view_out_of_range(%x: tensor<4x6xf32>, %y: tensor<3x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'memfit.strided_view' op reads element 30 of an input of 24 elements}}
  %v = memfit.strided_view %x {offset = 6 : i64, strides = array<i64: 12, 6>} : tensor<4x6xf32> -> tensor<2x3xf32>
  %m = memfit.matmul %v, %y : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  return %m : tensor<2x2xf32>
}

// -----

func.func @strided_view_negative_offset(%x: tensor<4x6xf32>, %y: tensor<3x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'memfit.strided_view' op offset and strides must not be negative}}
  %v = memfit.strided_view %x {offset = -1 : i64, strides = array<i64: 6, 1>} : tensor<4x6xf32> -> tensor<2x3xf32>
  %m = memfit.matmul %v, %y : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  return %m : tensor<2x2xf32>
}

// -----

func.func @strided_view_rank(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'memfit.strided_view' op has 1 strides for a result of rank 2}}
  %v = memfit.strided_view %x {offset = 0 : i64, strides = array<i64: 6>} : tensor<4x6xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @matmul_transposed_vector(%x: tensor<8xf32>, %y: tensor<8x5xf32>) {
  // expected-error @+2 {{a transposed matmul operand needs rank >= 2, got 8}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y {trans_a = true} : tensor<8xf32>, tensor<8x5xf32> -> tensor<5xf32>
  return
}

// -----

func.func @matmul_batch_mismatch(%x: tensor<2x4x8xf32>, %y: tensor<3x8x5xf32>) {
  // expected-error @+2 {{shapes 2, 3 do not broadcast: dimension 3 does not match 2}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y : tensor<2x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x4x5xf32>
  return
}

// -----

func.func @matmul_scalar_operand(%x: tensor<f32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{matmul operands must have rank >= 1, got scalar and 4}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y : tensor<f32>, tensor<4xf32> -> tensor<f32>
  return
}

// -----

func.func @matmul_element_types(%x: tensor<2x3xf32>, %y: tensor<3x4xf16>) {
  // expected-error @+2 {{matmul operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y : tensor<2x3xf32>, tensor<3x4xf16> -> tensor<2x4xf32>
  return
}

// -----

// The dimension added to a 1-D operand is removed from the result.
func.func @matmul_vector_result(%x: tensor<8xf32>, %y: tensor<8x5xf32>) {
  // expected-error @+2 {{'memfit.matmul' op inferred type(s) 'tensor<5xf32>' are incompatible with return type(s) of operation 'tensor<1x5xf32>'}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y : tensor<8xf32>, tensor<8x5xf32> -> tensor<1x5xf32>
  return
}

// -----

func.func @gemm_bias_shape(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<2xf32>) {
  // expected-error @+2 {{gemm bias of shape 2 does not broadcast to 2x3}}
  // expected-error @+1 {{'memfit.gemm' op failed to infer returned types}}
  %0 = memfit.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gemm_rank(%a: tensor<2x2x4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{gemm operands must be matrices, got 2x2x4 and 4x3}}
  // expected-error @+1 {{'memfit.gemm' op failed to infer returned types}}
  %0 = memfit.gemm %a, %b : (tensor<2x2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gemm_trans_contraction(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{gemm contraction dimensions differ: 4 vs 3}}
  // expected-error @+1 {{'memfit.gemm' op failed to infer returned types}}
  %0 = memfit.gemm %a, %b {trans_b = true} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gemm_int_operands(%a: tensor<2x4xi32>, %b: tensor<4x3xi32>) {
  // expected-error @+1 {{'memfit.gemm' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x4xi32>'}}
  %0 = memfit.gemm %a, %b : (tensor<2x4xi32>, tensor<4x3xi32>) -> tensor<2x3xi32>
  return
}

// -----

func.func @gemm_result_shape(%a: tensor<4x2xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'memfit.gemm' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{'memfit.gemm' op failed to infer returned types}}
  %0 = memfit.gemm %a, %b {trans_a = true} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.softmax' op axis 2 is out of range for rank 2}}
  %0 = memfit.softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

// The default axis -1 does not exist in a scalar.
func.func @softmax_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'memfit.softmax' op axis -1 is out of range for rank 0}}
  %0 = memfit.softmax %x : tensor<f32>
  return
}

// -----

func.func @softmax_int_operand(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'memfit.softmax' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x3xi32>'}}
  %0 = memfit.softmax %x : tensor<2x3xi32>
  return
}

// -----

func.func @log_softmax_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.log_softmax' op axis -3 is out of range for rank 2}}
  %0 = memfit.log_softmax %x {axis = -3 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x16x32xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{scale of shape 16 does not broadcast to the normalized shape 32}}
  %0 = memfit.layer_norm %x, %g : tensor<2x16x32xf32>, tensor<16xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<2x32xf32>) {
  // expected-error @+1 {{bias of shape 2x32 does not broadcast to the normalized shape 32}}
  %0 = memfit.layer_norm %x, %g, %b : tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x32xf32>
  return
}

// -----

func.func @layer_norm_axis_out_of_range(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'memfit.layer_norm' op axis 3 is out of range for rank 3}}
  %0 = memfit.layer_norm %x, %g {axis = 3 : i64} : tensor<2x16x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @layer_norm_result_type(%x: tensor<2x32xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'memfit.layer_norm' op failed to verify that all of {input, result} have same type}}
  %0 = "memfit.layer_norm"(%x, %g) : (tensor<2x32xf32>, tensor<32xf32>) -> tensor<2x32xf16>
  return
}

// -----

func.func @rms_norm_scale_shape(%x: tensor<2x16x64xf32>, %g: tensor<16x64xf32>) {
  // expected-error @+1 {{scale of shape 16x64 does not broadcast to the normalized shape 64}}
  %0 = memfit.rms_norm %x, %g : tensor<2x16x64xf32>, tensor<16x64xf32>
  return
}

// -----

func.func @rms_norm_axis_out_of_range(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'memfit.rms_norm' op axis -4 is out of range for rank 3}}
  %0 = memfit.rms_norm %x, %g {axis = -4 : i64} : tensor<2x16x64xf32>, tensor<64xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (expected [-2, 2))}}
  // expected-error @+1 {{'memfit.reduce_sum' op failed to infer returned types}}
  %0 = memfit.reduce_sum %x {axes = array<i64: 2>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_repeated_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis -1 is repeated}}
  // expected-error @+1 {{'memfit.reduce_mean' op failed to infer returned types}}
  %0 = memfit.reduce_mean %x {axes = array<i64: 1, -1>} : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}

// -----

// keepdims defaults to true.
func.func @reduce_keepdims_result(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'memfit.reduce_max' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'memfit.reduce_max' op failed to infer returned types}}
  %0 = memfit.reduce_max %x {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

func.func @reduce_missing_axes(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.reduce_sum' op requires attribute 'axes'}}
  %0 = memfit.reduce_sum %x : tensor<2x3xf32> -> tensor<1x1xf32>
  return
}

// -----

func.func @reduce_axes_not_dense_array(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.reduce_mean' op attribute 'axes' failed to satisfy constraint: i64 dense array attribute}}
  %0 = memfit.reduce_mean %x {axes = [1]} : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{transpose perm is not a permutation of [0, 2)}}
  // expected-error @+1 {{'memfit.transpose' op failed to infer returned types}}
  %0 = memfit.transpose %x {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_perm_size(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{transpose permutation has 3 entries for rank 2}}
  // expected-error @+1 {{'memfit.transpose' op failed to infer returned types}}
  %0 = memfit.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_result_shape(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'memfit.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'memfit.transpose' op failed to infer returned types}}
  %0 = memfit.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @reshape_element_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.reshape' op cannot reshape 'tensor<2x3xf32>' (6 elements) to 'tensor<7xf32>' (7 elements)}}
  %0 = memfit.reshape %x : tensor<2x3xf32> to tensor<7xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.reshape' op element type changes from 'f32' to 'f16'}}
  %0 = memfit.reshape %x : tensor<2x3xf32> to tensor<6xf16>
  return
}

// -----

func.func @reshape_dynamic_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.reshape' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<?xf32>'}}
  %0 = memfit.reshape %x : tensor<2x3xf32> to tensor<?xf32>
  return
}

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{flatten axis 3 is out of range for rank 2}}
  // expected-error @+1 {{'memfit.flatten' op failed to infer returned types}}
  %0 = memfit.flatten %x {axis = 3 : i64} : tensor<2x3xf32> -> tensor<6x1xf32>
  return
}

// -----

func.func @flatten_result_shape(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'memfit.flatten' op inferred type(s) 'tensor<2x12xf32>' are incompatible with return type(s) of operation 'tensor<6x4xf32>'}}
  // expected-error @+1 {{'memfit.flatten' op failed to infer returned types}}
  %0 = memfit.flatten %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  return
}

// -----

func.func @squeeze_non_unit_dim(%x: tensor<2x1xf32>) {
  // expected-error @+2 {{cannot squeeze dimension 0 of size 2 in shape 2x1}}
  // expected-error @+1 {{'memfit.squeeze' op failed to infer returned types}}
  %0 = memfit.squeeze %x {axes = array<i64: 0>} : tensor<2x1xf32> -> tensor<1xf32>
  return
}

// -----

func.func @squeeze_axis_out_of_range(%x: tensor<2x1xf32>) {
  // expected-error @+2 {{axis -3 is out of range for rank 2 (expected [-2, 2))}}
  // expected-error @+1 {{'memfit.squeeze' op failed to infer returned types}}
  %0 = memfit.squeeze %x {axes = array<i64: -3>} : tensor<2x1xf32> -> tensor<2xf32>
  return
}

// -----

func.func @unsqueeze_repeated_axis(%x: tensor<2xf32>) {
  // expected-error @+2 {{axis -3 is repeated}}
  // expected-error @+1 {{'memfit.unsqueeze' op failed to infer returned types}}
  %0 = memfit.unsqueeze %x {axes = array<i64: 0, -3>} : tensor<2xf32> -> tensor<1x1x2xf32>
  return
}

// -----

func.func @unsqueeze_no_axes(%x: tensor<2xf32>) {
  // expected-error @+2 {{unsqueeze needs at least one axis}}
  // expected-error @+1 {{'memfit.unsqueeze' op failed to infer returned types}}
  %0 = memfit.unsqueeze %x {axes = array<i64>} : tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

// Axes index the output (rank 2 here), not the input.
func.func @unsqueeze_axis_out_of_range(%x: tensor<2xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (expected [-2, 2))}}
  // expected-error @+1 {{'memfit.unsqueeze' op failed to infer returned types}}
  %0 = memfit.unsqueeze %x {axes = array<i64: 2>} : tensor<2xf32> -> tensor<2x1xf32>
  return
}

// -----

func.func @concat_rank_mismatch(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{concat input 1 has rank 1, expected 2}}
  // expected-error @+1 {{'memfit.concat' op failed to infer returned types}}
  %0 = memfit.concat %a, %b {axis = 0 : i64} : tensor<2x3xf32>, tensor<3xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @concat_dim_mismatch(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{concat input 1 of shape 2x4 differs in dimension 1 from 2x3}}
  // expected-error @+1 {{'memfit.concat' op failed to infer returned types}}
  %0 = memfit.concat %a, %b {axis = 0 : i64} : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error @+1 {{'memfit.concat' op input 1 element type 'f16' differs from input 0's 'f32'}}
  %0 = memfit.concat %a, %b {axis = 0 : i64} : tensor<2x3xf32>, tensor<2x3xf16> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_axis_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (expected [-2, 2))}}
  // expected-error @+1 {{'memfit.concat' op failed to infer returned types}}
  %0 = memfit.concat %a, %a {axis = 2 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_missing_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.concat' op requires attribute 'axis'}}
  %0 = memfit.concat %a, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @split_sizes_sum(%x: tensor<2x10xf32>) {
  // expected-error @+2 {{split sizes add up to 8 but dimension 1 of 2x10 is 10}}
  // expected-error @+1 {{'memfit.split' op failed to infer returned types}}
  %0:2 = memfit.split %x {axis = 1 : i64, sizes = array<i64: 4, 4>} : tensor<2x10xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @split_negative_size(%x: tensor<2x10xf32>) {
  // expected-error @+2 {{split size -2 is negative}}
  // expected-error @+1 {{'memfit.split' op failed to infer returned types}}
  %0:2 = memfit.split %x {axis = 1 : i64, sizes = array<i64: -2, 12>} : tensor<2x10xf32> -> tensor<2x2xf32>, tensor<2x12xf32>
  return
}

// -----

func.func @split_result_count(%x: tensor<2x10xf32>) {
  // expected-error @+2 {{'memfit.split' op inferred type(s) 'tensor<2x4xf32>', 'tensor<2x4xf32>', 'tensor<2x2xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>', 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'memfit.split' op failed to infer returned types}}
  %0:2 = memfit.split %x {axis = 1 : i64, sizes = array<i64: 4, 4, 2>} : tensor<2x10xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @split_axis_out_of_range(%x: tensor<2x10xf32>) {
  // expected-error @+2 {{axis -3 is out of range for rank 2 (expected [-2, 2))}}
  // expected-error @+1 {{'memfit.split' op failed to infer returned types}}
  %0:2 = memfit.split %x {axis = -3 : i64, sizes = array<i64: 1, 1>} : tensor<2x10xf32> -> tensor<1x10xf32>, tensor<1x10xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{slice step for axis 1 is zero}}
  // expected-error @+1 {{'memfit.slice' op failed to infer returned types}}
  %0 = memfit.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, axes = array<i64: 1>, steps = array<i64: 0>} : tensor<4x10xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_list_lengths(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{slice starts, ends, axes and steps have 2, 1, 1 and 1 entries; they must agree}}
  // expected-error @+1 {{'memfit.slice' op failed to infer returned types}}
  %0 = memfit.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4>, axes = array<i64: 1>, steps = array<i64: 1>} : tensor<4x10xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_repeated_axis(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{axis -1 is repeated}}
  // expected-error @+1 {{'memfit.slice' op failed to infer returned types}}
  %0 = memfit.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4, 4>, axes = array<i64: 1, -1>, steps = array<i64: 1, 1>} : tensor<4x10xf32> -> tensor<4x4xf32>
  return
}

// -----

// Ends past the dimension are clamped.
func.func @slice_result_shape(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{'memfit.slice' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<4x98xf32>'}}
  // expected-error @+1 {{'memfit.slice' op failed to infer returned types}}
  %0 = memfit.slice %x {starts = array<i64: 2>, ends = array<i64: 100>, axes = array<i64: 1>, steps = array<i64: 1>} : tensor<4x10xf32> -> tensor<4x98xf32>
  return
}

// -----

func.func @gather_axis_out_of_range(%w: tensor<96x32xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (expected [-2, 2))}}
  // expected-error @+1 {{'memfit.gather' op failed to infer returned types}}
  %0 = memfit.gather %w, %i {axis = 2 : i64} : tensor<96x32xf32>, tensor<4xi64> -> tensor<96x32x4xf32>
  return
}

// -----

func.func @gather_float_indices(%w: tensor<96x32xf32>, %i: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = memfit.gather %w, %i : tensor<96x32xf32>, tensor<4xf32> -> tensor<4x32xf32>
  return
}

// -----

func.func @gather_scalar_data(%w: tensor<f32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{gather data must have rank >= 1}}
  // expected-error @+1 {{'memfit.gather' op failed to infer returned types}}
  %0 = memfit.gather %w, %i : tensor<f32>, tensor<4xi64> -> tensor<4xf32>
  return
}

// -----

func.func @gather_result_shape(%w: tensor<96x32xf32>, %i: tensor<2x16xi64>) {
  // expected-error @+2 {{'memfit.gather' op inferred type(s) 'tensor<2x16x32xf32>' are incompatible with return type(s) of operation 'tensor<32x2x16xf32>'}}
  // expected-error @+1 {{'memfit.gather' op failed to infer returned types}}
  %0 = memfit.gather %w, %i : tensor<96x32xf32>, tensor<2x16xi64> -> tensor<32x2x16xf32>
  return
}

// -----

func.func @expand_not_broadcast(%x: tensor<3xf32>) {
  // expected-error @+1 {{input shape 3 does not broadcast to 2x4}}
  %0 = memfit.expand %x : tensor<3xf32> to tensor<2x4xf32>
  return
}

// -----

func.func @expand_rank_drop(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.expand' op result shape 3 is not the broadcast 2x3 of the input shape}}
  %0 = memfit.expand %x : tensor<2x3xf32> to tensor<3xf32>
  return
}

// -----

func.func @expand_to_unit(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.expand' op result shape 1 is not the broadcast 4 of the input shape}}
  %0 = memfit.expand %x : tensor<4xf32> to tensor<1xf32>
  return
}

// -----

func.func @expand_element_type(%x: tensor<3xf32>) {
  // expected-error @+1 {{'memfit.expand' op element type changes from 'f32' to 'f16'}}
  %0 = memfit.expand %x : tensor<3xf32> to tensor<2x3xf16>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

func.func @loss_label_shape(%s: tensor<32x96xf32>, %l: tensor<96xi64>) {
  // expected-error @+2 {{loss labels of shape 96 do not match scores 32x96 (expected 32)}}
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op failed to infer returned types}}
  %0 = memfit.softmax_cross_entropy_loss mean %s, %l : (tensor<32x96xf32>, tensor<96xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_weights_shape(%s: tensor<32x96xf32>, %l: tensor<32xi64>, %w: tensor<32xf32>) {
  // expected-error @+2 {{loss weights of shape 32 must be [96]}}
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op failed to infer returned types}}
  %0 = memfit.softmax_cross_entropy_loss mean %s, %l, %w : (tensor<32x96xf32>, tensor<32xi64>, tensor<32xf32>) -> tensor<f32>
  return
}

// -----

func.func @loss_scores_rank(%s: tensor<96xf32>, %l: tensor<i64>) {
  // expected-error @+2 {{loss scores must be [N, C, ...], got 96}}
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op failed to infer returned types}}
  %0 = memfit.softmax_cross_entropy_loss sum %s, %l : (tensor<96xf32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// Reduction `none` keeps the labels' shape.
func.func @loss_none_result_shape(%s: tensor<32x96xf32>, %l: tensor<32xi64>) {
  // expected-error @+2 {{'memfit.softmax_cross_entropy_loss' op inferred type(s) 'tensor<32xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op failed to infer returned types}}
  %0 = memfit.softmax_cross_entropy_loss none %s, %l : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_unknown_reduction(%s: tensor<32x96xf32>, %l: tensor<32xi64>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'reduction' [none, sum, mean]}}
  %0 = memfit.softmax_cross_entropy_loss average %s, %l : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_float_labels(%s: tensor<32x96xf32>, %l: tensor<32xf32>) {
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<32xf32>'}}
  %0 = memfit.softmax_cross_entropy_loss mean %s, %l : (tensor<32x96xf32>, tensor<32xf32>) -> tensor<f32>
  return
}

// -----

func.func @nll_target_shape(%p: tensor<2x5x16xf32>, %t: tensor<2x5xi64>) {
  // expected-error @+2 {{loss labels of shape 2x5 do not match scores 2x5x16 (expected 2x16)}}
  // expected-error @+1 {{'memfit.negative_log_likelihood_loss' op failed to infer returned types}}
  %0 = memfit.negative_log_likelihood_loss none %p, %t : (tensor<2x5x16xf32>, tensor<2x5xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @nll_weights_shape(%p: tensor<32x96xf32>, %t: tensor<32xi64>, %w: tensor<1x96xf32>) {
  // expected-error @+2 {{loss weights of shape 1x96 must be [96]}}
  // expected-error @+1 {{'memfit.negative_log_likelihood_loss' op failed to infer returned types}}
  %0 = memfit.negative_log_likelihood_loss sum %p, %t, %w : (tensor<32x96xf32>, tensor<32xi64>, tensor<1x96xf32>) -> tensor<f32>
  return
}

// -----

// Reduction `mean` gives a scalar.
func.func @nll_mean_result_shape(%p: tensor<32x96xf32>, %t: tensor<32xi64>) {
  // expected-error @+2 {{'memfit.negative_log_likelihood_loss' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<32xf32>'}}
  // expected-error @+1 {{'memfit.negative_log_likelihood_loss' op failed to infer returned types}}
  %0 = memfit.negative_log_likelihood_loss mean %p, %t : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<32xf32>
  return
}

// -----

func.func @nll_ignore_index_type(%p: tensor<32x96xf32>, %t: tensor<32xi64>) {
  // expected-error @+1 {{'memfit.negative_log_likelihood_loss' op attribute 'ignore_index' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = memfit.negative_log_likelihood_loss mean %p, %t {ignore_index = 1.0 : f32} : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+1 {{'memfit.concat' op needs at least one input}}
  %0 = "memfit.concat"() {axis = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @split_sizes_overflow(%x: tensor<0xf32>) {
  // expected-error @+2 {{split sizes exceed dimension 0 of 0 (0)}}
  // expected-error @+1 {{'memfit.split' op failed to infer returned types}}
  %0:3 = memfit.split %x {axis = 0 : i64, sizes = array<i64: 9223372036854775807, 9223372036854775807, 2>} : tensor<0xf32> -> tensor<9223372036854775807xf32>, tensor<9223372036854775807xf32>, tensor<2xf32>
  return
}

// -----

func.func @layer_norm_scale_element_type(%x: tensor<2x4xf32>, %g: tensor<4xf16>) {
  // expected-error @+1 {{'memfit.layer_norm' op scale element type 'f16' differs from the input's 'f32'}}
  %0 = memfit.layer_norm %x, %g : tensor<2x4xf32>, tensor<4xf16>
  return
}

// -----

func.func @rms_norm_scale_element_type(%x: tensor<2x4xf32>, %g: tensor<4xbf16>) {
  // expected-error @+1 {{'memfit.rms_norm' op scale element type 'bf16' differs from the input's 'f32'}}
  %0 = memfit.rms_norm %x, %g : tensor<2x4xf32>, tensor<4xbf16>
  return
}

// -----

func.func @gemm_element_types(%a: tensor<2x4xf32>, %b: tensor<4x3xf16>) {
  // expected-error @+2 {{gemm operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'memfit.gemm' op failed to infer returned types}}
  %0 = memfit.gemm %a, %b : (tensor<2x4xf32>, tensor<4x3xf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @loss_weights_element_type(%s: tensor<2x4xf32>, %l: tensor<2xi64>, %w: tensor<4xf16>) {
  // expected-error @+2 {{loss weights element type 'f16' differs from the scores' 'f32'}}
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op failed to infer returned types}}
  %0 = memfit.softmax_cross_entropy_loss mean %s, %l, %w : (tensor<2x4xf32>, tensor<2xi64>, tensor<4xf16>) -> tensor<f32>
  return
}

// -----

func.func @and_of_floats(%a: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.and' op operand #0 must be}}
  %0 = memfit.and %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  return
}

// -----

func.func @gather_elements_rank(%d: tensor<4x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{gather_elements needs indices of the data's rank (>= 1), got 3 for data 4x5}}
  // expected-error @+1 {{'memfit.gather_elements' op failed to infer returned types}}
  %0 = memfit.gather_elements %d, %i : tensor<4x5xf32>, tensor<3xi64> -> tensor<3xf32>
  return
}

// -----

func.func @gather_elements_longer(%d: tensor<4x5xf32>, %i: tensor<2x6xi64>) {
  // expected-error @+2 {{gather_elements indices 2x6 are longer than the data 4x5 along axis 1}}
  // expected-error @+1 {{'memfit.gather_elements' op failed to infer returned types}}
  %0 = memfit.gather_elements %d, %i : tensor<4x5xf32>, tensor<2x6xi64> -> tensor<2x6xf32>
  return
}

// -----

func.func @gather_nd_tuple_too_long(%d: tensor<4x5xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+2 {{gather_nd index tuples of 3 entries for data 4x5 with batch_dims 0}}
  // expected-error @+1 {{'memfit.gather_nd' op failed to infer returned types}}
  %0 = memfit.gather_nd %d, %i : tensor<4x5xf32>, tensor<2x3xi64> -> tensor<2xf32>
  return
}

// -----

func.func @gather_nd_batch(%d: tensor<4x5xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+2 {{gather_nd batch dimension 0 differs: data 4x5, indices 3x1}}
  // expected-error @+1 {{'memfit.gather_nd' op failed to infer returned types}}
  %0 = memfit.gather_nd %d, %i {batch_dims = 1 : i64} : tensor<4x5xf32>, tensor<3x1xi64> -> tensor<3xf32>
  return
}

// -----

func.func @cumsum_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'memfit.cumsum' op axis 2 is out of range for rank 2}}
  %0 = memfit.cumsum %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @gather_grad_into_type(%dy: tensor<2x4xf32>, %i: tensor<2xi64>, %g: tensor<6x4xf32>) {
  // expected-error @+1 {{'memfit.gather_grad' op accumulates into 'tensor<6x4xf32>' but its result is 'tensor<5x4xf32>'}}
  %0 = memfit.gather_grad %dy, %i into %g {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>, tensor<6x4xf32>) -> tensor<5x4xf32>
  return
}

// -----

// In a kernel, the value added to must be an input (a buffer to write in
// place), and the sum must be yielded and read by nothing else.
func.func @gather_grad_into_computed(%dy: tensor<2x4xf32>, %i: tensor<2xi64>, %x: tensor<5x4xf32>) {
  // expected-error @+1 {{'memfit.kernel' op a gather_grad into another value must accumulate into a kernel input and be yielded, nothing else reading it}}
  %0 = memfit.kernel(%dy, %i, %x) : (tensor<2x4xf32>, tensor<2xi64>, tensor<5x4xf32>) -> tensor<5x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<2xi64>, %c: tensor<5x4xf32>):
    %e = memfit.exp %c : tensor<5x4xf32>
    %r = memfit.gather_grad %a, %b into %e {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>, tensor<5x4xf32>) -> tensor<5x4xf32>
    memfit.yield %r : tensor<5x4xf32>
  }
  return
}

// -----

func.func @rotary_odd_width(%x: tensor<2x7xf32>, %t: tensor<7xf32>) {
  // expected-error @+1 {{'memfit.rotary' op rotates halves of a last dimension of even size, not 2x7}}
  %0 = memfit.rotary %x, %t, %t : tensor<2x7xf32>, tensor<7xf32>, tensor<7xf32>
  return
}

// -----

func.func @rotary_table_not_broadcast(%x: tensor<2x3x8xf32>, %c: tensor<2x8xf32>) {
  // expected-error @+1 {{'memfit.rotary' op cos and sin must broadcast to the input 'tensor<2x3x8xf32>', not 'tensor<2x8xf32>'}}
  %0 = memfit.rotary %x, %c, %c : tensor<2x3x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}
