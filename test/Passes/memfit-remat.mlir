// memfit-remat: save or recompute each forward value of a training step
// under a budget, with every decision explained (memfit.saved,
// memfit.recomputed_from, the report). Three cases whose right answers are
// known: an MLP without layer names, and a two-layer residual model named
// as the TorchScript exporter names it (layer index in the node names) and
// as the dynamo exporter names it (layer in the module scope). The report
// (report=-) comes before each case's IR.

// auto and optimal, keeping at most 75% of the activations.
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto activation-fraction=0.75 report=-})' | FileCheck %s --check-prefix=AUTO
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=optimal activation-fraction=0.75 report=-})' | FileCheck %s --check-prefix=OPT
// none (and auto without a limit) saves everything.
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=none report=-})' -o /dev/null | FileCheck %s --check-prefix=NONE
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{report=-})' -o /dev/null | FileCheck %s --check-prefix=NONE
// checkpoint-layers: layers from node names or module scopes, else sqrt(n)
// segments.
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=checkpoint-layers report=-})' | FileCheck %s --check-prefix=LAYERS
// With SGD updates, each weight is updated as soon as its gradient is final.
// RUN: memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,memfit-optimizer{optimizer=sgd},canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=checkpoint-layers})' | FileCheck %s --check-prefix=SGD
// Limits that cannot be met, and options that do not parse: an error that
// says why, and no output file.
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto activation-fraction=0.1})' -o %t.never 2>&1 | FileCheck %s --check-prefix=NOFIT
// RUN: not test -e %t.never
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto budget=10KiB})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=WEIGHTS
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto budget=12parsecs})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADBUDGET
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=fastest})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADPOLICY
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=none budget=30KiB})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOBUDGETPOLICY
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=auto budget=0.4})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=TINY
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{policy=optimal time-limit=0})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIMELIMIT
// A timeline that cannot be written fails the pass and leaves no report.
// RUN: rm -f %t.report
// RUN: not memfit-opt %s -split-input-file --pass-pipeline='builtin.module(memfit-autodiff,canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{report=%t.report timeline=%t.missing/step.svg})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTIMELINE
// RUN: not test -e %t.report
// NOBUDGETPOLICY: error: memfit-remat: policy none needs 55.25 KiB (56576 bytes: weights 25088 + arena 31488), over the budget of 30.00 KiB (30720 bytes); policy auto or optimal fits the budget, or give a larger one
// TINY: for the --budget option: '0.4' is less than one byte
// TIMELIMIT: error: memfit-remat: time-limit must be positive, got 0.000000e+00
// NOTIMELINE: error: {{.*}}step.svg
// BADBUDGET: for the --budget option: '12parsecs' is not a size: expected bytes, or a number with a unit (512MiB, 1.5GiB, 800MB)
// BADPOLICY: for the --policy option: unknown remat policy 'fastest'; expected none, checkpoint-layers, auto or optimal

// A three-block MLP. Each block saves p = x*W (2 KiB, a matmul to get back),
// g = gelu(p) (2 KiB, one gelu from p) and, but for the last, its output h
// (512 B, a matmul from g): 13,312 B of activation memory in all, held at
// the start of the backward pass. The names carry no layer index, so checkpoint-layers falls
// back to sqrt(n) segments. Keeping at most 75%: recomputing the gelus of
// the first two blocks (4.1 kFLOP each, from their saved matmul output) is
// the cheapest plan; the last block's gelu is needed first in the backward,
// so recomputing it would free nothing. auto and optimal agree.

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

// AUTO-LABEL: remat report for @mlp: policy auto
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
// AUTO-LABEL: func.func @mlp
// AUTO: %[[P0:.+]] = memfit.matmul %arg0
// AUTO-NEXT: memfit.kernel(%[[P0]]) : (tensor<8x64xf32>) -> tensor<8x64xf32> {
// AUTO: memfit.kernel(%[[P0]]) {memfit.recomputed_from = ["/l0/fc/MatMul"]}
// AUTO-NEXT: ^bb0
// AUTO-NEXT: memfit.gelu

