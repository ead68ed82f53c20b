// Diagnostics of the CUDA emitter: IR it cannot emit, each case named after
// the rule it checks. Kernels are written by hand where a case needs one.
// RUN: memfit-translate %s --memfit-to-cuda -verify-diagnostics -split-input-file

// gather_grad accumulates into its result, which in 16 bits would round at
// every addition.
func.func @gather_grad_half(%g: tensor<2x3x4xbf16>, %i: tensor<2x3xi64>) -> tensor<5x4xbf16> {
  %0 = memfit.kernel(%g, %i) : (tensor<2x3x4xbf16>, tensor<2x3xi64>) -> tensor<5x4xbf16> {
  ^bb0(%a: tensor<2x3x4xbf16>, %b: tensor<2x3xi64>):
    // expected-error @+1 {{cannot emit CUDA for 'memfit.gather_grad': unsupported element type 'bf16'}}
    %s = memfit.gather_grad %a, %b {axis = 0 : i64} : (tensor<2x3x4xbf16>, tensor<2x3xi64>) -> tensor<5x4xbf16>
    memfit.yield %s : tensor<5x4xbf16>
  }
  return %0 : tensor<5x4xbf16>
}

// -----

// A buffer whose element type the runtime does not know.
// expected-error @+1 {{the runtime has no element type for 'tensor<4xi24>'}}
func.func @runtime_element_type(%x: tensor<4xi24>) -> tensor<4xi24> {
  return %x : tensor<4xi24>
}

// -----

// The emitter takes a function formed into kernels.
func.func @not_formed_into_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.exp' has no place in a memory plan: run memfit-form-kernels first}}
  %0 = memfit.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A kernel holds row ops of one frame only (one input shape, the same
// axes): a softmax over the last axis and a sum over the first do not
// share their rows.
func.func @one_row_frame_per_kernel(%x: tensor<4x8xf32>) -> tensor<1x8xf32> {
  %0 = memfit.kernel(%x) : (tensor<4x8xf32>) -> tensor<1x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %s = memfit.softmax %a : tensor<4x8xf32>
    // expected-error @+1 {{cannot emit CUDA for 'memfit.reduce_sum': a kernel holds at most one normalization, reduction, loss or split (also has 'memfit.softmax')}}
    %r = memfit.reduce_sum %s {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<1x8xf32>
    memfit.yield %r : tensor<1x8xf32>
  }
  return %0 : tensor<1x8xf32>
}

// -----

// Element-wise ops join a loss (or a row op of integers) in no kernel.
func.func @no_elementwise_with_loss(%x: tensor<4x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %0 = memfit.kernel(%x, %t) : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4xi64>):
    // expected-error @+1 {{cannot emit CUDA for 'memfit.exp': fusing element-wise ops with 'memfit.softmax_cross_entropy_loss' is not supported by the emitter yet}}
    %e = memfit.exp %a : tensor<4x8xf32>
    %l = memfit.softmax_cross_entropy_loss mean %e, %b : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
    memfit.yield %l : tensor<f32>
  }
  return %0 : tensor<f32>
}

// -----

// Literals: only a splat constant is a scalar the kernel can write.
func.func @only_splat_constants(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{cannot emit CUDA for 'memfit.constant': only splat constants can be kernel literals}}
    %c = memfit.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %s = memfit.add %a, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    memfit.yield %s : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Data movement reads kernel inputs, not values computed in the kernel.
func.func @data_movement_of_computed_value(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = memfit.kernel(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    %e = memfit.exp %a : tensor<4x4xf32>
    // expected-error @+1 {{cannot emit CUDA for 'memfit.transpose': data movement of a value computed in the same kernel is not supported}}
    %t = memfit.transpose %e {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    memfit.yield %t : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

// A pointwise kernel has one domain: every result has its shape and every
// input broadcasts to it.
func.func @results_of_one_shape(%x: tensor<2x4xf32>, %y: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{cannot emit CUDA for 'memfit.kernel': results of different shapes need a split}}
  %0:2 = memfit.kernel(%x, %y) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<4xf32>):
    %e = memfit.exp %a : tensor<2x4xf32>
    %f = memfit.exp %b : tensor<4xf32>
    memfit.yield %e, %f : tensor<2x4xf32>, tensor<4xf32>
  }
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<4xf32>
}

// -----

func.func @inputs_broadcast_to_domain(%x: tensor<2x4xf32>, %y: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{cannot emit CUDA for 'memfit.kernel': input 1 of shape 3 does not broadcast to the kernel's shape 2x4}}
  %0 = memfit.kernel(%x, %y) : (tensor<2x4xf32>, tensor<3xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<3xf32>):
    %e = memfit.exp %b : tensor<3xf32>
    memfit.yield %a : tensor<2x4xf32>
  }
  return %0 : tensor<2x4xf32>
}

