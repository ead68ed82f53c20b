// memfit-chunk-loss: linear cross-entropy and its gradients, a chunk of
// rows at a time; the [N, V] logits never exist whole.
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(memfit-chunk-loss{rows=3}))' | FileCheck %s
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(memfit-chunk-loss))' | FileCheck %s --check-prefix=AUTO
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(memfit-chunk-loss{rows=-1}))' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: memfit-chunk-loss: rows must be >= 0, got -1
// memfit-autodiff's linear-loss makes cross-entropy of an LM head's
// contraction these ops: the tied head of gpt (its weight the embedding
// transposed) and llama's own head, whose gradient it files.
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=batch=2,seq=8 --memfit-tie-parameters '--memfit-autodiff=loss=cross-entropy linear-loss=true' 2>/dev/null | FileCheck %s --check-prefix=TIED
// RUN: memfit-opt %models/llama_dynamo.onnx --input-shape=batch=2,seq=8 '--memfit-autodiff=loss=cross-entropy linear-loss=true' | FileCheck %s --check-prefix=UNTIED
// RUN: memfit-opt %models/hf/bert_ids_ts.onnx --input-shape=batch=2,seq=8 '--memfit-autodiff=loss=cross-entropy linear-loss=true' 2>/dev/null | FileCheck %s --check-prefix=BIASED
// BIASED: %[[B:.+]] = memfit.load_parameter @model.cls.predictions.bias : tensor<128xf32>
// BIASED: memfit.linear_cross_entropy mean %{{.+}}, %{{.+}}, %{{.+}} bias %[[B]]
// BIASED: memfit.linear_cross_entropy_grad mean %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} bias %[[B]]
// TIED: %[[W:.+]] = memfit.transpose %{{.+}} {perm = array<i64: 1, 0>} : tensor<96x32xf32> -> tensor<32x96xf32>
// TIED: %[[L:.+]] = memfit.linear_cross_entropy mean %[[H:.+]], %[[W]], %[[Y:.+]] {ignore_index = -100 : i64} : (tensor<16x32xf32>, tensor<32x96xf32>, tensor<16xi64>) -> tensor<f32>
// TIED: memfit.linear_cross_entropy_grad mean %[[H]], %[[W]], %[[Y]], %{{.+}} {ignore_index = -100 : i64, memfit.backward}
// TIED-NOT: memfit.softmax_cross_entropy
// UNTIED: memfit.linear_cross_entropy mean %{{.+}}, %{{.+}}, %{{.+}} {ignore_index = -100 : i64} : (tensor<16x64xf32>, tensor<64x128xf32>, tensor<16xi64>) -> tensor<f32>
// UNTIED: memfit.linear_cross_entropy_grad mean {{.*}}memfit.gradient_of

