// Verifier diagnostics of memfit.kernel and memfit.yield, one case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @input_count_mismatch(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.kernel' op has 2 inputs but its body takes 1 arguments}}
  %0 = memfit.kernel(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    memfit.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @input_type_mismatch(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.kernel' op input 1 has type 'tensor<4xf32>' but body argument 1 has type 'tensor<4xf64>'}}
  %0 = memfit.kernel(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf64>):
    memfit.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @yield_count_mismatch(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{'memfit.kernel' op yields 1 values of types ('tensor<4xf32>') but has results of types ('tensor<4xf32>', 'tensor<4xf32>')}}
  %0:2 = memfit.kernel(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    memfit.yield %a : tensor<4xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @yield_type_mismatch(%x: tensor<2x4xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'memfit.kernel' op yields 1 values of types ('tensor<2x4xf32>') but has results of types ('tensor<2x1xf32>')}}
  %0 = memfit.kernel(%x) : (tensor<2x4xf32>) -> tensor<2x1xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    %e = memfit.exp %a : tensor<2x4xf32>
    memfit.yield %e : tensor<2x4xf32>
  }
  return %0 : tensor<2x1xf32>
}

// -----

func.func @body_must_end_with_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.kernel' op body must end with memfit.yield}}
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = memfit.exp %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @body_not_empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.kernel' op expects a non-empty block}}
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @single_block(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.kernel' op expects region #0 to have 0 or 1 blocks}}
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    memfit.yield %a : tensor<4xf32>
  ^bb1:
    memfit.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @no_contraction_inside(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'memfit.kernel' op cannot contain 'memfit.matmul': kernels hold element-wise, normalization, reduction, data-movement and loss ops}}
  %0 = memfit.kernel(%x, %w) : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>):
    %m = memfit.matmul %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
    memfit.yield %m : tensor<2x4xf32>
  }
  return %0 : tensor<2x4xf32>
}

// -----

memfit.parameter @w = dense<1.0> : tensor<4xf32>

func.func @no_load_parameter_inside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.kernel' op cannot contain 'memfit.load_parameter'}}
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %w = memfit.load_parameter @w : tensor<4xf32>
    %s = memfit.add %a, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    memfit.yield %s : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Kernels do not nest: memfit.kernel has no op class.
func.func @no_kernel_inside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.kernel' op cannot contain 'memfit.kernel'}}
  %0 = memfit.kernel(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = memfit.kernel(%a) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      memfit.yield %b : tensor<4xf32>
    }
    memfit.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @isolated_from_above(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = memfit.kernel() : () -> tensor<4xf32> {
    // expected-error @+1 {{'memfit.exp' op using value defined outside the region}}
    %e = memfit.exp %x : tensor<4xf32>
    memfit.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @yield_parent_is_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memfit.yield' op expects parent op 'memfit.kernel'}}
  memfit.yield %x : tensor<4xf32>
}

// -----

func.func @segments_do_not_split(%x: tensor<4xf32>, %y: tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  // expected-error @+1 {{'memfit.kernel' op memfit.segments array<i64: 1> does not split its 2 results}}
  %0:2 = memfit.kernel(%x, %y) {memfit.segments = array<i64: 1>} : (tensor<4xf32>, tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<2xf32>):
    %e = memfit.exp %a : tensor<4xf32>
    %f = memfit.exp %b : tensor<2xf32>
    memfit.yield %e, %f : tensor<4xf32>, tensor<2xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<2xf32>
}

// -----

func.func @segment_shapes(%x: tensor<4xf32>, %y: tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  // expected-error @+1 {{'memfit.kernel' op results 0 and 1 of one segment differ in shape}}
  %0:2 = memfit.kernel(%x, %y) {memfit.segments = array<i64: 2>} : (tensor<4xf32>, tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<2xf32>):
    %e = memfit.exp %a : tensor<4xf32>
    %f = memfit.exp %b : tensor<2xf32>
    memfit.yield %e, %f : tensor<4xf32>, tensor<2xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<2xf32>
}
