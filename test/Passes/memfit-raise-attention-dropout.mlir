// memfit-raise-attention with a training-mode dropout on the
// probabilities: the dropout's attributes become memfit.attention's
// dropout_ratio, dropout_seed and dropout_stream; a dropout whose result or
// mask something else reads stays spelled out, with the reason in the
// report.
// RUN: memfit-opt %s -split-input-file --memfit-raise-attention | FileCheck %s
// RUN: memfit-opt %s -split-input-file '--memfit-raise-attention=report=-' -o /dev/null | FileCheck %s --check-prefix=REPORT

// GPT-2's eager attention as TorchScript exports it in training mode: the
// causal where, the softmax, attn_dropout (ONNX Dropout, whose mask output
// the export names and nothing reads), the values. The dropout and its
// unread mask go.
// REPORT: memfit-raise-attention: 1 of 1 softmaxes became memfit.attention
// CHECK-LABEL: func.func @causal_dropout
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x3x4xf32>, %[[K:[^:]+]]: tensor<1x2x3x4xf32>, %[[V:[^:]+]]: tensor<1x2x3x4xf32>)
// CHECK-NOT: memfit.dropout
// CHECK: %[[O:.+]], %{{.+}} = memfit.attention causal %[[Q]], %[[K]], %[[V]] scale 5.000000e-01 {dropout_ratio = 1.000000e-01 : f32, dropout_seed = 42 : i64, dropout_stream = 7 : i64}
// CHECK-NOT: memfit.dropout
// CHECK: return %[[O]]
func.func @causal_dropout(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %tril = memfit.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %ninf = memfit.constant dense<0xFF800000> : tensor<f32>
  %c = memfit.constant dense<5.000000e-01> : tensor<f32>
  %kt = memfit.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = memfit.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %x = memfit.mul %s, %c : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %w = memfit.where %tril, %x, %ninf : tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %p = memfit.softmax %w : tensor<1x2x3x3xf32>
  %pd = memfit.dropout %p {ratio = 1.000000e-01 : f32, seed = 42 : i64, stream = 7 : i64} : tensor<1x2x3x3xf32>
  %m = memfit.dropout_mask %p {ratio = 1.000000e-01 : f32, seed = 42 : i64, stream = 7 : i64} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xi1>
  %o = memfit.matmul %pd, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// The is_nan zeroing of rows whose every key is hidden before the dropout
// (torch's scaled_dot_product_attention decomposition), with a run-time
// padding mask; no seed.
// REPORT: memfit-raise-attention: 1 of 1 softmaxes became memfit.attention
// CHECK-LABEL: func.func @zeroed_then_dropped
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x2x3x4xf32>, %[[KT:[^:]+]]: tensor<2x2x4x3xf32>, %[[V:[^:]+]]: tensor<2x2x3x4xf32>, %[[KEEP:[^:]+]]: tensor<2x1x1x3xi1>)
// CHECK: %[[K:.+]] = memfit.transpose %[[KT]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: %[[O:.+]], %{{.+}} = memfit.attention %[[Q]], %[[K]], %[[V]] mask %[[KEEP]] scale 2.500000e-01 {dropout_ratio = 3.000000e-01 : f32, dropout_stream = 11 : i64}
// CHECK-NEXT: return %[[O]]
func.func @zeroed_then_dropped(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>, %v: tensor<2x2x3x4xf32>, %keep: tensor<2x1x1x3xi1>) -> tensor<2x2x3x4xf32> {
  %zero = memfit.constant dense<0.000000e+00> : tensor<1xf32>
  %ninf = memfit.constant dense<0xFF800000> : tensor<1xf32>
  %r = memfit.constant dense<2.500000e-01> : tensor<f32>
  %s0 = memfit.matmul %q, %kt : tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32> -> tensor<2x2x3x3xf32>
  %s = memfit.mul %s0, %r : tensor<2x2x3x3xf32>, tensor<f32> -> tensor<2x2x3x3xf32>
  %m = memfit.where %keep, %zero, %ninf : tensor<2x1x1x3xi1>, tensor<1xf32>, tensor<1xf32> -> tensor<2x1x1x3xf32>
  %x = memfit.add %s, %m : tensor<2x2x3x3xf32>, tensor<2x1x1x3xf32> -> tensor<2x2x3x3xf32>
  %p = memfit.softmax %x : tensor<2x2x3x3xf32>
  %nan = memfit.is_nan %p : tensor<2x2x3x3xf32> -> tensor<2x2x3x3xi1>
  %pz = memfit.where %nan, %zero, %p : tensor<2x2x3x3xi1>, tensor<1xf32>, tensor<2x2x3x3xf32> -> tensor<2x2x3x3xf32>
  %pd = memfit.dropout %pz {ratio = 3.000000e-01 : f32, stream = 11 : i64} : tensor<2x2x3x3xf32>
  %o = memfit.matmul %pd, %v : tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x4xf32>
  return %o : tensor<2x2x3x4xf32>
}