// A bf16 head over 5 rows in chunks of 3 and 2: mean over the labels not
// ignored (counted once), each chunk's logits taken to f32 for its loss
// (summed) and its gradient (the loss gradient divided by the count), the
// chunk's rows of dhidden, and dweight's shares added in f32.
// CHECK-LABEL: func.func @bf16_head
// CHECK-SAME: (%[[H:.+]]: tensor<5x4xbf16>, %[[W:.+]]: tensor<4x8xbf16>, %[[L:.+]]: tensor<5xi64>, %[[G:.+]]: tensor<f32>)
// CHECK: %[[COUNT:.+]] = memfit.reduce_sum %{{.+}} {axes = array<i64>, keepdims = false, memfit.backward, memfit.loss} : tensor<5xf32> -> tensor<f32>
// CHECK: %[[SCALE:.+]] = memfit.div %[[G]], %[[COUNT]]
// CHECK: %[[H0:.+]] = memfit.slice %[[H]] {{.*}}ends = array<i64: 3>{{.*}}starts = array<i64: 0>
// CHECK: %[[L0:.+]] = memfit.slice %[[L]]
// CHECK: %[[Z0:.+]] = memfit.matmul %[[H0]], %[[W]] {memfit.backward, memfit.loss} : tensor<3x4xbf16>, tensor<4x8xbf16> -> tensor<3x8xbf16>
// CHECK: %[[S0:.+]] = memfit.cast %[[Z0]] {memfit.backward, memfit.loss} : tensor<3x8xbf16> to tensor<3x8xf32>
// CHECK: %[[LOSS0:.+]] = memfit.softmax_cross_entropy_loss sum %[[S0]], %[[L0]] {ignore_index = -100 : i64, memfit.backward, memfit.loss}
// CHECK: %[[DS0:.+]] = memfit.softmax_cross_entropy_grad sum %[[S0]], %[[L0]], %[[SCALE]]
// CHECK: %[[DZ0:.+]] = memfit.cast %[[DS0]] {memfit.backward, memfit.loss, reason = "gradient"} : tensor<3x8xf32> to tensor<3x8xbf16>
// CHECK: %[[DH0:.+]] = memfit.gemm %[[DZ0]], %[[W]] {memfit.backward, memfit.loss, trans_b = true}
// CHECK: %[[DW0:.+]] = memfit.gemm %[[H0]], %[[DZ0]] {memfit.backward, memfit.loss, trans_a = true}
// CHECK: %[[DW0F:.+]] = memfit.cast %[[DW0]] {memfit.backward, memfit.loss} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: memfit.slice %[[H]] {{.*}}ends = array<i64: 5>{{.*}}starts = array<i64: 3>
// CHECK: %[[LOSS1:.+]] = memfit.softmax_cross_entropy_loss sum
// CHECK: %[[LOSSES:.+]] = memfit.add %[[LOSS0]], %[[LOSS1]]
// CHECK: %[[DH1:.+]] = memfit.gemm %{{.+}}, %[[W]] {memfit.backward, memfit.loss, trans_b = true} : (tensor<2x8xbf16>, tensor<4x8xbf16>) -> tensor<2x4xbf16>
// CHECK: %[[DW1F:.+]] = memfit.cast %{{.+}} {memfit.backward, memfit.loss} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: %[[DWF:.+]] = memfit.add %[[DW0F]], %[[DW1F]]
// CHECK: %[[DW:.+]] = memfit.cast %[[DWF]] {memfit.backward, reason = "gradient"} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[LOSS:.+]] = memfit.div %[[LOSSES]], %[[COUNT]]
// CHECK: %[[DH:.+]] = memfit.concat %[[DH0]], %[[DH1]] {axis = 0 : i64, memfit.backward}
// CHECK: return %[[LOSS]], %[[DH]], %[[DW]]
// The automatic size: logits the size of the hidden states (5 * 4 / 8
// rows, rounded up: 3), and at least one of 16 chunks (5 rows > D = 4).
// AUTO-LABEL: func.func @bf16_head
// AUTO-COUNT-2: memfit.softmax_cross_entropy_loss sum
// AUTO-NOT: memfit.softmax_cross_entropy_loss
func.func @bf16_head(%h: tensor<5x4xbf16>, %w: tensor<4x8xbf16>, %labels: tensor<5xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<5x4xbf16>, tensor<4x8xbf16>) {
  %l = memfit.linear_cross_entropy mean %h, %w, %labels {ignore_index = -100 : i64} : (tensor<5x4xbf16>, tensor<4x8xbf16>, tensor<5xi64>) -> tensor<f32>
  %dh, %dw = memfit.linear_cross_entropy_grad mean %h, %w, %labels, %g {ignore_index = -100 : i64} : (tensor<5x4xbf16>, tensor<4x8xbf16>, tensor<5xi64>, tensor<f32>) -> (tensor<5x4xbf16>, tensor<4x8xbf16>)
  return %l, %dh, %dw : tensor<f32>, tensor<5x4xbf16>, tensor<4x8xbf16>
}

// -----

// An f32 head: each chunk's share of dweight is added as its contraction's
// C (beta 1), no separate add.
// AUTO-LABEL: func.func @f32_head
// CHECK-LABEL: func.func @f32_head
// CHECK: %[[DW0:.+]] = memfit.gemm %{{.+}}, %{{.+}} {memfit.backward, memfit.loss, trans_a = true} : (tensor<3x2xf32>, tensor<3x8xf32>) -> tensor<2x8xf32>
// CHECK: %[[DW:.+]] = memfit.gemm %{{.+}}, %{{.+}}, %[[DW0]] {memfit.backward, trans_a = true} : (tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: return %{{.+}}, %{{.+}}, %[[DW]]
func.func @f32_head(%h: tensor<5x2xf32>, %w: tensor<2x8xf32>, %labels: tensor<5xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<5x2xf32>, tensor<2x8xf32>) {
  %l = memfit.linear_cross_entropy sum %h, %w, %labels : (tensor<5x2xf32>, tensor<2x8xf32>, tensor<5xi64>) -> tensor<f32>
  %dh, %dw = memfit.linear_cross_entropy_grad sum %h, %w, %labels, %g : (tensor<5x2xf32>, tensor<2x8xf32>, tensor<5xi64>, tensor<f32>) -> (tensor<5x2xf32>, tensor<2x8xf32>)
  return %l, %dh, %dw : tensor<f32>, tensor<5x2xf32>, tensor<2x8xf32>
}

// -----

