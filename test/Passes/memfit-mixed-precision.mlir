// memfit-mixed-precision: each op runs in the type its precision
// requirement asks for (low: contractions, element-wise, layer/RMS norm;
// fp32: reductions, log_softmax, losses, exp/log/pow/sqrt/reciprocal; follow:
// data movement and comparisons, in their operands' widest type), with one
// cast per value and type, inserted before its first use and carrying its
// reason. Parameters stay fp32; results keep the function's types. An
// element-wise op whose operands are all fp32 on purpose (a statistic,
// positions from integers) stays fp32.
// RUN: memfit-opt %s -split-input-file --memfit-mixed-precision=precision=bf16 -verify-diagnostics | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-mixed-precision=precision=fp16 -verify-diagnostics | FileCheck %s --check-prefix=FP16
// RUN: memfit-opt %s -split-input-file --memfit-mixed-precision='precision=bf16 keep-fp32=/mlp/*' -verify-diagnostics | FileCheck %s --check-prefix=KEEP
// RUN: not memfit-opt %s --memfit-mixed-precision=precision=fp8 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not memfit-opt %s --memfit-mixed-precision=precision=fp32 -o /dev/null 2>&1 | FileCheck %s --check-prefix=FP32
// RUN: not memfit-opt %s '--memfit-mixed-precision=keep-fp32=[' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADGLOB
// BAD: for the --precision option: unknown precision 'fp8'; expected fp32, bf16 or fp16
// FP32: error: memfit-mixed-precision: precision must be bf16 or fp16, not fp32
// BADGLOB: error: bad keep-fp32 pattern '[': invalid glob pattern, unmatched '['

memfit.parameter @w = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
memfit.parameter @g = dense<[1.0, 1.5]> : tensor<2xf32>

