// memfit-lora: y = x @ W becomes y + (alpha / r) * (x @ A^T) @ B^T on the
// targeted contractions, with A (r x in) and B (out x r) new trainable
// parameters named after the PyTorch module (PEFT's names and layouts),
// and every other parameter frozen. A two-layer model with an attention
// projection (a matmul, its module from the TorchScript node name), an MLP
// projection (a gemm with trans_b, as nn.Linear exports; its module from
// the dynamo exporter's scope) and a head outside the layers.
// RUN: memfit-opt %s --memfit-lora='rank=2 alpha=4' | FileCheck %s
// RUN: memfit-opt %s --memfit-lora='rank=2 targets=all-linear' | FileCheck %s --check-prefix=ALL
// RUN: memfit-opt %s --memfit-lora='rank=4 alpha=8 rslora=true targets=mlp' | FileCheck %s --check-prefix=RSLORA
// RUN: memfit-opt %s --memfit-lora='rank=2 targets=head,all-linear exclude=h.1.*' | FileCheck %s --check-prefix=GLOB
// PEFT's lora_dropout: the adapter reads a dropout of x (seed lora-seed, a
// stream per adapter), the base contraction x itself; memfit-dropout-step
// gives each the training step's counter.
// RUN: memfit-opt %s --memfit-lora='rank=2 dropout=0.1 seed=3' --memfit-autodiff --memfit-dropout-step | FileCheck %s --check-prefix=DROP
// Then memfit-autodiff differentiates the adapters only.
// RUN: memfit-opt %s --memfit-lora='rank=2' --memfit-autodiff | FileCheck %s --check-prefix=GRAD
// Errors name the option.
// RUN: not memfit-opt %s --memfit-lora='rank=0' -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not memfit-opt %s --memfit-lora='dropout=1' -o /dev/null 2>&1 | FileCheck %s --check-prefix=DROPOUT
// RUN: not memfit-opt %s --memfit-lora='targets=lm_head' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not memfit-opt %s --memfit-lora='alpha=-1' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALPHA
// RANK: error: memfit-lora: rank must be at least 1, got 0
// DROPOUT: error: memfit-lora: dropout must be in [0, 1), got 1.000000e+00
// NOMATCH: error: memfit-lora: no contraction matches the targets
// ALPHA: error: memfit-lora: alpha must be positive, got -1.000000e+00

memfit.parameter @"onnx::MatMul_7" = dense<0.1> : tensor<16x16xf32>
memfit.parameter @h.0.mlp.fc.weight = dense<0.1> : tensor<32x16xf32>
memfit.parameter @"onnx::MatMul_9" = dense<0.1> : tensor<16x16xf32>
memfit.parameter @h.1.mlp.fc.weight = dense<0.1> : tensor<32x16xf32>
memfit.parameter @head.weight = dense<0.1> : tensor<32x4xf32>