// A frozen head (LoRA's): nothing reads dweight, so no chunk computes its
// share; dhidden's rows still are.
// AUTO-LABEL: func.func @frozen_head
// CHECK-LABEL: func.func @frozen_head
// CHECK-COUNT-2: memfit.gemm %{{.+}}, %{{.+}} {memfit.backward, memfit.loss, trans_b = true}
// CHECK-NOT: trans_a
// CHECK: return
func.func @frozen_head(%h: tensor<5x2xf32>, %w: tensor<2x8xf32>, %labels: tensor<5xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<5x2xf32>) {
  %l = memfit.linear_cross_entropy mean %h, %w, %labels : (tensor<5x2xf32>, tensor<2x8xf32>, tensor<5xi64>) -> tensor<f32>
  %dh, %dw = memfit.linear_cross_entropy_grad mean %h, %w, %labels, %g : (tensor<5x2xf32>, tensor<2x8xf32>, tensor<5xi64>, tensor<f32>) -> (tensor<5x2xf32>, tensor<2x8xf32>)
  return %l, %dh : tensor<f32>, tensor<5x2xf32>
}

// -----

// No more rows than D: the automatic size is one chunk, the loss as it was
// (its own reduction, no divisor, no f32 sum of dweight).
// AUTO-LABEL: func.func @one_chunk
// AUTO-NOT: memfit.slice
// AUTO: memfit.softmax_cross_entropy_loss mean
// AUTO: memfit.softmax_cross_entropy_grad mean
// AUTO-NOT: memfit.reduce_sum
func.func @one_chunk(%h: tensor<4x8xf32>, %w: tensor<8x16xf32>, %labels: tensor<4xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<8x16xf32>) {
  %l = memfit.linear_cross_entropy mean %h, %w, %labels : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4xi64>) -> tensor<f32>
  %dh, %dw = memfit.linear_cross_entropy_grad mean %h, %w, %labels, %g : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<4x8xf32>, tensor<8x16xf32>)
  return %l, %dh, %dw : tensor<f32>, tensor<4x8xf32>, tensor<8x16xf32>
}

// -----

// A loss without a gradient (nothing trained behind it), reduction sum:
// the chunks' losses alone, no divisor.
// AUTO-LABEL: func.func @loss_only
// CHECK-LABEL: func.func @loss_only
// CHECK-COUNT-2: memfit.softmax_cross_entropy_loss sum
// CHECK-NOT: memfit.softmax_cross_entropy_grad
// CHECK-NOT: memfit.div
// CHECK: %[[S:.+]] = memfit.add
// CHECK: return %[[S]]
func.func @loss_only(%h: tensor<4x4xf32>, %w: tensor<4x8xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %l = memfit.linear_cross_entropy sum %h, %w, %labels : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A head with a bias (BERT's masked-LM head): each chunk adds it to its
// logits, and the bias's gradient is the sum of the chunks' row sums of
// the loss gradient (no memfit.loss on that sum: the chunks hand it on).
// AUTO-LABEL: func.func @bias
// CHECK-LABEL: func.func @bias
// CHECK-SAME: %[[B:[^:]+]]: tensor<8xf32>
// CHECK: %[[Z0:.+]] = memfit.matmul
// CHECK: memfit.add %[[Z0]], %[[B]] {memfit.backward, memfit.loss} : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
// CHECK: %[[DS0:.+]] = memfit.softmax_cross_entropy_grad sum
// CHECK: %[[DB0:.+]] = memfit.reduce_sum %[[DS0]] {axes = array<i64: 0>, keepdims = false, memfit.backward, memfit.loss} : tensor<3x8xf32> -> tensor<8xf32>
// CHECK: %[[Z1:.+]] = memfit.matmul
// CHECK: memfit.add %[[Z1]], %[[B]]
// CHECK: %[[DS1:.+]] = memfit.softmax_cross_entropy_grad sum
// CHECK: %[[DB1:.+]] = memfit.reduce_sum %[[DS1]]
// CHECK: %[[DB:.+]] = memfit.add %[[DB0]], %[[DB1]] {memfit.backward} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
// CHECK: return %{{.+}}, %{{.+}}, %{{.+}}, %[[DB]]
func.func @bias(%h: tensor<5x4xf32>, %w: tensor<4x8xf32>, %labels: tensor<5xi64>, %g: tensor<f32>, %b: tensor<8xf32>) -> (tensor<f32>, tensor<5x4xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  %l = memfit.linear_cross_entropy mean %h, %w, %labels bias %b : (tensor<5x4xf32>, tensor<4x8xf32>, tensor<5xi64>, tensor<8xf32>) -> tensor<f32>
  %dh, %dw, %db = memfit.linear_cross_entropy_grad mean %h, %w, %labels, %g bias %b : (tensor<5x4xf32>, tensor<4x8xf32>, tensor<5xi64>, tensor<f32>, tensor<8xf32>) -> (tensor<5x4xf32>, tensor<4x8xf32>, tensor<8xf32>)
  return %l, %dh, %dw, %db : tensor<f32>, tensor<5x4xf32>, tensor<4x8xf32>, tensor<8xf32>
}
