// memfit-remat on a three-block MLP whose right answer is known. Each block
// saves p = x*W (2 KiB, a matmul to get back), g = gelu(p) (2 KiB, one gelu
// from p) and its output h (512 B, a matmul from g): 13,824 B of activation
// memory in all, held at the start of the backward pass. The names carry no
// layer index, so checkpoint-layers falls back to sqrt(n) segments.
//
// Keeping at most 75% of it: recomputing the gelus of the first two blocks
// (4.1 kFLOP each, from their saved matmul output) is the cheapest plan;
// the last block's gelu is needed first in the backward, so recomputing it
// would free nothing. auto and optimal agree.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto activation-fraction=0.75 report=%t.auto})' | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=AUTO < %t.auto
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=optimal activation-fraction=0.75 report=%t.opt})' | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefixes=AUTO,OPT < %t.opt
//
// none (and auto without a limit) saves all eight values.
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=none report=-})' -o /dev/null | FileCheck %s --check-prefix=NONE
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{report=-})' -o /dev/null | FileCheck %s --check-prefix=NONE
//
// sqrt(n) segments: 8 cuts in the chain, every 3rd kept (f0, f3, f6).
// RUN: memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=checkpoint-layers report=-})' -o /dev/null | FileCheck %s --check-prefix=SEGMENTS
//
// Keeping 10%: the smallest reachable is stated, and nothing is written.
// RUN: not memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto activation-fraction=0.1})' -o %t.never 2>&1 | FileCheck %s --check-prefix=NOFIT
// RUN: not test -e %t.never
// RUN: not memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto budget=10KiB})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=WEIGHTS
// RUN: not memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto budget=12parsecs})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADBUDGET
// RUN: not memfit-opt %s --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=fastest})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADPOLICY
memfit.parameter @w0 = dense<0.05> : tensor<16x64xf32>
memfit.parameter @v0 = dense<0.05> : tensor<64x16xf32>
memfit.parameter @w1 = dense<0.05> : tensor<16x64xf32>
memfit.parameter @v1 = dense<0.05> : tensor<64x16xf32>
memfit.parameter @w2 = dense<0.05> : tensor<16x64xf32>
memfit.parameter @v2 = dense<0.05> : tensor<64x16xf32>

func.func @main(%x: tensor<8x16xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
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

// IR: %[[P0:.*]] = memfit.matmul %arg0
// IR-NEXT: memfit.kernel(%[[P0]]) : (tensor<8x64xf32>) -> tensor<8x64xf32> {
// IR: memfit.kernel(%[[P0]]) {memfit.recomputed_from = ["/l0/fc/MatMul"]}
// IR-NEXT: ^bb0
// IR-NEXT: memfit.gelu

// AUTO: f0 matmul /l0/fc/MatMul 8x64 2048 save cheaper to keep: recomputing costs 16.4 kFLOP to free 2.00 KiB
// AUTO-NEXT: f1 gelu /l0/act/Gelu 8x64 2048 recompute before backward step {{[0-9]+}}, 4.1 kFLOP; from /l0/fc/MatMul
// AUTO-NEXT: f2 matmul /l0/proj/MatMul 8x16 512 save
// AUTO-NEXT: f3 matmul /l1/fc/MatMul 8x64 2048 save
// AUTO-NEXT: f4 gelu /l1/act/Gelu 8x64 2048 recompute before backward step {{[0-9]+}}, 4.1 kFLOP; from /l1/fc/MatMul
// AUTO-NEXT: f5 matmul /l1/proj/MatMul 8x16 512 save
// AUTO-NEXT: f6 matmul /l2/fc/MatMul 8x64 2048 save
// AUTO-NEXT: f7 gelu /l2/act/Gelu 8x64 2048 save
// AUTO-NEXT: totals: 6 saved (9216 bytes), 2 recomputed (4096 bytes)
// AUTO-NEXT: extra FLOPs: 8.2 kFLOP
// AUTO-NEXT: activation memory: 13312 -> 9216 bytes (69.2%)
// OPT: solver: ILP (GLPK): proven optimal

// NONE: totals: 8 saved (13312 bytes), 0 recomputed (0 bytes)
// NONE-NEXT: extra FLOPs: 0 FLOP (0.00% of
// NONE-NEXT: activation memory: 13312 -> 13312 bytes (100.0%)

// SEGMENTS: f0 matmul /l0/fc/MatMul 8x64 2048 save a segment boundary (every 3 of 8 cuts of the chain)
// SEGMENTS-NEXT: f1 gelu {{.*}} recompute
// SEGMENTS-NEXT: f2 matmul {{.*}} recompute
// SEGMENTS-NEXT: f3 matmul /l1/fc/MatMul 8x64 2048 save a segment boundary
// SEGMENTS-NEXT: f4 gelu {{.*}} recompute
// SEGMENTS-NEXT: f5 matmul {{.*}} recompute
// SEGMENTS-NEXT: f6 matmul /l2/fc/MatMul 8x64 2048 save a segment boundary
// SEGMENTS-NEXT: f7 gelu {{.*}} recompute
// SEGMENTS-NEXT: totals: 3 saved (6144 bytes), 5 recomputed (7168 bytes)

// NOFIT: error: memfit-remat: activation-fraction 1.000000e-01 cannot be met by policy auto: the smallest peak reachable is {{.*}} bytes: weights {{.*}} + arena {{.*}}, activations {{.*}})
// WEIGHTS: error: memfit-remat: budget 10.00 KiB cannot be met: the weights region alone takes 24.50 KiB
// BADBUDGET: for the --budget option: '12parsecs' is not a size: expected bytes, or a number with a unit (512MiB, 1.5GiB, 800MB)
// BADPOLICY: error: memfit-remat: unknown policy 'fastest' (none, checkpoint-layers, auto or optimal)
