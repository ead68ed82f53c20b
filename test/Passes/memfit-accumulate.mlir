// memfit-accumulate (run by the training pipeline before memfit-remat when
// fusion is on): a kernel that only adds a scatter of rows
// (memfit.gather_grad) to another step's result that nothing else reads
// becomes `gather_grad ... into` that result, at the scatter's place. A tied
// embedding's gradient is the LM head's plus the embedding's rows: the
// memory plan gives the sum the LM head gradient's buffer, and the kernel
// reads and writes only the rows its indices select, so neither the zeros
// the rows were scattered into nor the sum is stored. memfit-fuse keeps the
// accumulation as it is (a kernel of its own).
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-accumulate | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-accumulate '--memfit-fuse=multi-tensor=false' | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels '--memfit-fuse=multi-tensor=false' | FileCheck %s --check-prefix=OFF
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-accumulate --memfit-memory-plan=buffers=true -o /dev/null | FileCheck %s --check-prefix=PLAN
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-accumulate --memfit-op-cost -o /dev/null | FileCheck %s --check-prefix=COST
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels --memfit-accumulate | memfit-translate -split-input-file --memfit-to-cuda | FileCheck %s --check-prefix=CUDA

// The LM head's gradient (a gemm) plus the embedding's rows, then read by
// the next step. One kernel accumulates the rows into the gemm's result.
// CHECK-LABEL: func.func @tied
// CHECK-NEXT: %[[HEAD:.+]] = memfit.gemm
// CHECK-NEXT: %[[SUM:.+]] = memfit.kernel(%{{.+}}, %{{.+}}, %[[HEAD]]) : (tensor<2x3x4xf32>, tensor<2x3xi64>, tensor<10x4xf32>) -> tensor<10x4xf32> {
// CHECK-NEXT: ^bb0(%[[DY:.+]]: tensor<2x3x4xf32>, %[[IDS:.+]]: tensor<2x3xi64>, %[[INIT:.+]]: tensor<10x4xf32>):
// CHECK-NEXT: %[[ACC:.+]] = memfit.gather_grad %[[DY]], %[[IDS]] into %[[INIT]] {axis = 0 : i64, memfit.gradient_of = @wte}
// CHECK-NEXT: memfit.yield %[[ACC]]
// CHECK-NEXT: }
// CHECK-NEXT: memfit.kernel(%[[SUM]])
// CHECK-NOT: memfit.add
// OFF-LABEL: func.func @tied
// OFF: memfit.gather_grad
// OFF-NOT: into
// OFF: memfit.add
// The sum lives in the gemm's buffer (one buffer, live from the gemm to
// the step that reads the sum), and the step reads the gradient and the
// indices and reads and writes the 6 rows: 96 + 48 + 2 * 96 bytes.
// PLAN-LABEL: memory plan for @tied: 3 steps, 6 buffers
// PLAN: buffer 4: arena activations offset {{[0-9]+}} bytes 160 steps 1..3 memfit.gemm
// PLAN-NEXT: buffer 5: arena outputs
// COST-LABEL: function @tied
// COST: 1 op=memfit.gather_grad node=wte result=10x4xf32 class=data_movement flops=24 bytes=336
// The kernel adds in place: no loop zeroes the result, and its pointers
// alias (no __restrict__).
// CUDA: __global__ void k0_gather_grad(const float* in0, const long long* in1, const float* in2, float* out0) {
// CUDA-NOT: = (float)0;
// CUDA: out0[base + k * 4LL] += in0[gbase + j * 4LL];
func.func @tied(%dy: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>, %a: tensor<6x10xf32>, %h: tensor<6x4xf32>) -> tensor<10x4xf32> {
  %dhead = memfit.gemm %a, %h {trans_a = true} : (tensor<6x10xf32>, tensor<6x4xf32>) -> tensor<10x4xf32>
  %rows = memfit.gather_grad %dy, %ids {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32> loc("wte")
  %sum = memfit.add %rows, %dhead {memfit.gradient_of = @wte} : tensor<10x4xf32>, tensor<10x4xf32> -> tensor<10x4xf32> loc("wte")
  %out = memfit.mul %sum, %sum : tensor<10x4xf32>, tensor<10x4xf32> -> tensor<10x4xf32>
  return %out : tensor<10x4xf32>
}

// -----

// The gemm's result is read again later: the sum keeps its own buffer.
// CHECK-LABEL: func.func @read_again
// CHECK-NOT: into
// CHECK: memfit.add
func.func @read_again(%dy: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>, %a: tensor<6x10xf32>, %h: tensor<6x4xf32>) -> (tensor<10x4xf32>, tensor<10x4xf32>) {
  %dhead = memfit.gemm %a, %h {trans_a = true} : (tensor<6x10xf32>, tensor<6x4xf32>) -> tensor<10x4xf32>
  %rows = memfit.gather_grad %dy, %ids {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  %sum = memfit.add %rows, %dhead : tensor<10x4xf32>, tensor<10x4xf32> -> tensor<10x4xf32>
  %twice = memfit.mul %dhead, %sum : tensor<10x4xf32>, tensor<10x4xf32> -> tensor<10x4xf32>
  return %sum, %twice : tensor<10x4xf32>, tensor<10x4xf32>
}

// -----

// Rows added to an argument (or a parameter): not a step's result, whose
// buffer the step may overwrite.
// CHECK-LABEL: func.func @into_argument
// CHECK-NOT: into
// CHECK: memfit.add
func.func @into_argument(%dy: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>, %g: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %rows = memfit.gather_grad %dy, %ids {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  %sum = memfit.add %g, %rows : tensor<10x4xf32>, tensor<10x4xf32> -> tensor<10x4xf32>
  return %sum : tensor<10x4xf32>
}

// -----

// A sum that memfit.assign stores updates the parameter in a buffer of its
// own (the weights region): it stays a sum.
memfit.parameter @acc = dense<0.000000e+00> : tensor<10x4xf32>
// CHECK-LABEL: func.func @assigned
// CHECK-NOT: into
// CHECK: memfit.add
func.func @assigned(%dy: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>, %a: tensor<6x10xf32>, %h: tensor<6x4xf32>) {
  %dhead = memfit.gemm %a, %h {trans_a = true} : (tensor<6x10xf32>, tensor<6x4xf32>) -> tensor<10x4xf32>
  %rows = memfit.gather_grad %dy, %ids {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  %sum = memfit.add %dhead, %rows : tensor<10x4xf32>, tensor<10x4xf32> -> tensor<10x4xf32>
  memfit.assign @acc, %sum : tensor<10x4xf32>
  return
}
