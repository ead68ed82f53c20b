// memfit-shard world-size=2 bucket-bytes=0: each gradient memfit-autodiff
// returns is averaged over the ranks by a memfit.all_reduce placed right
// after the op that makes it final (w2's before w1's gradient is computed),
// the loss just before the return; the module records the world size and
// stage.
// RUN: memfit-opt %s -split-input-file --memfit-autodiff --memfit-shard='world-size=2 bucket-bytes=0' | FileCheck %s
// In buckets (the default, 25 MiB): w2's and w1's gradients, final one
// after the other, are flattened into one buffer in that order, all-reduced
// once right after w1's is final, and read back as slices; with buckets of
// 200 bytes the two (128 and 256 bytes) are reduced apart.
// RUN: memfit-opt %s -split-input-file --memfit-autodiff --memfit-shard='world-size=2' | FileCheck %s --check-prefix=BUCKET
// RUN: memfit-opt %s -split-input-file --memfit-autodiff --memfit-shard='world-size=2 bucket-bytes=200' | FileCheck %s --check-prefix=APART
// RUN: not memfit-opt %s -split-input-file --memfit-train-pipeline='world-size=2 bucket-bytes=-1' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// Through the training pipeline: the optimizer's updates read the averaged
// gradients, and the memory plan files what the collectives receive as
// communication.
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='optimizer=sgd world-size=2 bucket-bytes=0' --memfit-memory-plan -o /dev/null | FileCheck %s --check-prefix=PLAN
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='optimizer=sgd world-size=2 bucket-bytes=0' | FileCheck %s --check-prefix=PIPE
// ZeRO stage 1, rank 1 of 2: the momentum buffers are the rank's rows
// (4 of 8), the update reads rows 4 to 8 of the weight and of the averaged
// gradient, and the updated rows are all-gathered into the weight.
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='optimizer=sgd momentum=0.9 world-size=2 zero=1 rank=1 bucket-bytes=0' | FileCheck %s --check-prefix=ZERO1
// One rank: nothing but the attributes.
// RUN: memfit-opt %s -split-input-file --memfit-autodiff --memfit-shard='world-size=1' | FileCheck %s --check-prefix=ONE
// RUN: not memfit-opt %s -split-input-file --memfit-autodiff --memfit-shard='world-size=2 zero=4' 2>&1 | FileCheck %s --check-prefix=ZERO
// ZeRO stage 3, rank 1 of 2: each parameter is the rank's rows (4 of 8,
// whole_rows = 8), and every read of it is a gather of its own right
// before the op that reads it: the forward's matmul and the backward's
// gemm each gather w2 (numbered so that CSE keeps both). The update
// reads and writes the rows in place, with no gather after it.
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='optimizer=sgd momentum=0.9 world-size=2 zero=3 rank=1' | FileCheck %s --check-prefix=ZERO3
// ZeRO stage 2: no all-reduce of the gradients; the optimizer averages each
// one by a reduce-scatter of its rows (this rank's 4 of 8).
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='optimizer=sgd momentum=0.9 world-size=2 zero=2 rank=0' | FileCheck %s --check-prefix=ZERO2
// Stage 2 with clipping: the gradients are reduce-scattered first, and the
// sum of the squares of the rank's rows is added up over the ranks before
// the norm's square root.
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='optimizer=sgd world-size=2 zero=2 clip-norm=1.0' | FileCheck %s --check-prefix=ZCLIP
// RUN: not memfit-opt %s -split-input-file --memfit-shard='world-size=2' 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not memfit-opt %s -split-input-file --memfit-train-pipeline='world-size=0' 2>&1 | FileCheck %s --check-prefix=WORLD
// Stage 2 with accumulation: each micro-batch's gradient is reduce-
// scattered and the rank's rows accumulated.
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='optimizer=sgd momentum=0.9 world-size=2 zero=2 accumulate=2' | FileCheck %s --check-prefix=ZACC
// Stage 1 with accumulation: the accumulators hold whole gradients, the
// states a rank's rows; apply clears each accumulator with a kernel of its
// own (not one buffer for two).
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='world-size=2 zero=1 accumulate=2' | FileCheck %s --check-prefix=ZACC1
// ZACC1: memfit.parameter @w1.exp_avg = {{.*}} : tensor<4x8xf32>
// ZACC1: memfit.parameter @w1.grad = {{.*}} : tensor<8x8xf32> {memfit.role = "gradient_accumulator"}
// ZACC1-LABEL: func.func @apply
// ZACC1: memfit.kernel() {memfit.clears = @w1.grad} : () -> tensor<8x8xf32>
// ZACC1: memfit.assign @w1.grad, %{{.+}} : tensor<8x8xf32>