// OPT-LABEL: remat report for @mlp: policy optimal
// OPT: f1 gelu /l0/act/Gelu 8x64 2048 recompute
// OPT: f4 gelu /l1/act/Gelu 8x64 2048 recompute
// OPT: totals: 6 saved (9216 bytes), 2 recomputed (4096 bytes)
// OPT: solver: ILP (GLPK): proven optimal
// OPT-LABEL: func.func @mlp
// OPT: memfit.kernel(%{{.+}}) {memfit.recomputed_from = ["/l0/fc/MatMul"]}

// NONE-LABEL: remat report for @mlp
// NONE: totals: 8 saved (13312 bytes), 0 recomputed (0 bytes)
// NONE-NEXT: extra FLOPs: 0 FLOP (0.00% of
// NONE-NEXT: activation memory: 13312 -> 13312 bytes (100.0%)

// sqrt(n) segments: 8 cuts in the chain, every 3rd kept (f0, f3, f6).
// LAYERS-LABEL: remat report for @mlp: policy checkpoint-layers
// LAYERS: f0 matmul /l0/fc/MatMul 8x64 2048 save a segment boundary (every 3 of 8 cuts of the chain)
// LAYERS-NEXT: f1 gelu {{.*}} recompute
// LAYERS-NEXT: f2 matmul {{.*}} recompute
// LAYERS-NEXT: f3 matmul /l1/fc/MatMul 8x64 2048 save a segment boundary
// LAYERS-NEXT: f4 gelu {{.*}} recompute
// LAYERS-NEXT: f5 matmul {{.*}} recompute
// LAYERS-NEXT: f6 matmul /l2/fc/MatMul 8x64 2048 save a segment boundary
// LAYERS-NEXT: f7 gelu {{.*}} recompute
// LAYERS-NEXT: totals: 3 saved (6144 bytes), 5 recomputed (7168 bytes)
// LAYERS-LABEL: func.func @mlp

// Keeping 10%: the smallest reachable is stated. The weights alone exceed
// a 10 KiB budget.
// NOFIT: error: memfit-remat: activation-fraction 1.000000e-01 cannot be met by policy auto: the smallest peak reachable is {{.*}} bytes: weights {{.*}} + arena {{.*}}, activations {{.*}})
// WEIGHTS: error: memfit-remat: budget 10.00 KiB cannot be met: the weights region alone takes 24.50 KiB

// -----

// A two-layer residual model whose node names carry the layer index
// (/h.0/..., /h.1/...): each layer's input (the residual stream) and
// everything outside the layers (/embed, /head) is saved, and what the
// backward reads inside a layer (the tanh output g) is recomputed from the
// layer's input, through the layer's matmul.

memfit.parameter @embed.scale = dense<1.5> : tensor<16xf32>
memfit.parameter @h.0.fc.weight = dense<0.1> : tensor<16x16xf32>
memfit.parameter @h.1.fc.weight = dense<0.1> : tensor<16x16xf32>
memfit.parameter @head.weight = dense<0.2> : tensor<16x4xf32>

func.func @layers(%x: tensor<8x16xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %s = memfit.load_parameter @embed.scale : tensor<16xf32>
  %h0 = memfit.mul %x, %s : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32> loc("/embed/Mul")
  %w0 = memfit.load_parameter @h.0.fc.weight : tensor<16x16xf32>
  %a0 = memfit.matmul %h0, %w0 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc("/h.0/fc/MatMul")
  %g0 = memfit.tanh %a0 : tensor<8x16xf32> loc("/h.0/act/Tanh")
  %m0 = memfit.mul %g0, %g0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("/h.0/sq/Mul")
  %r0 = memfit.add %h0, %m0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("/h.0/res/Add")
  %w1 = memfit.load_parameter @h.1.fc.weight : tensor<16x16xf32>
  %a1 = memfit.matmul %r0, %w1 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc("/h.1/fc/MatMul")
  %g1 = memfit.tanh %a1 : tensor<8x16xf32> loc("/h.1/act/Tanh")
  %m1 = memfit.mul %g1, %g1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("/h.1/sq/Mul")
  %r1 = memfit.add %r0, %m1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("/h.1/res/Add")
  %wh = memfit.load_parameter @head.weight : tensor<16x4xf32>
  %o = memfit.matmul %r1, %wh : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32> loc("/head/MatMul")
  %e = memfit.exp %o : tensor<8x4xf32> loc("/head/Exp")
  %l = memfit.reduce_mean %e {axes = array<i64: 0, 1>, keepdims = false} : tensor<8x4xf32> -> tensor<f32> loc("/loss/ReduceMean")
  return %l : tensor<f32>
}