func.func @main(%x: tensor<8x16xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %wq0 = memfit.load_parameter @"onnx::MatMul_7" : tensor<16x16xf32>
  %q0 = memfit.matmul %x, %wq0 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc("/h.0/attn/q_proj/MatMul")
  %w0 = memfit.load_parameter @h.0.mlp.fc.weight : tensor<32x16xf32>
  %f0 = memfit.gemm %q0, %w0 {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32> loc(fused<{onnx.scope = "/h.0/h.0.mlp/h.0.mlp.fc/linear"}>["node_linear"])
  %t0 = memfit.tanh %f0 : tensor<8x32xf32> loc("/h.0/act/Tanh")
  %s0 = memfit.slice %t0 {starts = array<i64: 0, 0>, ends = array<i64: 8, 16>, axes = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<8x32xf32> -> tensor<8x16xf32> loc("/h.0/Slice")
  %wq1 = memfit.load_parameter @"onnx::MatMul_9" : tensor<16x16xf32>
  %q1 = memfit.matmul %s0, %wq1 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc("/h.1/attn/q_proj/MatMul")
  %w1 = memfit.load_parameter @h.1.mlp.fc.weight : tensor<32x16xf32>
  %f1 = memfit.gemm %q1, %w1 {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32> loc(fused<{onnx.scope = "/h.1/h.1.mlp/h.1.mlp.fc/linear_1"}>["node_linear_1"])
  %wh = memfit.load_parameter @head.weight : tensor<32x4xf32>
  %o = memfit.matmul %f1, %wh : tensor<8x32xf32>, tensor<32x4xf32> -> tensor<8x4xf32> loc("/head/MatMul")
  %l = memfit.reduce_mean %o {axes = array<i64: 0, 1>, keepdims = false} : tensor<8x4xf32> -> tensor<f32> loc("/loss/ReduceMean")
  return %l : tensor<f32>
}

// Default targets: attention. The base weights are frozen; A is uniform in
// [-1/sqrt(16), 1/sqrt(16)) = [-0.25, 0.25), B is zero.
// CHECK: memfit.parameter @"onnx::MatMul_7" = {{.*}} {memfit.role = "frozen"}
// CHECK-NEXT: memfit.parameter @h.0.attn.q_proj.lora_A.weight = dense<{{.*}}> : tensor<2x16xf32> {memfit.lora = "A", memfit.lora_of = "onnx::MatMul_7", memfit.lora_scale = 2.000000e+00 : f64, memfit.lora_transposed = false, memfit.role = "parameter"}
// CHECK-NEXT: memfit.parameter @h.0.attn.q_proj.lora_B.weight = dense<0.000000e+00> : tensor<16x2xf32> {memfit.lora = "B", memfit.lora_of = "onnx::MatMul_7", memfit.role = "parameter"}
// CHECK-NEXT: memfit.parameter @h.0.mlp.fc.weight = {{.*}} {memfit.role = "frozen"}
// CHECK: memfit.parameter @h.1.attn.q_proj.lora_A.weight
// CHECK-NOT: memfit.lora_of = "h.{{[01]}}.mlp
// CHECK: memfit.parameter @head.weight = {{.*}} {memfit.role = "frozen"}
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = memfit.matmul %arg0, %{{.*}} : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[A:.*]] = memfit.load_parameter @h.0.attn.q_proj.lora_A.weight {memfit.lora_target = "h.0.attn.q_proj"} : tensor<2x16xf32>
// CHECK-NEXT: %[[AT:.*]] = memfit.transpose %[[A]] {memfit.lora_target = "h.0.attn.q_proj", perm = array<i64: 1, 0>} : tensor<2x16xf32> -> tensor<16x2xf32>
// CHECK-NEXT: %[[T:.*]] = memfit.matmul %arg0, %[[AT]] {memfit.lora_target = "h.0.attn.q_proj"} : tensor<8x16xf32>, tensor<16x2xf32> -> tensor<8x2xf32>
// CHECK-NEXT: %[[B:.*]] = memfit.load_parameter @h.0.attn.q_proj.lora_B.weight
// CHECK-NEXT: %[[BT:.*]] = memfit.transpose %[[B]]
// CHECK-NEXT: %[[U:.*]] = memfit.matmul %[[T]], %[[BT]] {memfit.lora_target = "h.0.attn.q_proj"} : tensor<8x2xf32>, tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[S:.*]] = memfit.constant {memfit.lora_target = "h.0.attn.q_proj"} dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[US:.*]] = memfit.mul %[[U]], %[[S]]
// CHECK-NEXT: %[[SUM:.*]] = memfit.add %[[Y]], %[[US]]
// CHECK-NEXT: memfit.load_parameter @h.0.mlp.fc.weight
// CHECK-NEXT: memfit.gemm %[[SUM]]

// all-linear: the gemms too (module from the scope), not the head.
// ALL: memfit.parameter @h.0.mlp.fc.lora_A.weight = {{.*}} : tensor<2x16xf32> {{{.*}}memfit.lora_transposed = true
// ALL-NEXT: memfit.parameter @h.0.mlp.fc.lora_B.weight = {{.*}} : tensor<32x2xf32>
// ALL-NOT: @head.lora_A
// ALL: %[[G:.*]] = memfit.gemm %{{.*}}, %{{.*}} {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
// ALL: memfit.matmul %{{.*}}, %{{.*}} {memfit.lora_target = "h.0.mlp.fc"} : tensor<8x16xf32>, tensor<16x2xf32> -> tensor<8x2xf32>
// ALL: memfit.add %[[G]], %{{.*}} {memfit.lora_target = "h.0.mlp.fc"}

// rslora: alpha / sqrt(r) = 8 / 2.
// RSLORA-NOT: q_proj.lora_A
// RSLORA: memfit.constant {memfit.lora_target = "h.0.mlp.fc"} dense<4.000000e+00>

// Globs: the head by its module, layer 1 excluded.
// GLOB: @h.0.attn.q_proj.lora_A.weight
// GLOB: @h.0.mlp.fc.lora_A.weight
// GLOB-NOT: @h.1.{{.*}}lora_A
// GLOB: @head.lora_A.weight = {{.*}} : tensor<2x32xf32>
// GLOB-NOT: @h.1.{{.*}}lora_A

// GRAD-NOT: memfit.gradient_of = @"onnx::MatMul
// GRAD-NOT: memfit.gradient_of = @h.{{[01]}}.mlp.fc.weight
// GRAD-DAG: memfit.gradient_of = @h.0.attn.q_proj.lora_A.weight
// GRAD-DAG: memfit.gradient_of = @h.0.attn.q_proj.lora_B.weight
// GRAD-DAG: memfit.gradient_of = @h.1.attn.q_proj.lora_A.weight
// GRAD-DAG: memfit.gradient_of = @h.1.attn.q_proj.lora_B.weight

// DROP: memfit.parameter @dropout_step = dense<0> : tensor<i64> {memfit.role = "counter"}
// DROP-LABEL: func.func @main
// DROP-NEXT: %[[STEP:.*]] = memfit.load_parameter @dropout_step
// DROP: %[[Y:.*]] = memfit.matmul %arg0, %{{.*}} : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// DROP-NEXT: %[[D:.*]] = memfit.dropout %arg0 step %[[STEP]] {memfit.lora_target = "h.0.attn.q_proj", ratio = 1.000000e-01 : f32, seed = 3 : i64, stream = [[S0:[0-9]+]] : i64} : tensor<8x16xf32>
// DROP: memfit.matmul %[[D]], %{{.*}} {memfit.lora_target = "h.0.attn.q_proj"} : tensor<8x16xf32>, tensor<16x2xf32> -> tensor<8x2xf32>
// DROP: memfit.dropout %{{.*}} step %[[STEP]] {memfit.lora_target = "h.1.attn.q_proj", ratio = 1.000000e-01 : f32, seed = 3 : i64, stream = {{[0-9]+}} : i64}
// DROP-NOT: stream = [[S0]]
// DROP: memfit.assign @dropout_step
