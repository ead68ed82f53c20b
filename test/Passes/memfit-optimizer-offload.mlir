// memfit-optimizer offload-states (the train pipeline's offload-optimizer,
// memfit-run --offload=optimizer): the optimizer states are kept in host
// memory (memfit.memory_space = "host"); the parameters and the step
// counter stay on the device. The memory plan lays the states out in a host
// region of their own, apart from the device's total, and the update writes
// them there in place.
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=adamw offload-optimizer=true' | FileCheck %s
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=adamw offload-optimizer=true' --memfit-memory-plan='buffers=true' -o /dev/null | FileCheck %s --check-prefix=PLAN
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=adamw' --memfit-memory-plan -o /dev/null | FileCheck %s --check-prefix=DEVICE
// RUN: not memfit-opt %s --memfit-train-pipeline='optimizer=adamw8bit offload-optimizer=true' 2>&1 | FileCheck %s --check-prefix=EIGHT

// CHECK: memfit.parameter @w = {{.*}} : tensor<8x4xf32> {memfit.role = "parameter"}
// CHECK: memfit.parameter @w.exp_avg = dense<0.000000e+00> : tensor<8x4xf32> {memfit.memory_space = "host", memfit.role = "optimizer_state", memfit.state_of = @w}
// CHECK: memfit.parameter @w.exp_avg_sq = dense<0.000000e+00> : tensor<8x4xf32> {memfit.memory_space = "host", memfit.nonnegative, memfit.role = "optimizer_state", memfit.state_of = @w}
// CHECK: memfit.parameter @step = dense<0.000000e+00> : tensor<f32> {memfit.role = "counter"}

// PLAN: weights region: 512 bytes (parameters 256, constants 0)
// PLAN: total: {{[0-9]+}} bytes
// PLAN-NEXT: host region: 512 bytes (kept in host memory, not in the device's total)
// PLAN: buffer {{[0-9]+}}: host optimizer_states offset 0 bytes 128 steps {{.*}} w.exp_avg
// PLAN: buffer {{[0-9]+}}: host optimizer_states offset 256 bytes 128 steps {{.*}} w.exp_avg_sq
// PLAN: buffer {{[0-9]+}}: host optimizer_states offset 0 bytes 128 steps {{.*}} memfit.kernel

// DEVICE-NOT: host region

// EIGHT: offload-optimizer with 8-bit optimizer states is not built yet

memfit.parameter @w = dense<5.000000e-01> : tensor<8x4xf32>
func.func @main(%x: tensor<2x8xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %w = memfit.load_parameter @w : tensor<8x4xf32>
  %y = memfit.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %t = memfit.tanh %y : tensor<2x4xf32>
  %l = memfit.reduce_sum %t {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
