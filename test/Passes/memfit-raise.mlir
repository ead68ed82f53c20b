// memfit-raise: the spelled-out GELU, RMSNorm, LayerNorm, softmax and
// rotary embeddings of the exporters become the named ops; near misses stay
// as they are.
// RUN: memfit-opt %s -split-input-file --memfit-raise | FileCheck %s
// Each exporter's spelling in the fixtures: Hugging Face-style modules
// exported by torch.onnx (TorchScript and dynamo).
// RUN: memfit-opt %models/bert_ts.onnx --input-shape=batch=2,seq=16 --canonicalize '--memfit-raise=report=-' -o /dev/null | FileCheck %s --check-prefix=BERT
// RUN: memfit-opt %models/llama_ts.onnx --input-shape=batch=2,seq=16 --canonicalize '--memfit-raise=report=-' -o /dev/null | FileCheck %s --check-prefix=LLAMA
// RUN: memfit-opt %models/llama_dynamo.onnx --input-shape=batch=2,seq=16 --canonicalize '--memfit-raise=report=-' -o /dev/null | FileCheck %s --check-prefix=LLAMA
// BERT: memfit-raise: 2 gelu, 0 layer_norm, 0 rms_norm, 0 softmax, 0 rotary raised
// LLAMA: memfit-raise: 0 gelu, 0 layer_norm, 5 rms_norm, 0 softmax, 4 rotary raised

// GELU with erf as the TorchScript exporter writes BERT's: the product
// grouped as (x * (erf(x / sqrt(2)) + 1)) * 0.5.
// CHECK-LABEL: func.func @gelu_erf
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[G:.+]] = memfit.gelu none %[[X]] : tensor<2x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = memfit.constant dense<5.000000e-01> : tensor<f32>
  %sqrt2 = memfit.constant dense<1.41421354> : tensor<f32>
  %one = memfit.constant dense<1.000000e+00> : tensor<f32>
  %0 = memfit.div %x, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = memfit.erf %0 : tensor<2x8xf32>
  %2 = memfit.add %1, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %3 = memfit.mul %x, %2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = memfit.mul %3, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  return %4 : tensor<2x8xf32>
}

// -----

// GELU with erf, multiplied by 1/sqrt(2), 0.5 first.
// CHECK-LABEL: func.func @gelu_erf_mul
// CHECK-NEXT: memfit.gelu none
// CHECK-NEXT: return
func.func @gelu_erf_mul(%x: tensor<8xf32>) -> tensor<8xf32> {
  %half = memfit.constant dense<5.000000e-01> : tensor<f32>
  %rsqrt2 = memfit.constant dense<0.707106769> : tensor<f32>
  %one = memfit.constant dense<1.000000e+00> : tensor<f32>
  %0 = memfit.mul %rsqrt2, %x : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  %1 = memfit.erf %0 : tensor<8xf32>
  %2 = memfit.add %one, %1 : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  %3 = memfit.mul %half, %x : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  %4 = memfit.mul %3, %2 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %4 : tensor<8xf32>
}

// -----

// GPT-2's gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 *
// pow(x, 3)))).
// CHECK-LABEL: func.func @gelu_tanh_pow
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[G:.+]] = memfit.gelu tanh %[[X]] : tensor<2x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh_pow(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %one = memfit.constant dense<1.000000e+00> : tensor<f32>
  %half = memfit.constant dense<5.000000e-01> : tensor<f32>
  %k = memfit.constant dense<0.797884583> : tensor<f32>
  %c = memfit.constant dense<4.471500e-02> : tensor<f32>
  %three = memfit.constant dense<3.000000e+00> : tensor<f32>
  %0 = memfit.pow %x, %three : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = memfit.mul %0, %c : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %2 = memfit.add %x, %1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %3 = memfit.mul %2, %k : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %4 = memfit.tanh %3 : tensor<2x8xf32>
  %5 = memfit.mul %x, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %6 = memfit.add %4, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %7 = memfit.mul %5, %6 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %7 : tensor<2x8xf32>
}

// -----

