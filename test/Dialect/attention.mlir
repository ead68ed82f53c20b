// Round trip of memfit.attention and its gradient ops, and their costs.
// RUN: memfit-opt %s -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file -mlir-print-op-generic | memfit-opt -split-input-file | FileCheck %s
// RUN: memfit-opt %s -split-input-file -verify-roundtrip -o /dev/null
// RUN: memfit-opt %s -split-input-file --memfit-op-cost -o /dev/null | FileCheck %s --check-prefix=COST

// CHECK-LABEL: func.func @causal
// CHECK: memfit.attention causal %{{.+}}, %{{.+}}, %{{.+}} scale 1.250000e-01 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
// Causal 16 x 16: 136 of the 256 pairs, 2 x 4 heads, (2 * 8 + 2 * 8 + 5)
// FLOPs a pair; bytes: 3 x 4 KiB read, 4 KiB + 512 B written.
// COST-LABEL: function @causal
// COST: op=memfit.attention {{.*}} class=attention flops=40256 bytes=16896
func.func @causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>) {
  %o, %lse = memfit.attention causal %q, %k, %v scale 0.125 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
  return %o, %lse : tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
}

// -----

// Grouped-query heads (8 query heads over 2 key heads), a key padding mask
// broadcast over heads and queries, bf16 with its log-sum-exp in f32.
// CHECK-LABEL: func.func @gqa_mask
// CHECK: memfit.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} scale 2.500000e-01 : (tensor<1x8x4x16xbf16>, tensor<1x2x4x16xbf16>, tensor<1x2x4x32xbf16>, tensor<1x1x1x4xi1>) -> (tensor<1x8x4x32xbf16>, tensor<1x8x4xf32>)
func.func @gqa_mask(%q: tensor<1x8x4x16xbf16>, %k: tensor<1x2x4x16xbf16>, %v: tensor<1x2x4x32xbf16>, %m: tensor<1x1x1x4xi1>) -> tensor<1x8x4x32xbf16> {
  %o, %lse = memfit.attention %q, %k, %v mask %m scale 0.25 : (tensor<1x8x4x16xbf16>, tensor<1x2x4x16xbf16>, tensor<1x2x4x32xbf16>, tensor<1x1x1x4xi1>) -> (tensor<1x8x4x32xbf16>, tensor<1x8x4xf32>)
  return %o : tensor<1x8x4x32xbf16>
}

// -----

// An additive float mask of the queries' type, and the two gradient ops.
// Causal 4 x 4: 10 pairs a head; (4 * 8 + 2 * 8 + 5) FLOPs a pair for the
// queries, (4 * 8 + 4 * 8 + 5) for the keys and values.
// CHECK-LABEL: func.func @grads
// CHECK: memfit.attention_grad_query causal %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} scale 5.000000e-01
// CHECK: memfit.attention_grad_key_value causal %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} scale 5.000000e-01
// COST-LABEL: function @grads
// COST: op=memfit.attention_grad_query {{.*}} flops=1060 bytes=1408
// COST: op=memfit.attention_grad_key_value {{.*}} flops=1380 bytes=1664
func.func @grads(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xf32>, %lse: tensor<1x2x4xf32>, %delta: tensor<1x2x4xf32>, %do: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %dq = memfit.attention_grad_query causal %q, %k, %v, %lse, %delta, %do mask %m scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  %dk, %dv = memfit.attention_grad_key_value causal %q, %k, %v, %lse, %delta, %do mask %m scale 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
