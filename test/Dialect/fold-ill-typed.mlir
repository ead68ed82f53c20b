// Folders read constant operands only through the element types their op's
// definition promises, and give up otherwise: IR that no verifier has seen
// (a pattern's intermediate state; here IR parsed without verification)
// folds nothing it cannot read, and never crashes. Before, a gather with
// float indices read them as integers and died (issue 37).
// RUN: memfit-opt %s --mlir-very-unsafe-disable-verifier-on-parsing \
// RUN:   --verify-each=false --canonicalize --mlir-print-op-generic | FileCheck %s

// CHECK-LABEL: sym_name = "gather_float_indices"
// CHECK: "memfit.gather"
func.func @gather_float_indices() -> tensor<2x3xi64> {
  %d = memfit.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %i = memfit.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %y = memfit.gather %d, %i {axis = 0 : i64} : tensor<2x3xi64>, tensor<2xf32> -> tensor<2x3xi64>
  return %y : tensor<2x3xi64>
}

// CHECK-LABEL: sym_name = "gather_elements_float_indices"
// CHECK: "memfit.gather_elements"
func.func @gather_elements_float_indices() -> tensor<2xf32> {
  %f = memfit.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = "memfit.gather_elements"(%f, %f) {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// CHECK-LABEL: sym_name = "gather_nd_bool_indices"
// CHECK: "memfit.gather_nd"
func.func @gather_nd_bool_indices() -> tensor<1xi64> {
  %d = memfit.constant dense<[5, 6]> : tensor<2xi64>
  %i = memfit.constant dense<[[true]]> : tensor<1x1xi1>
  %y = "memfit.gather_nd"(%d, %i) : (tensor<2xi64>, tensor<1x1xi1>) -> tensor<1xi64>
  return %y : tensor<1xi64>
}

// A constant whose value is not of its result's type (no verifier ran).
// CHECK-LABEL: sym_name = "add_float_bits_as_integers"
// CHECK: "memfit.add"
func.func @add_float_bits_as_integers() -> tensor<2xi64> {
  %a = "memfit.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xi64>
  %b = memfit.constant dense<[1, 2]> : tensor<2xi64>
  %y = "memfit.add"(%a, %b) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %y : tensor<2xi64>
}

// CHECK-LABEL: sym_name = "neg_mistyped_constant"
// CHECK: "memfit.neg"
func.func @neg_mistyped_constant() -> tensor<2xi64> {
  %a = "memfit.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xi64>
  %y = "memfit.neg"(%a) : (tensor<2xi64>) -> tensor<2xi64>
  return %y : tensor<2xi64>
}

// CHECK-LABEL: sym_name = "less_of_two_widths"
// CHECK: "memfit.less"
func.func @less_of_two_widths() -> tensor<2xi1> {
  %a = memfit.constant dense<[1, 2]> : tensor<2xi64>
  %b = memfit.constant dense<[2, 1]> : tensor<2xi32>
  %y = "memfit.less"(%a, %b) : (tensor<2xi64>, tensor<2xi32>) -> tensor<2xi1>
  return %y : tensor<2xi1>
}

// CHECK-LABEL: sym_name = "pow_integer_base_float_result"
// CHECK: "memfit.pow"
func.func @pow_integer_base_float_result() -> tensor<2xf32> {
  %a = memfit.constant dense<[1, 2]> : tensor<2xi64>
  %b = memfit.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %y = "memfit.pow"(%a, %b) : (tensor<2xi64>, tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// CHECK-LABEL: sym_name = "where_integer_condition"
// CHECK: "memfit.where"
func.func @where_integer_condition() -> tensor<2xi64> {
  %c = memfit.constant dense<[1, 0]> : tensor<2xi64>
  %y = "memfit.where"(%c, %c, %c) : (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %y : tensor<2xi64>
}

// CHECK-LABEL: sym_name = "not_of_floats"
// CHECK: "memfit.not"
func.func @not_of_floats() -> tensor<2xi1> {
  %f = memfit.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %y = "memfit.not"(%f) : (tensor<2xf32>) -> tensor<2xi1>
  return %y : tensor<2xi1>
}

// CHECK-LABEL: sym_name = "cast_mistyped_constant"
// CHECK: "memfit.cast"
func.func @cast_mistyped_constant() -> tensor<2xf32> {
  %a = "memfit.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xi64>
  %y = "memfit.cast"(%a) : (tensor<2xi64>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// CHECK-LABEL: sym_name = "cumsum_mistyped_constant"
// CHECK: "memfit.cumsum"
func.func @cumsum_mistyped_constant() -> tensor<2xi64> {
  %a = "memfit.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xi64>
  %y = "memfit.cumsum"(%a) {axis = 0 : i64} : (tensor<2xi64>) -> tensor<2xi64>
  return %y : tensor<2xi64>
}

// CHECK-LABEL: sym_name = "trilu_mistyped_constant"
// CHECK: "memfit.trilu"
func.func @trilu_mistyped_constant() -> tensor<2x2xi64> {
  %a = "memfit.constant"() {value = dense<1.0> : tensor<2x2xf32>} : () -> tensor<2x2xi64>
  %y = "memfit.trilu"(%a) : (tensor<2x2xi64>) -> tensor<2x2xi64>
  return %y : tensor<2x2xi64>
}

// Data movement of a constant into a result of another element type.
// CHECK-LABEL: sym_name = "reshape_changes_element_type"
// CHECK: "memfit.reshape"
func.func @reshape_changes_element_type() -> tensor<2x1xi64> {
  %f = memfit.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = "memfit.reshape"(%f) : (tensor<2xf32>) -> tensor<2x1xi64>
  return %y : tensor<2x1xi64>
}

// CHECK-LABEL: sym_name = "transpose_changes_element_type"
// CHECK: "memfit.transpose"
func.func @transpose_changes_element_type() -> tensor<2xf32> {
  %a = memfit.constant dense<[1, 2]> : tensor<2xi64>
  %y = "memfit.transpose"(%a) {perm = array<i64: 0>} : (tensor<2xi64>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// CHECK-LABEL: sym_name = "concat_of_two_types"
// CHECK: "memfit.concat"
func.func @concat_of_two_types() -> tensor<4xi64> {
  %f = memfit.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %i = memfit.constant dense<[1, 2]> : tensor<2xi64>
  %y = "memfit.concat"(%f, %i) {axis = 0 : i64} : (tensor<2xf32>, tensor<2xi64>) -> tensor<4xi64>
  return %y : tensor<4xi64>
}

// CHECK-LABEL: sym_name = "range_float_start_integer_result"
// CHECK: "memfit.range"
func.func @range_float_start_integer_result() -> tensor<4xi64> {
  %y = "memfit.range"() {start = 0.0 : f32, delta = 1 : i64} : () -> tensor<4xi64>
  return %y : tensor<4xi64>
}
