// The memory timeline of memfit-memory-plan: bytes live per step by
// category, as CSV (`timeline-data`) and as an SVG chart (`timeline`), for
// the function with the largest planned arena.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memfit-opt %s -o /dev/null \
// RUN:   --pass-pipeline='builtin.module(memfit-memory-plan{output=%t/plan.txt timeline=%t/train.svg timeline-data=%t/train.csv})'
// RUN: FileCheck %s --check-prefix=PLAN --input-file=%t/plan.txt
// RUN: FileCheck %s --check-prefix=CSV --input-file=%t/train.csv
// RUN: FileCheck %s --check-prefix=SVG --input-file=%t/train.svg
// RUN: %python -c "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])" %t/train.svg
// RUN: %python -m memfit_test.check_timeline %t/plan.txt %t/train.csv %t/train.svg \
// RUN:   | FileCheck %s --check-prefix=SUMMARY
//
// A file that cannot be written is an error naming it, and leaves nothing
// behind (here the path is a directory, so the final rename fails):
// RUN: mkdir -p %t/busy/out.svg
// RUN: not memfit-opt %s -o /dev/null \
// RUN:   --pass-pipeline='builtin.module(memfit-memory-plan{output=%t/plan2.txt timeline=%t/busy/out.svg})' \
// RUN:   2>&1 | FileCheck %s --check-prefix=ERROR
// RUN: ls %t/busy | count 1
//
// A real training step: gpt_ts with AdamW, checked against the plan report.
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=input_ids=2x16 -o /dev/null \
// RUN:   --pass-pipeline='builtin.module(canonicalize,cse,memfit-tie-parameters,memfit-autodiff{loss=cross-entropy},memfit-optimizer,canonicalize,cse,func.func(memfit-form-kernels),memfit-memory-plan{output=%t/gpt.txt timeline=%t/gpt.svg timeline-data=%t/gpt.csv})' \
// RUN:   2> /dev/null
// RUN: %python -m memfit_test.check_timeline %t/gpt.txt %t/gpt.csv %t/gpt.svg \
// RUN:   | FileCheck %s --check-prefix=GPT

// Two functions share the weights region: @eval (planned arena 512 bytes)
// and @train (1536 bytes), so the timeline is @train's.
//
// Weights: w (128 bytes) @0, w.m (128 bytes) @256: 512 bytes with the
// alignment padding. The updates are written in place into them.
//
// @train's steps: 1 fc, 2 act, 3 loss, 4 grad_act (the first step with
// memfit.backward), 5 grad_fc, 6 update; 7 is after the last. Arena buffers
// and their live ranges:
//   x 64 and lr 4 (inputs): 0..7
//   fc 32: 1..4, act 32: 2..4 (saved activations: read in the backward)
//   loss 4 (output): 3..7
//   grad_act 32 (temporary): 4..5
//   grad_fc 128 (gradient of w): 5..6
// Live per step:
//   0: 68; 1: 68 + 32; 2: 68 + 64; 3: 68 + 4 + 64; 4: 68 + 4 + 64 + 32;
//   5: 68 + 4 + 128 + 32 = 232 (the peak); 6: 68 + 4 + 128; 7: 68 + 4.
// The planner's own peak agrees:
// PLAN-LABEL: memory plan for @eval: 1 steps
// PLAN-LABEL: memory plan for @train: 6 steps
// PLAN: arena peak: 1536 bytes
// PLAN: live at the peak (step 5): inputs 68 outputs 4 gradients 128 temporaries 32

// CSV: # function train
// CSV-NEXT: # weights 512
// CSV-NEXT: # weights.parameters 128
// CSV-NEXT: # weights.optimizer_states 128
// CSV-NEXT: # arena_planned 1536
// CSV-NEXT: # peak_step 5
// CSV-NEXT: # first_backward_step 4
// CSV-NEXT: step,op,inputs,outputs,gradients,saved_activations,temporaries,arena_live,total
// CSV-NEXT: 0,start,68,0,0,0,0,68,580
// CSV-NEXT: 1,matmul (fc),68,0,0,32,0,100,612
// CSV-NEXT: 2,exp+mul (act),68,0,0,64,0,132,644
// CSV-NEXT: 3,reduce_sum (loss),68,4,0,64,0,136,648
// CSV-NEXT: 4,mul (grad_act),68,4,0,64,32,168,680
// CSV-NEXT: 5,gemm (grad_fc),68,4,128,0,32,232,744
// CSV-NEXT: 6,add+mul+sub (update),68,4,128,0,0,200,712
// CSV-NEXT: 7,end,68,4,0,0,0,72,584
// CSV-NOT: {{.}}

