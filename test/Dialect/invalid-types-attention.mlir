// Element types of attention and its gradient ops: query, key and value
// of one float type, a mask boolean or of that type, the log-sum-exp and
// delta f32, dresult of the query's type. One case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @attention_of_integers(%q: tensor<1x2x4x8xi32>) {
  // expected-error @+1 {{'memfit.attention' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<1x2x4x8xi32>'}}
  %o, %l = memfit.attention %q, %q, %q scale 0.125 : (tensor<1x2x4x8xi32>, tensor<1x2x4x8xi32>, tensor<1x2x4x8xi32>) -> (tensor<1x2x4x8xi32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @attention_value_of_another_type(%q: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'memfit.attention' op value element type 'f32' differs from the query's 'f16'}}
  %o, %l = memfit.attention %q, %q, %v scale 0.125 : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf16>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @attention_integer_mask(%q: tensor<1x2x4x8xf32>, %m: tensor<4x4xi32>) {
  // expected-error @+1 {{'memfit.attention' op operand #3 must be variadic of statically shaped tensor of 1-bit signless integer or 16-bit float or bfloat16 type or 32-bit float or 64-bit float values or 0D tensor of 64-bit signless integer values, but got 'tensor<4x4xi32>'}}
  %o, %l = memfit.attention %q, %q, %q mask %m scale 0.125 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xi32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @attention_mask_of_another_float(%q: tensor<1x2x4x8xbf16>, %m: tensor<4x4xf32>) {
  // expected-error @+1 {{'memfit.attention' op mask must be boolean or of the query's type 'bf16', got 'f32'}}
  %o, %l = memfit.attention %q, %q, %q mask %m scale 0.125 : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<4x4xf32>) -> (tensor<1x2x4x8xbf16>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @attention_logsumexp_of_another_type(%q: tensor<1x2x4x8xbf16>) {
  // expected-error @+2 {{'memfit.attention' op inferred type(s) 'tensor<1x2x4x8xbf16>', 'tensor<1x2x4xf32>' are incompatible with return type(s) of operation 'tensor<1x2x4x8xbf16>', 'tensor<1x2x4xbf16>'}}
  // expected-error @+1 {{'memfit.attention' op failed to infer returned types}}
  %o, %l = memfit.attention %q, %q, %q scale 0.125 : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>) -> (tensor<1x2x4x8xbf16>, tensor<1x2x4xbf16>)
  return
}

// -----

func.func @grad_query_logsumexp_of_bf16(%q: tensor<1x2x4x8xbf16>, %lse: tensor<1x2x4xbf16>, %d: tensor<1x2x4xf32>) {
  // expected-error @+1 {{'memfit.attention_grad_query' op logsumexp must be tensor<1x2x4xf32>, got 'tensor<1x2x4xbf16>'}}
  %dq = memfit.attention_grad_query %q, %q, %q, %lse, %d, %q scale 0.125 : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4xbf16>, tensor<1x2x4xf32>, tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16>
  return
}

// -----

func.func @grad_key_value_integer_delta(%q: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>, %d: tensor<1x2x4xi32>) {
  // expected-error @+1 {{'memfit.attention_grad_key_value' op operand #4 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<1x2x4xi32>'}}
  %dk, %dv = memfit.attention_grad_key_value %q, %q, %q, %lse, %d, %q scale 0.125 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xi32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @grad_query_dresult_of_another_type(%q: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf16>) {
  // expected-error @+1 {{'memfit.attention_grad_query' op dresult must be 'tensor<1x2x4x8xf32>' (the result's type), got 'tensor<1x2x4x8xf16>'}}
  %dq = memfit.attention_grad_query %q, %q, %q, %lse, %lse, %do scale 0.125 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @grad_key_value_key_of_another_type(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf64>, %lse: tensor<1x2x4xf32>) {
  // expected-error @+1 {{'memfit.attention_grad_key_value' op key element type 'f64' differs from the query's 'f32'}}
  %dk, %dv = memfit.attention_grad_key_value %q, %k, %q, %lse, %lse, %q scale 0.125 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf64>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf64>, tensor<1x2x4x8xf32>)
  return
}