memfit.parameter @w1 = dense<5.000000e-01> : tensor<8x8xf32>
memfit.parameter @w2 = dense<2.500000e-01> : tensor<8x4xf32>

// CHECK: module attributes {memfit.world_size = 2 : i64, memfit.zero = 0 : i64}
// CHECK-LABEL: func.func @main
// CHECK: %[[G2:.+]] = memfit.gemm {{.*}}memfit.gradient_of = @w2
// CHECK-NEXT: %[[R2:.+]] = memfit.all_reduce mean %[[G2]] {group_size = 2 : i64, memfit.backward} : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK: %[[G1:.+]] = memfit.gemm {{.*}}memfit.gradient_of = @w1
// CHECK-NEXT: %[[R1:.+]] = memfit.all_reduce mean %[[G1]] {group_size = 2 : i64, memfit.backward} : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[L:.+]] = memfit.all_reduce mean %{{.+}} {group_size = 2 : i64} : tensor<f32> -> tensor<f32>
// CHECK-NEXT: return %[[L]], %[[R1]], %[[R2]]

// BUCKET-LABEL: func.func @main
// BUCKET: %[[G2:.+]] = memfit.gemm {{.*}}memfit.gradient_of = @w2
// BUCKET-NOT: memfit.all_reduce
// BUCKET: %[[G1:.+]] = memfit.gemm {{.*}}memfit.gradient_of = @w1
// BUCKET-NEXT: %[[F2:.+]] = memfit.reshape %[[G2]] {memfit.backward} : tensor<8x4xf32> to tensor<32xf32>
// BUCKET-NEXT: %[[F1:.+]] = memfit.reshape %[[G1]] {memfit.backward} : tensor<8x8xf32> to tensor<64xf32>
// BUCKET-NEXT: %[[B:.+]] = memfit.concat %[[F2]], %[[F1]] {axis = 0 : i64, memfit.backward} : tensor<32xf32>, tensor<64xf32> -> tensor<96xf32>
// BUCKET-NEXT: %[[M:.+]] = memfit.all_reduce mean %[[B]] {group_size = 2 : i64, memfit.backward} : tensor<96xf32> -> tensor<96xf32>
// BUCKET-NEXT: %[[S2:.+]] = memfit.slice %[[M]] {axes = array<i64: 0>, ends = array<i64: 32>, memfit.backward, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<96xf32> -> tensor<32xf32>
// BUCKET-NEXT: %[[R2:.+]] = memfit.reshape %[[S2]] {memfit.backward} : tensor<32xf32> to tensor<8x4xf32>
// BUCKET-NEXT: %[[S1:.+]] = memfit.slice %[[M]] {axes = array<i64: 0>, ends = array<i64: 96>, memfit.backward, starts = array<i64: 32>, steps = array<i64: 1>} : tensor<96xf32> -> tensor<64xf32>
// BUCKET-NEXT: %[[R1:.+]] = memfit.reshape %[[S1]] {memfit.backward} : tensor<64xf32> to tensor<8x8xf32>
// BUCKET: return %{{.+}}, %[[R1]], %[[R2]]

