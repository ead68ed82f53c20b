// memfit-train-pipeline: the training step the C++ API compiles, as one
// registered pipeline with typed options. A budget is parsed where it is
// typed and travels as bytes; the loss, optimizer and remat policy are
// checked by the option parser; ranges by the pipeline.

// The passes it runs, with the options each receives; fusion is on by
// default (memfit-raise first, memfit-fold-transposes and memfit-accumulate
// before remat, memfit-fuse after it).
// RUN: memfit-opt %s --memfit-train-pipeline='loss=output optimizer=sgd momentum=0.9 nesterov=true clip-norm=1 accumulate=2 remat=checkpoint-layers budget=600KiB' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASSES
// PASSES: builtin.module(
// PASSES-NEXT: canonicalize
// PASSES-NEXT: cse,
// PASSES-NEXT: memfit-raise{report=},
// PASSES-NEXT: memfit-raise-attention{report=},
// PASSES-NEXT: memfit-tie-parameters,
// PASSES-NEXT: memfit-autodiff{entry= ignore-index=-100 linear-loss=true loss=output loss-scale=none {{.*}}}
// PASSES-NEXT: memfit-dropout-step,
// PASSES-NEXT: memfit-optimizer{accumulate=2 {{.*}} clip-norm=1.000000e+00 {{.*}} momentum=9.000000e-01 nesterov=true offload-states=false optimizer=sgd
// PASSES-NEXT: canonicalize
// PASSES-NEXT: cse,
// PASSES-NEXT: func.func(
// PASSES-NEXT: memfit-chunk-loss{rows=0}
// PASSES-NEXT: ),
// PASSES-NEXT: func.func(
// PASSES-NEXT: memfit-form-kernels,
// PASSES-NEXT: memfit-fold-transposes,
// PASSES-NEXT: memfit-accumulate
// PASSES-NEXT: ),
// PASSES-NEXT: memfit-remat{{{.*}}budget=614400 {{.*}}policy=checkpoint-layers
// PASSES-NEXT: memfit-fuse{budget=614400 early-updates=true epilogues=true max-ops=0
// PASSES-NEXT: memfit-early-updates

// optimizer=none: loss and gradients only, no memfit-optimizer.
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=none remat=none' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRADIENTS
// GRADIENTS: memfit-autodiff
// GRADIENTS-NOT: memfit-optimizer
// GRADIENTS: memfit-form-kernels
// GRADIENTS: memfit-remat{{.*}}policy=none

// The whole step: AdamW states, kernels, an update per parameter, and two
// gelus recomputed to keep 75% of the activations (see memfit-remat.mlir).
// Each layer's updates run as soon as its gradients are complete
// (memfit-early-updates): the step counter's first, then layer 2's, layer
// 1's after its recomputation, layer 0's last; a layer's two updates are
// one multi-tensor kernel (the layer is in their nodes' names, /l2/fc).
// RUN: memfit-opt %s --memfit-train-pipeline='activation-fraction=0.75 remat-report=%t.report' | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// CHECK-DAG: memfit.parameter @w0.exp_avg = {{.*}}memfit.role = "optimizer_state"
// CHECK-DAG: memfit.parameter @step = {{.*}}memfit.role = "counter"
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {onnx.name = "lr"}
// CHECK: memfit.assign @step,
// CHECK: memfit.assign @w2, %[[U2:[0-9]+]]#0
// CHECK: memfit.assign @v2, %[[U2]]#3
// CHECK: memfit.kernel(%{{.*}}) {memfit.recomputed_from = ["/l1/fc/MatMul"]}
// CHECK: memfit.assign @w1, %[[U1:[0-9]+]]#0
// CHECK: memfit.assign @v1, %[[U1]]#3
// CHECK: memfit.kernel(%{{.*}}) {memfit.recomputed_from = ["/l0/fc/MatMul"]}
// CHECK: memfit.assign @w0, %[[U0:[0-9]+]]#0
// CHECK: memfit.assign @v0, %[[U0]]#3
// REPORT: remat report for @train_step: policy auto
// REPORT: totals: 6 saved (9216 bytes), 2 recomputed (4096 bytes)