// -----

func.func @kernel_has_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{cannot emit CUDA for 'memfit.kernel': a kernel without results}}
  memfit.kernel(%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>):
    memfit.yield
  }
  return
}

// -----

// Contractions go to cuBLASLt or a host BLAS in f32, f64, f16 or bf16.
func.func @contraction_element_type(%x: tensor<2x8xi64>, %y: tensor<8x4xi64>) -> tensor<2x4xi64> {
  // expected-error @+1 {{contractions run in f32, f64, f16 or bf16, not 'i64'}}
  %0 = memfit.matmul %x, %y : tensor<2x8xi64>, tensor<8x4xi64> -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

// Data-movement index mappings use the kernel's own coordinates, so their
// result must have the kernel's shape (regression: a smaller transpose
// result broadcast inside a kernel read with the wrong coordinates).
func.func @data_movement_result_smaller_than_kernel(%x: tensor<2x4xf32>, %y: tensor<3x4x2xf32>) -> tensor<3x4x2xf32> {
  %0 = memfit.kernel(%x, %y) : (tensor<2x4xf32>, tensor<3x4x2xf32>) -> tensor<3x4x2xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<3x4x2xf32>):
    // expected-error @+1 {{cannot emit CUDA for 'memfit.transpose': a data-movement result of shape 4x2 inside a kernel of shape 3x4x2 is not supported}}
    %t = memfit.transpose %a {perm = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
    %s = memfit.add %t, %b : tensor<4x2xf32>, tensor<3x4x2xf32> -> tensor<3x4x2xf32>
    memfit.yield %s : tensor<3x4x2xf32>
  }
  return %0 : tensor<3x4x2xf32>
}

// -----

// A value computed in the kernel exists at the kernel's index only; it
// cannot be broadcast.
func.func @intermediate_broadcast(%x: tensor<4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = memfit.kernel(%x, %y) : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<3x4xf32>):
    // expected-error @+1 {{cannot emit CUDA for 'memfit.exp': an intermediate value of shape 4 is broadcast inside the kernel of shape 3x4}}
    %e = memfit.exp %a : tensor<4xf32>
    %s = memfit.add %e, %b : tensor<4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
    memfit.yield %s : tensor<3x4xf32>
  }
  return %0 : tensor<3x4xf32>
}

// -----

// Row templates read their operands from buffers: a constant defined inside
// the kernel cannot feed a layer norm.
func.func @row_operand_defined_in_kernel(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = memfit.kernel(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    %ones = memfit.constant dense<1.0> : tensor<4xf32>
    // expected-error @+1 {{cannot emit CUDA for 'memfit.layer_norm': operands must be kernel inputs, not values defined in the kernel}}
    %n = memfit.layer_norm %a, %ones : tensor<2x4xf32>, tensor<4xf32>
    memfit.yield %n : tensor<2x4xf32>
  }
  return %0 : tensor<2x4xf32>
}

// -----

// Every value computed in a kernel needs a CUDA type, not only its inputs
// and results (regression: an f16 intermediate crashed the emitter, before f16 had one).
// Since the verifiers check element types, a type no kernel stores
// (f8E8M0FNU, which ONNX has and memfit does not) is refused before the
// emitter sees it.
func.func @unsupported_intermediate_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{'memfit.cast' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8- or 4-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer or 1-bit signless integer values, but got 'tensor<4xf8E8M0FNU>'}}
    %h = memfit.cast %a : tensor<4xf32> to tensor<4xf8E8M0FNU>
    %f = memfit.cast %h : tensor<4xf8E8M0FNU> to tensor<4xf32>
    memfit.yield %f : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Views reshape buffers between kernels; inside a kernel they are not
// supported yet.
func.func @view_inside_kernel(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{cannot emit CUDA for 'memfit.reshape': views are not supported inside kernels}}
    %r = memfit.reshape %a : tensor<4xf32> to tensor<2x2xf32>
    memfit.yield %r : tensor<2x2xf32>
  }
  return %0 : tensor<2x2xf32>
}

// -----

// A contraction over an empty dimension has no library call.
func.func @matmul_empty_k(%a: tensor<3x0xf32>, %b: tensor<0x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{a contraction over an empty dimension (k = 0) is not supported}}
  %0 = memfit.matmul %a, %b : tensor<3x0xf32>, tensor<0x4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Element types the plan cannot size are diagnosed, not asserted on.
// expected-error @+1 {{memory plan needs integer or float elements, got 'tensor<4xindex>'}}
func.func @index_elements(%x: tensor<4xindex>) -> tensor<4xindex> {
  return %x : tensor<4xindex>
}