// APART: %[[G2:.+]] = memfit.gemm {{.*}}memfit.gradient_of = @w2
// APART-NEXT: memfit.all_reduce mean %[[G2]] {{.*}} : tensor<8x4xf32> -> tensor<8x4xf32>
// APART: %[[G1:.+]] = memfit.gemm {{.*}}memfit.gradient_of = @w1
// APART-NEXT: memfit.all_reduce mean %[[G1]] {{.*}} : tensor<8x8xf32> -> tensor<8x8xf32>
// APART-NOT: memfit.concat

// NEGATIVE: bucket-bytes must not be negative, got -1

// PIPE-LABEL: func.func @train_step
// PIPE: %[[R2:.+]] = memfit.all_reduce mean %{{.+}} : tensor<8x4xf32>
// PIPE: memfit.kernel({{.*}}%[[R2]]
// PIPE: memfit.assign @w2
// PIPE: %[[R1:.+]] = memfit.all_reduce mean %{{.+}} : tensor<8x8xf32>
// PIPE: memfit.kernel({{.*}}%[[R1]]
// PIPE: memfit.assign @w1

// PLAN: memory plan for @train_step
// PLAN: data parallel: received by collectives {{[1-9][0-9]*}} bytes in all
// PLAN: live at the peak {{.*}}communication

// ZERO1: module attributes {memfit.rank = 1 : i64, memfit.world_size = 2 : i64, memfit.zero = 1 : i64}
// ZERO1: memfit.parameter @w1.momentum_buffer = dense<0.000000e+00> : tensor<4x8xf32>
// ZERO1: memfit.parameter @w2.momentum_buffer = dense<0.000000e+00> : tensor<4x4xf32>
// Early updates: w2's update (its rows, the update, the gather) comes as
// soon as its averaged gradient exists, before w1's gradient.
// ZERO1: %[[G2:.+]] = memfit.all_reduce mean %{{.+}} : tensor<8x4xf32>
// ZERO1: memfit.slice %{{.+}} {axes = array<i64: 0>, ends = array<i64: 8>, memfit.shard_slice, starts = array<i64: 4>, steps = array<i64: 1>} : tensor<8x4xf32> -> tensor<4x4xf32>
// ZERO1: memfit.assign @w2.momentum_buffer, %{{.+}} : tensor<4x4xf32>
// ZERO1-NEXT: %[[W2:.+]] = memfit.all_gather %{{.+}} {group_size = 2 : i64} : tensor<4x4xf32> -> tensor<8x4xf32>
// ZERO1-NEXT: memfit.assign @w2, %[[W2]] : tensor<8x4xf32>
// ZERO1: memfit.gemm {{.*}}memfit.gradient_of = @w1
// ZERO1: memfit.slice %{{.+}} {axes = array<i64: 0>, ends = array<i64: 8>, memfit.shard_slice, starts = array<i64: 4>, steps = array<i64: 1>} : tensor<8x8xf32> -> tensor<4x8xf32>
// ZERO1: memfit.assign @w1.momentum_buffer, %{{.+}} : tensor<4x8xf32>
// ZERO1-NEXT: %[[W1:.+]] = memfit.all_gather %{{.+}} {group_size = 2 : i64} : tensor<4x8xf32> -> tensor<8x8xf32>
// ZERO1-NEXT: memfit.assign @w1, %[[W1]] : tensor<8x8xf32>

// ONE: module attributes {memfit.world_size = 1 : i64, memfit.zero = 0 : i64}
// ONE-NOT: all_reduce