// A layer: matmul with a parameter, norm, softmax (low: its row statistics
// are fp32 registers), an fp32 log_softmax, a residual add.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:.+]]: tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK: %[[W:.+]] = memfit.load_parameter @w : tensor<2x2xf32>
// CHECK: %[[XL:.+]] = memfit.cast %[[X]] {reason = "lower"} : tensor<4x2xf32> to tensor<4x2xbf16>
// CHECK: %[[WL:.+]] = memfit.cast %[[W]] {reason = "working-copy"} : tensor<2x2xf32> to tensor<2x2xbf16>
// CHECK: %[[M:.+]] = memfit.matmul %[[XL]], %[[WL]] : tensor<4x2xbf16>, tensor<2x2xbf16> -> tensor<4x2xbf16>
// CHECK: %[[G:.+]] = memfit.load_parameter @g : tensor<2xf32>
// CHECK: %[[GL:.+]] = memfit.cast %[[G]] {reason = "working-copy"} : tensor<2xf32> to tensor<2xbf16>
// CHECK: %[[N:.+]] = memfit.rms_norm %[[M]], %[[GL]] {{.*}}: tensor<4x2xbf16>, tensor<2xbf16>
// CHECK: %[[P:.+]] = memfit.softmax %[[N]] {{.*}}: tensor<4x2xbf16>
// CHECK: %[[PF:.+]] = memfit.cast %[[P]] {reason = "fp32"} : tensor<4x2xbf16> to tensor<4x2xf32>
// CHECK: %[[S:.+]] = memfit.log_softmax %[[PF]] {{.*}}: tensor<4x2xf32>
// CHECK: %[[SL:.+]] = memfit.cast %[[S]] {reason = "lower"} : tensor<4x2xf32> to tensor<4x2xbf16>
// The cast of %x is made once and used again.
// CHECK: %[[R:.+]] = memfit.add %[[SL]], %[[XL]] : tensor<4x2xbf16>, tensor<4x2xbf16> -> tensor<4x2xbf16>
// CHECK: %[[OUT:.+]] = memfit.cast %[[R]] {reason = "result"} : tensor<4x2xbf16> to tensor<4x2xf32>
// CHECK: return %[[OUT]] : tensor<4x2xf32>
// FP16-LABEL: func.func @layer
// FP16: memfit.matmul {{.*}} -> tensor<4x2xf16>
// FP16: memfit.softmax {{.*}}: tensor<4x2xf16>
// FP16: memfit.log_softmax {{.*}}: tensor<4x2xf32>
// FP16: memfit.add {{.*}} -> tensor<4x2xf16>
func.func @layer(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %w = memfit.load_parameter @w : tensor<2x2xf32>
  %m = memfit.matmul %x, %w : tensor<4x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
  %g = memfit.load_parameter @g : tensor<2xf32>
  %n = memfit.rms_norm %m, %g {axis = -1 : i64, epsilon = 1.0e-5 : f32} : tensor<4x2xf32>, tensor<2xf32>
  %p = memfit.softmax %n {axis = -1 : i64} : tensor<4x2xf32>
  %s = memfit.log_softmax %p {axis = -1 : i64} : tensor<4x2xf32>
  %r = memfit.add %s, %x : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// Constants fold into constants of the low type (no cast); reductions and
// exp run in fp32; data movement follows its operand; comparisons follow
// the widest of their operands (promote).
// CHECK-LABEL: func.func @classes
// CHECK-NOT: tensor<f32>
// CHECK: %[[XL:.+]] = memfit.cast %{{.+}} {reason = "lower"} : tensor<4x2xf32> to tensor<4x2xbf16>
// CHECK: %[[C:.+]] = memfit.constant dense<5.000000e-01> : tensor<bf16>
// CHECK: %[[H:.+]] = memfit.mul %[[XL]], %[[C]] : tensor<4x2xbf16>, tensor<bf16> -> tensor<4x2xbf16>
// CHECK: %[[T:.+]] = memfit.transpose %[[H]] {{.*}} -> tensor<2x4xbf16>
// CHECK: %[[TF:.+]] = memfit.cast %[[T]] {reason = "fp32"} : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK: %[[E:.+]] = memfit.exp %[[TF]] : tensor<2x4xf32>
// CHECK: %[[SUM:.+]] = memfit.reduce_sum %[[E]] {{.*}} -> tensor<2x1xf32>
// CHECK: %[[HF:.+]] = memfit.cast %[[H]] {reason = "promote"} : tensor<4x2xbf16> to tensor<4x2xf32>
// CHECK: memfit.less %[[HF]], %{{.+}} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xi1>
func.func @classes(%x: tensor<4x2xf32>) -> (tensor<2x1xf32>, tensor<4x2xi1>) {
  %c = memfit.constant dense<0.5> : tensor<f32>
  %h = memfit.mul %x, %c : tensor<4x2xf32>, tensor<f32> -> tensor<4x2xf32>
  %t = memfit.transpose %h {perm = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
  %e = memfit.exp %t : tensor<2x4xf32>
  %s = memfit.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<2x4xf32> -> tensor<2x1xf32>
  %l = memfit.less %h, %x : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xi1>
  return %s, %l : tensor<2x1xf32>, tensor<4x2xi1>
}

// -----

// fp32 chains: a spelled-out RMSNorm's statistic (mean of x^2, + eps,
// sqrt, 1/...) and rotary angles (positions times frequencies, cos) stay
// fp32 until they meet a low value; x^2 is low in bf16 but fp32 in fp16,
// whose range it could overflow.
// CHECK-LABEL: func.func @chains
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[P:.+]]: tensor<2xi64>)
// CHECK: %[[XL:.+]] = memfit.cast %[[X]] {reason = "lower"} : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK: %[[SQ:.+]] = memfit.pow %[[XL]], %{{.+}} : tensor<2x4xbf16>, tensor<bf16> -> tensor<2x4xbf16>
// CHECK: %[[SQF:.+]] = memfit.cast %[[SQ]] {reason = "fp32"}
// CHECK: %[[MEAN:.+]] = memfit.reduce_mean %[[SQF]] {{.*}} -> tensor<2x1xf32>
// CHECK: %[[VAR:.+]] = memfit.add %[[MEAN]], %{{.+}} : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
// CHECK: %[[STD:.+]] = memfit.sqrt %[[VAR]] : tensor<2x1xf32>
// CHECK: %[[INV:.+]] = memfit.div %{{.+}}, %[[STD]] : tensor<f32>, tensor<2x1xf32> -> tensor<2x1xf32>
// CHECK: %[[INVL:.+]] = memfit.cast %[[INV]] {reason = "lower"}
// CHECK: memfit.mul %[[XL]], %[[INVL]] : tensor<2x4xbf16>, tensor<2x1xbf16> -> tensor<2x4xbf16>
// CHECK: %[[POS:.+]] = memfit.cast %[[P]] : tensor<2xi64> to tensor<2xf32>
// CHECK: %[[ANG:.+]] = memfit.mul %[[POS]], %{{.+}} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK: %[[COS:.+]] = memfit.cos %[[ANG]] : tensor<2xf32>
// FP16-LABEL: func.func @chains
// FP16: memfit.pow %{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
// FP16: memfit.add {{.*}} -> tensor<2x1xf32>
// FP16: memfit.mul {{.*}} -> tensor<2x4xf16>
// FP16: memfit.cos %{{.+}} : tensor<2xf32>
func.func @chains(%x: tensor<2x4xf32>, %p: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  %two = memfit.constant dense<2.0> : tensor<f32>
  %sq = memfit.pow %x, %two : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %mean = memfit.reduce_mean %sq {axes = array<i64: -1>} : tensor<2x4xf32> -> tensor<2x1xf32>
  %eps = memfit.constant dense<1.0e-6> : tensor<f32>
  %var = memfit.add %mean, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %std = memfit.sqrt %var : tensor<2x1xf32>
  %one = memfit.constant dense<1.0> : tensor<f32>
  %inv = memfit.div %one, %std : tensor<f32>, tensor<2x1xf32> -> tensor<2x1xf32>
  %y = memfit.mul %x, %inv : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %pos = memfit.cast %p : tensor<2xi64> to tensor<2xf32>
  %freq = memfit.constant dense<0.3> : tensor<f32>
  %ang = memfit.mul %pos, %freq : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %cos = memfit.cos %ang : tensor<2xf32>
  return %y, %cos : tensor<2x4xf32>, tensor<2xf32>
}

