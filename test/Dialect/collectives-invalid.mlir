// Verifier and shape-inference diagnostics of the collectives; each case
// is named after the rule it breaks.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @empty_group(%g: tensor<4xf32>) {
  // expected-error @+1 {{group_size 0 must be at least 1}}
  %0 = memfit.all_reduce sum %g {group_size = 0} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @ranks_do_not_fill_the_group(%g: tensor<4xf32>) {
  // expected-error @+1 {{lists 1 ranks for a group of 2}}
  %0 = memfit.all_reduce sum %g {group_size = 2, ranks = array<i64: 0>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @rank_twice(%g: tensor<4xf32>) {
  // expected-error @+1 {{lists rank 1 twice}}
  %0 = memfit.all_gather %g {group_size = 2, ranks = array<i64: 1, 1>} : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @negative_rank(%g: tensor<4xf32>) {
  // expected-error @+1 {{rank -1 is negative}}
  %0 = memfit.broadcast %g {group_size = 2, ranks = array<i64: -1, 0>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @mean_of_integers(%n: tensor<4xi64>) {
  // expected-error @+1 {{mean over the ranks needs a float type, not 'i64'}}
  %0 = memfit.all_reduce mean %n {group_size = 2} : tensor<4xi64> -> tensor<4xi64>
  return
}

// -----

func.func @uneven_scatter(%g: tensor<6xf32>) {
  // expected-error @+2 {{dimension 0 (6) does not split into 4 equal slices}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = memfit.reduce_scatter sum %g {group_size = 4} : tensor<6xf32> -> tensor<1xf32>
  return
}

// -----

func.func @scatter_a_scalar(%g: tensor<f32>) {
  // expected-error @+2 {{needs a tensor of rank 1 or more}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = memfit.reduce_scatter sum %g {group_size = 1} : tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @gather_result_type(%g: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = memfit.all_gather %g {group_size = 2} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @root_outside(%g: tensor<4xf32>) {
  // expected-error @+1 {{root 2 is outside the group of 2}}
  %0 = memfit.broadcast %g {group_size = 2, root = 2} : tensor<4xf32> -> tensor<4xf32>
  return
}
