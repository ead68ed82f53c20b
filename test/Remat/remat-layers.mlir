// checkpoint-layers on a two-layer residual model whose ONNX node names
// carry the layer index (/h.0/..., /h.1/...): each layer's input (the
// residual stream) and everything outside the layers (/embed, /head) is
// saved, and what the backward reads inside a layer (the tanh output g) is
// recomputed from the layer's input, through the layer's matmul.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=checkpoint-layers report=%t.report})' | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
//
// With SGD updates, each weight is updated as soon as its gradient is final
// (and no later step reads the old weight): the head's update runs before
// the backward of layer 0, not after the whole backward pass.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,memfit-optimizer{optimizer=sgd},canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=checkpoint-layers})' | FileCheck %s --check-prefix=SGD

memfit.parameter @embed.scale = dense<1.5> : tensor<16xf32>
memfit.parameter @h.0.fc.weight = dense<0.1> : tensor<16x16xf32>
memfit.parameter @h.1.fc.weight = dense<0.1> : tensor<16x16xf32>
memfit.parameter @head.weight = dense<0.2> : tensor<16x4xf32>

func.func @main(%x: tensor<8x16xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %s = memfit.load_parameter @embed.scale : tensor<16xf32>
  %h0 = memfit.mul %x, %s : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32> loc("/embed/Mul")
  %w0 = memfit.load_parameter @h.0.fc.weight : tensor<16x16xf32>
  %a0 = memfit.matmul %h0, %w0 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc("/h.0/fc/MatMul")
  %g0 = memfit.tanh %a0 : tensor<8x16xf32> loc("/h.0/act/Tanh")
  %m0 = memfit.mul %g0, %g0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("/h.0/sq/Mul")
  %r0 = memfit.add %h0, %m0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("/h.0/res/Add")
  %w1 = memfit.load_parameter @h.1.fc.weight : tensor<16x16xf32>
  %a1 = memfit.matmul %r0, %w1 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc("/h.1/fc/MatMul")
  %g1 = memfit.tanh %a1 : tensor<8x16xf32> loc("/h.1/act/Tanh")
  %m1 = memfit.mul %g1, %g1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("/h.1/sq/Mul")
  %r1 = memfit.add %r0, %m1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("/h.1/res/Add")
  %wh = memfit.load_parameter @head.weight : tensor<16x4xf32>
  %o = memfit.matmul %r1, %wh : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32> loc("/head/MatMul")
  %e = memfit.exp %o : tensor<8x4xf32> loc("/head/Exp")
  %l = memfit.reduce_mean %e {axes = array<i64: 0, 1>, keepdims = false} : tensor<8x4xf32> -> tensor<f32> loc("/loss/ReduceMean")
  return %l : tensor<f32>
}

// The layer outputs and what lies outside the layers are saved, each saying
// why; the inside of each layer is cloned into the backward and names the
// saved value it starts from.
// CHECK: %[[EMB:.*]] = memfit.kernel{{.*}} {memfit.saved = "outside the transformer layers"}
// CHECK: %[[OUT0:.*]] = memfit.kernel{{.*}} {memfit.saved = "the output of layer 0, an input of the next"}
// CHECK: memfit.kernel{{.*}} {memfit.saved = "the output of layer 1, an input of the next"}
// CHECK: memfit.kernel{{.*}} {memfit.saved = "outside the transformer layers"}
// Layer 1's backward comes first, recomputed from layer 0's output.
// CHECK: %[[A1:.*]] = memfit.matmul %[[OUT0]], %{{.*}} {memfit.recomputed_from = ["/h.0/res/Add"]}
// CHECK-NEXT: memfit.kernel(%[[A1]]) {memfit.recomputed_from = ["/h.0/res/Add"]}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.tanh
// CHECK: %[[A0:.*]] = memfit.matmul %[[EMB]], %{{.*}} {memfit.recomputed_from = ["/embed/Mul"]}
// CHECK-NEXT: memfit.kernel(%[[A0]]) {memfit.recomputed_from = ["/embed/Mul"]}

// REPORT: remat report for @main: policy checkpoint-layers
// REPORT-NEXT: value op onnx node shape bytes decision reason
// REPORT-NEXT: f0 mul /embed/Mul 8x16 512 save outside the transformer layers
// REPORT-NEXT: f1 matmul /h.0/fc/MatMul 8x16 512 recompute before backward step 11, 4.1 kFLOP; from /embed/Mul
// REPORT-NEXT: f2 tanh /h.0/act/Tanh 8x16 512 recompute before backward step 11, 512 FLOP; from /embed/Mul
// REPORT-NEXT: f4 add /h.0/res/Add 8x16 512 save the output of layer 0, an input of the next
// REPORT-NEXT: f5 matmul /h.1/fc/MatMul 8x16 512 recompute before backward step 3, 4.1 kFLOP; from /h.0/res/Add
// REPORT-NEXT: f6 tanh /h.1/act/Tanh 8x16 512 recompute before backward step 3, 512 FLOP; from /h.0/res/Add
// REPORT-NEXT: f8 add /h.1/res/Add 8x16 512 save the output of layer 1, an input of the next
// REPORT-NEXT: f10 exp /head/Exp 8x4 256 save outside the transformer layers
// REPORT-NEXT: totals: 4 saved (1792 bytes), 4 recomputed (2048 bytes)
// REPORT-NEXT: extra FLOPs: 9.2 kFLOP
// REPORT-NEXT: activation memory: 2816 -> 1792 bytes (63.6%)
// REPORT: planned: weights 2560 + arena 5120 = 7680 bytes

// The head's SGD update runs right after its gradient, ahead of the layers'
// backward; each layer's update follows its own gradient.
// SGD: memfit.assign @head.weight
// SGD: memfit.recomputed_from = ["/h.0/res/Add"]
// SGD: memfit.assign @h.1.fc.weight
// SGD: memfit.recomputed_from = ["/embed/Mul"]
// SGD: memfit.assign @h.0.fc.weight
// SGD: memfit.assign @embed.scale
