//===- PipelineOptions.h - the C++ API's options as pipelines' ----*- C++ -*-===//
//
// Internal to the driver: what compileModelFile and pipelineArgument
// (memfit/JIT/Compiler.h) build the registered pipelines from.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DRIVER_JIT_PIPELINEOPTIONS_H
#define MEMFIT_DRIVER_JIT_PIPELINEOPTIONS_H

#include "memfit/JIT/Compiler.h"
#include "memfit/Passes/Pipelines.h"

#include <memory>

namespace memfit {

/// The options of memfit-forward-pipeline that `compile` asks for, checked
/// by the pipeline's own verifier.
rt::StatusOr<std::unique_ptr<mlir::memfit::ForwardPipelineOptions>>
forwardPipelineOptions(const CompileOptions &compile);

/// The options of memfit-train-pipeline that `train`, `weights` and
/// `fusion` ask for, checked by the pipeline's own verifier.
rt::StatusOr<std::unique_ptr<mlir::memfit::TrainPipelineOptions>>
trainPipelineOptions(const TrainOptions &train,
                     const WeightQuantization &weights, const Fusion &fusion);

} // namespace memfit

#endif // MEMFIT_DRIVER_JIT_PIPELINEOPTIONS_H
