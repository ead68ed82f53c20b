// memfit-raise-attention: spelled-out attention becomes memfit.attention;
// near misses stay, with the reason in the report.
// RUN: memfit-opt %s -split-input-file --memfit-raise-attention | FileCheck %s
// RUN: memfit-opt %s -split-input-file '--memfit-raise-attention=report=-' -o /dev/null | FileCheck %s --check-prefix=REPORT
// Every exporter's spelling in the fixtures and the Hugging Face exports:
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=batch=2,seq=8 --canonicalize '--memfit-raise-attention=report=-' -o /dev/null | FileCheck %s --check-prefix=FIXTURE
// RUN: memfit-opt %models/bert_dynamo.onnx --input-shape=batch=2,seq=8 --canonicalize '--memfit-raise-attention=report=-' -o /dev/null | FileCheck %s --check-prefix=FIXTURE
// RUN: memfit-opt %models/llama_dynamo.onnx --input-shape=batch=2,seq=8 --canonicalize '--memfit-raise-attention=report=-' -o /dev/null | FileCheck %s --check-prefix=FIXTURE
// RUN: memfit-opt %models/hf/gpt2_mask_ts.onnx --input-shape=batch=2,seq=8 --canonicalize --cse --memfit-raise-attention | FileCheck %s --check-prefix=HF
// RUN: memfit-opt %models/hf/llama_mask_ts.onnx --input-shape=batch=2,seq=8 --canonicalize --cse --memfit-raise-attention | FileCheck %s --check-prefix=HF
// RUN: memfit-opt %models/hf/bert_mask_ts.onnx --input-shape=batch=2,seq=8 --canonicalize --cse --memfit-raise-attention | FileCheck %s --check-prefix=HF-ENCODER
// RUN: memfit-opt %models/hf/gpt2_mask_dynamo.onnx --input-shape=batch=2,seq=8 --canonicalize --cse --memfit-raise-attention | FileCheck %s --check-prefix=HF-DYNAMO
// FIXTURE: memfit-raise-attention: 2 of 2 softmaxes became memfit.attention
// The causal mask becomes the flag, the padding mask stays at [B, 1, 1, T]:
// HF-COUNT-2: memfit.attention causal {{.*}} mask {{.*}} tensor<2x1x1x8xi1>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
// HF-ENCODER-COUNT-2: memfit.attention %{{.*}} mask {{.*}} tensor<2x1x1x8xi1>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
// The dynamo exports add where(causal and padding, 0, finfo.min): the
// triangle becomes the flag, the padding stays at [B, 1, 1, T], and a row
// whose every key is hidden attends to every key alike, as with the finite
// fill (uniform_hidden_rows).
// HF-DYNAMO-COUNT-2: memfit.attention causal uniform_hidden_rows %{{.*}} mask {{.*}} tensor<2x1x1x8xi1>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)