// -----

// The dropped probabilities are also returned: the op would not give them.
// REPORT: memfit-raise-attention: 0 of 1 softmaxes became memfit.attention
// REPORT-NEXT: (unnamed softmax): stays spelled out: the dropout's result is also read elsewhere
// CHECK-LABEL: func.func @dropped_returned
// CHECK: memfit.dropout
// CHECK-NOT: memfit.attention
func.func @dropped_returned(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>) {
  %s = memfit.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %p = memfit.softmax %s : tensor<1x2x3x3xf32>
  %pd = memfit.dropout %p {ratio = 1.000000e-01 : f32, stream = 1 : i64} : tensor<1x2x3x3xf32>
  %o = memfit.matmul %pd, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o, %pd : tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>
}

// -----

// The dropout's mask is read (returned): it stays spelled out.
// REPORT: memfit-raise-attention: 0 of 1 softmaxes became memfit.attention
// REPORT-NEXT: (unnamed softmax): stays spelled out: the dropout's mask is read
// CHECK-LABEL: func.func @mask_read
// CHECK: memfit.dropout_mask
// CHECK-NOT: memfit.attention
func.func @mask_read(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x3xi1>) {
  %s = memfit.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %p = memfit.softmax %s : tensor<1x2x3x3xf32>
  %pd = memfit.dropout %p {ratio = 1.000000e-01 : f32, stream = 1 : i64} : tensor<1x2x3x3xf32>
  %m = memfit.dropout_mask %p {ratio = 1.000000e-01 : f32, stream = 1 : i64} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xi1>
  %o = memfit.matmul %pd, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o, %m : tensor<1x2x3x4xf32>, tensor<1x2x3x3xi1>
}

// -----

// A dropout with a step (memfit-dropout-step's counter): the op draws for
// the same step.
// CHECK-LABEL: func.func @stepped_dropout
// CHECK-SAME: %[[S:[^:]+]]: tensor<i64>
// CHECK: memfit.attention causal %{{.+}}, %{{.+}}, %{{.+}} dropout_step %[[S]] scale 5.000000e-01 {dropout_ratio = 1.000000e-01 : f32, dropout_stream = 7 : i64}
// REPORT: memfit-raise-attention: 1 of 1 softmaxes became memfit.attention
func.func @stepped_dropout(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %step: tensor<i64>) -> tensor<1x2x3x4xf32> {
  %tril = memfit.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %ninf = memfit.constant dense<0xFF800000> : tensor<f32>
  %c = memfit.constant dense<5.000000e-01> : tensor<f32>
  %kt = memfit.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = memfit.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %x = memfit.mul %s, %c : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %w = memfit.where %tril, %x, %ninf : tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %p = memfit.softmax %w : tensor<1x2x3x3xf32>
  %pd = memfit.dropout %p step %step {ratio = 1.000000e-01 : f32, stream = 7 : i64} : tensor<1x2x3x3xf32>
  %o = memfit.matmul %pd, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
