//===- Pipelines.cpp - the registered pass pipelines ----------------------===//

#include "memfit/Passes/Pipelines.h"

#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::memfit;

std::string
mlir::memfit::resolvedLossScale(const TrainPipelineOptions &options) {
  if (!options.lossScale.empty())
    return options.lossScale;
  return options.precision == PrecisionKind::Fp16 &&
                 options.optimizer != OptimizerKind::None
             ? "dynamic"
             : "none";
}

/// The checks of the weight-quantization options both pipelines share.
static std::string verifyWeights(const WeightQuantizationOptions &weights) {
  if (weights.weightBlockSize < 2 || weights.weightBlockSize % 2)
    return "weight-block-size must be even and at least 2, got " +
           std::to_string(weights.weightBlockSize);
  if (weights.doubleQuant && weights.quantizeWeights != WeightStorage::NF4 &&
      weights.quantizeWeights != WeightStorage::FP4)
    return "double-quant needs quantize-weights=nf4 or fp4";
  return "";
}

/// Why the fusion options are wrong, or empty.
static std::string verifyFusion(const FusionOptions &fusion) {
  if (fusion.fuseMaxOps < 0)
    return "fuse-max-ops must not be negative";
  if (!fusion.fuse &&
      (fusion.fuseMaxOps != 0 || !fusion.fusionReport.getValue().empty()))
    return "fuse-max-ops and fusion-report need fusion (fuse=true, the "
           "default)";
  if (fusion.fusionReport.getValue().find_first_of("'\"") != std::string::npos)
    return "fusion-report must not contain quotes";
  if (!fusion.fusedAttention && !fusion.attentionReport.getValue().empty())
    return "attention-report needs fused-attention=true";
  if (fusion.attentionReport.getValue().find_first_of("'\"") !=
      std::string::npos)
    return "attention-report must not contain quotes";
  return "";
}

std::string mlir::memfit::verifyForwardPipelineOptions(
    const ForwardPipelineOptions &options) {
  std::string problem = verifyWeights(options.weights);
  return problem.empty() ? verifyFusion(options.fusion) : problem;
}

bool mlir::memfit::states8bit(const TrainPipelineOptions &options) {
  return options.optimizer == OptimizerKind::AdamW8bit ||
         options.optimizerStates == StateStorage::Bits8;
}