// GPT-2 as TorchScript exports it: k^T as a transpose of the heads'
// reshape, the scores scaled, a constant lower triangle hiding the future
// with -inf. The triangle becomes `causal`, the key the transpose without
// the swap.
// REPORT: memfit-raise-attention: 1 of 1 softmaxes became memfit.attention
// CHECK-LABEL: func.func @causal_where
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x3x4xf32>, %[[K:[^:]+]]: tensor<1x3x2x4xf32>, %[[V:[^:]+]]: tensor<1x2x3x4xf32>)
// CHECK: %[[KT:.+]] = memfit.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[O:.+]], %{{.+}} = memfit.attention causal %[[Q]], %[[KT]], %[[V]] scale 5.000000e-01
// CHECK-NEXT: return %[[O]]
func.func @causal_where(%q: tensor<1x2x3x4xf32>, %k: tensor<1x3x2x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %tril = memfit.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %ninf = memfit.constant dense<0xFF800000> : tensor<f32>
  %c = memfit.constant dense<5.000000e-01> : tensor<f32>
  %kt = memfit.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x2x4xf32> -> tensor<1x2x4x3xf32>
  %s = memfit.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %x = memfit.mul %s, %c : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %hide = memfit.not %tril : tensor<1x1x3x3xi1>
  %w = memfit.where %hide, %ninf, %x : tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = memfit.softmax %w : tensor<1x2x3x3xf32>
  %o = memfit.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// The dynamo exporter's scaled_dot_product_attention: q and k scaled by the
// square root of the scale each, the padding mask added as where(keep, 0,
// -inf), the rows that are all -inf (NaN after the softmax) zeroed.
// REPORT: memfit-raise-attention: 1 of 1 softmaxes became memfit.attention
// CHECK-LABEL: func.func @sdpa_padding
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x2x3x4xf32>, %[[KT:[^:]+]]: tensor<2x2x4x3xf32>, %[[V:[^:]+]]: tensor<2x2x3x4xf32>, %[[KEEP:[^:]+]]: tensor<2x1x1x3xi1>)
// CHECK: %[[K:.+]] = memfit.transpose %[[KT]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: %[[O:.+]], %{{.+}} = memfit.attention %[[Q]], %[[K]], %[[V]] mask %[[KEEP]] scale 2.500000e-01
// CHECK-NEXT: return %[[O]]
func.func @sdpa_padding(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>, %v: tensor<2x2x3x4xf32>, %keep: tensor<2x1x1x3xi1>) -> tensor<2x2x3x4xf32> {
  %zero = memfit.constant dense<0.000000e+00> : tensor<1xf32>
  %ninf = memfit.constant dense<0xFF800000> : tensor<1xf32>
  %r = memfit.constant dense<5.000000e-01> : tensor<f32>
  %qs = memfit.mul %q, %r : tensor<2x2x3x4xf32>, tensor<f32> -> tensor<2x2x3x4xf32>
  %ks = memfit.mul %kt, %r : tensor<2x2x4x3xf32>, tensor<f32> -> tensor<2x2x4x3xf32>
  %s = memfit.matmul %qs, %ks : tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32> -> tensor<2x2x3x3xf32>
  %m = memfit.where %keep, %zero, %ninf : tensor<2x1x1x3xi1>, tensor<1xf32>, tensor<1xf32> -> tensor<2x1x1x3xf32>
  %x = memfit.add %s, %m : tensor<2x2x3x3xf32>, tensor<2x1x1x3xf32> -> tensor<2x2x3x3xf32>
  %p = memfit.softmax %x : tensor<2x2x3x3xf32>
  %nan = memfit.is_nan %p : tensor<2x2x3x3xf32> -> tensor<2x2x3x3xi1>
  %pz = memfit.where %nan, %zero, %p : tensor<2x2x3x3xi1>, tensor<1xf32>, tensor<2x2x3x3xf32> -> tensor<2x2x3x3xf32>
  %o = memfit.matmul %pz, %v : tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x4xf32>
  return %o : tensor<2x2x3x4xf32>
}

// -----

