// memfit-quantize saved-activations=int8 gives memfit-remat a third choice:
// saving a forward value compressed to i8 codes of block-wise linear
// quantization (one f32 absmax per 256 values), quantized after its last
// forward use and dequantized before each backward step that needs it.
// The three-block MLP of test/Passes/memfit-remat.mlir, keeping at most
// half of its activation memory: the first and last matmul outputs (2 KiB
// each, 16.4 kFLOP to recompute) are saved compressed in 768 bytes each
// (5.1 kFLOP to quantize, 0.5 kFLOP per dequantization); the first two
// gelus are recomputed from them or from the saved matmul output. Extra
// FLOPs: 6.94% of the step, where saving or recomputing alone (PLAIN)
// recomputes two matmuls too, 12.92%.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,memfit-quantize{saved-activations=int8},func.func(memfit-form-kernels),memfit-remat{policy=auto activation-fraction=0.5 report=-})' | FileCheck %s
//
// The kernels compile with g++ through the host emulation header and, where
// NVRTC is, to CUBIN for sm_80 and sm_90.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,memfit-quantize{saved-activations=int8},func.func(memfit-form-kernels),memfit-remat{policy=auto activation-fraction=0.5})' | memfit-translate --memfit-to-cuda -o %t.cu
// RUN: FileCheck %s --check-prefix=CUDA < %t.cu
// RUN: %cxx -std=c++17 -fsyntax-only -w \
// RUN:   -include %memfit_src_root/runtime/src/host/memfit_cuda_host.h -include %memfit_src_root/runtime/src/host/memfit_thread_loops.h -x c++ %t.cu
// RUN: %if nvrtc %{ memfit-nvrtc --arch=sm_80 --arch=sm_90 %t.cu | FileCheck %s --check-prefix=NVRTC %}
// NVRTC: sm_80: {{[1-9][0-9]*}} bytes of CUBIN
// NVRTC-NEXT: sm_90: {{[1-9][0-9]*}} bytes of CUBIN
//
// Without the request nothing is compressed; policy optimal refuses it; bad
// option values and a malformed request are errors that name them.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto activation-fraction=0.5 report=-})' -o /dev/null | FileCheck %s --check-prefix=PLAIN
// RUN: not memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,memfit-quantize{saved-activations=int8},func.func(memfit-form-kernels),memfit-remat{policy=optimal activation-fraction=0.5})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPTIMAL
// RUN: not memfit-opt %s --memfit-quantize='saved-activations=int4' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADVALUE
// RUN: not memfit-opt %s --memfit-quantize='saved-activations=int8 activation-block-size=0' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADBLOCK
// RUN: sed 's/^module {/module attributes {memfit.saved_activations = {scheme = "int4", block_size = 256 : i64}} {/' %s | not memfit-opt --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto activation-fraction=0.5})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADREQUEST
// PLAIN: totals: 4 saved (5120 bytes), 4 recomputed (8192 bytes)
// PLAIN-NEXT: extra FLOPs: 41.0 kFLOP (12.92% of the step's 317.1 kFLOP)
// PLAIN-NOT: compressed
// OPTIMAL: error: memfit-remat: saving activations compressed (memfit-quantize saved-activations=int8) needs policy auto: the ILP of policy optimal only keeps or recomputes
// BADVALUE: for the --saved-activations option: unknown activation storage 'int4'; expected fp32 or int8
// BADBLOCK: error: activation-block-size must be positive, got 0
// BADREQUEST: error: memfit-remat: memfit.saved_activations must be {scheme = "int8", block_size = N} with N >= 1, got {block_size = 256 : i64, scheme = "int4"}

module {
  memfit.parameter @w0 = dense<0.05> : tensor<16x64xf32>
  memfit.parameter @v0 = dense<0.05> : tensor<64x16xf32>
  memfit.parameter @w1 = dense<0.05> : tensor<16x64xf32>
  memfit.parameter @v1 = dense<0.05> : tensor<64x16xf32>
  memfit.parameter @w2 = dense<0.05> : tensor<16x64xf32>
  memfit.parameter @v2 = dense<0.05> : tensor<64x16xf32>

  func.func @mlp(%x: tensor<8x16xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
    %w0 = memfit.load_parameter @w0 : tensor<16x64xf32>
    %p0 = memfit.matmul %x, %w0 : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32> loc("/l0/fc/MatMul")
    %g0 = memfit.gelu none %p0 : tensor<8x64xf32> loc("/l0/act/Gelu")
    %v0 = memfit.load_parameter @v0 : tensor<64x16xf32>
    %h1 = memfit.matmul %g0, %v0 : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32> loc("/l0/proj/MatMul")
    %w1 = memfit.load_parameter @w1 : tensor<16x64xf32>
    %p1 = memfit.matmul %h1, %w1 : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32> loc("/l1/fc/MatMul")
    %g1 = memfit.gelu none %p1 : tensor<8x64xf32> loc("/l1/act/Gelu")
    %v1 = memfit.load_parameter @v1 : tensor<64x16xf32>
    %h2 = memfit.matmul %g1, %v1 : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32> loc("/l1/proj/MatMul")
    %w2 = memfit.load_parameter @w2 : tensor<16x64xf32>
    %p2 = memfit.matmul %h2, %w2 : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32> loc("/l2/fc/MatMul")
    %g2 = memfit.gelu none %p2 : tensor<8x64xf32> loc("/l2/act/Gelu")
    %v2 = memfit.load_parameter @v2 : tensor<64x16xf32>
    %h3 = memfit.matmul %g2, %v2 : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32> loc("/l2/proj/MatMul")
    %l = memfit.reduce_mean %h3 {axes = array<i64: 0, 1>, keepdims = false} : tensor<8x16xf32> -> tensor<f32> loc("/loss/ReduceMean")
    return %l : tensor<f32>
  }




  // sqrt(n) segments: 8 cuts in the chain, every 3rd kept (f0, f3, f6).

  // Keeping 10%: the smallest reachable is stated. The weights alone exceed
  // a 10 KiB budget.

}