// -----

// keep-fp32 keeps the ops of matching ONNX nodes in fp32, with its own
// reason; other nodes are lowered as usual.
// KEEP-LABEL: func.func @keep
// KEEP: %[[A:.+]] = memfit.add %{{.+}}, %{{.+}} : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
// KEEP: %[[AF:.+]] = memfit.cast %[[A]] {reason = "keep-fp32"} : tensor<4xbf16> to tensor<4xf32>
// KEEP: %[[M:.+]] = memfit.mul %[[AF]], %[[AF]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// KEEP: return %[[M]] : tensor<4xf32>
// CHECK-LABEL: func.func @keep
// CHECK: memfit.mul {{.*}} -> tensor<4xbf16>
func.func @keep(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = memfit.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/attn/Add")
  %m = memfit.mul %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/mlp/Mul")
  return %m : tensor<4xf32>
}

// -----

// A cast of a cast folds when the middle type holds the source exactly: the
// model's own bf16 -> f32 cast and the pass's f32 -> bf16 cast vanish. Ops
// on f64 values are not the pass's business.
// CHECK-LABEL: func.func @fold
// CHECK-SAME: (%[[X:.+]]: tensor<4xbf16>, %[[D:.+]]: tensor<4xf64>)
// CHECK-NEXT: %[[N:.+]] = memfit.neg %[[X]] : tensor<4xbf16>
// CHECK-NEXT: %[[D2:.+]] = memfit.add %[[D]], %[[D]] : tensor<4xf64>
// CHECK-NEXT: %[[NF:.+]] = memfit.cast %[[N]] {reason = "result"} : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: return %[[NF]], %[[D2]]
func.func @fold(%x: tensor<4xbf16>, %d: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>) {
  %f = memfit.cast %x : tensor<4xbf16> to tensor<4xf32>
  %n = memfit.neg %f : tensor<4xf32>
  %d2 = memfit.add %d, %d : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  return %n, %d2 : tensor<4xf32>, tensor<4xf64>
}

// -----

// A training step is too late: the backward would stay in fp32.
func.func @late(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{memfit-mixed-precision runs on a forward model, before memfit-autodiff and memfit-form-kernels}}
  %n = memfit.neg %x {memfit.backward} : tensor<4xf32>
  return %n : tensor<4xf32>
}