// where(keep, scores, -inf), the keep-mask first: the mask is the keep-mask
// itself (no negation), here a run-time one.
// REPORT: memfit-raise-attention: 1 of 1 softmaxes became memfit.attention
// CHECK-LABEL: func.func @keep_first
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x3x4xf32>, %[[KT:[^:]+]]: tensor<1x2x4x3xf32>, %[[V:[^:]+]]: tensor<1x2x3x4xf32>, %[[KEEP:[^:]+]]: tensor<1x1x3x3xi1>)
// CHECK: memfit.attention %[[Q]], %{{.+}}, %[[V]] mask %[[KEEP]] scale 1.000000e+00
// CHECK-NOT: memfit.not
func.func @keep_first(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>, %keep: tensor<1x1x3x3xi1>) -> tensor<1x2x3x4xf32> {
  %ninf = memfit.constant dense<0xFF800000> : tensor<f32>
  %s = memfit.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %w = memfit.where %keep, %s, %ninf : tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %p = memfit.softmax %w : tensor<1x2x3x3xf32>
  %o = memfit.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// scores + where(keep, 0, finfo.min), a run-time keep-mask: a row whose
// every key is hidden has every score at the fill (the sum rounds to it),
// averages every value and passes the softmax's gradient on to the scores,
// which the op does with uniform_hidden_rows.
// REPORT: memfit-raise-attention: 1 of 1 softmaxes became memfit.attention
// CHECK-LABEL: func.func @added_finite_fill
// CHECK-SAME: %[[KEEP:[^:]+]]: tensor<1x1x1x3xi1>
// CHECK: memfit.attention uniform_hidden_rows %{{.+}}, %{{.+}}, %{{.+}} mask %[[KEEP]] scale 1.000000e+00
func.func @added_finite_fill(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>, %keep: tensor<1x1x1x3xi1>) -> tensor<1x2x3x4xf32> {
  %zero = memfit.constant dense<0.000000e+00> : tensor<f32>
  %min = memfit.constant dense<-3.40282347E+38> : tensor<f32>
  %s = memfit.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %m = memfit.where %keep, %zero, %min : tensor<1x1x1x3xi1>, tensor<f32>, tensor<f32> -> tensor<1x1x1x3xf32>
  %x = memfit.add %s, %m : tensor<1x2x3x3xf32>, tensor<1x1x1x3xf32> -> tensor<1x2x3x3xf32>
  %p = memfit.softmax %x : tensor<1x2x3x3xf32>
  %o = memfit.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Near misses. The probabilities are also returned (output_attentions):
// REPORT: memfit-raise-attention: 0 of 1 softmaxes became memfit.attention
// REPORT-NEXT: (unnamed softmax): stays spelled out: its probabilities are also read elsewhere
// CHECK-LABEL: func.func @probabilities_returned
// CHECK: memfit.softmax
// CHECK-NOT: memfit.attention
func.func @probabilities_returned(%q: tensor<1x1x3x4xf32>, %kt: tensor<1x1x4x3xf32>, %v: tensor<1x1x3x4xf32>) -> (tensor<1x1x3x4xf32>, tensor<1x1x3x3xf32>) {
  %s = memfit.matmul %q, %kt : tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32> -> tensor<1x1x3x3xf32>
  %p = memfit.softmax %s : tensor<1x1x3x3xf32>
  %o = memfit.matmul %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32> -> tensor<1x1x3x4xf32>
  return %o, %p : tensor<1x1x3x4xf32>, tensor<1x1x3x3xf32>
}

// -----

// where(hidden, finfo.min, scores): a row with every key hidden averages
// every value in the exported graph, and its scores, the fill, do not
// depend on the queries and keys: no gradient reaches them from that row,
// which memfit.attention does not do.
// REPORT: memfit-raise-attention: 0 of 1 softmaxes became memfit.attention
// REPORT-NEXT: stays spelled out: a where whose fill is finite
// CHECK-LABEL: func.func @finite_fill
// CHECK-NOT: memfit.attention
func.func @finite_fill(%q: tensor<1x1x3x4xf32>, %kt: tensor<1x1x4x3xf32>, %v: tensor<1x1x3x4xf32>, %hide: tensor<1x1x3x3xi1>) -> tensor<1x1x3x4xf32> {
  %min = memfit.constant dense<-3.40282347E+38> : tensor<f32>
  %s = memfit.matmul %q, %kt : tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32> -> tensor<1x1x3x3xf32>
  %w = memfit.where %hide, %min, %s : tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = memfit.softmax %w : tensor<1x1x3x3xf32>
  %o = memfit.matmul %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32> -> tensor<1x1x3x4xf32>
  return %o : tensor<1x1x3x4xf32>
}

// -----

// Grouped-query heads as Hugging Face's repeat_kv exports them: keys and
// values [B, 2, T, D] unsqueezed, expanded to [B, 2, 2, T, D] and merged to
// 4 heads. memfit.attention reads them unrepeated (query head h reads key
// head h / 2, as the expansion does); the repeat is left to dead-code
// removal.
// REPORT: memfit-raise-attention: 1 of 1 softmaxes became memfit.attention
// CHECK-LABEL: func.func @repeat_kv
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x3x8xf32>, %[[K:[^:]+]]: tensor<1x2x3x8xf32>, %[[V:[^:]+]]: tensor<1x2x3x8xf32>)
// CHECK: memfit.attention causal %[[Q]], %[[K]], %[[V]] scale 2.500000e-01 : (tensor<1x4x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>)
func.func @repeat_kv(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32> {
  %ku = memfit.unsqueeze %k {axes = array<i64: 2>} : tensor<1x2x3x8xf32> -> tensor<1x2x1x3x8xf32>
  %ke = memfit.expand %ku : tensor<1x2x1x3x8xf32> to tensor<1x2x2x3x8xf32>
  %kr = memfit.reshape %ke : tensor<1x2x2x3x8xf32> to tensor<1x4x3x8xf32>
  %vu = memfit.reshape %v : tensor<1x2x3x8xf32> to tensor<1x2x1x3x8xf32>
  %ve = memfit.expand %vu : tensor<1x2x1x3x8xf32> to tensor<1x2x2x3x8xf32>
  %vr = memfit.reshape %ve : tensor<1x2x2x3x8xf32> to tensor<1x4x3x8xf32>
  %tril = memfit.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %ninf = memfit.constant dense<0xFF800000> : tensor<f32>
  %c = memfit.constant dense<2.500000e-01> : tensor<f32>
  %kt = memfit.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x3x8xf32> -> tensor<1x4x8x3xf32>
  %s = memfit.matmul %q, %kt : tensor<1x4x3x8xf32>, tensor<1x4x8x3xf32> -> tensor<1x4x3x3xf32>
  %x = memfit.mul %s, %c : tensor<1x4x3x3xf32>, tensor<f32> -> tensor<1x4x3x3xf32>
  %m = memfit.where %tril, %x, %ninf : tensor<1x1x3x3xi1>, tensor<1x4x3x3xf32>, tensor<f32> -> tensor<1x4x3x3xf32>
  %p = memfit.softmax %m {axis = -1 : i64} : tensor<1x4x3x3xf32>
  %o = memfit.matmul %p, %vr : tensor<1x4x3x3xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return %o : tensor<1x4x3x8xf32>
}

// -----

// A repeat of the keys alone (values with every head of their own) is left
// as it is: the op's key and value heads must agree.
// CHECK-LABEL: func.func @repeat_keys_only
// CHECK: %[[KR:.+]] = memfit.reshape %{{.+}} : tensor<1x2x2x3x8xf32> to tensor<1x4x3x8xf32>
// CHECK: memfit.attention %{{.+}}, %[[KR]], %{{.+}} scale
func.func @repeat_keys_only(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x4x3x8xf32>) -> tensor<1x4x3x8xf32> {
  %ku = memfit.unsqueeze %k {axes = array<i64: 2>} : tensor<1x2x3x8xf32> -> tensor<1x2x1x3x8xf32>
  %ke = memfit.expand %ku : tensor<1x2x1x3x8xf32> to tensor<1x2x2x3x8xf32>
  %kr = memfit.reshape %ke : tensor<1x2x2x3x8xf32> to tensor<1x4x3x8xf32>
  %c = memfit.constant dense<2.500000e-01> : tensor<f32>
  %kt = memfit.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x3x8xf32> -> tensor<1x4x8x3xf32>
  %s = memfit.matmul %q, %kt : tensor<1x4x3x8xf32>, tensor<1x4x8x3xf32> -> tensor<1x4x3x3xf32>
  %x = memfit.mul %s, %c : tensor<1x4x3x3xf32>, tensor<f32> -> tensor<1x4x3x3xf32>
  %p = memfit.softmax %x {axis = -1 : i64} : tensor<1x4x3x3xf32>
  %o = memfit.matmul %p, %v : tensor<1x4x3x3xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return %o : tensor<1x4x3x8xf32>
}
