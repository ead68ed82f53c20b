// memfit-op-cost: the cost model of CostOpInterface, one line per op that
// does work and totals by class. Every number is worked out by hand in the
// comment above its check (f32 is 4 bytes, i64 8, i1 1).
// RUN: memfit-opt %s -split-input-file --memfit-op-cost -o /dev/null | FileCheck %s
// The pass leaves the IR as it was.
// RUN: memfit-opt %s -split-input-file --memfit-op-cost | FileCheck %s --check-prefix=IR
// On a real model: the c_attn projection of gpt_ts is [2,16,32] x [32,96],
// 2 * 2*16*96 * 32 = 196608 FLOPs, reading 4096 + 12288 bytes and writing
// 12288.
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=input_ids=2x16 --pass-pipeline='builtin.module(memfit-op-cost{output=%t.txt})' -o /dev/null
// RUN: FileCheck %s --check-prefix=GPT < %t.txt
// GPT-LABEL: function @main
// GPT: op=memfit.matmul node=/h.0/attn/c_attn/MatMul result=2x16x96xf32 class=contraction flops=196608 bytes=28672
// GPT: total: {{[0-9]+}} FLOPs, {{[0-9]+}} bytes
// Formed into kernels (one per op: fuse=false), a function's traffic: its
// steps' bytes against the
// lower bound (inputs, weights and states read once, outputs and updates
// written once, saved activations written and read once).
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=input_ids=2x16 '--memfit-train-pipeline=loss=cross-entropy fuse=false' --memfit-op-cost -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=TRAFFIC
// Attention is memfit.attention (fused-attention, the default): its kernels
// replace the score and probability contractions and the softmax. The
// loss is linear_cross_entropy (chunked-loss, the default; one chunk at
// 32 rows of 32): its logits are computed where the backward starts, not
// saved from the forward.
// TRAFFIC: total: {{[0-9]+}} FLOPs, 5172336 bytes
// TRAFFIC-NEXT: traffic: 269 steps (242 kernels, 27 contractions), 6,596,818 FLOPs, 5,172,336 bytes moved (774,144 by contractions)
// TRAFFIC-NEXT: traffic: lower bound 1,253,012 bytes (inputs 516, weights and states read 367,240, outputs 4, updates 367,108, saved activations 259,072 written and read); moved / lower bound = 4.13