// torch's tanh GELU decomposed: x * x * x, and the inner sum as
// x * (1 + 0.044715 * x * x).
// CHECK-LABEL: func.func @gelu_tanh_products
// CHECK-NEXT: memfit.gelu tanh
// CHECK-NEXT: memfit.gelu tanh
// CHECK-NEXT: memfit.add
// CHECK-NEXT: return
func.func @gelu_tanh_products(%x: tensor<8xf32>) -> tensor<8xf32> {
  %one = memfit.constant dense<1.000000e+00> : tensor<f32>
  %half = memfit.constant dense<5.000000e-01> : tensor<f32>
  %k = memfit.constant dense<0.797884583> : tensor<f32>
  %c = memfit.constant dense<4.471500e-02> : tensor<f32>
  %0 = memfit.mul %x, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %1 = memfit.mul %0, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %2 = memfit.mul %c, %1 : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  %3 = memfit.add %2, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %4 = memfit.mul %k, %3 : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  %5 = memfit.tanh %4 : tensor<8xf32>
  %6 = memfit.add %one, %5 : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  %7 = memfit.mul %half, %x : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  %8 = memfit.mul %7, %6 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %s = memfit.mul %x, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %t = memfit.mul %s, %c : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %u = memfit.add %t, %one : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %v = memfit.mul %x, %u : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %w = memfit.mul %v, %k : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %y = memfit.tanh %w : tensor<8xf32>
  %z = memfit.add %y, %one : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %p = memfit.mul %z, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %q = memfit.mul %p, %half : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %r = memfit.add %8, %q : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Near misses stay: a coefficient of 0.6 instead of 0.5 (whose product
// x * (1 + erf(...)) is also returned, so it is a factor, not flattened),
// and an erf argument of x / 2.
// CHECK-LABEL: func.func @gelu_misses
// CHECK-NOT: memfit.gelu
// CHECK: return
func.func @gelu_misses(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c06 = memfit.constant dense<6.000000e-01> : tensor<f32>
  %half = memfit.constant dense<5.000000e-01> : tensor<f32>
  %two = memfit.constant dense<2.000000e+00> : tensor<f32>
  %sqrt2 = memfit.constant dense<1.41421354> : tensor<f32>
  %one = memfit.constant dense<1.000000e+00> : tensor<f32>
  %0 = memfit.div %x, %sqrt2 : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %1 = memfit.erf %0 : tensor<8xf32>
  %2 = memfit.add %1, %one : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %3 = memfit.mul %x, %2 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %4 = memfit.mul %3, %c06 : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %5 = memfit.div %x, %two : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %6 = memfit.erf %5 : tensor<8xf32>
  %7 = memfit.add %6, %one : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %8 = memfit.mul %x, %7 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %9 = memfit.mul %8, %half : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %10 = memfit.add %4, %9 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %10, %3 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Llama's RMSNorm as TorchScript exports it: pow, mean, add eps, sqrt,
// 1 / s, times x, times the weight: one rms_norm with the weight as scale.
// CHECK-LABEL: func.func @rms_llama
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>, %[[W:.+]]: tensor<8xf32>)
// CHECK-NEXT: %[[N:.+]] = memfit.rms_norm %[[X]], %[[W]] {axis = 2 : i64, epsilon = 9.99999997E-7 : f32} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[N]]
func.func @rms_llama(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %two = memfit.constant dense<2.000000e+00> : tensor<f32>
  %eps = memfit.constant dense<9.99999997E-7> : tensor<f32>
  %one = memfit.constant dense<1.000000e+00> : tensor<f32>
  %0 = memfit.pow %x, %two : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %1 = memfit.reduce_mean %0 {axes = array<i64: -1>} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %2 = memfit.add %1, %eps : tensor<2x4x1xf32>, tensor<f32> -> tensor<2x4x1xf32>
  %3 = memfit.sqrt %2 : tensor<2x4x1xf32>
  %4 = memfit.div %one, %3 : tensor<f32>, tensor<2x4x1xf32> -> tensor<2x4x1xf32>
  %5 = memfit.mul %x, %4 : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %6 = memfit.mul %w, %5 : tensor<8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %6 : tensor<2x4x8xf32>
}

// -----

// RMSNorm as x * reciprocal(sqrt(mean(x * x) + eps)) over the last two
// dimensions, no weight: the scale is ones of the normalized shape.
// CHECK-LABEL: func.func @rms_reciprocal
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>)
// CHECK: %[[ONES:.+]] = memfit.constant dense<1.000000e+00> : tensor<4x8xf32>
// CHECK-NEXT: %[[N:.+]] = memfit.rms_norm %[[X]], %[[ONES]] {axis = 1 : i64} : tensor<2x4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: return %[[N]]
func.func @rms_reciprocal(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %eps = memfit.constant dense<9.99999974E-6> : tensor<f32>
  %0 = memfit.mul %x, %x : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %1 = memfit.reduce_mean %0 {axes = array<i64: 1, 2>} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %2 = memfit.add %eps, %1 : tensor<f32>, tensor<2x1x1xf32> -> tensor<2x1x1xf32>
  %3 = memfit.sqrt %2 : tensor<2x1x1xf32>
  %4 = memfit.reciprocal %3 : tensor<2x1x1xf32>
  %5 = memfit.mul %4, %x : tensor<2x1x1xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %5 : tensor<2x4x8xf32>
}

// -----

// RMSNorm as x / sqrt(...); the weight of another shape (per row) is not a
// scale, so the mul stays after the raised op.
// CHECK-LABEL: func.func @rms_div
// CHECK: %[[N:.+]] = memfit.rms_norm
// CHECK-NEXT: %[[M:.+]] = memfit.mul %[[N]], %{{.+}} : tensor<2x8xf32>, tensor<2x1xf32>
// CHECK-NEXT: return %[[M]]
func.func @rms_div(%x: tensor<2x8xf32>, %w: tensor<2x1xf32>) -> tensor<2x8xf32> {
  %two = memfit.constant dense<2.000000e+00> : tensor<f32>
  %eps = memfit.constant dense<9.99999997E-7> : tensor<f32>
  %0 = memfit.pow %x, %two : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = memfit.reduce_mean %0 {axes = array<i64: 1>} : tensor<2x8xf32> -> tensor<2x1xf32>
  %2 = memfit.add %1, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %3 = memfit.sqrt %2 : tensor<2x1xf32>
  %4 = memfit.div %x, %3 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %5 = memfit.mul %4, %w : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  return %5 : tensor<2x8xf32>
}

// -----

// Not an RMSNorm: the mean is over a leading axis, or without keepdims.
// CHECK-LABEL: func.func @rms_misses
// CHECK-NOT: memfit.rms_norm
// CHECK: return
func.func @rms_misses(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2xf32>) {
  %two = memfit.constant dense<2.000000e+00> : tensor<f32>
  %eps = memfit.constant dense<9.99999997E-7> : tensor<f32>
  %0 = memfit.pow %x, %two : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = memfit.reduce_mean %0 {axes = array<i64: 0>} : tensor<2x8xf32> -> tensor<1x8xf32>
  %2 = memfit.add %1, %eps : tensor<1x8xf32>, tensor<f32> -> tensor<1x8xf32>
  %3 = memfit.sqrt %2 : tensor<1x8xf32>
  %4 = memfit.div %x, %3 : tensor<2x8xf32>, tensor<1x8xf32> -> tensor<2x8xf32>
  %5 = memfit.reduce_mean %0 {axes = array<i64: 1>, keepdims = false} : tensor<2x8xf32> -> tensor<2xf32>
  %6 = memfit.add %5, %eps : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %7 = memfit.sqrt %6 : tensor<2xf32>
  return %4, %7 : tensor<2x8xf32>, tensor<2xf32>
}

// -----

// LayerNorm spelled out (as torch.onnx writes it below opset 17), with its
// weight and bias: one layer_norm.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>, %[[G:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>)
// CHECK-NEXT: %[[N:.+]] = memfit.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.99999996E-13 : f32}
// CHECK-NEXT: return %[[N]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %two = memfit.constant dense<2.000000e+00> : tensor<f32>
  %eps = memfit.constant dense<9.99999996E-13> : tensor<f32>
  %0 = memfit.reduce_mean %x {axes = array<i64: -1>} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %1 = memfit.sub %x, %0 : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %2 = memfit.pow %1, %two : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %3 = memfit.reduce_mean %2 {axes = array<i64: -1>} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %4 = memfit.add %3, %eps : tensor<2x4x1xf32>, tensor<f32> -> tensor<2x4x1xf32>
  %5 = memfit.sqrt %4 : tensor<2x4x1xf32>
  %6 = memfit.div %1, %5 : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %7 = memfit.mul %6, %g : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %8 = memfit.add %b, %7 : tensor<8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %8 : tensor<2x4x8xf32>
}

