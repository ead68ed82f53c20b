// ZeRO stage 3 (memfit-optimizer under memfit-shard zero=3), rank 0 of 2:
// the reads of a parameter are gathered once per layer pass (a run of one
// transformer layer's ops in the forward or in the backward: h.0 and h.1
// here by their nodes; emb before them and out after them are outside the
// layers), and the readers of one pass share the gather: each layer's
// weight is read by two matmuls a pass, and gathered once in the forward
// and once in the backward. A layer's gathers are placed at the start of
// the layer (h.1's backward: before its first op, not before its first
// reader); with one layer of prefetch (the default) at the start of the
// layer before it, so that the exchange may overlap that layer's compute:
// h.1's before h.0's first matmul in the forward, h.0's at the start of
// h.1's backward. A pass's first layer (h.0 in the forward, h.1 in the
// backward) is not prefetched, and outside the layers each weight is
// gathered right before its first reader. Backward gathers are marked as
// memfit-autodiff's ops.
// RUN: memfit-opt %s --memfit-autodiff --memfit-shard='world-size=2 zero=3 rank=0' --memfit-optimizer='optimizer=sgd' | FileCheck %s
// Without prefetch, each layer gathers at its own start.
// RUN: memfit-opt %s --memfit-autodiff --memfit-shard='world-size=2 zero=3 rank=0' --memfit-optimizer='optimizer=sgd zero3-prefetch=false' | FileCheck %s --check-prefix=NOPF

// CHECK-LABEL: func.func @train_step
// CHECK: %[[RE:.+]] = memfit.load_parameter @emb : tensor<2x4xf32>
// CHECK-NEXT: %[[E:.+]] = memfit.all_gather %[[RE]]
// CHECK-NEXT: %[[X0:.+]] = memfit.matmul %arg0, %[[E]]
// CHECK-NEXT: %[[R0:.+]] = memfit.load_parameter @h.0.w : tensor<2x4xf32>
// CHECK-NEXT: %[[W0:.+]] = memfit.all_gather %[[R0]]
// CHECK-NEXT: %[[R1:.+]] = memfit.load_parameter @h.1.w : tensor<2x4xf32>
// CHECK-NEXT: %[[W1:.+]] = memfit.all_gather %[[R1]]
// CHECK-NEXT: %[[A:.+]] = memfit.matmul %[[X0]], %[[W0]]
// CHECK-NEXT: %[[B:.+]] = memfit.matmul %[[A]], %[[W0]]
// CHECK-NEXT: %[[T:.+]] = memfit.tanh %[[B]]
// CHECK-NEXT: %[[C:.+]] = memfit.matmul %[[T]], %[[W1]]
// CHECK-NEXT: %[[D:.+]] = memfit.matmul %[[C]], %[[W1]]
// CHECK-NEXT: %[[U:.+]] = memfit.tanh %[[D]]
// CHECK-NEXT: %[[RO:.+]] = memfit.load_parameter @out : tensor<2x4xf32>
// CHECK-NEXT: %[[O:.+]] = memfit.all_gather %[[RO]]
// CHECK-NEXT: memfit.matmul %[[U]], %[[O]]
// CHECK: memfit.expand {{.*}}memfit.backward
// CHECK-NOT: memfit.all_gather
// CHECK: memfit.load_parameter @out
// CHECK-NEXT: %[[BO:.+]] = memfit.all_gather %{{.+}} {group_size = 2 : i64, memfit.backward, memfit.regather = 0 : i64}
// CHECK-NEXT: memfit.gemm %{{.+}}, %[[BO]] {memfit.backward, trans_b = true}
// CHECK-NEXT: memfit.gemm {{.*}}memfit.gradient_of = @out
// CHECK-NEXT: memfit.load_parameter @h.0.w
// CHECK-NEXT: %[[B0:.+]] = memfit.all_gather %{{.+}} {group_size = 2 : i64, memfit.backward, memfit.regather = 0 : i64}
// CHECK-NEXT: memfit.load_parameter @h.1.w
// CHECK-NEXT: %[[B1:.+]] = memfit.all_gather %{{.+}} {group_size = 2 : i64, memfit.backward, memfit.regather = 0 : i64}
// CHECK-NEXT: memfit.mul %{{.+}}, %{{.+}} {memfit.backward}
// CHECK-NOT: memfit.all_gather
// CHECK: memfit.gemm %{{.+}}, %[[B1]] {memfit.backward, trans_b = true}
// CHECK-NOT: memfit.all_gather
// CHECK: memfit.gemm %{{.+}}, %[[B1]] {memfit.backward, trans_b = true}
// CHECK-NOT: memfit.all_gather
// CHECK: memfit.gemm %{{.+}}, %[[B0]] {memfit.backward, trans_b = true}
// CHECK-NOT: memfit.all_gather
// CHECK: memfit.gemm %{{.+}}, %[[B0]] {memfit.backward, trans_b = true}
// CHECK-NOT: memfit.all_gather
// CHECK: return