// LAYERS-LABEL: remat report for @layers: policy checkpoint-layers
// LAYERS-NEXT: value op onnx node shape bytes decision reason
// LAYERS-NEXT: f0 mul /embed/Mul 8x16 512 save outside the transformer layers
// LAYERS-NEXT: f1 matmul /h.0/fc/MatMul 8x16 512 recompute before backward step 11, 4.1 kFLOP; from /embed/Mul
// LAYERS-NEXT: f2 tanh /h.0/act/Tanh 8x16 512 recompute before backward step 11, 512 FLOP; from /embed/Mul
// LAYERS-NEXT: f4 add /h.0/res/Add 8x16 512 save the output of layer 0, an input of the next
// LAYERS-NEXT: f5 matmul /h.1/fc/MatMul 8x16 512 recompute before backward step 3, 4.1 kFLOP; from /h.0/res/Add
// LAYERS-NEXT: f6 tanh /h.1/act/Tanh 8x16 512 recompute before backward step 3, 512 FLOP; from /h.0/res/Add
// LAYERS-NEXT: f8 add /h.1/res/Add 8x16 512 save the output of layer 1, an input of the next
// LAYERS-NEXT: f10 exp /head/Exp 8x4 256 save outside the transformer layers
// LAYERS-NEXT: totals: 4 saved (1792 bytes), 4 recomputed (2048 bytes)
// LAYERS-NEXT: extra FLOPs: 9.2 kFLOP
// LAYERS-NEXT: activation memory: 2816 -> 1792 bytes (63.6%)
// LAYERS: planned: weights 2560 + arena 5120 = 7680 bytes
// The layer outputs and what lies outside the layers are saved, each saying
// why; the inside of each layer is cloned into the backward and names the
// saved value it starts from. Layer 1's backward comes first, recomputed
// from layer 0's output.
// LAYERS-LABEL: func.func @layers
// LAYERS: %[[EMB:.+]] = memfit.kernel{{.*}} {memfit.saved = "outside the transformer layers"}
// LAYERS: %[[OUT0:.+]] = memfit.kernel{{.*}} {memfit.saved = "the output of layer 0, an input of the next"}
// LAYERS: memfit.kernel{{.*}} {memfit.saved = "the output of layer 1, an input of the next"}
// LAYERS: memfit.kernel{{.*}} {memfit.saved = "outside the transformer layers"}
// LAYERS: %[[A1:.+]] = memfit.matmul %[[OUT0]], %{{.*}} {memfit.recomputed_from = ["/h.0/res/Add"]}
// LAYERS-NEXT: memfit.kernel(%[[A1]]) {memfit.recomputed_from = ["/h.0/res/Add"]}
// LAYERS-NEXT: ^bb0
// LAYERS-NEXT: memfit.tanh
// LAYERS: %[[A0:.+]] = memfit.matmul %[[EMB]], %{{.*}} {memfit.recomputed_from = ["/embed/Mul"]}
// LAYERS-NEXT: memfit.kernel(%[[A0]]) {memfit.recomputed_from = ["/embed/Mul"]}

// The head's SGD update runs right after its gradient, ahead of the layers'
// backward; each layer's update follows its own gradient.
// SGD: memfit.assign @head.weight
// SGD: memfit.recomputed_from = ["/h.0/res/Add"]
// SGD: memfit.assign @h.1.fc.weight
// SGD: memfit.recomputed_from = ["/embed/Mul"]
// SGD: memfit.assign @h.0.fc.weight
// SGD: memfit.assign @embed.scale

// -----

// The same model as the PyTorch dynamo exporter names it: node names
// (node_linear, node_tanh, ...) and weight names (val_3) carry no layer
// index; the layer comes from each node's module scope, which the importer
// keeps in the location's fused metadata (onnx.scope). Nodes whose scope has
// no layer index (/embed, /head) are outside the layers, even when they read
// the output of the last layer.

