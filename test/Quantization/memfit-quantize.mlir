// memfit-quantize optimizer-states=8bit after memfit-optimizer: each state
// of at least min-8bit-size values becomes ui8 codes and one f32 absmax per
// 256 values (the unsigned map for exp_avg_sq), and the update stays one
// kernel that dequantizes the states at its start and quantizes the new
// ones at its end. Smaller states, and those of parameters matching
// keep-fp32-states, stay fp32.
// RUN: memfit-opt %s -split-input-file --memfit-optimizer --memfit-quantize='optimizer-states=8bit' | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-optimizer --memfit-quantize='optimizer-states=8bit keep-fp32-states=w' | FileCheck %s --check-prefix=KEEP
// RUN: memfit-opt %s -split-input-file --memfit-optimizer --memfit-quantize='optimizer-states=8bit min-8bit-size=0 state-block-size=64' | FileCheck %s --check-prefix=ALL
// RUN: memfit-opt %s -split-input-file --memfit-optimizer='optimizer=sgd momentum=0.9' --memfit-quantize='optimizer-states=8bit' | FileCheck %s --check-prefix=SGD
// RUN: memfit-opt %s -split-input-file --memfit-optimizer --memfit-quantize | FileCheck %s --check-prefix=FP32
// RUN: not memfit-opt %s -split-input-file --memfit-optimizer --memfit-quantize='optimizer-states=4bit' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not memfit-opt %s -split-input-file --memfit-quantize='optimizer-states=8bit' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NO-STATES
// RUN: not memfit-opt %s -split-input-file --memfit-optimizer --memfit-quantize='optimizer-states=8bit keep-fp32-states=[' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-GLOB

memfit.parameter @w = dense<1.0> : tensor<64x80xf32> {memfit.role = "parameter"}
memfit.parameter @b = dense<1.0> : tensor<80xf32> {memfit.role = "parameter"}

func.func @main(%x: tensor<64x80xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<64x80xf32> {memfit.gradient_of = @w, onnx.name = "grad.w"}, tensor<80xf32> {memfit.gradient_of = @b, onnx.name = "grad.b"}) {
  %w = memfit.load_parameter @w : tensor<64x80xf32>
  %b = memfit.load_parameter @b : tensor<80xf32>
  %a = memfit.add %w, %b : tensor<64x80xf32>, tensor<80xf32> -> tensor<64x80xf32>
  %p = memfit.mul %a, %x : tensor<64x80xf32>, tensor<64x80xf32> -> tensor<64x80xf32>
  %l = memfit.reduce_sum %p {axes = array<i64>, keepdims = false} : tensor<64x80xf32> -> tensor<f32>
  %gb = memfit.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : tensor<64x80xf32> -> tensor<80xf32>
  return %l, %x, %gb : tensor<f32>, tensor<64x80xf32>, tensor<80xf32>
}

