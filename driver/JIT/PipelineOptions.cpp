//===- PipelineOptions.cpp - the C++ API's options as pipeline options ----===//
//
// CompileOptions (memfit/JIT/Compiler.h) to the options of the registered
// pipelines (memfit/Passes/Pipelines.h): the fields map one to one, both
// hold the same kinds (memfit/Support/OptionKinds.h), and the pipelines'
// own checks decide what is valid, so that the API, memfit-run and
// `memfit-opt --memfit-train-pipeline='...'` accept exactly the same.
//
//===----------------------------------------------------------------------===//

#include "PipelineOptions.h"

using namespace mlir;
using namespace mlir::memfit;

namespace memfit {

namespace {

void setWeights(const WeightQuantization &weights,
                WeightQuantizationOptions &out) {
  out.quantizeWeights = weights.scheme;
  out.weightBlockSize = weights.blockSize;
  out.doubleQuant = weights.doubleQuant;
}

void setFusion(const Fusion &fusion, FusionOptions &out) {
  out.fuse = fusion.enabled;
  out.fuseMaxOps = fusion.maxOps;
  out.fusionReport = fusion.report;
  out.fusedAttention = fusion.attention;
  out.attentionReport = fusion.attentionReport;
}

} // namespace

rt::StatusOr<std::unique_ptr<ForwardPipelineOptions>>
forwardPipelineOptions(const CompileOptions &compile) {
  auto options = std::make_unique<ForwardPipelineOptions>();
  setWeights(compile.weights, options->weights);
  setFusion(compile.fusion, options->fusion);
  std::string problem = verifyForwardPipelineOptions(*options);
  if (!problem.empty())
    return rt::invalidArgument(problem);
  return options;
}

rt::StatusOr<std::unique_ptr<TrainPipelineOptions>>
trainPipelineOptions(const TrainOptions &train,
                     const WeightQuantization &weights, const Fusion &fusion) {
  auto options = std::make_unique<TrainPipelineOptions>();
  setWeights(weights, options->weights);
  setFusion(fusion, options->fusion);
  options->loss = train.loss;
  options->precision = train.precision;
  options->loraRank = train.loraRank;
  options->loraAlpha = train.loraAlpha;
  options->loraTargets = train.loraTargets;
  options->loraExclude = train.loraExclude;
  options->loraRslora = train.loraRslora;
  options->loraDropout = train.loraDropout;
  options->loraSeed = train.loraSeed;
  options->keepFp32 = train.keepFp32;
  options->lossScale = train.lossScale;
  options->lossScaleInit = train.lossScaleInit;
  options->lossScaleGrowth = train.lossScaleGrowth;
  options->lossScaleBackoff = train.lossScaleBackoff;
  options->lossScaleInterval = train.lossScaleInterval;
  options->optimizer = train.optimizer;
  options->optimizerStates = train.optimizerStates;
  options->keepFp32States = train.keepFp32States;
  options->remat = train.remat;
  options->ignoreIndex = train.ignoreIndex;
  options->chunkedLoss = train.chunkedLoss;
  options->lossChunk = train.lossChunk;
  options->trainable = train.trainable;
  options->frozen = train.frozen;
  options->beta1 = train.beta1;
  options->beta2 = train.beta2;
  options->eps = train.eps;
  options->weightDecay = train.weightDecay;
  options->momentum = train.momentum;
  options->nesterov = train.nesterov;
  options->clipNorm = train.clipNorm;
  options->accumulate = train.accumulate;
  options->worldSize = train.worldSize;
  options->zero = train.zero;
  options->bucketBytes = train.bucketBytes;
  options->rank = train.zero >= 1 ? train.rank : 0;
  options->zero3Prefetch = train.zero3Prefetch;
  options->offloadOptimizer = train.offloadOptimizer;
  options->budget = ByteSize{train.budget};
  options->activationFraction = train.activationFraction;
  options->compressActivations = train.compressActivations;
  options->activationBlockSize = train.activationBlockSize;
  options->rematTimeLimit = train.rematTimeLimit;
  options->offloadActivations = train.offloadActivations;
  options->hostBandwidth = train.hostBandwidth;
  options->rematReport = train.rematReport;
  options->rematReportRows = train.rematReportRows;
  options->timeline = train.timeline;
  options->timelineData = train.timelineData;
  std::string problem = verifyTrainPipelineOptions(*options);
  if (!problem.empty())
    return rt::invalidArgument(problem);
  return options;
}

rt::StatusOr<std::string> pipelineArgument(const CompileOptions &compile) {
  if (compile.train) {
    auto options =
        trainPipelineOptions(*compile.train, compile.weights, compile.fusion);
    if (!options)
      return options.status();
    return "--memfit-train-pipeline=" + printTrainPipelineOptions(**options);
  }
  auto options = forwardPipelineOptions(compile);
  if (!options)
    return options.status();
  std::string text = printForwardPipelineOptions(**options);
  return "--memfit-forward-pipeline" + (text.empty() ? "" : "=" + text);
}

} // namespace memfit
