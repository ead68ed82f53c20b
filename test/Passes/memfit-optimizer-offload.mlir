// memfit-optimizer offload-states (the train pipeline's offload-optimizer,
// memfit-run --offload=optimizer), ZeRO-Offload: the fp32 master @w and its
// optimizer states are kept in host memory (memfit.memory_space = "host");
// the forward and backward read a working copy @w.working on the device
// (f32 here; bf16 under precision=bf16, where it replaces the per-use
// cast). The update is one kernel marked memfit.on_host that writes the
// master, the states and the new working copy; memfit-host-transfers copies
// what it reads from the device (the gradient, AdamW's step size, bias
// correction and decay factor) to host memory first (memfit.to_host), and
// the new working copy, which the host writes in host memory, to the device
// after it (memfit.to_device). The memory plan lays the master out first in
// the host region, then the transfers the device writes, live to the
// step's end, then the new working copy, live until its copy.
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=adamw offload-optimizer=true' | FileCheck %s
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=adamw offload-optimizer=true precision=bf16' | FileCheck %s --check-prefix=BF16
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=adamw offload-optimizer=true' --memfit-memory-plan='buffers=true' -o /dev/null | FileCheck %s --check-prefix=PLAN
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=adamw' --memfit-memory-plan -o /dev/null | FileCheck %s --check-prefix=DEVICE

// CHECK: memfit.parameter @w = {{.*}} : tensor<8x4xf32> {memfit.memory_space = "host", memfit.role = "parameter"}
// CHECK-NEXT: memfit.parameter @w.working = dense<0.000000e+00> : tensor<8x4xf32> {memfit.role = "working_copy", memfit.working_copy_of = @w}
// CHECK: memfit.parameter @w.exp_avg = dense<0.000000e+00> : tensor<8x4xf32> {memfit.memory_space = "host", memfit.role = "optimizer_state", memfit.state_of = @w}
// CHECK: memfit.parameter @w.exp_avg_sq = dense<0.000000e+00> : tensor<8x4xf32> {memfit.memory_space = "host", memfit.nonnegative, memfit.role = "optimizer_state", memfit.state_of = @w}
// CHECK: memfit.parameter @step = dense<0.000000e+00> : tensor<f32> {memfit.role = "counter"}
// CHECK: %[[WORKING:.*]] = memfit.load_parameter @w.working
// CHECK-NEXT: memfit.matmul %{{.*}}, %[[WORKING]]
// CHECK: %[[GRAD:.*]] = memfit.gemm {{.*}}memfit.gradient_of = @w
// CHECK: %[[MASTER:.*]] = memfit.load_parameter @w :
// CHECK: %[[COPY:.*]] = memfit.kernel(%[[GRAD]]) {memfit.to_host}
// CHECK-NEXT: ^bb0(%[[ARG:.*]]: tensor<8x4xf32>):
// CHECK-NEXT: memfit.yield %[[ARG]]
// CHECK-COUNT-3: memfit.kernel(%{{.*}}) {memfit.to_host} : (tensor<f32>) -> tensor<f32>
// CHECK: %[[UPDATE:.*]]:4 = memfit.kernel(%[[MASTER]], %[[COPY]], {{.*}}) {memfit.on_host}
// CHECK: memfit.yield %[[NEW:[0-9]+]], %{{.*}}, %{{.*}}, %[[NEW]] :
// CHECK: %[[UP:.*]] = memfit.kernel(%[[UPDATE]]#3) {memfit.to_device}
// CHECK: memfit.assign @w, %[[UPDATE]]#0
// CHECK: memfit.assign @w.working, %[[UP]]

// BF16: memfit.parameter @w.working = dense<0.000000e+00> : tensor<8x4xbf16> {memfit.role = "working_copy", memfit.working_copy_of = @w}
// BF16: %[[WORKING:.*]] = memfit.load_parameter @w.working : tensor<8x4xbf16>
// BF16-NOT: reason = "working-copy"
// BF16: memfit.matmul %{{.*}}, %[[WORKING]] : tensor<2x8xbf16>, tensor<8x4xbf16>
// The gradient crosses in bf16; its cast to f32 joined the host's update.
// BF16: memfit.kernel(%{{.*}}) {memfit.to_host} : (tensor<8x4xbf16>) -> tensor<8x4xbf16>
// BF16: memfit.kernel({{.*}}) {memfit.on_host}
// BF16: memfit.cast %{{.*}} {memfit.backward, memfit.gradient_of = @w, reason = "gradient"} : tensor<8x4xbf16> to tensor<8x4xf32>
// BF16: memfit.cast %{{.*}} {reason = "working-copy"} : tensor<8x4xf32> to tensor<8x4xbf16>
// BF16: memfit.kernel(%{{.*}}) {memfit.to_device} : (tensor<8x4xbf16>) -> tensor<8x4xbf16>
// BF16: memfit.assign @w.working, %{{.*}} : tensor<8x4xbf16>

// PLAN: total: {{[0-9]+}} bytes
// PLAN-NEXT: host region: 2048 bytes (kept in host memory, not in the device's total)
// PLAN: weights parameters offset 0 bytes 128 steps {{.*}} w.working
// PLAN: host parameters offset 0 bytes 128 steps {{.*}} w
// PLAN: host optimizer_states offset 256 bytes 128 steps {{.*}} w.exp_avg
// PLAN: host optimizer_states offset 512 bytes 128 steps {{.*}} w.exp_avg_sq
// PLAN: host host_transfers offset 768 bytes 128 steps [[FIRST:[0-9]+]]..[[END:[0-9]+]] memfit.kernel
// PLAN: host host_transfers offset {{[0-9]+}} bytes 4 steps {{[0-9]+}}..[[END]] memfit.kernel
// PLAN: host parameters offset 0 bytes 128 steps [[UPDATE:[0-9]+]]..[[UPDATE]] memfit.kernel
// PLAN: host host_transfers offset {{[0-9]+}} bytes 128 steps [[UPDATE]]..[[COPY:[0-9]+]] memfit.kernel
// PLAN: weights parameters offset 0 bytes 128 steps [[COPY]]..[[COPY]] memfit.kernel

// DEVICE-NOT: host region

memfit.parameter @w = dense<5.000000e-01> : tensor<8x4xf32>
func.func @main(%x: tensor<2x8xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %w = memfit.load_parameter @w : tensor<8x4xf32>
  %y = memfit.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %t = memfit.tanh %y : tensor<2x4xf32>
  %l = memfit.reduce_sum %t {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
