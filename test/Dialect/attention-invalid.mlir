// Verifier and shape-inference diagnostics of memfit.attention and its
// gradient ops; each case is named after the rule it breaks.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @rank_not_4(%q: tensor<4x16x8xf32>, %k: tensor<4x16x8xf32>, %v: tensor<4x16x8xf32>) {
  // expected-error @+2 {{attention takes query, key and value of rank 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = memfit.attention %q, %k, %v scale 0.125 : (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @head_sizes_differ(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+2 {{do not match query}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = memfit.attention %q, %k, %v scale 0.125 : (tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @query_heads_not_a_multiple(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+2 {{attention query heads (3) must be a multiple of key heads (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = memfit.attention %q, %k, %v scale 0.125 : (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x3x4x8xf32>, tensor<1x3x4xf32>)
  return
}

// -----

func.func @mask_does_not_broadcast(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<3x4xi1>) {
  // expected-error @+2 {{attention mask of shape 3x4 does not broadcast to 1x2x4x4}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = memfit.attention %q, %k, %v mask %m scale 0.125 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<3x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @mask_of_another_float_type(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xf16>) {
  // expected-error @+1 {{mask must be boolean or of the query's type 'f32', got 'f16'}}
  %o, %l = memfit.attention %q, %k, %v mask %m scale 0.125 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf16>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @types_differ(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xbf16>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'memfit.attention' op key element type 'bf16' differs from the query's 'f32'}}
  %o, %l = memfit.attention %q, %k, %v scale 0.125 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @scale_zero(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{scale must be finite and nonzero, got 0}}
  %o, %l = memfit.attention %q, %k, %v scale 0.0 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @logsumexp_not_f32(%q: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf16>, %d: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{logsumexp must be tensor<1x2x4xf32>, got 'tensor<1x2x4xf16>'}}
  %dq = memfit.attention_grad_query %q, %q, %q, %lse, %d, %do scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf16>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @dresult_not_the_result_type(%q: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>, %do: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{dresult must be 'tensor<1x2x4x8xf32>' (the result's type)}}
  %dk, %dv = memfit.attention_grad_key_value %q, %q, %q, %lse, %lse, %do scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @dropout_ratio_one(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{dropout_ratio must be in [0, 1), got 1}}
  %o, %l = memfit.attention %q, %k, %v scale 0.125 {dropout_ratio = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @dropout_ratio_negative(%q: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{dropout_ratio must be in [0, 1), got -5.000000e-01}}
  %dq = memfit.attention_grad_query %q, %q, %q, %lse, %lse, %do scale 0.5 {dropout_ratio = -0.5 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @dropout_ratio_nan(%q: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{dropout_ratio must be in [0, 1), got nan}}
  %dk, %dv = memfit.attention_grad_key_value %q, %q, %q, %lse, %lse, %do scale 0.5 {dropout_ratio = 0x7FC00000 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @step_before_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>, %s: tensor<i64>) {
  // expected-error @+1 {{takes at most a mask and then a dropout step (tensor<i64>) after its operands, got 2 more operands}}
  %o, %lse = "memfit.attention"(%q, %k, %v, %s, %m) {scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<i64>, tensor<4x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @two_steps(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{takes at most a mask and then a dropout step (tensor<i64>) after its operands, got 2 more operands}}
  %o, %lse = "memfit.attention"(%q, %k, %v, %s, %s) {scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<i64>, tensor<i64>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}