// matmul broadcasts [2,1,4,5] x [3,5,6] to a batch of 2*3:
// 2 * 6 * 4*6 * 5 = 1440 FLOPs; 160 + 360 read, 576 written.
// CHECK-LABEL: function @matmul_batch_broadcast
// CHECK-NEXT: 0 op=memfit.matmul node=attn/MatMul result=2x3x4x6xf32 class=contraction flops=1440 bytes=1096
// CHECK-NEXT: class=contraction ops=1 flops=1440 bytes=1096
// CHECK-NEXT: total: 1440 FLOPs, 1096 bytes
// IR-LABEL: func.func @matmul_batch_broadcast
// IR: memfit.matmul
func.func @matmul_batch_broadcast(%a: tensor<2x1x4x5xf32>, %b: tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32> {
  %0 = memfit.matmul %a, %b : tensor<2x1x4x5xf32>, tensor<3x5x6xf32> -> tensor<2x3x4x6xf32> loc("attn/MatMul")
  return %0 : tensor<2x3x4x6xf32>
}

// -----

// trans_a: a is [K=8, M=4]; trans_b: b is [N=16, K=8]. 2*4*16*8 = 1024,
// plus 64 for the bias add and 64 for beta = 0.5: 1152 FLOPs; 128 + 512 +
// 64 read, 256 written. Without c but with alpha = 2: 1024 + 64 = 1088
// FLOPs, 128 + 512 + 256 bytes.
// CHECK-LABEL: function @gemm
// CHECK-NEXT: 0 op=memfit.gemm node=fc result=4x16xf32 class=contraction flops=1152 bytes=960
// CHECK-NEXT: 1 op=memfit.gemm node=fc_scaled result=4x16xf32 class=contraction flops=1088 bytes=896
// CHECK-NEXT: class=contraction ops=2 flops=2240 bytes=1856
// CHECK-NEXT: total: 2240 FLOPs, 1856 bytes
func.func @gemm(%a: tensor<8x4xf32>, %b: tensor<16x8xf32>, %c: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = memfit.gemm %a, %b, %c {trans_a = true, trans_b = true, beta = 5.000000e-01 : f32} : (tensor<8x4xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("fc")
  %1 = memfit.gemm %a, %b {trans_a = true, trans_b = true, alpha = 2.000000e+00 : f32} : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("fc_scaled")
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A transformer block's unformed ops, with the location forms that carry
// an ONNX node name. Views, weights and constants do no work and are not
// listed.
// gather reads the 2*16 indices and the 2*16 rows it selects, not the
// table: 256 + 4096 read, 4096 written.
// layer_norm: 5 * 2*16*32 = 5120 FLOPs; 4096 + 128 + 128 read, 4096 written.
// add broadcasting [32]: 1024 FLOPs; 4096 + 128 read, 4096 written.
// gelu: 8 * 1024 = 8192 FLOPs; 4096 read, 4096 written.
// transpose: no FLOPs; 4096 read, 4096 written.
// softmax: 5 * 2*4*16*8 = 5120 FLOPs; 4096 read, 4096 written.
// slice reads only what it keeps: 1024 read, 1024 written.
// CHECK-LABEL: function @block
// CHECK-NEXT: 0 op=memfit.gather node=wte/Gather result=2x16x32xf32 class=data_movement flops=0 bytes=8448
// CHECK-NEXT: 1 op=memfit.layer_norm node=ln/LayerNormalization result=2x16x32xf32 class=normalization flops=5120 bytes=8448
// CHECK-NEXT: 2 op=memfit.add node=fc/Add result=2x16x32xf32 class=elementwise flops=1024 bytes=8320
// CHECK-NEXT: 3 op=memfit.gelu node=act/Gelu result=2x16x32xf32 class=elementwise flops=8192 bytes=8192
// CHECK-NEXT: 4 op=memfit.transpose node=- result=2x4x16x8xf32 class=data_movement flops=0 bytes=8192
// CHECK-NEXT: 5 op=memfit.softmax node=attn/Softmax result=2x4x16x8xf32 class=normalization flops=5120 bytes=8192
// CHECK-NEXT: 6 op=memfit.slice node=attn/Slice result=2x4x16x2xf32 class=data_movement flops=0 bytes=2048
// CHECK-NEXT: class=elementwise ops=2 flops=9216 bytes=16512
// CHECK-NEXT: class=normalization ops=2 flops=10240 bytes=16640
// CHECK-NEXT: class=data_movement ops=3 flops=0 bytes=18688
// CHECK-NEXT: total: 19456 FLOPs, 51840 bytes
// IR-LABEL: func.func @block
// IR-COUNT-2: memfit.reshape
module {
  memfit.parameter @wte = dense<1.0> : tensor<96x32xf32>
  func.func @block(%ids: tensor<2x16xi64>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x128xf32> {
    %wte = memfit.load_parameter @wte : tensor<96x32xf32>
    %e = memfit.gather %wte, %ids {axis = 0 : i64} : tensor<96x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32> loc("wte/Gather")
    %0 = memfit.layer_norm %e, %g, %b {axis = -1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32> loc(fused["ln/LayerNormalization", "ln/extra"])
    %1 = memfit.add %0, %b : tensor<2x16x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32> loc(callsite("fc/Add" at "model.py":12:3))
    %2 = memfit.gelu tanh %1 : tensor<2x16x32xf32> loc(fused["act.py":3:1, "act/Gelu"])
    %3 = memfit.reshape %2 : tensor<2x16x32xf32> to tensor<2x16x4x8xf32>
    %4 = memfit.transpose %3 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %5 = memfit.softmax %4 {axis = -1 : i64} : tensor<2x4x16x8xf32> loc("attn/Softmax")
    %6 = memfit.slice %5 {starts = array<i64: 0>, ends = array<i64: 2>, axes = array<i64: 3>, steps = array<i64: 1>} : tensor<2x4x16x8xf32> -> tensor<2x4x16x2xf32> loc("attn/Slice")
    %7 = memfit.reshape %6 : tensor<2x4x16x2xf32> to tensor<2x128xf32>
    return %7 : tensor<2x128xf32>
  }
}

// -----

// Kernels: the FLOPs of the body, the bytes of the kernel's own inputs and
// results. The splat 0.5 is a literal and the product stays in registers.
// mul: 2*4 = 8 FLOPs, exp: 4 * 8 = 32; 32 + 32 bytes.
// An expand of a splat writes its result and reads nothing: 32 bytes.
// A kernel that gathers from a table reads the rows it selects: 64 + 128
// read, 128 written.
// CHECK-LABEL: function @kernels
// CHECK-NEXT: 0 op=memfit.mul+memfit.exp node=act result=2x4xf32 class=elementwise flops=40 bytes=64
// CHECK-NEXT: 1 op=memfit.expand node=mask result=2x4xf32 class=data_movement flops=0 bytes=32
// CHECK-NEXT: 2 op=memfit.gather node=emb result=2x4x4xf32 class=data_movement flops=0 bytes=320
// CHECK-NEXT: class=elementwise ops=1 flops=40 bytes=64
// CHECK-NEXT: class=data_movement ops=2 flops=0 bytes=352
// CHECK-NEXT: total: 40 FLOPs, 416 bytes
func.func @kernels(%x: tensor<2x4xf32>, %table: tensor<100x4xf32>, %ids: tensor<2x4xi64>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>) {
  %0 = memfit.kernel(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    %half = memfit.constant dense<5.000000e-01> : tensor<f32>
    %m = memfit.mul %a, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
    %e = memfit.exp %m : tensor<2x4xf32>
    memfit.yield %e : tensor<2x4xf32>
  } loc("act")
  %1 = memfit.kernel() : () -> tensor<2x4xf32> {
    %zero = memfit.constant dense<0.000000e+00> : tensor<f32>
    %z = memfit.expand %zero : tensor<f32> to tensor<2x4xf32>
    memfit.yield %z : tensor<2x4xf32>
  } loc("mask")
  %2 = memfit.kernel(%table, %ids) : (tensor<100x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32> {
  ^bb0(%t: tensor<100x4xf32>, %i: tensor<2x4xi64>):
    %g = memfit.gather %t, %i {axis = 0 : i64} : tensor<100x4xf32>, tensor<2x4xi64> -> tensor<2x4x4xf32>
    memfit.yield %g : tensor<2x4x4xf32>
  } loc("emb")
  return %0, %1, %2 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>
}

// -----

// Losses and the gradient ops.
// softmax_cross_entropy_loss: 5 * 32*96 = 15360 FLOPs; 12288 + 256 read,
// 4 written.
// negative_log_likelihood_loss picks one log-probability per target:
// 2 * 32 = 64 FLOPs; 256 + 32*4 read, 4 written.
// softmax_cross_entropy_grad: 7 * 32*96 = 21504 FLOPs; 12288 + 256 + 4
// read, 12288 written.
// gather_grad adds each of the 2*16*8 gradient elements: 256 FLOPs;
// 1024 + 256 read, 96*8*4 = 3072 written.
// reduce_sum: one FLOP per input element, 3072; 12288 read, 128 written.
// CHECK-LABEL: function @training
// CHECK-NEXT: 0 op=memfit.softmax_cross_entropy_loss node=loss result=f32 class=loss flops=15360 bytes=12548
// CHECK-NEXT: 1 op=memfit.negative_log_likelihood_loss node=nll result=f32 class=loss flops=64 bytes=388
// CHECK-NEXT: 2 op=memfit.softmax_cross_entropy_grad node=loss result=32x96xf32 class=loss flops=21504 bytes=24836
// CHECK-NEXT: 3 op=memfit.gather_grad node=wte/Gather result=96x8xf32 class=data_movement flops=256 bytes=4352
// CHECK-NEXT: 4 op=memfit.reduce_sum node=- result=32x1xf32 class=reduction flops=3072 bytes=12416
// CHECK-NEXT: class=reduction ops=1 flops=3072 bytes=12416
// CHECK-NEXT: class=data_movement ops=1 flops=256 bytes=4352
// CHECK-NEXT: class=loss ops=3 flops=36928 bytes=37772
// CHECK-NEXT: total: 40256 FLOPs, 54540 bytes
func.func @training(%logits: tensor<32x96xf32>, %labels: tensor<32xi64>, %dy: tensor<2x16x8xf32>, %ids: tensor<2x16xi64>) -> (tensor<f32>, tensor<f32>, tensor<32x96xf32>, tensor<96x8xf32>, tensor<32x1xf32>) {
  %l = memfit.softmax_cross_entropy_loss mean %logits, %labels : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32> loc("loss")
  %n = memfit.negative_log_likelihood_loss mean %logits, %labels : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32> loc("nll")
  %one = memfit.constant dense<1.000000e+00> : tensor<f32>
  %d = memfit.softmax_cross_entropy_grad mean %logits, %labels, %one : (tensor<32x96xf32>, tensor<32xi64>, tensor<f32>) -> tensor<32x96xf32> loc("loss")
  %dw = memfit.gather_grad %dy, %ids {axis = 0 : i64} : (tensor<2x16x8xf32>, tensor<2x16xi64>) -> tensor<96x8xf32> loc("wte/Gather")
  %s = memfit.reduce_sum %d {axes = array<i64: -1>, keepdims = true} : tensor<32x96xf32> -> tensor<32x1xf32>
  return %l, %n, %d, %dw, %s : tensor<f32>, tensor<f32>, tensor<32x96xf32>, tensor<96x8xf32>, tensor<32x1xf32>
}