// CHECK: memfit.parameter @w = dense<1.000000e+00> : tensor<64x80xf32>
// CHECK-NEXT: memfit.parameter @w.exp_avg.codes = dense<0> : tensor<5120xui8> {memfit.quantized = "codes", memfit.role = "optimizer_state", memfit.state_of = @w}
// CHECK-NEXT: memfit.parameter @w.exp_avg.absmax = dense<0.000000e+00> : tensor<20xf32> {memfit.quantized = "absmax", memfit.role = "optimizer_state", memfit.state_of = @w}
// CHECK-NEXT: memfit.parameter @w.exp_avg_sq.codes = dense<0> : tensor<5120xui8> {memfit.quantized = "codes", memfit.role = "optimizer_state", memfit.state_of = @w}
// CHECK-NEXT: memfit.parameter @w.exp_avg_sq.absmax = dense<0.000000e+00> : tensor<20xf32> {memfit.quantized = "absmax", memfit.role = "optimizer_state", memfit.state_of = @w}
// CHECK-NEXT: memfit.parameter @b = dense<1.000000e+00> : tensor<80xf32>
// CHECK-NEXT: memfit.parameter @b.exp_avg = dense<0.000000e+00> : tensor<80xf32>
// CHECK-NEXT: memfit.parameter @b.exp_avg_sq = dense<0.000000e+00> : tensor<80xf32>
// CHECK-NOT: memfit.parameter @w.exp_avg =
// CHECK-LABEL: func.func @train_step
// CHECK: memfit.assign @step
// CHECK-NEXT: %[[W:.+]] = memfit.load_parameter @w : tensor<64x80xf32>
// CHECK-NEXT: %[[MC:.+]] = memfit.load_parameter @w.exp_avg.codes : tensor<5120xui8>
// CHECK-NEXT: %[[MA:.+]] = memfit.load_parameter @w.exp_avg.absmax : tensor<20xf32>
// CHECK-NEXT: %[[VC:.+]] = memfit.load_parameter @w.exp_avg_sq.codes : tensor<5120xui8>
// CHECK-NEXT: %[[VA:.+]] = memfit.load_parameter @w.exp_avg_sq.absmax : tensor<20xf32>
// CHECK-NEXT: %[[K:.+]]:5 = memfit.kernel(%[[W]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[MC]], %[[MA]], %[[VC]], %[[VA]])
// CHECK-SAME: -> (tensor<64x80xf32>, tensor<5120xui8>, tensor<20xf32>, tensor<5120xui8>, tensor<20xf32>)
// CHECK-NEXT: ^bb0({{.*}}, %[[AMC:.+]]: tensor<5120xui8>, %[[AMA:.+]]: tensor<20xf32>, %[[AVC:.+]]: tensor<5120xui8>, %[[AVA:.+]]: tensor<20xf32>):
// CHECK-NEXT: %[[V:.+]] = memfit.dequantize dynamic_unsigned %[[AVC]], %[[AVA]] {block_size = 256 : i64} : (tensor<5120xui8>, tensor<20xf32>) -> tensor<64x80xf32>
// CHECK-NEXT: %[[M:.+]] = memfit.dequantize dynamic %[[AMC]], %[[AMA]] {block_size = 256 : i64} : (tensor<5120xui8>, tensor<20xf32>) -> tensor<64x80xf32>
// CHECK: %[[QM:.+]], %[[SM:.+]] = memfit.quantize dynamic %{{.+}} {block_size = 256 : i64} : tensor<64x80xf32> -> tensor<5120xui8>, tensor<20xf32>
// CHECK-NEXT: %[[QV:.+]], %[[SV:.+]] = memfit.quantize dynamic_unsigned %{{.+}} {block_size = 256 : i64} : tensor<64x80xf32> -> tensor<5120xui8>, tensor<20xf32>
// CHECK-NEXT: memfit.yield %{{.+}}, %[[QM]], %[[SM]], %[[QV]], %[[SV]]
// CHECK: memfit.assign @w, %[[K]]#0
// CHECK-NEXT: memfit.assign @w.exp_avg.codes, %[[K]]#1 : tensor<5120xui8>
// CHECK-NEXT: memfit.assign @w.exp_avg.absmax, %[[K]]#2 : tensor<20xf32>
// CHECK-NEXT: memfit.assign @w.exp_avg_sq.codes, %[[K]]#3 : tensor<5120xui8>
// CHECK-NEXT: memfit.assign @w.exp_avg_sq.absmax, %[[K]]#4 : tensor<20xf32>
// The bias's 80-value states stay fp32, in a kernel without quantization.
// CHECK: memfit.load_parameter @b.exp_avg : tensor<80xf32>
// CHECK-NOT: memfit.quantize
// CHECK: memfit.assign @b.exp_avg_sq

// KEEP-NOT: codes
// KEEP: memfit.parameter @w.exp_avg = dense<0.000000e+00> : tensor<64x80xf32>
// KEEP-NOT: codes

// ALL: memfit.parameter @w.exp_avg.absmax = dense<0.000000e+00> : tensor<80xf32>
// ALL: memfit.parameter @b.exp_avg.codes = dense<0> : tensor<80xui8>
// ALL-NEXT: memfit.parameter @b.exp_avg.absmax = dense<0.000000e+00> : tensor<2xf32>
// ALL: memfit.quantize dynamic %{{.+}} {block_size = 64 : i64} : tensor<80xf32> -> tensor<80xui8>, tensor<2xf32>

// SGD's momentum buffer may be negative: the signed map.
// SGD: memfit.parameter @w.momentum_buffer.codes = dense<0> : tensor<5120xui8>
// SGD: memfit.dequantize dynamic %
// SGD: memfit.quantize dynamic %

// FP32-NOT: codes
// FP32: memfit.parameter @w.exp_avg = dense<0.000000e+00> : tensor<64x80xf32>

// BAD: for the --optimizer-states option: unknown optimizer-state storage '4bit'; expected fp32 or 8bit
// NO-STATES: error: optimizer-states=8bit: the module has no optimizer state; run memfit-optimizer first
// BAD-GLOB: error: bad keep-fp32-states pattern '['
