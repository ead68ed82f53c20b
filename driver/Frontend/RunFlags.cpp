//===- RunFlags.cpp - memfit-run's command line ---------------------------===//
//
// The checks of memfit-run's flags and their translation into the
// compiler's and the runtime's options (RunFlags.h).
//
//===----------------------------------------------------------------------===//

#include "memfit/Frontend/RunFlags.h"

#include "memfit/runtime/Roofline.h"
#include "memfit/runtime/Session.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <memory>
#include <sstream>

namespace memfit::frontend {

RunFlags::RunFlags() = default;

const char *RunFlags::overview() {
  return R"(memfit-run: compile a model and run its forward pass, its gradients, or train it

MODEL is an .onnx or .mlir file, or a directory of --save-executable (a saved
training step trains as it is, given the --accumulate=k it was compiled with).
Data: a text corpus (--corpus), .npy arrays (--data) or random inputs;
--help-data says exactly which tokens each step reads. One line per step on
stdout ("step 12/200 loss 3.452110 lr 1.000e-03 15.2 ms") or a progress bar.
Data parallel: mpirun -np N memfit-run --train ... (--input-shape is a rank's).
)";
}

const char *RunFlags::dataScheme() {
  return R"(Training data. With --corpus=FILE.txt the model has one int64 input of shape
[B, T] and a 'labels' input of the same shape (--loss=cross-entropy). The
file is encoded byte by byte: '\n' -> 0, ' '..'~' -> ord(c) - 31 (1..95);
any other byte is an error. With N tokens, row r (0..B-1) of micro-batch j
(0..k-1, k = --accumulate) of optimizer step s (0-based, the step counter
before the step, so a resumed run continues the stream) reads
  idx    = (s*k + j)*B + r
  offset = (idx*T) mod (N - T - 1)
  input  = tokens[offset : offset+T]
  labels = tokens[offset+1 : offset+T+1]
N must exceed T + 1. With --data=NAME=FILE.npy the first dimension of the
array indexes micro-batches: micro-batch s*k + j reads index
(s*k + j) mod count. --input=NAME=FILE gives one tensor for every
micro-batch. Other inputs are random (--seed, --int-high), different for
every micro-batch.

Progress: one line per step on stdout ("step 12/200 loss 3.452110 lr
1.000e-03 15.2 ms"; steps are global, counter + 1), or a progress bar when
stderr is a terminal.
)";
}

void RunFlags::printDataSchemeAndExit() {
  llvm::outs() << dataScheme();
  llvm::outs().flush();
  std::exit(0);
}

std::vector<const cl::OptionCategory *> RunFlags::categories() const {
  return {&inputCategory, &deviceCategory,    &outputCategory, &trainCategory,
          &loopCategory,  &optimizerCategory, &rematCategory};
}

std::vector<cl::Option *>
RunFlags::given(const cl::OptionCategory &category) const {
  std::vector<cl::Option *> options;
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    if (option->getNumOccurrences() && option != &train &&
        option != &gradients &&
        llvm::is_contained(option->Categories, &category))
      options.push_back(option);
  }
  llvm::sort(options, [](cl::Option *a, cl::Option *b) {
    return a->getPosition() < b->getPosition();
  });
  return options;
}