// CHECK-LABEL: remat report for @mlp: policy auto, activation-fraction 5.000000e-01
// CHECK: f0 matmul /l0/fc/MatMul 8x64 2048 compress int8, block 256: kept in 768 bytes; quantize 5.1 kFLOP, dequantize before backward steps 31, 32, 36, 40
// CHECK-NEXT: f1 gelu /l0/act/Gelu 8x64 2048 recompute before backward step 31, 4.1 kFLOP; from /l0/fc/MatMul
// CHECK-NEXT: f2 matmul /l0/proj/MatMul 8x16 512 save
// CHECK-NEXT: f3 matmul /l1/fc/MatMul 8x64 2048 save
// CHECK-NEXT: f4 gelu /l1/act/Gelu 8x64 2048 recompute before backward step 16, 4.1 kFLOP; from /l1/fc/MatMul
// CHECK-NEXT: f5 matmul /l1/proj/MatMul 8x16 512 save
// CHECK-NEXT: f6 matmul /l2/fc/MatMul 8x64 2048 compress int8, block 256: kept in 768 bytes; quantize 5.1 kFLOP, dequantize before backward steps 2, 6, 10
// CHECK-NEXT: f7 gelu /l2/act/Gelu 8x64 2048 save
// CHECK-NEXT: totals: 4 saved (5120 bytes), 2 recomputed (4096 bytes), 2 compressed (4096 -> 1536 bytes)
// CHECK-NEXT: extra FLOPs: 22.0 kFLOP (6.94% of the step's 317.1 kFLOP)
// CHECK-NEXT: activation memory: 13312 -> 6656 bytes (50.0%)
//
// The IR: the request on the module; the matmul's output is quantized
// right after its last forward reader (the gelu), and each backward use
// reads a dequantized copy made just before it.
// CHECK: module attributes {memfit.saved_activations = {block_size = 256 : i64, scheme = "int8"}}
// CHECK: %[[P0:.*]] = memfit.matmul %arg0, %{{.*}} {memfit.saved = "compressed to int8 codes: quantizing costs 5.1 kFLOP to free 1.25 KiB"}
// CHECK-NEXT: %[[G0:.*]] = memfit.kernel(%[[P0]])
// CHECK: memfit.gelu
// CHECK: %[[Q0:.*]]:2 = memfit.kernel(%[[P0]]) {memfit.compressed = "/l0/fc/MatMul"} : (tensor<8x64xf32>) -> (tensor<512xi8>, tensor<2xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<8x64xf32>):
// CHECK-NEXT: %codes, %absmax = memfit.quantize linear %[[X]] {block_size = 256 : i64} : tensor<8x64xf32> -> tensor<512xi8>, tensor<2xf32>
// CHECK-NEXT: memfit.yield %codes, %absmax
// CHECK: %[[D0:.*]] = memfit.kernel(%[[Q0]]#0, %[[Q0]]#1) {memfit.decompressed = "/l0/fc/MatMul"} : (tensor<512xi8>, tensor<2xf32>) -> tensor<8x64xf32>
// CHECK-NEXT: ^bb0(%[[C:.*]]: tensor<512xi8>, %[[A:.*]]: tensor<2xf32>):
// CHECK-NEXT: memfit.dequantize linear %[[C]], %[[A]] {block_size = 256 : i64} : (tensor<512xi8>, tensor<2xf32>) -> tensor<8x64xf32>
// CHECK: memfit.kernel(%[[D0]]) {memfit.recomputed_from = ["/l0/fc/MatMul"]}
// CHECK: memfit.kernel(%[[Q0]]#0, %[[Q0]]#1) {memfit.decompressed = "/l0/fc/MatMul"}
// CHECK-NOT: memfit.kernel(%[[P0]])
// CHECK: return
//
// The CUDA C++: one thread block per quantization block for the
// quantization, a pointwise dequantization.
// CUDA: memfit_qenc_linear
// CUDA: memfit_block_max
