// The pipeline the C++ API runs is registered for memfit-opt, and
// memfit-opt + memfit-translate reproduce exactly what the API emits.

// RUN: rm -rf %t && mkdir -p %t
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --memfit-forward-pipeline --mlir-print-debuginfo > %t/gpt.mlir
// RUN: FileCheck %s < %t/gpt.mlir
// RUN: memfit-translate --memfit-to-cuda %t/gpt.mlir > %t/opt.cu
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --compile-only --save-executable=%t/exe > /dev/null
// RUN: diff %t/opt.cu %t/exe/kernels.cu

// CHECK: func.func @main
// CHECK: memfit.kernel
// CHECK: memfit.layer_norm
// CHECK: memfit.matmul

// With quantize-weights, memfit-quantize runs before memfit-form-kernels,
// and memfit-run prints and compiles the same pipeline.
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --memfit-forward-pipeline='quantize-weights=nf4' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASSES
// PASSES: cse
// PASSES-NEXT: memfit-raise{report=},
// PASSES-NEXT: memfit-raise-attention{report=},
// PASSES-NEXT: memfit-quantize{activation-block-size=256 double-quant=false {{.*}}weight-block-size=64 weights=nf4}
// PASSES-NEXT: func.func(
// PASSES-NEXT: memfit-form-kernels
// PASSES-NEXT: ),
// PASSES-NEXT: memfit-fuse{
// RUN: memfit-run %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --quantize-weights=nf4 --compile-only --quiet --print-pipeline --save-executable=%t/nf4 | FileCheck %s --check-prefix=PRINT
// PRINT: pipeline: memfit-opt {{.*}}gpt_ts.onnx --input-shape=batch=2,seq=16 --memfit-forward-pipeline=quantize-weights=nf4
// RUN: memfit-opt %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --memfit-forward-pipeline='quantize-weights=nf4' --mlir-print-debuginfo | memfit-translate --memfit-to-cuda > %t/nf4.cu
// RUN: diff %t/nf4.cu %t/nf4/kernels.cu
// RUN: FileCheck %s --check-prefix=NF4 < %t/nf4.cu
// NF4: memfit_qmap_nf4[(in0[idx >> 1] >> ((~idx & 1) << 2)) & 15]
// RUN: not memfit-opt %models/gpt_ts.onnx --input-shape=batch=2,seq=16 --memfit-forward-pipeline='quantize-weights=fp4 weight-block-size=7' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: memfit-forward-pipeline: weight-block-size must be even and at least 2, got 7