namespace {

/// --input and --data: name=path each.
std::optional<std::string> parseSpecs(const cl::list<std::string> &specs,
                                      std::map<std::string, std::string> &out) {
  for (const std::string &spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return "--" + specs.ArgStr.str() + "=" + spec +
             ": expected name=path.npy";
    out[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  return std::nullopt;
}

/// An empty batch (or any empty input) has no loss to average and nothing
/// to run: refused here rather than run kernels over nothing.
std::optional<std::string> checkShapes(llvm::StringRef inputShapes) {
  llvm::SmallVector<llvm::StringRef> shapeEntries;
  inputShapes.split(shapeEntries, ',', -1, false);
  for (llvm::StringRef entry : shapeEntries) {
    auto [name, dims] = entry.trim().rsplit('=');
    llvm::SmallVector<llvm::StringRef> parts;
    dims.split(parts, 'x');
    for (llvm::StringRef part : parts) {
      uint64_t d;
      if (!part.getAsInteger(10, d) && d == 0)
        return "--input-shape: '" + name.str() + "' is " +
               (parts.size() == 1 ? std::string("0")
                                  : "empty (" + dims.str() + ")") +
               "; every input needs at least one element (a batch of at "
               "least 1)";
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> RunFlags::check() {
  if (std::optional<std::string> problem = parseSpecs(inputFiles, inputPaths))
    return problem;
  if (std::optional<std::string> problem = parseSpecs(dataFiles, dataPaths))
    return problem;
  if (!predict.empty() && predict != "all" && !rt::GpuSpec::find(predict))
    return "--predict=" + predict + ": not a GPU memfit knows (" +
           rt::GpuSpec::keys() + ", or all)";
  if (device != "auto" && device != "host" && device != "cuda")
    return "--device=" + device + ": expected host, cuda or auto";
  if (!archs.empty() && !compileOnly)
    return std::string("--arch needs --compile-only");
  if (planOnly) {
    // What needs the weights or a run.
    const cl::Option *needRun[] = {&compileOnly,
                                   &saveDir,
                                   &outputDir,
                                   std::addressof(inputFiles),
                                   std::addressof(dataFiles),
                                   &corpus,
                                   &lossesPath,
                                   &checkpointPath,
                                   &resumePath,
                                   &exportAdapters,
                                   &exportSafetensors,
                                   &exportOnnx,
                                   &loadAdapters,
                                   &repeat};
    for (const cl::Option *option : needRun)
      if (option->getNumOccurrences())
        return "--" + option->ArgStr.str() +
               " needs the weights or a run; --plan-only has neither";
  }
  if (train && gradients)
    return std::string("--train and --gradients: choose one");
  if (std::optional<std::string> problem = checkShapes(inputShapes))
    return problem;
  if (activationFractionFlag.getNumOccurrences() &&
      !(activationFractionFlag > 0 && activationFractionFlag <= 1)) {
    std::ostringstream value;
    value << activationFractionFlag.getValue();
    return "--activation-fraction=" + value.str() +
           ": expected a fraction in (0, 1] of the activation memory";
  }
  if (!train) {
    for (const cl::OptionCategory *category :
         {&loopCategory, &optimizerCategory})
      for (cl::Option *option : given(*category))
        if (category == &loopCategory || !gradients)
          return "--" + option->ArgStr.str() + " needs --train";
    for (const cl::OptionCategory *category : {&trainCategory, &rematCategory})
      for (cl::Option *option : given(*category))
        if (!gradients)
          return "--" + option->ArgStr.str() + " needs --train or --gradients";
  }
  if (train) {
    // --gradients is memfit-run's way to a step without an update.
    if (optimizer == OptimizerKind::None)
      return std::string("--optimizer=none: use --gradients for the loss and "
                         "gradients without an update");
    if (steps < 0)
      return std::string("--steps must not be negative");
    if (accumulate < 1)
      return std::string("--accumulate must be at least 1");
    if (worldSize < 0)
      return std::string("--world-size must not be negative");
    if (warmup < 0 || decaySteps < 0 || saveEvery < 0)
      return std::string("--warmup, --decay-steps and --save-every must not "
                         "be negative");
    if (!rt::parseLrScheduleKind(lrSchedule))
      return "--lr-schedule=" + lrSchedule +
             ": expected constant, cosine or linear";
    if (!(learningRateFlag >= 0) || !(minLr >= 0))
      return std::string("--lr and --min-lr must be non-negative numbers");
    if (saveEvery > 0 && checkpointPath.empty() && lossesPath.empty())
      return std::string("--save-every needs --checkpoint (or --losses)");
  }
  return std::nullopt;
}

std::vector<std::string> RunFlags::ignoredCompileFlags() const {
  std::vector<cl::Option *> ignored = given(optimizerCategory);
  llvm::append_range(ignored, given(trainCategory));
  llvm::append_range(ignored, given(rematCategory));
  for (const cl::Option *option :
       {static_cast<const cl::Option *>(&inputShapes),
        static_cast<const cl::Option *>(std::addressof(inputValues)),
        static_cast<const cl::Option *>(&printPipeline),
        static_cast<const cl::Option *>(&emitMlir)})
    if (option->getNumOccurrences())
      ignored.push_back(const_cast<cl::Option *>(option));
  llvm::sort(ignored, [](cl::Option *a, cl::Option *b) {
    return a->getPosition() < b->getPosition();
  });
  std::vector<std::string> names;
  for (cl::Option *option : ignored)
    names.push_back("--" + option->ArgStr.str());
  return names;
}

rt::StatusOr<TrainOptions> RunFlags::trainOptions() const {
  TrainOptions t;
  if (int(bf16) + int(fp16) + int(precision.getNumOccurrences() > 0) > 1)
    return rt::invalidArgument("give one of --precision, --bf16 and --fp16");
  t.loss = lossKind;
  if (ignoreIndex.getNumOccurrences())
    t.ignoreIndex = ignoreIndex;
  t.chunkedLoss = !noChunkedLoss;
  t.lossChunk = lossChunk;
  t.trainable.assign(trainablePatterns.begin(), trainablePatterns.end());
  t.frozen.assign(frozenPatterns.begin(), frozenPatterns.end());
  t.loraRank = loraRank;
  t.loraAlpha = loraAlpha;
  t.loraTargets.assign(loraTargets.begin(), loraTargets.end());
  t.loraExclude.assign(loraExclude.begin(), loraExclude.end());
  t.loraRslora = loraRslora;
  t.loraDropout = loraDropout;
  t.loraSeed = loraSeed;
  t.precision = bf16   ? PrecisionKind::Bf16
                : fp16 ? PrecisionKind::Fp16
                       : precision.getValue();
  t.keepFp32.assign(keepFp32.begin(), keepFp32.end());
  t.lossScale = lossScaleFlag;
  if (lossScaleInit.getNumOccurrences())
    t.lossScaleInit = lossScaleInit;
  if (lossScaleGrowth.getNumOccurrences())
    t.lossScaleGrowth = lossScaleGrowth;
  if (lossScaleBackoff.getNumOccurrences())
    t.lossScaleBackoff = lossScaleBackoff;
  if (lossScaleInterval.getNumOccurrences())
    t.lossScaleInterval = lossScaleInterval;
  t.optimizer = gradients ? OptimizerKind::None : optimizer.getValue();
  t.optimizerStates = optimizerStates;
  t.keepFp32States.assign(keepFp32States.begin(), keepFp32States.end());
  // Optional values: the compiler's defaults unless given.
  std::pair<const Opt<double> *, double *> doubles[] = {
      {&beta1, &t.beta1},       {&beta2, &t.beta2},
      {&eps, &t.eps},           {&weightDecay, &t.weightDecay},
      {&momentum, &t.momentum}, {&clipNorm, &t.clipNorm}};
  for (auto [flag, field] : doubles)
    if (flag->getNumOccurrences())
      *field = *flag;
  t.nesterov = nesterov;
  t.accumulate = gradients ? 1 : accumulate.getValue();
  t.worldSize = std::max<int64_t>(worldSize, 1);
  t.zero = zero;
  if (bucket.getNumOccurrences()) {
    if (bucket.getValue().bytes < 0)
      return rt::invalidArgument("--bucket must not be negative");
    t.bucketBytes = bucket.getValue().bytes;
  } else if (t.worldSize > 1 && !planOnly &&
             (device == "host" ||
              (device == "auto" && !rt::cudaUsable(nullptr)))) {
    // On the host backend MPI moves host memory: a bucket's copy costs more
    // than the per-collective latency it saves (bench/data-parallel-step.py:
    // GPT-2 small on 2 ranks, 1,398 ms a step in buckets against 1,194 one
    // by one). On GPUs, and in plans for them, DDP's 25 MiB.
    t.bucketBytes = 0;
  }
  t.zero3Prefetch = zero3Prefetch;
  if (offload != "none") {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(offload.getValue()).split(parts, ',');
    for (llvm::StringRef part : parts)
      if (part == "optimizer")
        t.offloadOptimizer = true;
      else if (part == "activations")
        t.offloadActivations = true;
      else
        return rt::invalidArgument("--offload=" + offload.getValue() +
                                   ": expected none, or optimizer and/or "
                                   "activations");
  }
  if (!(hostBandwidth > 0))
    return rt::invalidArgument("--host-bandwidth must be positive GB/s");
  t.hostBandwidth = hostBandwidth * 1e9;
  t.rank = rank;
  t.remat = rematPolicy;
  if (budgetFlag.getNumOccurrences()) {
    if (budgetFlag.getValue().bytes <= 0)
      return rt::invalidArgument("--budget must be a positive size");
    t.budget = budgetFlag.getValue().bytes;
  }
  t.activationFraction = activationFractionFlag;
  t.compressActivations = compressActivations;
  t.activationBlockSize = activationBlockSize;
  if (rematReport.getNumOccurrences())
    t.rematReport = rematReport.empty() ? "-" : rematReport.getValue();
  t.timeline = timelinePath;
  t.timelineData = timelineDataPath;
  return t;
}

rt::StatusOr<CompileOptions> RunFlags::compileOptions() const {
  CompileOptions options;
  options.inputShapes = inputShapes;
  options.inputValues.assign(inputValues.begin(), inputValues.end());
  options.mlirOutput = emitMlir;
  options.planOnly = planOnly;
  if (train || gradients) {
    auto flags = trainOptions();
    if (!flags)
      return flags.status();
    options.train = std::move(*flags);
    // A plan shows what remat decided: its totals, unless a report is
    // asked for.
    if (planOnly && options.train->rematReport.empty()) {
      options.train->rematReport = "-";
      options.train->rematReportRows = false;
    }
  }
  options.weights.scheme = quantizeWeights;
  options.weights.blockSize = weightBlockSize;
  options.weights.doubleQuant = doubleQuant;
  options.cacheDir = cacheDir;
  options.disableCache = noCache;
  options.fusion.enabled = !noFuse;
  options.fusion.maxOps = fuseMaxOps;
  options.fusion.attention = !noFusedAttention;
  if (attentionReport.getNumOccurrences())
    options.fusion.attentionReport =
        attentionReport.empty() ? "-" : attentionReport.getValue();
  if (fusionReport.getNumOccurrences())
    options.fusion.report =
        fusionReport.empty() ? "-" : fusionReport.getValue();
  return options;
}

rt::SessionOptions RunFlags::sessionOptions() const {
  rt::SessionOptions options;
  options.cacheDir = cacheDir;
  options.disableCache = noCache;
  options.hostThreads = hostThreads;
  options.hostTaskThreads = hostTaskThreads;
  options.overlapHostTasks = !noHostOverlap;
  options.profileSteps = profile;
  options.graphs = !noCudaGraphs;
  options.tf32 = tf32;
  return options;
}

rt::TrainingDataOptions RunFlags::dataOptions() const {
  rt::TrainingDataOptions data;
  data.fixed = inputPaths;
  data.data = dataPaths;
  data.corpus = corpus;
  data.seed = seed;
  data.intHigh = intHigh;
  data.accumulationSteps = accumulate;
  return data;
}

rt::TrainingLoopOptions RunFlags::loopOptions() const {
  rt::TrainingLoopOptions loop;
  loop.steps = steps;
  loop.schedule.kind = *rt::parseLrScheduleKind(lrSchedule);
  loop.schedule.peak = float(learningRateFlag);
  loop.schedule.minimum = float(minLr);
  loop.schedule.warmupSteps = warmup;
  loop.schedule.decaySteps = decaySteps;
  loop.resume = resumePath;
  loop.checkpoint = checkpointPath;
  loop.saveEvery = saveEvery;
  loop.losses = lossesPath;
  return loop;
}

} // namespace memfit::frontend