// NOPF-LABEL: func.func @train_step
// NOPF: %[[E:.+]] = memfit.all_gather
// NOPF-NEXT: %[[X0:.+]] = memfit.matmul %arg0, %[[E]]
// NOPF-NEXT: memfit.load_parameter @h.0.w
// NOPF-NEXT: %[[W0:.+]] = memfit.all_gather
// NOPF-NEXT: %[[A:.+]] = memfit.matmul %[[X0]], %[[W0]]
// NOPF-NEXT: memfit.matmul %[[A]], %[[W0]]
// NOPF-NEXT: %[[T:.+]] = memfit.tanh
// NOPF-NEXT: memfit.load_parameter @h.1.w
// NOPF-NEXT: %[[W1:.+]] = memfit.all_gather
// NOPF-NEXT: %[[C:.+]] = memfit.matmul %[[T]], %[[W1]]
// NOPF-NEXT: memfit.matmul %[[C]], %[[W1]]
// NOPF: memfit.expand {{.*}}memfit.backward
// NOPF-NOT: memfit.all_gather
// NOPF: memfit.load_parameter @out
// NOPF-NEXT: %[[BO:.+]] = memfit.all_gather
// NOPF-NEXT: memfit.gemm %{{.+}}, %[[BO]] {memfit.backward, trans_b = true}
// NOPF-NEXT: memfit.gemm {{.*}}memfit.gradient_of = @out
// NOPF-NEXT: memfit.load_parameter @h.1.w
// NOPF-NEXT: %[[B1:.+]] = memfit.all_gather
// NOPF-NEXT: memfit.mul %{{.+}}, %{{.+}} {memfit.backward}
// NOPF-NOT: memfit.all_gather
// NOPF: memfit.gemm %{{.+}}, %[[B1]] {memfit.backward, trans_b = true}
// NOPF-NOT: memfit.all_gather
// NOPF: memfit.gemm %{{.+}}, %[[B1]] {memfit.backward, trans_b = true}
// NOPF-NOT: memfit.all_gather
// NOPF: memfit.load_parameter @h.0.w
// NOPF-NEXT: %[[B0:.+]] = memfit.all_gather
// NOPF-NEXT: memfit.mul %{{.+}}, %{{.+}} {memfit.backward}
// NOPF-NOT: memfit.all_gather
// NOPF: memfit.gemm %{{.+}}, %[[B0]] {memfit.backward, trans_b = true}
// NOPF-NOT: memfit.all_gather
// NOPF: memfit.gemm %{{.+}}, %[[B0]] {memfit.backward, trans_b = true}
// NOPF-NOT: memfit.all_gather
// NOPF: return

memfit.parameter @emb = dense<0.125> : tensor<4x4xf32>
memfit.parameter @h.0.w = dense<0.5> : tensor<4x4xf32>
memfit.parameter @h.1.w = dense<0.25> : tensor<4x4xf32>
memfit.parameter @out = dense<0.75> : tensor<4x4xf32>
func.func @main(%x: tensor<2x4xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %e = memfit.load_parameter @emb : tensor<4x4xf32> loc("/emb/MatMul")
  %x0 = memfit.matmul %x, %e : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("/emb/MatMul")
  %w0 = memfit.load_parameter @h.0.w : tensor<4x4xf32> loc("/h.0/MatMul")
  %a = memfit.matmul %x0, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("/h.0/MatMul")
  %b = memfit.matmul %a, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("/h.0/MatMul_1")
  %t = memfit.tanh %b : tensor<2x4xf32> loc("/h.0/Tanh")
  %w1 = memfit.load_parameter @h.1.w : tensor<4x4xf32> loc("/h.1/MatMul")
  %c = memfit.matmul %t, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("/h.1/MatMul")
  %d = memfit.matmul %c, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("/h.1/MatMul_1")
  %u = memfit.tanh %d : tensor<2x4xf32> loc("/h.1/Tanh")
  %o = memfit.load_parameter @out : tensor<4x4xf32> loc("/head/MatMul")
  %y = memfit.matmul %u, %o : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("/head/MatMul")
  %sq = memfit.mul %y, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("/loss/Mul")
  %l = memfit.reduce_sum %sq {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4xf32> -> tensor<f32> loc("/loss/ReduceSum")
  return %l : tensor<f32>
}