// memfit-opt reproduces exactly what the C++ API compiles: memfit-run
// --train prints the memfit-opt command (--print-pipeline; the budget as
// bytes) and writes the module it emits CUDA from (--emit-mlir); memfit-opt
// with that pipeline prints the same module, and memfit-translate makes the
// same kernels of it.
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --frozen='wpe.*' --optimizer=sgd --momentum=0.9 --clip-norm=1 --accumulate=2 --budget=1.5MiB --activation-fraction=0.6 --compile-only --quiet --print-pipeline --emit-mlir=%t.dir/api.mlir --save-executable=%t.dir/exe > %t.dir/printed.txt
// RUN: FileCheck %s --check-prefix=PRINTED < %t.dir/printed.txt
// PRINTED: pipeline: memfit-opt {{.*}}gpt_ts.onnx --input-shape=batch=2,seq=16 '--memfit-train-pipeline=loss=cross-entropy frozen=wpe.* optimizer=sgd momentum=0.9 clip-norm=1 accumulate=2 budget=1572864 activation-fraction=0.6'
// The printed command, run by a shell, prints the same module.
// RUN: sed -e 's|^pipeline: |%memfit_obj_root/bin/|' -e 's|$| -o %t.dir/opt.mlir|' %t.dir/printed.txt > %t.dir/printed.sh
// RUN: sh %t.dir/printed.sh 2>/dev/null
// RUN: diff %t.dir/api.mlir %t.dir/opt.mlir
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --memfit-train-pipeline='loss=cross-entropy frozen=wpe.* optimizer=sgd momentum=0.9 clip-norm=1 accumulate=2 budget=1572864 activation-fraction=0.6' --mlir-print-debuginfo 2>/dev/null | memfit-translate --memfit-to-cuda > %t.dir/opt.cu
// RUN: diff %t.dir/opt.cu %t.dir/exe/kernels.cu
// Mixed precision: memfit-mixed-precision runs before memfit-autodiff, so
// the backward is built in the same types; fp16 brings dynamic loss scaling
// (autodiff seeds the backward with the scale, the optimizer unscales,
// checks and updates it).
// RUN: memfit-opt %s --memfit-train-pipeline='precision=bf16 keep-fp32=/l0/*' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: memfit-tie-parameters,
// BF16-NEXT: memfit-mixed-precision{keep-fp32={/l0/*} precision=bf16}
// BF16-NEXT: memfit-autodiff{{.*}}loss-scale=none
// RUN: memfit-opt %s --memfit-train-pipeline='precision=fp16 loss-scale-init=1024 loss-scale-interval=3' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=FP16
// FP16: memfit-mixed-precision{ precision=fp16}
// FP16-NEXT: memfit-autodiff{{.*}}loss-scale=dynamic loss-scale-init=1.024000e+03
// FP16-NEXT: memfit-dropout-step,
// FP16-NEXT: memfit-optimizer{{.*}}loss-scale-backoff=5.000000e-01 loss-scale-growth=2.000000e+00 loss-scale-interval=3
// And memfit-run prints the same options.
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --fp16 --loss-scale-init=1024 --loss-scale-interval=3 --keep-fp32='/h.1/*' --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINTFP16
// PRINTFP16: '--memfit-train-pipeline=loss=cross-entropy precision=fp16 keep-fp32=/h.1/* loss-scale-init=1024 loss-scale-interval=3'
// 8-bit optimizer states: adamw8bit is AdamW followed by memfit-quantize,
// and memfit-run prints what it asked for.
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=adamw8bit keep-fp32-states=w0' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=EIGHTBIT
// EIGHTBIT: memfit-optimizer{{.*}} optimizer=adamw
// EIGHTBIT: memfit-quantize{activation-block-size=256 double-quant=false keep-fp32-states={w0} min-8bit-size=4096 min-weight-size=4096 optimizer-states=8bit saved-activations=fp32 state-block-size=256 weight-block-size=64 weights=none}
// RUN: memfit-opt %s --memfit-train-pipeline='optimizer=sgd momentum=0.9 optimizer-states=8bit' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=SGD8BIT
// SGD8BIT: memfit-optimizer{{.*}} optimizer=sgd
// SGD8BIT: memfit-quantize{{.*}} optimizer-states=8bit
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --optimizer=adamw8bit --keep-fp32-states='wte.*' --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINT8BIT
// PRINT8BIT: '--memfit-train-pipeline=loss=cross-entropy optimizer=adamw8bit keep-fp32-states=wte.*'
// Quantized frozen weights: memfit-quantize runs after cse, which would
// merge the per-use dequantizations, and after memfit-chunk-loss, whose
// chunks read the LM head's weight each.
// RUN: memfit-opt %s --memfit-train-pipeline='frozen=w0 quantize-weights=nf4 double-quant=true weight-block-size=128' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=WEIGHTS
// WEIGHTS: memfit-optimizer
// WEIGHTS-NEXT: canonicalize
// WEIGHTS-NEXT: cse
// WEIGHTS-NEXT: func.func(
// WEIGHTS-NEXT: memfit-chunk-loss{rows=0}
// WEIGHTS-NEXT: ),
// WEIGHTS-NEXT: memfit-quantize{activation-block-size=256 double-quant=true min-8bit-size=4096 min-weight-size=4096 optimizer-states=fp32 saved-activations=fp32 state-block-size=256 weight-block-size=128 weights=nf4}
// WEIGHTS-NEXT: func.func(
// WEIGHTS-NEXT: memfit-form-kernels
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --frozen='onnx::MatMul*' --quantize-weights=nf4 --double-quant --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINTWEIGHTS
// PRINTWEIGHTS: '--memfit-train-pipeline=loss=cross-entropy frozen=onnx::MatMul* quantize-weights=nf4 double-quant=true'
// Fusion: memfit-raise runs first, before autodiff (the raised ops' rules
// save less), memfit-fold-transposes and memfit-accumulate after
// memfit-form-kernels (remat plans the step without the transposed copies
// and with the rows added in place), and memfit-fuse last, after
// memfit-remat, with remat's budget; memfit-run's flags print as the
// pipeline's options.
// RUN: memfit-opt %s --memfit-train-pipeline='budget=600KiB fuse=true fuse-max-ops=5' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUSE
// FUSE: cse,
// FUSE-NEXT: memfit-raise{report=},
// FUSE-NEXT: memfit-raise-attention{report=},
// FUSE-NEXT: memfit-tie-parameters,
// FUSE: memfit-form-kernels,
// FUSE-NEXT: memfit-fold-transposes,
// FUSE-NEXT: memfit-accumulate
// FUSE: memfit-remat{activation-fraction=0.000000e+00 budget=614400
// FUSE-NEXT: memfit-fuse{budget=614400 early-updates=true epilogues=true max-ops=5 multi-tensor=true remat-report= report= rows=true views=true}
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --fuse-max-ops=4 --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINTFUSE
// PRINTFUSE: '--memfit-train-pipeline=loss=cross-entropy fuse-max-ops=4'
// --no-fuse: one kernel per op, none of the fusion passes.
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --no-fuse --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINTNOFUSE
// PRINTNOFUSE: '--memfit-train-pipeline=loss=cross-entropy fuse=false'
// RUN: memfit-opt %s --memfit-train-pipeline='fuse=false' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFUSEPASSES --implicit-check-not=memfit-raise{ --implicit-check-not=memfit-fold-transposes --implicit-check-not=memfit-accumulate --implicit-check-not=memfit-fuse
// NOFUSEPASSES: memfit-form-kernels
// NOFUSEPASSES: memfit-remat
// --no-fused-attention keeps attention spelled out:
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --no-fused-attention --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINTNOATTENTION
// RUN: memfit-opt %s --memfit-train-pipeline='fused-attention=false' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOATTENTION
// PRINTNOATTENTION: '--memfit-train-pipeline=loss=cross-entropy fused-attention=false'
// NOATTENTION-NOT: memfit-raise-attention
// --no-chunked-loss holds the LM head's logits whole; --loss-chunk sets the
// rows of a chunk:
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --no-chunked-loss --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINTNOCHUNKS
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --loss-chunk=8 --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINTCHUNKS
// RUN: memfit-opt %s --memfit-train-pipeline='chunked-loss=false' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOCHUNKS
// RUN: not memfit-opt %s --memfit-train-pipeline='loss-chunk=-2' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADCHUNK
// PRINTNOCHUNKS: '--memfit-train-pipeline=loss=cross-entropy chunked-loss=false'
// PRINTCHUNKS: '--memfit-train-pipeline=loss=cross-entropy loss-chunk=8'
// NOCHUNKS: memfit-autodiff{{.*}}linear-loss=false
// NOCHUNKS-NOT: memfit-chunk-loss
// BADCHUNK: loss-chunk must be >= 0, got -2
// --fusion-report: every step with its bytes, FLOPs, ops and ONNX nodes
// (the optimizer's updates in multi-tensor kernels, one layer's at most: the
// 28 updates of gpt_ts in 6 kernels), the totals and the lower bound
// (Traffic.h).
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --fuse --compile-only --quiet --fusion-report=- | FileCheck %s --check-prefix=FREPORT
// FREPORT: memfit-fuse: {{[0-9]+}} kernels -> {{[0-9]+}}
// FREPORT-NEXT: @train_step:
// FREPORT-NEXT: step kind read written FLOPs ops [ONNX nodes]
// FREPORT: kernel {{[0-9,]+}} {{[0-9,]+}} {{[0-9,]+}} gather+add [/Add /wte/Gather]
// A bias gradient's column sum runs as its weight gradient's epilogue:
// FREPORT: kernel {{.*}} reduce_sum [/h.1/attn/c_attn/Add], the next contraction's epilogue
// FREPORT: kernel {{.*}} more ops (8 segments) [/h.0/
// FREPORT: kernel {{.*}} more ops (8 segments) [/h.1/
// Attention's six contractions a layer (2 in the forward, 4 in the
// backward) are memfit.attention's kernels, and the causal mask's constant
// (4,096 bytes) is not read; the contractions read c_attn's two biases
// (768 bytes) and the MLPs' first two (1,024 bytes) for their epilogues:
// FREPORT: @train_step: {{[0-9]+}} steps ({{[0-9]+}} kernels, 27 contractions), {{[0-9,]+}} FLOPs, {{[0-9,]+}} bytes moved (775,936 by contractions)
// FREPORT-NEXT: @train_step: lower bound {{[0-9,]+}} bytes (inputs 516, weights and states read 367,240, outputs 4, updates 367,108, saved activations {{[0-9,]+}} written and read); moved / lower bound = {{[0-9]+\.[0-9]+}}
// The remat report planned the step before fusion; memfit-fuse appends the
// fused step's plan (the one memfit-run allocates).
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --fuse --remat=auto --budget=1MiB --compile-only --quiet --remat-report=%t.fused.report
// RUN: FileCheck %s --check-prefix=FUSEDREMAT < %t.fused.report
// FUSEDREMAT: planned: weights [[W:[0-9]+]] + arena {{[0-9]+}} = {{[0-9]+}} bytes
// FUSEDREMAT-NEXT: remat pass time:
// FUSEDREMAT-NEXT: planned after memfit-fuse ({{[0-9]+}} kernels -> {{[0-9]+}}): weights [[W]] + arena {{[0-9]+}} = {{[0-9]+}} bytes
// FUSEDREMAT-NOT: planned
// RUN: not memfit-opt %s --memfit-train-pipeline='fuse=false fuse-max-ops=4' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFUSE
// NOFUSE: memfit-train-pipeline: fuse-max-ops and fusion-report need fusion (fuse=true, the default)
// Compressed activations: memfit-quantize records the request, memfit-remat
// (policy auto, with a limit) takes it.
// RUN: memfit-opt %s --memfit-train-pipeline='activation-fraction=0.5 compress-activations=true activation-block-size=128' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=COMPRESS
// COMPRESS: memfit-quantize{activation-block-size=128 {{.*}} saved-activations=int8
// COMPRESS: memfit-remat{activation-fraction=5.000000e-01 {{.*}} policy=auto
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --activation-fraction=0.5 --compress-activations --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=PRINTCOMPRESS
// PRINTCOMPRESS: '--memfit-train-pipeline=loss=cross-entropy compress-activations=true activation-fraction=0.5'
// RUN: not memfit-opt %s --memfit-train-pipeline='compress-activations=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=COMPRESSNOLIMIT
// COMPRESSNOLIMIT: error: memfit-train-pipeline: compress-activations needs a budget or an activation-fraction: without one, remat keeps every value whole
// RUN: not memfit-opt %s --memfit-train-pipeline='compress-activations=true remat=optimal budget=1MiB' -o /dev/null 2>&1 | FileCheck %s --check-prefix=COMPRESSPOLICY
// COMPRESSPOLICY: error: memfit-train-pipeline: compress-activations needs remat=auto: the other policies never save a value compressed
// RUN: not memfit-opt %s --memfit-train-pipeline='activation-block-size=64' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ABLOCK
// ABLOCK: error: memfit-train-pipeline: activation-block-size needs compress-activations
// RUN: not memfit-opt %s --memfit-train-pipeline='quantize-weights=int8 double-quant=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=DQINT8
// DQINT8: error: memfit-train-pipeline: double-quant needs quantize-weights=nf4 or fp4
// RUN: not memfit-opt %s --memfit-train-pipeline='quantize-weights=nf4 weight-block-size=3' -o /dev/null 2>&1 | FileCheck %s --check-prefix=WBLOCK
// WBLOCK: error: memfit-train-pipeline: weight-block-size must be even and at least 2, got 3
// RUN: not memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --quantize-weights=int3 --compile-only 2>&1 | FileCheck %s --check-prefix=BADWEIGHTS
// BADWEIGHTS: unknown weight quantization 'int3'; expected none, nf4, fp4 or int8
// RUN: not memfit-opt %s --memfit-train-pipeline='keep-fp32-states=w0' -o /dev/null 2>&1 | FileCheck %s --check-prefix=KEEPSTATES
// KEEPSTATES: error: memfit-train-pipeline: keep-fp32-states needs optimizer-states=8bit (or adamw8bit)
// RUN: not memfit-opt %s --memfit-train-pipeline='optimizer=none optimizer-states=8bit' -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATESNOOPT
// STATESNOOPT: error: memfit-train-pipeline: optimizer-states=8bit needs an optimizer
// RUN: not memfit-opt %s --memfit-train-pipeline='keep-fp32=/l0/*' -o /dev/null 2>&1 | FileCheck %s --check-prefix=KEEPFP32
// KEEPFP32: error: memfit-train-pipeline: keep-fp32 needs precision=bf16 or precision=fp16
// RUN: not memfit-opt %s --memfit-train-pipeline='precision=fp16 optimizer=none loss-scale=dynamic' -o /dev/null 2>&1 | FileCheck %s --check-prefix=SCALENOOPT
// SCALENOOPT: error: memfit-train-pipeline: loss scaling needs an optimizer (optimizer=none would return scaled gradients)
// RUN: not memfit-opt %s --memfit-train-pipeline='loss-scale=huge' -o /dev/null 2>&1 | FileCheck %s --check-prefix=SCALEBAD
// SCALEBAD: error: memfit-train-pipeline: loss-scale must be dynamic, none or a positive number, not 'huge'
// RUN: not memfit-opt %s --memfit-train-pipeline='precision=fp16 loss-scale-backoff=2' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BACKOFF
// BACKOFF: error: memfit-train-pipeline: dynamic loss scaling needs loss-scale-init > 0, loss-scale-growth >= 1, loss-scale-backoff in (0, 1) and loss-scale-interval >= 1
// RUN: not memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --bf16 --fp16 --compile-only 2>&1 | FileCheck %s --check-prefix=TWOPRECISIONS
// TWOPRECISIONS: give one of --precision, --bf16 and --fp16

