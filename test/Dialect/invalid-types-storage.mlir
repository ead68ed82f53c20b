// Element types of parameters, constants, range and assign: every weight
// and constant is of an element type memfit holds; a read or write of a
// parameter has its type; a range is of ONNX Range's types, its start and
// delta of its element type. One case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'memfit.parameter' op attribute 'value' failed to satisfy constraint: elements attribute of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer}}
memfit.parameter @index_weight = dense<1> : tensor<2xindex>

// -----

// expected-error @+1 {{'memfit.parameter' op attribute 'value' failed to satisfy constraint: elements attribute of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer}}
memfit.parameter @wide_weight = dense<1> : tensor<2xi128>

// -----

memfit.parameter @w = dense<1.0> : tensor<2xf32>
func.func @load_parameter_of_another_type() {
  // expected-error @+1 {{'memfit.load_parameter' op result type 'tensor<2xbf16>' differs from parameter type 'tensor<2xf32>'}}
  %0 = memfit.load_parameter @w : tensor<2xbf16>
  return
}

// -----

memfit.parameter @w = dense<1.0> : tensor<2xf32>
func.func @assign_of_another_type(%x: tensor<2xf16>) {
  // expected-error @+1 {{'memfit.assign' op value type 'tensor<2xf16>' differs from parameter type 'tensor<2xf32>'}}
  memfit.assign @w, %x : tensor<2xf16>
  return
}

// -----

func.func @constant_of_index() {
  // expected-error @+1 {{'memfit.constant' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<2xindex>'}}
  %0 = memfit.constant dense<1> : tensor<2xindex>
  return
}

// -----

func.func @constant_value_of_another_type() {
  // expected-error @+1 {{'memfit.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "memfit.constant"() {value = dense<1> : tensor<2xi32>} : () -> tensor<2xi64>
  return
}

// -----

func.func @range_of_unsigned() {
  // expected-error @+1 {{'memfit.range' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xui32>'}}
  %0 = memfit.range {start = 0 : ui32, delta = 1 : ui32} : tensor<4xui32>
  return
}

// -----

func.func @range_of_booleans() {
  // expected-error @+1 {{'memfit.range' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = memfit.range {start = false, delta = true} : tensor<4xi1>
  return
}

// -----

func.func @range_float_start_integer_result() {
  // expected-error @+1 {{'memfit.range' op start and delta must be of the element type 'i64'}}
  %0 = memfit.range {start = 0.0 : f32, delta = 1 : i64} : tensor<4xi64>
  return
}

// -----

func.func @assign_of_index(%x: tensor<2xindex>) {
  // expected-error @+1 {{'memfit.assign' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<2xindex>'}}
  memfit.assign @w, %x : tensor<2xindex>
  return
}