// -----

// LayerNorm with (x - m) * (x - m) and a reciprocal, no weight or bias.
// CHECK-LABEL: func.func @layer_norm_plain
// CHECK: %[[ONES:.+]] = memfit.constant dense<1.000000e+00> : tensor<8xf32>
// CHECK-NEXT: %[[N:.+]] = memfit.layer_norm %{{.+}}, %[[ONES]] {axis = 1 : i64
// CHECK-NEXT: return %[[N]]
func.func @layer_norm_plain(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %eps = memfit.constant dense<9.99999974E-6> : tensor<f32>
  %0 = memfit.reduce_mean %x {axes = array<i64: 1>} : tensor<2x8xf32> -> tensor<2x1xf32>
  %1 = memfit.sub %x, %0 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %2 = memfit.mul %1, %1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %3 = memfit.reduce_mean %2 {axes = array<i64: 1>} : tensor<2x8xf32> -> tensor<2x1xf32>
  %4 = memfit.add %3, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %5 = memfit.sqrt %4 : tensor<2x1xf32>
  %6 = memfit.reciprocal %5 : tensor<2x1xf32>
  %7 = memfit.mul %1, %6 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  return %7 : tensor<2x8xf32>
}

// -----

// Softmax spelled out along the last axis, with the max subtracted and
// without it.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[S0:.+]] = memfit.softmax %[[X]] {axis = 1 : i64}
// CHECK-NEXT: %[[S1:.+]] = memfit.softmax %[[X]] {axis = 1 : i64}
// CHECK-NEXT: return %[[S0]], %[[S1]]
func.func @softmax(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = memfit.reduce_max %x {axes = array<i64: -1>} : tensor<2x8xf32> -> tensor<2x1xf32>
  %1 = memfit.sub %x, %0 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %2 = memfit.exp %1 : tensor<2x8xf32>
  %3 = memfit.reduce_sum %2 {axes = array<i64: 1>} : tensor<2x8xf32> -> tensor<2x1xf32>
  %4 = memfit.div %2, %3 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %5 = memfit.exp %x : tensor<2x8xf32>
  %6 = memfit.reduce_sum %5 {axes = array<i64: -1>} : tensor<2x8xf32> -> tensor<2x1xf32>
  %7 = memfit.div %5, %6 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  return %4, %7 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Not a softmax: the sum is of another exp than the numerator, or over
// two axes.
// CHECK-LABEL: func.func @softmax_misses
// CHECK-NOT: memfit.softmax
// CHECK: return
func.func @softmax_misses(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = memfit.exp %x : tensor<2x8xf32>
  %1 = memfit.exp %y : tensor<2x8xf32>
  %2 = memfit.reduce_sum %1 {axes = array<i64: 1>} : tensor<2x8xf32> -> tensor<2x1xf32>
  %3 = memfit.div %0, %2 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %4 = memfit.reduce_sum %0 {axes = array<i64: 0, 1>} : tensor<2x8xf32> -> tensor<1x1xf32>
  %5 = memfit.div %0, %4 : tensor<2x8xf32>, tensor<1x1xf32> -> tensor<2x8xf32>
  return %3, %5 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Rotary embeddings as Hugging Face's apply_rotary_pos_emb writes them:
// x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[..., 4:],
// x[..., :4]) (the upper slice's end clamped), with the sum's and the
// products' operands in either order.
// CHECK-LABEL: func.func @rotary
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x8xf32>, %[[C:.+]]: tensor<1x3x8xf32>, %[[S:.+]]: tensor<1x3x8xf32>)
// CHECK-NEXT: %[[R0:.+]] = memfit.rotary %[[X]], %[[C]], %[[S]] : tensor<2x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>
// CHECK-NEXT: %[[R1:.+]] = memfit.rotary %[[X]], %[[C]], %[[S]] : tensor<2x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>
// CHECK-NEXT: return %[[R0]], %[[R1]]
func.func @rotary(%x: tensor<2x3x8xf32>, %cos: tensor<1x3x8xf32>, %sin: tensor<1x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %0 = memfit.mul %x, %cos : tensor<2x3x8xf32>, tensor<1x3x8xf32> -> tensor<2x3x8xf32>
  %1 = memfit.slice %x {axes = array<i64: 2>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<2x3x8xf32> -> tensor<2x3x4xf32>
  %2 = memfit.slice %x {axes = array<i64: -1>, ends = array<i64: 9223372036854775807>, starts = array<i64: 4>, steps = array<i64: 1>} : tensor<2x3x8xf32> -> tensor<2x3x4xf32>
  %3 = memfit.neg %2 : tensor<2x3x4xf32>
  %4 = memfit.concat %3, %1 {axis = -1 : i64} : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x8xf32>
  %5 = memfit.mul %4, %sin : tensor<2x3x8xf32>, tensor<1x3x8xf32> -> tensor<2x3x8xf32>
  %6 = memfit.add %0, %5 : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %7 = memfit.mul %cos, %x : tensor<1x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %8 = memfit.concat %3, %1 {axis = 2 : i64} : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x8xf32>
  %9 = memfit.mul %sin, %8 : tensor<1x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %10 = memfit.add %9, %7 : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  return %6, %10 : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}

// -----

// Not rotary embeddings: the negation on the lower half (the halves in
// place), the lower half sliced from another tensor, halves along another
// axis.
// CHECK-LABEL: func.func @rotary_misses
// CHECK-NOT: memfit.rotary
// CHECK: return
func.func @rotary_misses(%x: tensor<2x8x8xf32>, %y: tensor<2x8x8xf32>, %cos: tensor<8xf32>, %sin: tensor<8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) {
  %lo = memfit.slice %x {axes = array<i64: 2>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<2x8x8xf32> -> tensor<2x8x4xf32>
  %hi = memfit.slice %x {axes = array<i64: 2>, ends = array<i64: 8>, starts = array<i64: 4>, steps = array<i64: 1>} : tensor<2x8x8xf32> -> tensor<2x8x4xf32>
  %nlo = memfit.neg %lo : tensor<2x8x4xf32>
  %ylo = memfit.slice %y {axes = array<i64: 2>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<2x8x8xf32> -> tensor<2x8x4xf32>
  %nhi = memfit.neg %hi : tensor<2x8x4xf32>
  %xc = memfit.mul %x, %cos : tensor<2x8x8xf32>, tensor<8xf32> -> tensor<2x8x8xf32>
  %a = memfit.concat %nlo, %hi {axis = 2 : i64} : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x8xf32>
  %as = memfit.mul %a, %sin : tensor<2x8x8xf32>, tensor<8xf32> -> tensor<2x8x8xf32>
  %r0 = memfit.add %xc, %as : tensor<2x8x8xf32>, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %xc1 = memfit.mul %x, %cos : tensor<2x8x8xf32>, tensor<8xf32> -> tensor<2x8x8xf32>
  %b = memfit.concat %nhi, %ylo {axis = 2 : i64} : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x8xf32>
  %bs = memfit.mul %b, %sin : tensor<2x8x8xf32>, tensor<8xf32> -> tensor<2x8x8xf32>
  %r1 = memfit.add %xc1, %bs : tensor<2x8x8xf32>, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %l1 = memfit.slice %x {axes = array<i64: 1>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<2x8x8xf32> -> tensor<2x4x8xf32>
  %h1 = memfit.slice %x {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 4>, steps = array<i64: 1>} : tensor<2x8x8xf32> -> tensor<2x4x8xf32>
  %nh1 = memfit.neg %h1 : tensor<2x4x8xf32>
  %c = memfit.concat %nh1, %l1 {axis = 1 : i64} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
  %cs = memfit.mul %c, %sin : tensor<2x8x8xf32>, tensor<8xf32> -> tensor<2x8x8xf32>
  %xc2 = memfit.mul %x, %cos : tensor<2x8x8xf32>, tensor<8xf32> -> tensor<2x8x8xf32>
  %r2 = memfit.add %xc2, %cs : tensor<2x8x8xf32>, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  return %r0, %r1, %r2 : tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>
}