std::string
mlir::memfit::verifyTrainPipelineOptions(const TrainPipelineOptions &options) {
  if (options.lossChunk < 0)
    return "loss-chunk must be >= 0, got " + std::to_string(options.lossChunk);
  if (options.accumulate < 1)
    return "accumulate must be at least 1, got " +
           std::to_string(options.accumulate);
  if (options.worldSize < 1)
    return "world-size must be at least 1, got " +
           std::to_string(options.worldSize);
  if (options.bucketBytes < 0)
    return "bucket-bytes must not be negative, got " +
           std::to_string(options.bucketBytes);
  if (options.zero < 0 || options.zero > 3)
    return "zero=" + std::to_string(options.zero) +
           ": no such ZeRO stage (zero=0: every rank keeps the states and "
           "all-reduces the gradients; zero=1: the optimizer states are "
           "sharded; zero=2: the gradients too; zero=3: the parameters "
           "too)";
  if (options.offloadOptimizer && options.optimizer == OptimizerKind::None)
    return "offload-optimizer: there are no optimizer states to offload "
           "without an optimizer";

  if (options.zero >= 1 && options.worldSize > 1 &&
      options.optimizer == OptimizerKind::None)
    return "zero=" + std::to_string(options.zero) +
           " shards what the optimizer keeps: it needs an optimizer";
  if (options.rank < 0 || options.rank >= options.worldSize)
    return "rank " + std::to_string(options.rank) + " is not a rank of " +
           std::to_string(options.worldSize);
  if (options.optimizer == OptimizerKind::None &&
      options.optimizerStates != StateStorage::Fp32)
    return "optimizer-states=8bit needs an optimizer";
  if (std::string problem = verifyWeights(options.weights); !problem.empty())
    return problem;
  if (std::string problem = verifyFusion(options.fusion); !problem.empty())
    return problem;
  if (!states8bit(options) && !options.keepFp32States.empty())
    return "keep-fp32-states needs optimizer-states=8bit (or adamw8bit)";
  if (options.loraRank < 0)
    return "lora-rank must not be negative, got " +
           std::to_string(options.loraRank);
  TrainPipelineOptions defaults;
  if (options.loraRank == 0 &&
      (!options.loraTargets.empty() || !options.loraExclude.empty() ||
       options.loraRslora || options.loraAlpha != defaults.loraAlpha ||
       options.loraDropout != 0 || options.loraSeed != 0))
    return "lora-alpha, lora-targets, lora-exclude, lora-rslora, "
           "lora-dropout and lora-seed need lora-rank";
  if (options.activationBlockSize < 1)
    return "activation-block-size must be positive, got " +
           std::to_string(options.activationBlockSize);
  if (!options.compressActivations && options.activationBlockSize != 256)
    return "activation-block-size needs compress-activations";
  if (options.compressActivations && options.remat != RematPolicy::Auto)
    return "compress-activations needs remat=auto: the other policies never "
           "save a value compressed";
  if (options.compressActivations && options.budget.getValue().bytes == 0 &&
      options.activationFraction == 0)
    return "compress-activations needs a budget or an activation-fraction: "
           "without one, remat keeps every value whole";
  if (options.optimizer == OptimizerKind::None && options.accumulate != 1)
    return "accumulate needs an optimizer (optimizer=none returns the "
           "gradients of one micro-batch)";
  if (options.budget.getValue().bytes < 0)
    return "budget must not be negative, got " +
           std::to_string(options.budget.getValue().bytes);
  if (!(options.activationFraction >= 0 && options.activationFraction <= 1))
    return "activation-fraction must be in [0, 1] (0: no limit)";
  if (!(options.clipNorm >= 0))
    return "clip-norm must not be negative";
  if (!(options.rematTimeLimit > 0))
    return "remat-time-limit must be positive";
  if (!(options.hostBandwidth > 0))
    return "host-bandwidth must be positive";
  if (options.offloadActivations && options.compressActivations)
    return "offload-activations and compress-activations are exclusive: "
           "a saved value goes to host memory or stays compressed";
  if (options.offloadActivations &&
      options.remat == ::memfit::RematPolicy::Optimal)
    return "offload-activations needs remat=auto (the ILP of optimal only "
           "keeps or recomputes)";
  // The printed form must parse back: a quoted value cannot hold quotes,
  // the option parser trims spaces around it, and list items cannot hold
  // separators.
  const std::pair<const char *, const std::string *> strings[] = {
      {"entry", &options.entry.getValue()},
      {"remat-report", &options.rematReport.getValue()},
      {"timeline", &options.timeline.getValue()},
      {"timeline-data", &options.timelineData.getValue()}};
  for (auto [name, value] : strings)
    if (value->find_first_of("'\"") != std::string::npos ||
        (!value->empty() && (std::isspace((unsigned char)value->front()) ||
                             std::isspace((unsigned char)value->back()))))
      return std::string(name) + " '" + *value +
             "' must not contain quotes or begin or end with a space";
  for (const auto *patterns :
       {&options.trainable, &options.frozen, &options.keepFp32,
        &options.keepFp32States, &options.loraTargets, &options.loraExclude})
    for (const std::string &pattern : *patterns)
      if (pattern.empty() ||
          pattern.find_first_of(" ,{}'\"") != std::string::npos)
        return "pattern '" + pattern +
               "' must be non-empty, without spaces, commas, braces or quotes";
  if (options.precision == PrecisionKind::Fp32 && !options.keepFp32.empty())
    return "keep-fp32 needs precision=bf16 or precision=fp16";
  std::string scale = resolvedLossScale(options);
  double factor = 0;
  if (scale != "none" && scale != "dynamic" &&
      (StringRef(scale).getAsDouble(factor) || !(factor > 0) ||
       std::isinf(factor)))
    return "loss-scale must be dynamic, none or a positive number, not '" +
           scale + "'";
  if (scale != "none" && options.optimizer == OptimizerKind::None)
    return "loss scaling needs an optimizer (optimizer=none would return "
           "scaled gradients)";
  if (!(options.lossScaleInit > 0) || std::isinf(options.lossScaleInit) ||
      !(options.lossScaleGrowth >= 1) ||
      !(options.lossScaleBackoff > 0 && options.lossScaleBackoff < 1) ||
      options.lossScaleInterval < 1)
    return "dynamic loss scaling needs loss-scale-init > 0, "
           "loss-scale-growth >= 1, loss-scale-backoff in (0, 1) and "
           "loss-scale-interval >= 1";
  return "";
}

