// checkpoint-layers on the model of remat-layers.mlir as the PyTorch dynamo
// exporter names it: node names (node_linear, node_tanh, ...) and weight
// names (val_3: a transposed copy of a layer's weight) carry no layer
// index; the layer comes from each node's module scope, which the importer
// keeps in the location's fused metadata (onnx.scope). Nodes whose scope has
// no layer index (/embed, /head) are outside the layers, even when they read
// the output of the last layer.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=checkpoint-layers report=%t.report})' | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report

memfit.parameter @embed.scale = dense<1.5> : tensor<16xf32>
memfit.parameter @val_3 = dense<0.1> : tensor<16x16xf32>
memfit.parameter @val_7 = dense<0.1> : tensor<16x16xf32>
memfit.parameter @val_9 = dense<0.2> : tensor<16x4xf32>

func.func @main(%x: tensor<8x16xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %s = memfit.load_parameter @embed.scale : tensor<16xf32>
  %h0 = memfit.mul %x, %s : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/embed/mul"}>["node_mul"])
  %w0 = memfit.load_parameter @val_3 : tensor<16x16xf32>
  %a0 = memfit.matmul %h0, %w0 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.0/layers.0.fc/linear"}>["node_linear"])
  %g0 = memfit.tanh %a0 : tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.0/tanh"}>["node_tanh"])
  %m0 = memfit.mul %g0, %g0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.0/mul_1"}>["node_mul_1"])
  %r0 = memfit.add %h0, %m0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.0/add"}>["node_add"])
  %w1 = memfit.load_parameter @val_7 : tensor<16x16xf32>
  %a1 = memfit.matmul %r0, %w1 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.1/layers.1.fc/linear_1"}>["node_linear_1"])
  %g1 = memfit.tanh %a1 : tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.1/tanh_1"}>["node_tanh_1"])
  %m1 = memfit.mul %g1, %g1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.1/mul_2"}>["node_mul_2"])
  %r1 = memfit.add %r0, %m1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.1/add_1"}>["node_add_1"])
  %wh = memfit.load_parameter @val_9 : tensor<16x4xf32>
  %o = memfit.matmul %r1, %wh : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32> loc(fused<{onnx.scope = "/head/linear_2"}>["node_linear_2"])
  %e = memfit.exp %o : tensor<8x4xf32> loc(fused<{onnx.scope = "/head/exp"}>["node_exp"])
  %l = memfit.reduce_mean %e {axes = array<i64: 0, 1>, keepdims = false} : tensor<8x4xf32> -> tensor<f32> loc(fused<{onnx.scope = "/mean"}>["node_mean"])
  return %l : tensor<f32>
}

// CHECK: %[[EMB:.*]] = memfit.kernel{{.*}} {memfit.saved = "outside the transformer layers"}
// CHECK: %[[OUT0:.*]] = memfit.kernel{{.*}} {memfit.saved = "the output of layer 0, an input of the next"}
// CHECK: memfit.kernel{{.*}} {memfit.saved = "the output of layer 1, an input of the next"}
// CHECK: memfit.kernel{{.*}} {memfit.saved = "outside the transformer layers"}
// CHECK: %[[A1:.*]] = memfit.matmul %[[OUT0]], %{{.*}} {memfit.recomputed_from = ["node_add"]}
// CHECK: %[[A0:.*]] = memfit.matmul %[[EMB]], %{{.*}} {memfit.recomputed_from = ["node_mul"]}

// REPORT: remat report for @main: policy checkpoint-layers
// REPORT-NEXT: value op onnx node shape bytes decision reason
// REPORT-NEXT: f0 mul node_mul 8x16 512 save outside the transformer layers
// REPORT-NEXT: f1 matmul node_linear 8x16 512 recompute before backward step 11, 4.1 kFLOP; from node_mul
// REPORT-NEXT: f2 tanh node_tanh 8x16 512 recompute before backward step 11, 512 FLOP; from node_mul
// REPORT-NEXT: f4 add node_add 8x16 512 save the output of layer 0, an input of the next
// REPORT-NEXT: f5 matmul node_linear_1 8x16 512 recompute before backward step 3, 4.1 kFLOP; from node_add
// REPORT-NEXT: f6 tanh node_tanh_1 8x16 512 recompute before backward step 3, 512 FLOP; from node_add
// REPORT-NEXT: f8 add node_add_1 8x16 512 save the output of layer 1, an input of the next
// REPORT-NEXT: f10 exp node_exp 8x4 256 save outside the transformer layers
// REPORT-NEXT: totals: 4 saved (1792 bytes), 4 recomputed (2048 bytes)
