// Element types of memfit.kernel and memfit.yield: inputs and results of
// the element types memfit holds, body arguments of the inputs' types,
// yielded values of the results' types; the ops of the body are checked
// as anywhere else. One case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @kernel_input_of_index(%x: tensor<4xindex>) {
  // expected-error @+1 {{'memfit.kernel' op operand #0 must be variadic of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<4xindex>'}}
  %0 = memfit.kernel(%x) : (tensor<4xindex>) -> tensor<4xindex> {
  ^bb0(%a: tensor<4xindex>):
    memfit.yield %a : tensor<4xindex>
  }
  return
}

// -----

func.func @kernel_argument_of_another_type(%x: tensor<4xi32>) {
  // expected-error @+1 {{'memfit.kernel' op input 0 has type 'tensor<4xi32>' but body argument 0 has type 'tensor<4xi64>'}}
  %0 = memfit.kernel(%x) : (tensor<4xi32>) -> tensor<4xi32> {
  ^bb0(%a: tensor<4xi64>):
    %t = memfit.cast %a : tensor<4xi64> to tensor<4xi32>
    memfit.yield %t : tensor<4xi32>
  }
  return
}

// -----

func.func @yield_of_another_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.kernel' op yields 1 values of types ('tensor<4xf32>') but has results of types ('tensor<4xf16>')}}
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%a: tensor<4xf32>):
    memfit.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @body_op_of_the_wrong_type(%x: tensor<4xi32>) {
  %0 = memfit.kernel(%x) : (tensor<4xi32>) -> tensor<4xi32> {
  ^bb0(%a: tensor<4xi32>):
    // expected-error @+1 {{'memfit.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
    %e = memfit.exp %a : tensor<4xi32>
    memfit.yield %e : tensor<4xi32>
  }
  return
}
