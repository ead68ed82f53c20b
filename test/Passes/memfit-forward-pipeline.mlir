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