namespace {

/// The shortest decimal text that reads back as exactly `value`.
std::string shortestDouble(double value) {
  char text[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

/// A string option's value, quoted when the option parser would otherwise
/// split it.
std::string quoted(const std::string &value) {
  if (!value.empty() && value.find_first_of(" {}'\"=") == std::string::npos)
    return value;
  return "\"" + value + "\"";
}

} // namespace

/// Adds the fusion options that differ from the defaults.
static void addFusion(function_ref<void(StringRef, const std::string &)> add,
                      const FusionOptions &fusion) {
  if (!fusion.fuse)
    add("fuse", "false");
  if (fusion.fuseMaxOps != 0)
    add("fuse-max-ops", std::to_string(fusion.fuseMaxOps));
  if (!fusion.fusionReport.getValue().empty())
    add("fusion-report", fusion.fusionReport.getValue());
  if (!fusion.fusedAttention)
    add("fused-attention", "false");
  if (!fusion.attentionReport.getValue().empty())
    add("attention-report", fusion.attentionReport.getValue());
}

/// Adds the weight-quantization options that differ from the defaults.
static void addWeights(function_ref<void(StringRef, const std::string &)> add,
                       const WeightQuantizationOptions &weights) {
  if (weights.quantizeWeights != WeightStorage::None)
    add("quantize-weights",
        ::memfit::nameOf(weights.quantizeWeights.getValue()));
  if (weights.weightBlockSize != WeightQuantizationOptions::kDefaultBlockSize)
    add("weight-block-size", std::to_string(weights.weightBlockSize));
  if (weights.doubleQuant)
    add("double-quant", "true");
}

std::string mlir::memfit::printForwardPipelineOptions(
    const ForwardPipelineOptions &options) {
  std::string text;
  addWeights(
      [&](StringRef name, const std::string &value) {
        text += (text.empty() ? "" : " ") + name.str() + "=" + value;
      },
      options.weights);
  addFusion(
      [&](StringRef name, const std::string &value) {
        text += (text.empty() ? "" : " ") + name.str() + "=" + value;
      },
      options.fusion);
  return text;
}

std::string
mlir::memfit::printTrainPipelineOptions(const TrainPipelineOptions &options) {
  TrainPipelineOptions defaults;
  std::string text;
  auto add = [&](StringRef name, const std::string &value) {
    text += (text.empty() ? "" : " ") + name.str() + "=" + value;
  };
  auto number = [&](StringRef name, double value, double fallback) {
    if (value != fallback)
      add(name, shortestDouble(value));
  };
  auto string = [&](StringRef name, const std::string &value) {
    if (!value.empty())
      add(name, quoted(value));
  };
  auto list = [&](StringRef name, ArrayRef<std::string> values) {
    if (!values.empty())
      add(name, llvm::join(values, ","));
  };
  if (options.loss != defaults.loss)
    add("loss", ::memfit::nameOf(options.loss.getValue()));
  if (options.ignoreIndex != defaults.ignoreIndex)
    add("ignore-index", std::to_string(options.ignoreIndex));
  if (!options.chunkedLoss)
    add("chunked-loss", "false");
  if (options.lossChunk != defaults.lossChunk)
    add("loss-chunk", std::to_string(options.lossChunk));
  if (!options.earlyUpdates)
    add("early-updates", "false");
  list("trainable", options.trainable);
  list("frozen", options.frozen);
  string("entry", options.entry);
  if (options.loraRank != defaults.loraRank)
    add("lora-rank", std::to_string(options.loraRank));
  number("lora-alpha", options.loraAlpha, defaults.loraAlpha);
  list("lora-targets", options.loraTargets);
  list("lora-exclude", options.loraExclude);
  if (options.loraRslora)
    add("lora-rslora", "true");
  number("lora-dropout", options.loraDropout, defaults.loraDropout);
  if (options.loraSeed != defaults.loraSeed)
    add("lora-seed", std::to_string(options.loraSeed));
  if (options.precision != defaults.precision)
    add("precision", ::memfit::nameOf(options.precision.getValue()));
  list("keep-fp32", options.keepFp32);
  string("loss-scale", options.lossScale);
  number("loss-scale-init", options.lossScaleInit, defaults.lossScaleInit);
  number("loss-scale-growth", options.lossScaleGrowth,
         defaults.lossScaleGrowth);
  number("loss-scale-backoff", options.lossScaleBackoff,
         defaults.lossScaleBackoff);
  if (options.lossScaleInterval != defaults.lossScaleInterval)
    add("loss-scale-interval", std::to_string(options.lossScaleInterval));
  if (options.optimizer != defaults.optimizer)
    add("optimizer", ::memfit::nameOf(options.optimizer.getValue()));
  number("beta1", options.beta1, defaults.beta1);
  number("beta2", options.beta2, defaults.beta2);
  number("eps", options.eps, defaults.eps);
  number("weight-decay", options.weightDecay, defaults.weightDecay);
  number("momentum", options.momentum, defaults.momentum);
  if (options.nesterov)
    add("nesterov", "true");
  number("clip-norm", options.clipNorm, defaults.clipNorm);
  if (options.accumulate != defaults.accumulate)
    add("accumulate", std::to_string(options.accumulate));
  if (options.worldSize != defaults.worldSize)
    add("world-size", std::to_string(options.worldSize));
  if (options.zero != defaults.zero)
    add("zero", std::to_string(options.zero));
  if (options.rank != defaults.rank)
    add("rank", std::to_string(options.rank));
  if (options.bucketBytes != defaults.bucketBytes)
    add("bucket-bytes", std::to_string(options.bucketBytes));
  if (!options.zero3Prefetch)
    add("zero3-prefetch", "false");
  if (options.offloadOptimizer)
    add("offload-optimizer", "true");
  if (options.optimizerStates != defaults.optimizerStates)
    add("optimizer-states",
        ::memfit::nameOf(options.optimizerStates.getValue()));
  list("keep-fp32-states", options.keepFp32States);
  if (options.compressActivations)
    add("compress-activations", "true");
  if (options.activationBlockSize != defaults.activationBlockSize)
    add("activation-block-size", std::to_string(options.activationBlockSize));
  addWeights(add, options.weights);
  addFusion(add, options.fusion);
  if (options.remat != defaults.remat)
    add("remat", ::memfit::nameOf(options.remat.getValue()));
  if (options.budget.getValue().bytes != 0)
    add("budget", std::to_string(options.budget.getValue().bytes));
  number("activation-fraction", options.activationFraction,
         defaults.activationFraction);
  number("remat-time-limit", options.rematTimeLimit, defaults.rematTimeLimit);
  if (options.offloadActivations)
    add("offload-activations", "true");
  number("host-bandwidth", options.hostBandwidth, defaults.hostBandwidth);
  string("remat-report", options.rematReport);
  if (!options.rematReportRows)
    add("remat-report-rows", "false");
  string("timeline", options.timeline);
  string("timeline-data", options.timelineData);
  return text;
}

/// memfit-quantize's options for the weights.
static void setWeights(MemfitQuantizePassOptions &quantize,
                       const WeightQuantizationOptions &weights) {
  quantize.weights = weights.quantizeWeights;
  quantize.weightBlockSize = weights.weightBlockSize;
  quantize.doubleQuant = weights.doubleQuant;
}

/// memfit-fuse when fusion is on; `budget` is the step's (memfit-remat's).
/// With `rematReport`, the fused plan is appended to memfit-remat's report.
static void addFusePass(OpPassManager &pm, const FusionOptions &fusion,
                        int64_t budget = 0, StringRef rematReport = "",
                        bool earlyUpdates = false) {
  if (!fusion.fuse)
    return;
  MemfitFusePassOptions fuse;
  fuse.budget = ByteSize{budget};
  fuse.earlyUpdates = earlyUpdates;
  fuse.maxOps = fusion.fuseMaxOps;
  fuse.report = fusion.fusionReport;
  fuse.rematReport = rematReport.str();
  pm.addPass(createMemfitFusePass(fuse));
}

/// memfit-raise when fusion is on, then memfit-raise-attention unless
/// turned off: the named ops save less for the backward and emit as one
/// kernel each. Attention last: it starts from the softmaxes, which
/// memfit-raise names where the exporter spelled them out.
static void addRaisePass(OpPassManager &pm, const FusionOptions &fusion) {
  if (fusion.fuse)
    pm.addPass(createMemfitRaisePass());
  if (fusion.fusedAttention) {
    MemfitRaiseAttentionPassOptions attention;
    attention.report = fusion.attentionReport;
    pm.addPass(createMemfitRaiseAttentionPass(attention));
  }
}

void mlir::memfit::buildForwardPipeline(OpPassManager &pm,
                                        const ForwardPipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  addRaisePass(pm, options.fusion);
  if (options.weights.quantizeWeights != WeightStorage::None) {
    MemfitQuantizePassOptions quantize;
    setWeights(quantize, options.weights);
    pm.addPass(createMemfitQuantizePass(quantize));
  }
  pm.addNestedPass<func::FuncOp>(createMemfitFormKernelsPass());
  addFusePass(pm, options.fusion);
}

void mlir::memfit::buildTrainPipeline(OpPassManager &pm,
                                      const TrainPipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  addRaisePass(pm, options.fusion);
  pm.addPass(createMemfitTieParametersPass());

  if (options.loraRank > 0) {
    MemfitLoraPassOptions lora;
    lora.rank = options.loraRank;
    lora.alpha = options.loraAlpha;
    lora.targets.assign(options.loraTargets.begin(), options.loraTargets.end());
    lora.exclude.assign(options.loraExclude.begin(), options.loraExclude.end());
    lora.rslora = options.loraRslora;
    lora.dropout = options.loraDropout;
    lora.seed = options.loraSeed;
    pm.addPass(createMemfitLoraPass(lora));
  }

  if (options.precision != PrecisionKind::Fp32) {
    MemfitMixedPrecisionPassOptions precision;
    precision.precision = options.precision;
    precision.keepFp32.assign(options.keepFp32.begin(), options.keepFp32.end());
    pm.addPass(createMemfitMixedPrecisionPass(precision));
  }

  MemfitAutodiffPassOptions autodiff;
  autodiff.loss = options.loss;
  autodiff.ignoreIndex = options.ignoreIndex;
  autodiff.linearLoss = options.chunkedLoss;
  autodiff.trainable.assign(options.trainable.begin(), options.trainable.end());
  autodiff.frozen.assign(options.frozen.begin(), options.frozen.end());
  autodiff.entry = options.entry;
  autodiff.lossScale = resolvedLossScale(options);
  autodiff.lossScaleInit = options.lossScaleInit;
  pm.addPass(createMemfitAutodiffPass(autodiff));
  pm.addPass(createMemfitDropoutStepPass());
  if (options.worldSize > 1) {
    MemfitShardPassOptions shard;
    shard.worldSize = options.worldSize;
    shard.bucketBytes = options.bucketBytes;
    shard.zero = options.zero;
    shard.rank = options.rank;
    pm.addPass(createMemfitShardPass(shard));
  }

  if (options.optimizer != OptimizerKind::None) {
    MemfitOptimizerPassOptions optimizer;
    // adamw8bit is AdamW's update rule; memfit-quantize stores its states.
    optimizer.optimizer = options.optimizer == OptimizerKind::Sgd
                              ? OptimizerKind::Sgd
                              : OptimizerKind::AdamW;
    optimizer.beta1 = options.beta1;
    optimizer.beta2 = options.beta2;
    optimizer.eps = options.eps;
    optimizer.weightDecay = options.weightDecay;
    optimizer.momentum = options.momentum;
    optimizer.nesterov = options.nesterov;
    optimizer.clipNorm = options.clipNorm;
    optimizer.accumulate = options.accumulate;
    optimizer.lossScaleGrowth = options.lossScaleGrowth;
    optimizer.lossScaleBackoff = options.lossScaleBackoff;
    optimizer.lossScaleInterval = options.lossScaleInterval;
    optimizer.offloadStates = options.offloadOptimizer;
    optimizer.zero3Prefetch = options.zero3Prefetch;
    pm.addPass(createMemfitOptimizerPass(optimizer));
  }

  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (options.chunkedLoss) {
    MemfitChunkLossPassOptions chunk;
    chunk.rows = options.lossChunk;
    pm.addNestedPass<func::FuncOp>(createMemfitChunkLossPass(chunk));
  }
  // After cse, which would merge the weights' dequantizations back into one
  // read that lives from the first use to the last.
  if (states8bit(options) || options.compressActivations ||
      options.weights.quantizeWeights != WeightStorage::None) {
    MemfitQuantizePassOptions quantize;
    quantize.optimizerStates =
        states8bit(options) ? StateStorage::Bits8 : StateStorage::Fp32;
    quantize.keepFp32States.assign(options.keepFp32States.begin(),
                                   options.keepFp32States.end());
    setWeights(quantize, options.weights);
    if (options.compressActivations)
      quantize.savedActivations = ActivationStorage::Int8;
    quantize.activationBlockSize = options.activationBlockSize;
    pm.addPass(createMemfitQuantizePass(quantize));
  }
  OpPassManager &kernels = pm.nest<func::FuncOp>();
  kernels.addPass(createMemfitFormKernelsPass());
  // Before remat, so that remat plans (and checks its budget on) the step
  // as fusion will run it: without the transposed copies of the tied LM
  // head and with the embedding's rows added in place (GPT-2 small's peak
  // 769 -> 475 MiB).
  if (options.fusion.fuse) {
    kernels.addPass(createMemfitFoldTransposesPass());
    kernels.addPass(createMemfitAccumulatePass());
  }

  MemfitRematPassOptions remat;
  remat.policy = options.remat;
  remat.budget = options.budget;
  remat.activationFraction = options.activationFraction;
  remat.timeLimit = options.rematTimeLimit;
  remat.offloadActivations = options.offloadActivations;
  remat.hostBandwidth = options.hostBandwidth;
  remat.report = options.rematReport;
  remat.reportRows = options.rematReportRows;
  remat.timeline = options.timeline;
  remat.timelineData = options.timelineData;
  pm.addPass(createMemfitRematPass(remat));
  addFusePass(pm, options.fusion, options.budget.getValue().bytes,
              options.rematReport, options.earlyUpdates);
  if (options.earlyUpdates)
    pm.addPass(createMemfitEarlyUpdatesPass());
  if (options.offloadOptimizer)
    pm.addNestedPass<func::FuncOp>(createMemfitHostTransfersPass());
}

/// Registers a pipeline whose typed options are parsed, then checked by
/// `verify` (a problem, or empty), before `build` runs.
template <typename Options>
static void registerChecked(StringRef name, StringRef description,
                            std::string (*verify)(const Options &),
                            void (*build)(OpPassManager &, const Options &)) {
  std::string prefix = name.str() + ": ";
  registerPassPipeline(
      name, description,
      [=](OpPassManager &pm, StringRef text,
          function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string problem = verify(options);
        if (!problem.empty())
          return errorHandler(prefix + problem);
        build(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optionHandler) {
        optionHandler(Options());
      });
}

void mlir::memfit::registerMemfitPipelines() {
  static bool registered = [] {
    registerCanonicalizerPass();
    registerCSEPass();
    registerMemfitPasses();
    registerChecked<ForwardPipelineOptions>(
        "memfit-forward-pipeline",
        "What the C++ API runs between import and CUDA emission for a "
        "forward pass: canonicalize, cse, memfit-quantize (with "
        "quantize-weights), memfit-form-kernels, memfit-fuse (with fuse)",
        verifyForwardPipelineOptions, buildForwardPipeline);
    registerChecked<TrainPipelineOptions>(
        "memfit-train-pipeline",
        "What the C++ API (and memfit-run --train) runs between import and "
        "CUDA emission for a training step: canonicalize, cse, "
        "memfit-tie-parameters, memfit-mixed-precision, memfit-autodiff, "
        "memfit-dropout-step, memfit-optimizer, canonicalize, cse, memfit-quantize, "
        "memfit-form-kernels, memfit-remat, memfit-fuse (with fuse)",
        verifyTrainPipelineOptions, buildTrainPipeline);
    return true;
  }();
  (void)registered;
}