// SVG: <svg xmlns="http://www.w3.org/2000/svg"
// SVG: <title>memory timeline of @train</title>
// SVG: stroke-dasharray="6 4"/>
// SVG-NEXT: >allocated 2.00 KiB</text>
// SVG: stroke-dasharray="4 3"/>
// SVG-NEXT: >backward</text>
// SVG: peak 744 B (step 5)</text>
// SVG: at the peak (step 5)</text>
// SVG: temporaries 32 B</text>
// SVG: saved_activations 0 B</text>
// SVG: gradients 128 B</text>
// SVG: outputs 4 B</text>
// SVG: inputs 68 B</text>
// SVG: weights padding 256 B</text>
// SVG: optimizer_states 128 B</text>
// SVG: parameters 128 B</text>
// SVG: total 744 B</text>
// SVG: </svg>

// SUMMARY: timeline ok: @train, 6 steps, peak at step 5: 232 arena bytes live of 1536 planned, first backward step 4

// ERROR: error: cannot write the memory timeline to '{{.*}}out.svg': Is a directory

// GPT: timeline ok: @train_step, {{[0-9]+}} steps, peak at step {{[0-9]+}}: {{[0-9]+}} arena bytes live of {{[0-9]+}} planned, first backward step {{[1-9][0-9]*}}

memfit.parameter @w = dense<1.0> : tensor<8x4xf32> {memfit.role = "parameter"}
memfit.parameter @w.m = dense<0.0> : tensor<8x4xf32> {memfit.role = "optimizer_state"}

func.func @eval(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = memfit.load_parameter @w : tensor<8x4xf32>
  %h = memfit.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32> loc("fc")
  return %h : tensor<2x4xf32>
}

func.func @train(%x: tensor<2x8xf32>, %lr: tensor<f32>) -> tensor<f32> {
  %w = memfit.load_parameter @w : tensor<8x4xf32>
  %m = memfit.load_parameter @w.m : tensor<8x4xf32>
  %h = memfit.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32> loc("fc")
  %a = memfit.kernel(%h) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%h0: tensor<2x4xf32>):
    %e = memfit.exp %h0 : tensor<2x4xf32>
    %s = memfit.mul %e, %e : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    memfit.yield %s : tensor<2x4xf32>
  } loc("act")
  %l = memfit.kernel(%a) : (tensor<2x4xf32>) -> tensor<f32> {
  ^bb0(%a0: tensor<2x4xf32>):
    %r = memfit.reduce_sum %a0 {axes = array<i64>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
    memfit.yield %r : tensor<f32>
  } loc("loss")
  %g = memfit.kernel(%a, %h) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a0: tensor<2x4xf32>, %h0: tensor<2x4xf32>):
    %p = memfit.mul %a0, %h0 {memfit.backward} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    memfit.yield %p : tensor<2x4xf32>
  } loc("grad_act")
  %gw = memfit.gemm %x, %g {memfit.backward, memfit.gradient_of = @w, trans_a = true} : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32> loc("grad_fc")
  %u:2 = memfit.kernel(%w, %gw, %m, %lr) : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  ^bb0(%w0: tensor<8x4xf32>, %g0: tensor<8x4xf32>, %m0: tensor<8x4xf32>, %lr0: tensor<f32>):
    %m1 = memfit.add %m0, %g0 : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    %t = memfit.mul %m1, %lr0 : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
    %w1 = memfit.sub %w0, %t : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    memfit.yield %w1, %m1 : tensor<8x4xf32>, tensor<8x4xf32>
  } loc("update")
  memfit.assign @w, %u#0 : tensor<8x4xf32>
  memfit.assign @w.m, %u#1 : tensor<8x4xf32>
  return %l : tensor<f32>
}