// A path the pipeline's text could not hold is refused up front.
// RUN: not memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --train --loss=cross-entropy --compile-only "--remat-report=%t.dir/it's" 2>&1 | FileCheck %s --check-prefix=QUOTE
// QUOTE: memfit-run: remat-report '{{.*}}it's' must not contain quotes or begin or end with a space
// And the forward pass: memfit-run prints the forward pipeline.
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --compile-only --quiet --print-pipeline | FileCheck %s --check-prefix=FORWARD
// FORWARD: pipeline: memfit-opt {{.*}}gpt_ts.onnx --input-shape=batch=2,seq=16 --memfit-forward-pipeline

// Options the parser or the pipeline refuses, each with the reason.
// RUN: not memfit-opt %s --memfit-train-pipeline='loss=hinge' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADLOSS
// BADLOSS: for the --loss option: unknown loss 'hinge'; expected output, cross-entropy or mse
// RUN: not memfit-opt %s --memfit-train-pipeline='optimizer=lion' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: for the --optimizer option: unknown optimizer 'lion'; expected adamw, adamw8bit, sgd or none
// RUN: not memfit-opt %s --memfit-train-pipeline='remat=fastest' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADPOLICY
// BADPOLICY: for the --remat option: unknown remat policy 'fastest'; expected none, checkpoint-layers, auto or optimal
// RUN: not memfit-opt %s --memfit-train-pipeline='budget=12parsecs' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADBUDGET
// BADBUDGET: for the --budget option: '12parsecs' is not a size: expected bytes, or a number with a unit (512MiB, 1.5GiB, 800MB)
// RUN: not memfit-opt %s --memfit-train-pipeline='accumulate=0' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ACCUMULATE
// ACCUMULATE: error: memfit-train-pipeline: accumulate must be at least 1, got 0
// RUN: not memfit-opt %s --memfit-train-pipeline='optimizer=none accumulate=4' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOUPDATE
// NOUPDATE: error: memfit-train-pipeline: accumulate needs an optimizer
// RUN: not memfit-opt %s --memfit-train-pipeline='activation-fraction=1.5' -o /dev/null 2>&1 | FileCheck %s --check-prefix=FRACTION
// FRACTION: error: memfit-train-pipeline: activation-fraction must be in [0, 1]
// RUN: not memfit-opt %s --memfit-train-pipeline='frozen=w0,,v0' -o /dev/null 2>&1 | FileCheck %s --check-prefix=PATTERN
// PATTERN: error: memfit-train-pipeline: pattern '' must be non-empty, without spaces, commas, braces or quotes

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