memfit.parameter @embed.scale = dense<1.5> : tensor<16xf32>
memfit.parameter @val_3 = dense<0.1> : tensor<16x16xf32>
memfit.parameter @val_7 = dense<0.1> : tensor<16x16xf32>
memfit.parameter @val_9 = dense<0.2> : tensor<16x4xf32>

func.func @scopes(%x: tensor<8x16xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %s = memfit.load_parameter @embed.scale : tensor<16xf32>
  %h0 = memfit.mul %x, %s : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/embed/mul"}>["node_mul"])
  %w0 = memfit.load_parameter @val_3 : tensor<16x16xf32>
  %a0 = memfit.matmul %h0, %w0 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.0/layers.0.fc/linear"}>["node_linear"])
  %g0 = memfit.tanh %a0 : tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.0/tanh"}>["node_tanh"])
  %m0 = memfit.mul %g0, %g0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.0/mul_1"}>["node_mul_1"])
  %r0 = memfit.add %h0, %m0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.0/add"}>["node_add"])
  %w1 = memfit.load_parameter @val_7 : tensor<16x16xf32>
  %a1 = memfit.matmul %r0, %w1 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.1/layers.1.fc/linear_1"}>["node_linear_1"])
  %g1 = memfit.tanh %a1 : tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.1/tanh_1"}>["node_tanh_1"])
  %m1 = memfit.mul %g1, %g1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.1/mul_2"}>["node_mul_2"])
  %r1 = memfit.add %r0, %m1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc(fused<{onnx.scope = "/layers.1/add_1"}>["node_add_1"])
  %wh = memfit.load_parameter @val_9 : tensor<16x4xf32>
  %o = memfit.matmul %r1, %wh : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32> loc(fused<{onnx.scope = "/head/linear_2"}>["node_linear_2"])
  %e = memfit.exp %o : tensor<8x4xf32> loc(fused<{onnx.scope = "/head/exp"}>["node_exp"])
  %l = memfit.reduce_mean %e {axes = array<i64: 0, 1>, keepdims = false} : tensor<8x4xf32> -> tensor<f32> loc(fused<{onnx.scope = "/mean"}>["node_mean"])
  return %l : tensor<f32>
}

// LAYERS-LABEL: remat report for @scopes: policy checkpoint-layers
// LAYERS-NEXT: value op onnx node shape bytes decision reason
// LAYERS-NEXT: f0 mul node_mul 8x16 512 save outside the transformer layers
// LAYERS-NEXT: f1 matmul node_linear 8x16 512 recompute before backward step 11, 4.1 kFLOP; from node_mul
// LAYERS-NEXT: f2 tanh node_tanh 8x16 512 recompute before backward step 11, 512 FLOP; from node_mul
// LAYERS-NEXT: f4 add node_add 8x16 512 save the output of layer 0, an input of the next
// LAYERS-NEXT: f5 matmul node_linear_1 8x16 512 recompute before backward step 3, 4.1 kFLOP; from node_add
// LAYERS-NEXT: f6 tanh node_tanh_1 8x16 512 recompute before backward step 3, 512 FLOP; from node_add
// LAYERS-NEXT: f8 add node_add_1 8x16 512 save the output of layer 1, an input of the next
// LAYERS-NEXT: f10 exp node_exp 8x4 256 save outside the transformer layers
// LAYERS-NEXT: totals: 4 saved (1792 bytes), 4 recomputed (2048 bytes)
// LAYERS-LABEL: func.func @scopes
// LAYERS: %[[EMB:.+]] = memfit.kernel{{.*}} {memfit.saved = "outside the transformer layers"}
// LAYERS: %[[OUT0:.+]] = memfit.kernel{{.*}} {memfit.saved = "the output of layer 0, an input of the next"}
// LAYERS: memfit.kernel{{.*}} {memfit.saved = "the output of layer 1, an input of the next"}
// LAYERS: memfit.kernel{{.*}} {memfit.saved = "outside the transformer layers"}
// LAYERS: %[[A1:.+]] = memfit.matmul %[[OUT0]], %{{.*}} {memfit.recomputed_from = ["node_add"]}
// LAYERS: %[[A0:.+]] = memfit.matmul %[[EMB]], %{{.*}} {memfit.recomputed_from = ["node_mul"]}