// ZERO: error: memfit-shard: ZeRO stage 4 does not exist
// ZERO3: module attributes {memfit.rank = 1 : i64, memfit.world_size = 2 : i64, memfit.zero = 3 : i64}
// ZERO3: memfit.parameter @w1 = dense<5.000000e-01> : tensor<4x8xf32> {memfit.role = "parameter", memfit.whole_rows = 8 : i64}
// ZERO3: memfit.parameter @w2 = dense<2.500000e-01> : tensor<4x4xf32> {memfit.role = "parameter", memfit.whole_rows = 8 : i64}
// ZERO3-LABEL: func.func @train_step
// ZERO3: %[[R1:.+]] = memfit.load_parameter @w1 : tensor<4x8xf32>
// ZERO3-NEXT: %[[W1:.+]] = memfit.all_gather %[[R1]] {group_size = 2 : i64, memfit.regather = 0 : i64} : tensor<4x8xf32> -> tensor<8x8xf32>
// ZERO3-NEXT: memfit.matmul %arg0, %[[W1]]
// ZERO3: %[[R2:.+]] = memfit.load_parameter @w2 : tensor<4x4xf32>
// ZERO3-NEXT: %[[W2:.+]] = memfit.all_gather %[[R2]] {group_size = 2 : i64, memfit.regather = 1 : i64} : tensor<4x4xf32> -> tensor<8x4xf32>
// ZERO3-NEXT: memfit.matmul %{{.+}}, %[[W2]]
// ZERO3: %[[B2:.+]] = memfit.all_gather %[[R2]] {group_size = 2 : i64, memfit.backward, memfit.regather = 0 : i64{{.*}}} : tensor<4x4xf32> -> tensor<8x4xf32>
// ZERO3-NEXT: memfit.gemm %{{.+}}, %[[B2]] {memfit.backward, trans_b = true}
// ZERO3: memfit.reduce_scatter mean %{{.+}} : tensor<8x4xf32> -> tensor<4x4xf32>
// ZERO3: %[[U2:.+]]:2 = memfit.kernel(%[[R2]],
// ZERO3-NEXT: ^bb0
// ZERO3: memfit.assign @w2, %[[U2]]#0 : tensor<4x4xf32>
// ZERO3-NOT: memfit.all_gather {{.*}} -> tensor<8x4xf32>
// ZERO3: memfit.assign @w1, %{{.+}} : tensor<4x8xf32>
// ZERO2-LABEL: func.func @train_step
// ZERO2-NOT: memfit.all_reduce {{.*}}tensor<8x
// ZERO2: memfit.reduce_scatter mean %{{.+}} {group_size = 2 : i64, memfit.shard_slice} : tensor<8x4xf32> -> tensor<4x4xf32>
// ZERO2: memfit.all_gather %{{.+}} : tensor<4x4xf32> -> tensor<8x4xf32>
// ZERO2: memfit.reduce_scatter mean %{{.+}} {group_size = 2 : i64, memfit.shard_slice} : tensor<8x8xf32> -> tensor<4x8xf32>
// ZERO2: memfit.all_gather %{{.+}} : tensor<4x8xf32> -> tensor<8x8xf32>
// ZERO2: memfit.all_reduce mean %{{.+}} : tensor<f32> -> tensor<f32>
// ZCLIP: memfit.reduce_scatter mean {{.*}} : tensor<8x8xf32> -> tensor<4x8xf32>
// ZCLIP: memfit.reduce_scatter mean {{.*}} : tensor<8x4xf32> -> tensor<4x4xf32>
// ZCLIP: memfit.all_reduce sum {{.*}} : tensor<f32> -> tensor<f32>
// ZCLIP: memfit.sqrt
// ZCLIP: memfit.all_gather
// NOGRAD: error: memfit-shard: no function returns gradients; run memfit-autodiff first
// WORLD: world-size must be at least 1, got 0
// ZACC: memfit.parameter @w1.grad = {{.*}} : tensor<4x8xf32> {memfit.role = "gradient_accumulator"}
// ZACC-LABEL: func.func @accumulate
// ZACC: memfit.reduce_scatter mean {{.*}} : tensor<8x8xf32> -> tensor<4x8xf32>
// ZACC: memfit.assign @w1.grad, %{{.+}} : tensor<4x8xf32>
// ZACC-LABEL: func.func @apply
// ZACC-NOT: memfit.reduce_scatter
// ZACC: memfit.all_gather
func.func @main(%x: tensor<2x8xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %w1 = memfit.load_parameter @w1 : tensor<8x8xf32>
  %w2 = memfit.load_parameter @w2 : tensor<8x4xf32>
  %h = memfit.matmul %x, %w1 : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  %t = memfit.tanh %h : tensor<2x8xf32>
  %y = memfit.matmul %t, %w2 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
