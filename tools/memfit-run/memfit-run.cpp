//===- memfit-run.cpp - compile a model and run or train it on a device ---===//
//
// Compiles the model (or loads an executable directory written by
// --save-executable), prints the memory plan, and then runs the forward
// pass (or, with --gradients, the loss and its gradients) on the chosen
// device with inputs from .npy files or random ones and prints a summary of
// every output, or trains it (--train) with data from a text corpus, .npy
// files or random inputs, with checkpoints. The work is the runtime's
// (Session, Trainer, TrainingData, runTraining, Summary.h) and the
// compiler's (compileModelFile); this file holds the flags.
//
//===----------------------------------------------------------------------===//

#include "memfit/Import/OnnxExport.h"
#include "memfit/JIT/Compiler.h"
#include "memfit/Support/ByteSize.h"
#include "memfit/runtime/Bytes.h"
#include "memfit/runtime/Nvrtc.h"
#include "memfit/runtime/Safetensors.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/Summary.h"
#include "memfit/runtime/TrainingLoop.h"

#include "ToolHelp.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace cl = llvm::cl;
namespace rt = memfit::rt;

// The flags, by topic. A flag's category also says what it needs: see
// checkFlags() and warnIgnoredCompileFlags().
static cl::OptionCategory inputCategory("Inputs");
static cl::OptionCategory deviceCategory("Device");
static cl::OptionCategory outputCategory("Output");
static cl::OptionCategory trainCategory("Training (--train, --gradients)");
static cl::OptionCategory loopCategory("Training loop and data (--train)");
static cl::OptionCategory optimizerCategory("Optimizer (--train)");
static cl::OptionCategory
    rematCategory("Memory and rematerialization (--train, --gradients)");

template <typename T> using Opt = cl::opt<T>;
using List = cl::list<std::string>;

static Opt<std::string> modelPath(cl::Positional, cl::Required,
                                  cl::desc("<model.onnx | model.mlir | "
                                           "executable directory>"),
                                  cl::cat(inputCategory));
static Opt<std::string> inputShapes(
    "input-shape", cl::cat(inputCategory),
    cl::desc("ONNX input shapes (name=2x16) or symbolic dimension sizes "
             "(batch=2,seq=16)"));
static List inputValues("input-value", cl::cat(inputCategory),
                        cl::desc("Values of an ONNX input needed at compile "
                                 "time: name=1,2,3 (repeatable)"));
static List inputFiles("input", cl::cat(inputCategory),
                       cl::desc("An input from a .npy file: name=path "
                                "(repeatable); inputs not given are random"));
static Opt<uint64_t> seed("seed", cl::init(0), cl::cat(inputCategory),
                          cl::desc("Seed of the random inputs"));
static Opt<int64_t>
    intHigh("int-high", cl::init(2), cl::cat(inputCategory),
            cl::desc("Random integer inputs are drawn from [0, int-high)"));

static Opt<std::string> device("device", cl::init("auto"),
                               cl::cat(deviceCategory),
                               cl::desc("host, cuda, or auto (cuda where a "
                                        "GPU is usable, else host)"));
static Opt<bool> compileOnly(
    "compile-only", cl::cat(deviceCategory),
    cl::desc("Stop after compiling (and after NVRTC for each --arch)"));
static List
    archs("arch", cl::cat(deviceCategory),
          cl::desc("With --compile-only: compile the kernels with "
                   "NVRTC to CUBIN for this architecture (sm_80, ...)"));
static Opt<bool>
    planOnly("plan-only", cl::cat(deviceCategory),
             cl::desc("Plan and report memory without the weights and without "
                      "running: an ONNX model's external weight files may be "
                      "absent; prints the memory report and the remat totals"));
static Opt<unsigned> repeat("repeat", cl::init(1), cl::cat(deviceCategory),
                            cl::desc("Run the forward pass this many times "
                                     "and report the best time"));
static Opt<std::string>
    cacheDir("cache-dir", cl::cat(deviceCategory),
             cl::desc("Kernel cache directory (default: $MEMFIT_CACHE_DIR or "
                      "~/.cache/memfit)"));
static Opt<bool> noCache("no-cache", cl::cat(deviceCategory),
                         cl::desc("Do not use the kernel cache"));

static Opt<std::string>
    outputDir("output-dir", cl::cat(outputCategory),
              cl::desc("Write every output as <dir>/<name>.npy"));
static Opt<std::string>
    saveDir("save-executable", cl::cat(outputCategory),
            cl::desc("Write the compiled executable (manifest, kernels.cu, "
                     "weights.bin) to this directory"));
static Opt<bool> memoryReport(
    "memory-report", cl::cat(outputCategory),
    cl::desc("Print the memory report: weights, gradients, optimizer "
             "states, activations and bytes per parameter"));
static Opt<bool> quiet("quiet", cl::cat(outputCategory),
                       cl::desc("Print only errors"));
static Opt<bool> printPipeline(
    "print-pipeline", cl::cat(outputCategory),
    cl::desc("Print the memfit-opt command that reproduces the compile"));
static Opt<std::string> emitMlir(
    "emit-mlir", cl::cat(outputCategory),
    cl::desc("Write the module that CUDA is emitted from as MLIR ('-': "
             "stdout)"));

static Opt<bool> train("train", cl::cat(trainCategory),
                       cl::desc("Compile the training step and train the "
                                "model"));
static Opt<bool> gradients(
    "gradients", cl::cat(trainCategory),
    cl::desc("Compile loss and gradients only (no optimizer), run them once "
             "and write every output (loss, grad.<param>) to --output-dir"));
static Opt<std::string> lossKind(
    "loss", cl::init("output"), cl::cat(trainCategory),
    cl::desc("output (the model's output is the loss), cross-entropy (input "
             "'labels') or mse (input 'target')"));
static Opt<int64_t>
    ignoreIndex("ignore-index", cl::cat(trainCategory),
                cl::desc("Cross-entropy: labels to ignore (default -100)"));
static List trainablePatterns(
    "trainable", cl::CommaSeparated, cl::cat(trainCategory),
    cl::desc("Glob patterns of the parameters to train (default: all)"));
static List
    frozenPatterns("frozen", cl::CommaSeparated, cl::cat(trainCategory),
                   cl::desc("Glob patterns of parameters to leave alone"));
static Opt<std::string> precision(
    "precision", cl::init("fp32"), cl::cat(trainCategory),
    cl::desc("fp32, bf16 (--bf16) or fp16 (--fp16): 16-bit compute, fp32 "
             "master weights"));
// Hugging Face's spellings, listed in --precision's line.
static Opt<int64_t> loraRank(
    "lora-rank", cl::init(0), cl::cat(trainCategory),
    cl::desc("LoRA: train adapters of this rank on --lora-targets, every "
             "other parameter frozen"));
static Opt<double> loraAlpha("lora-alpha", cl::init(8.0),
                             cl::cat(trainCategory),
                             cl::desc("LoRA alpha (scale alpha / rank; "
                                      "default 8)"));
static List loraTargets(
    "lora-targets", cl::CommaSeparated, cl::cat(trainCategory),
    cl::desc("LoRA targets: attention (default), mlp, all-linear, or globs "
             "over module paths (h.*.attn.c_attn)"));
static List loraExclude("lora-exclude", cl::CommaSeparated, cl::Hidden,
                        cl::cat(trainCategory),
                        cl::desc("LoRA: globs over module paths not to adapt"));
static Opt<bool> loraRslora("lora-rslora", cl::Hidden, cl::cat(trainCategory),
                            cl::desc("LoRA: scale by alpha / sqrt(rank)"));
static Opt<double> loraDropout("lora-dropout", cl::init(0.0), cl::Hidden,
                               cl::cat(trainCategory),
                               cl::desc("LoRA dropout (only 0 is supported)"));
static Opt<int64_t> loraSeed("lora-seed", cl::init(0), cl::Hidden,
                             cl::cat(trainCategory),
                             cl::desc("LoRA: seed of the adapters' initial "
                                      "values"));
static Opt<std::string> loadAdapters(
    "load-adapters", cl::cat(trainCategory),
    cl::desc("Set trainable parameters (LoRA adapters: PEFT's or memfit's "
             "names) from a safetensors file before running"));
static Opt<bool> bf16("bf16", cl::Hidden, cl::cat(trainCategory),
                      cl::desc("--precision=bf16"));
static Opt<bool> fp16("fp16", cl::Hidden, cl::cat(trainCategory),
                      cl::desc("--precision=fp16"));
static Opt<std::string> lossScaleFlag(
    "loss-scale", cl::cat(trainCategory),
    cl::desc("dynamic (default with --fp16), none or a fixed factor; "
             "--loss-scale-{init,growth,backoff,interval} as GradScaler's"));
// GradScaler's settings, named in --loss-scale's line and in
// docs/training.md.
static Opt<double> lossScaleInit(
    "loss-scale-init", cl::Hidden, cl::cat(trainCategory),
    cl::desc("Dynamic loss scaling: initial scale (default 65536)"));
static Opt<int64_t> lossScaleInterval(
    "loss-scale-interval", cl::Hidden, cl::cat(trainCategory),
    cl::desc("Dynamic loss scaling: good steps before the scale grows "
             "(default 2000)"));
static Opt<double> lossScaleGrowth("loss-scale-growth", cl::Hidden,
                                   cl::cat(trainCategory),
                                   cl::desc("growth factor (default 2)"));
static Opt<double> lossScaleBackoff("loss-scale-backoff", cl::Hidden,
                                    cl::cat(trainCategory),
                                    cl::desc("backoff factor (default 0.5)"));
static List
    keepFp32("keep-fp32", cl::CommaSeparated, cl::cat(trainCategory),
             cl::desc("Glob patterns of ONNX node names to keep in fp32"));

static Opt<int64_t>
    steps("steps", cl::init(20), cl::cat(loopCategory),
          cl::desc("Optimizer steps to take (more, when resuming)"));
static Opt<int64_t> accumulate(
    "accumulate", cl::init(1), cl::cat(loopCategory),
    cl::desc("Micro-batches per optimizer step (gradient accumulation)"));
static Opt<double> learningRateFlag("lr", cl::init(1e-3), cl::cat(loopCategory),
                                    cl::desc("Peak learning rate"));
static Opt<std::string> lrSchedule(
    "lr-schedule", cl::init("constant"), cl::cat(loopCategory),
    cl::desc("constant, cosine or linear (decay to --min-lr at "
             "--decay-steps), after --warmup steps of linear warmup"));
static Opt<int64_t> warmup("warmup", cl::init(0), cl::cat(loopCategory),
                           cl::desc("Warmup steps"));
static Opt<int64_t> decaySteps(
    "decay-steps", cl::init(0), cl::cat(loopCategory),
    cl::desc("The global step at which the decay ends (default: the last "
             "step of this run)"));
static Opt<double> minLr("min-lr", cl::init(0.0), cl::cat(loopCategory),
                         cl::desc("Learning rate at the end of the decay"));
static Opt<std::string> corpus(
    "corpus", cl::cat(loopCategory),
    cl::desc("Train on a text file, character by character (see above)"));
static List dataFiles("data", cl::cat(loopCategory),
                      cl::desc("name=FILE.npy: micro-batches of an input "
                               "along the first dimension (repeatable)"));
static Opt<std::string>
    lossesPath("losses", cl::cat(loopCategory),
               cl::desc("Write step,loss lines (CSV) to this file"));
static Opt<std::string> checkpointPath(
    "checkpoint", cl::cat(loopCategory),
    cl::desc("Save the training state to this file at the end (and every "
             "--save-every steps)"));
static Opt<int64_t> saveEvery(
    "save-every", cl::init(0), cl::cat(loopCategory),
    cl::desc("Save --checkpoint after every step whose global number is a "
             "multiple of this"));
static Opt<std::string> exportAdapters(
    "export-adapters", cl::cat(loopCategory),
    cl::desc("After training, write the LoRA adapters to this safetensors "
             "file, with PEFT's names"));
static Opt<std::string> exportSafetensors(
    "export-safetensors", cl::cat(loopCategory),
    cl::desc("After training, write every trained parameter to this "
             "safetensors file, with its ONNX initializer's name"));
static Opt<std::string> exportOnnx(
    "export", cl::cat(loopCategory),
    cl::desc("After training, write the trained model as ONNX to this file: "
             "the original graph with the trained weights, LoRA merged"));
static Opt<bool> exportExternalData(
    "export-external-data", cl::Hidden, cl::cat(loopCategory),
    cl::desc("--export: the weights in a side file (<file>.data) even for a "
             "small model"));
static Opt<std::string> resumePath(
    "resume", cl::cat(loopCategory),
    cl::desc("Load this checkpoint before training; the step counter "
             "continues from it"));

static Opt<std::string> optimizer("optimizer", cl::init("adamw"),
                                  cl::cat(optimizerCategory),
                                  cl::desc("adamw, adamw8bit (8-bit block-wise "
                                           "states, as bitsandbytes') or sgd"));
static Opt<std::string> optimizerStates(
    "optimizer-states", cl::init("fp32"), cl::Hidden,
    cl::cat(optimizerCategory),
    cl::desc("fp32 or 8bit: how optimizer states are stored (SGD momentum "
             "too; adamw8bit implies 8bit)"));
static Opt<std::string> quantizeWeights(
    "quantize-weights", cl::init("none"), cl::cat(deviceCategory),
    cl::desc("none, nf4, fp4 or int8: store the weights that only matmuls "
             "read quantized (with --train, the --frozen ones)"));
static Opt<int64_t> weightBlockSize(
    "weight-block-size", cl::init(64), cl::Hidden, cl::cat(deviceCategory),
    cl::desc("Values per absmax of a quantized weight (default 64)"));
static Opt<bool>
    doubleQuant("double-quant", cl::Hidden, cl::cat(deviceCategory),
                cl::desc("nf4, fp4: quantize the weights' absmax too (QLoRA)"));
static Opt<bool> fuse("fuse", cl::cat(deviceCategory),
                      cl::desc("Fuse kernels: spelled-out GELU, norms and "
                               "softmax raised to named ops, element-wise "
                               "chains and row ops merged, the optimizer's "
                               "updates as multi-tensor kernels, transposes "
                               "into the contractions (memfit-raise, "
                               "memfit-fuse)"));
static Opt<int64_t> fuseMaxOps(
    "fuse-max-ops", cl::init(0), cl::Hidden, cl::cat(deviceCategory),
    cl::desc("With --fuse: at most this many ops in a kernel (0: no limit)"));
static Opt<std::string> fusionReport(
    "fusion-report", cl::ValueOptional, cl::cat(outputCategory),
    cl::desc("With --fuse: write memfit-fuse's report (each kernel's bytes, "
             "FLOPs, ops and ONNX nodes against the step's lower bound) to "
             "this file (no value: standard output)"));
static cl::list<std::string> keepFp32States(
    "keep-fp32-states", cl::CommaSeparated, cl::Hidden,
    cl::cat(optimizerCategory),
    cl::desc("With 8-bit states: glob patterns of parameters whose states "
             "stay fp32 (an embedding, say)"));
static Opt<double> beta1("beta1", cl::cat(optimizerCategory),
                         cl::desc("AdamW beta1 (default 0.9)"));
static Opt<double> beta2("beta2", cl::cat(optimizerCategory),
                         cl::desc("AdamW beta2 (default 0.999)"));
static Opt<double> eps("eps", cl::cat(optimizerCategory),
                       cl::desc("AdamW epsilon (default 1e-8)"));
static Opt<double>
    weightDecay("weight-decay", cl::cat(optimizerCategory),
                cl::desc("Decoupled weight decay (default 0.01)"));
static Opt<double> momentum("momentum", cl::cat(optimizerCategory),
                            cl::desc("SGD momentum (default 0)"));
static Opt<bool> nesterov("nesterov", cl::cat(optimizerCategory),
                          cl::desc("SGD Nesterov momentum"));
static Opt<double> clipNorm(
    "clip-norm", cl::cat(optimizerCategory),
    cl::desc("Clip gradients to this global L2 norm (default 0: none)"));

static Opt<std::string> rematPolicy(
    "remat", cl::init("auto"), cl::cat(rematCategory),
    cl::desc("Rematerialization policy: none, checkpoint-layers, auto "
             "(default; needs --budget or --activation-fraction) or "
             "optimal"));
static Opt<mlir::memfit::ByteSize> budgetFlag(
    "budget", cl::cat(rematCategory),
    cl::desc("Peak device memory of the training step (weights + arena): "
             "bytes, or with KiB/MiB/GiB/KB/MB/GB"));
static Opt<double> activationFractionFlag(
    "activation-fraction", cl::cat(rematCategory),
    cl::desc("Keep at most this fraction of the activation memory that "
             "saving every forward value takes"));
static Opt<bool> compressActivations(
    "compress-activations", cl::cat(rematCategory),
    cl::desc("--remat=auto may also save a forward value compressed to int8 "
             "(block-wise absmax), where that beats saving it whole and "
             "recomputing it"));
static Opt<int64_t> activationBlockSize(
    "activation-block-size", cl::init(256), cl::Hidden, cl::cat(rematCategory),
    cl::desc("--compress-activations: values per absmax (default 256)"));
static Opt<std::string> rematReport(
    "remat-report", cl::ValueOptional, cl::cat(rematCategory),
    cl::desc("Print memfit-remat's decisions (each forward value saved, "
             "recomputed or compressed, and why), or write them to =FILE"));
static Opt<std::string> timelinePath(
    "memory-timeline", cl::cat(rematCategory),
    cl::desc("Write the memory timeline of the training step (bytes live "
             "per step by category) as SVG to this file"));
static Opt<std::string> timelineDataPath(
    "memory-timeline-data", cl::cat(rematCategory),
    cl::desc("Write the memory timeline's data as CSV to this file"));

/// The top of --help: the modes and the exact data scheme, which a PyTorch
/// reference script mirrors.
static const char *kOverview =
    R"(memfit-run: compile a model and run its forward pass, its gradients, or
train it

MODEL is an .onnx or .mlir file, or an executable directory written by
--save-executable (a saved training step trains with --train as it is; give
the --accumulate=k it was compiled with).

Training data. With --corpus=FILE.txt the model has one int64 input of shape
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

static cl::extrahelp kExamples(R"(
EXAMPLES:
  memfit-run model.onnx --input-shape=batch=2,seq=16         forward pass
  memfit-run model.onnx --input-shape=batch=2,seq=16 \
      --input=input_ids=ids.npy --output-dir=out --device=host
  memfit-run model.onnx --input-shape=batch=2,seq=16 --gradients \
      --loss=cross-entropy --output-dir=grads
  memfit-run model.onnx --input-shape=batch=4,seq=32 --train --steps=200 \
      --loss=cross-entropy --corpus=text.txt --checkpoint=ckpt --budget=1.2MiB
  memfit-run model.onnx --compile-only --arch=sm_80 --arch=sm_90
)");

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int fail(const std::string &message) {
  std::cout.flush();
  std::cerr << "memfit-run: " << message << "\n";
  return 1;
}

/// Where progress goes: stdout, or nowhere with --quiet.
std::ostream &out() {
  static std::ostream silent(nullptr);
  return quiet ? silent : std::cout;
}

/// The flags of `category` given on the command line (not --train and
/// --gradients themselves), in the order given.
std::vector<cl::Option *> given(const cl::OptionCategory &category) {
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

/// --input and --data: name=path each.
std::optional<std::string> parseSpecs(const List &specs,
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

/// Checks the flags before any work, so that a typo fails fast; returns the
/// first problem.
std::optional<std::string> checkFlags() {
  if (device != "auto" && device != "host" && device != "cuda")
    return "--device=" + device + ": expected host, cuda or auto";
  if (!archs.empty() && !compileOnly)
    return std::string("--arch needs --compile-only");
  if (planOnly) {
    // What needs the weights or a run.
    const cl::Option *needRun[] = {
        &compileOnly,
        &saveDir,
        &outputDir,
        static_cast<cl::Option *>(std::addressof(inputFiles)),
        static_cast<cl::Option *>(std::addressof(dataFiles)),
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
  // An empty batch (or any empty input) has no loss to average and nothing
  // to run: refuse it here rather than run kernels over nothing.
  llvm::SmallVector<llvm::StringRef> shapeEntries;
  llvm::StringRef(inputShapes).split(shapeEntries, ',', -1, false);
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
    if (optimizer != "adamw" && optimizer != "adamw8bit" && optimizer != "sgd")
      return "--optimizer=" + optimizer + ": expected adamw, adamw8bit or sgd";
    if (optimizerStates != "fp32" && optimizerStates != "8bit")
      return "--optimizer-states=" + optimizerStates +
             ": expected fp32 or 8bit";
    if (steps < 0)
      return std::string("--steps must not be negative");
    if (accumulate < 1)
      return std::string("--accumulate must be at least 1");
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
  if ((train || gradients) && lossKind != "output" &&
      lossKind != "cross-entropy" && lossKind != "mse")
    return "--loss=" + lossKind + ": expected output, cross-entropy or mse";
  return std::nullopt;
}

/// Warns about compile-time flags that an executable directory ignores.
void warnIgnoredCompileFlags() {
  std::vector<cl::Option *> ignored = given(optimizerCategory);
  llvm::append_range(ignored, given(trainCategory));
  llvm::append_range(ignored, given(rematCategory));
  for (cl::Option *option :
       {static_cast<cl::Option *>(&inputShapes),
        static_cast<cl::Option *>(std::addressof(inputValues)),
        static_cast<cl::Option *>(&printPipeline),
        static_cast<cl::Option *>(&emitMlir)})
    if (option->getNumOccurrences())
      ignored.push_back(option);
  llvm::sort(ignored, [](cl::Option *a, cl::Option *b) {
    return a->getPosition() < b->getPosition();
  });
  for (cl::Option *option : ignored)
    std::cerr << "memfit-run: warning: --" << option->ArgStr.str()
              << " is ignored: the executable is compiled already\n";
}

/// The training options the flags give, or why they contradict each other.
rt::StatusOr<memfit::TrainOptions> trainOptionsFromFlags() {
  memfit::TrainOptions t;
  if (int(bf16) + int(fp16) + int(precision.getNumOccurrences() > 0) > 1)
    return rt::invalidArgument("give one of --precision, --bf16 and --fp16");
  t.loss = lossKind;
  if (ignoreIndex.getNumOccurrences())
    t.ignoreIndex = ignoreIndex;
  t.trainable.assign(trainablePatterns.begin(), trainablePatterns.end());
  t.frozen.assign(frozenPatterns.begin(), frozenPatterns.end());
  t.loraRank = loraRank;
  t.loraAlpha = loraAlpha;
  t.loraTargets.assign(loraTargets.begin(), loraTargets.end());
  t.loraExclude.assign(loraExclude.begin(), loraExclude.end());
  t.loraRslora = loraRslora;
  t.loraDropout = loraDropout;
  t.loraSeed = loraSeed;
  t.precision = bf16 ? "bf16" : fp16 ? "fp16" : precision.getValue();
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
  t.optimizer = gradients ? "none" : optimizer.getValue();
  t.optimizerStates = optimizerStates;
  t.keepFp32States.assign(keepFp32States.begin(), keepFp32States.end());
  // Optional values: the compiler's defaults unless given.
  std::pair<Opt<double> *, double *> doubles[] = {
      {&beta1, &t.beta1},       {&beta2, &t.beta2},
      {&eps, &t.eps},           {&weightDecay, &t.weightDecay},
      {&momentum, &t.momentum}, {&clipNorm, &t.clipNorm}};
  for (auto [flag, field] : doubles)
    if (flag->getNumOccurrences())
      *field = *flag;
  t.nesterov = nesterov;
  t.accumulate = gradients ? 1 : accumulate.getValue();
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

/// `word` as a POSIX shell reads it back: as it is when it holds only
/// characters the shell leaves alone, else in single quotes.
std::string shellWord(const std::string &word) {
  bool plain = !word.empty() &&
               word.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789_-+=,./:@%") ==
                   std::string::npos;
  if (plain)
    return word;
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// The executable: compiled from the model, or loaded from a directory.
rt::StatusOr<rt::Executable> loadOrCompile(bool loaded) {
  if (loaded) {
    auto executable = rt::loadExecutable(modelPath);
    if (executable)
      warnIgnoredCompileFlags();
    return executable;
  }
  memfit::CompileOptions options;
  options.inputShapes = inputShapes;
  options.inputValues.assign(inputValues.begin(), inputValues.end());
  options.mlirOutput = emitMlir;
  options.planOnly = planOnly;
  if (train || gradients) {
    auto flags = trainOptionsFromFlags();
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
  options.fusion.enabled = fuse;
  options.fusion.maxOps = fuseMaxOps;
  if (fusionReport.getNumOccurrences())
    options.fusion.report =
        fusionReport.empty() ? "-" : fusionReport.getValue();
  if (printPipeline) {
    auto pipeline = memfit::pipelineArgument(options);
    if (!pipeline)
      return pipeline.status();
    std::string values;
    for (const std::string &value : inputValues)
      values += " " + shellWord("--input-value=" + value);
    std::cout << "pipeline: memfit-opt " << shellWord(modelPath.getValue())
              << (planOnly ? " --without-weights" : "")
              << (inputShapes.empty() ? std::string()
                                      : " " + shellWord("--input-shape=" +
                                                        inputShapes.getValue()))
              << values << " " << shellWord(*pipeline) << std::endl;
  }
  // The compiler's passes write their reports (--remat-report=-) through
  // LLVM's stdout stream: keep them in order with this tool's lines.
  std::cout.flush();
  auto compiled = memfit::compileModelFile(modelPath, options);
  llvm::outs().flush();
  return compiled;
}

/// "train_step (1 steps), ..."
std::string entryList(const rt::Manifest &manifest) {
  std::string list;
  for (const rt::Entry &entry : manifest.entries)
    list += llvm::formatv("{0}{1} ({2} steps)", list.empty() ? "" : ", ",
                          entry.name, entry.steps.size())
                .str();
  return list;
}

/// What was compiled (or loaded), its entries and its memory plan.
void printExecutable(const rt::Manifest &manifest, double seconds) {
  size_t stepCount = 0;
  for (const rt::Entry &entry : manifest.entries)
    stepCount += entry.steps.size();
  out() << llvm::formatv("compiled {0}: {1} kernels, {2} contractions, {3} "
                         "steps in {4:f1} ms\n",
                         llvm::sys::path::filename(modelPath),
                         manifest.kernels.size(), manifest.contractions.size(),
                         stepCount, seconds * 1e3)
               .str();
  if (manifest.entries.size() != 1 || manifest.entries[0].name != "main")
    out() << "entries: " << entryList(manifest) << "\n";
  out() << rt::formatPlanSummary(manifest);
  if (memoryReport || planOnly)
    std::cout << rt::formatMemoryReport(manifest);
}

/// What the executable is, against what was asked; --accumulate against a
/// saved training step (the manifest does not record k).
std::optional<std::string> checkMode(const rt::Manifest &manifest,
                                     bool loaded) {
  bool stepEntry = manifest.findEntry("train_step") != nullptr;
  bool isTraining = stepEntry || (manifest.findEntry("accumulate") &&
                                  manifest.findEntry("apply"));
  if (train && loaded && isTraining) {
    if (stepEntry && accumulate != 1)
      return llvm::formatv("--accumulate={0}: {1} has a 'train_step' entry "
                           "(one micro-batch per step)",
                           accumulate.getValue(), modelPath.getValue())
          .str();
    if (!stepEntry && !accumulate.getNumOccurrences())
      return modelPath + " accumulates micro-batches ('accumulate' + "
                         "'apply'): give the --accumulate=k it was "
                         "compiled with";
    if (!stepEntry && accumulate == 1)
      return "--accumulate=1: " + modelPath +
             " has 'accumulate' + 'apply' entries, compiled for k > 1";
  }
  if (train && !isTraining)
    return "--train: " + modelPath +
           " is not a training step (entries: " + entryList(manifest) +
           "); compile the model with --train";
  if (!train && isTraining)
    return modelPath + " is a training step (entries: " + entryList(manifest) +
           "): run it with --train";
  if (!train && manifest.entries.size() != 1)
    return modelPath + " has several entries (" + entryList(manifest) +
           "); memfit-run runs one";
  return std::nullopt;
}

rt::SessionOptions sessionOptions() {
  rt::SessionOptions options;
  options.cacheDir = cacheDir;
  options.disableCache = noCache;
  options.warn = [](const std::string &message) {
    std::cerr << "memfit-run: warning: " << message << "\n";
  };
  return options;
}

/// NVRTC through the CUDA backend's kernel cache: compiling ahead of time
/// warms it for later sessions on GPUs of these architectures.
int compileAhead(const rt::Manifest &manifest) {
  for (const std::string &arch : archs) {
    auto start = Clock::now();
    bool hit = false;
    auto cubin =
        rt::compileToCubinCached(manifest.source, arch, sessionOptions(), &hit);
    if (!cubin)
      return fail(arch + ": " + cubin.status().message());
    out() << llvm::formatv("{0}: {1} kernels, {2} bytes of CUBIN {3} in "
                           "{4:f3} s\n",
                           arch, manifest.kernels.size(),
                           memfit::groupDigits(cubin->cubin.size()),
                           hit ? "from the cache" : "compiled",
                           secondsSince(start))
                 .str();
  }
  return 0;
}

/// A session on --device, with what it is and how long its kernels took.
rt::StatusOr<std::unique_ptr<rt::Session>>
openSession(const rt::Executable &executable) {
  rt::DeviceKind kind = rt::DeviceKind::Host;
  std::string whyNot;
  if (device == "cuda") {
    if (!rt::cudaUsable(&whyNot))
      return rt::unavailable("--device=cuda: " + whyNot);
    kind = rt::DeviceKind::Cuda;
  } else if (device == "auto") {
    if (rt::cudaUsable(&whyNot))
      kind = rt::DeviceKind::Cuda;
    else
      out() << "no usable GPU (" << whyNot
            << "); running on the host backend\n";
  }
  auto session = rt::Session::create(executable, kind, sessionOptions());
  if (!session)
    return session;
  const rt::SessionTimings &timings = (*session)->timings();
  out() << "device: " << (*session)->deviceDescription() << "\n"
        << "kernels: "
        << (timings.cacheHit
                ? std::string("loaded from the cache")
                : llvm::formatv("compiled in {0:f2} s", timings.compileSeconds)
                      .str())
        << "\nallocated: " << memfit::groupDigits((*session)->allocatedBytes())
        << " bytes (plan: "
        << memfit::groupDigits(executable.manifest.totalBytes()) << ")\n";
  return session;
}

/// PEFT's prefix of an adapter's name in its adapter_model.safetensors.
constexpr llvm::StringLiteral kPeftPrefix = "base_model.model.";

/// Whether a variable is one of the manifest's LoRA adapters.
bool isAdapter(const rt::Manifest &manifest, const rt::Variable &v) {
  return llvm::any_of(manifest.loraAdapters, [&](const rt::LoraAdapter &a) {
    return v.name == a.a || v.name == a.b;
  });
}

/// Writes the trainable parameters (the LoRA adapters only, with PEFT's
/// names) to a safetensors file.
rt::Status exportParameters(const rt::Session &session, const std::string &path,
                            bool adaptersOnly) {
  rt::NamedTensors tensors;
  for (const rt::Variable &v : session.variables()) {
    if (v.kind != rt::VariableKind::Parameter ||
        (adaptersOnly && !isAdapter(session.manifest(), v)))
      continue;
    auto value = session.readVariable(v.name);
    if (!value)
      return value.status();
    tensors.emplace_back(adaptersOnly ? kPeftPrefix.str() + v.name : v.name,
                         std::move(*value));
  }
  if (tensors.empty())
    return rt::invalidArgument(path + ": the model has no " +
                               (adaptersOnly
                                    ? "LoRA adapters (train with --lora-rank)"
                                    : "trainable parameters"));
  return rt::writeSafetensors(path, tensors, {{"format", "pt"}});
}

/// An f32 variable's values.
rt::StatusOr<std::vector<float>> floatValues(const rt::Session &session,
                                             const std::string &name) {
  auto tensor = session.readVariable(name);
  if (!tensor)
    return tensor.status();
  if (tensor->dtype != rt::DType::f32)
    return rt::invalidArgument("--export: parameter '" + name + "' is " +
                               rt::describe(tensor->dtype, tensor->shape) +
                               ", not f32");
  std::vector<float> values(tensor->numElements());
  std::memcpy(values.data(), tensor->data.data(), tensor->data.size());
  return values;
}

/// --export: the source ONNX model with the trained parameters, LoRA
/// adapters merged into their base weights.
rt::Status exportModel(const rt::Session &session, const std::string &path) {
  std::vector<mlir::memfit::TrainedTensor> trained;
  for (const rt::Variable &v : session.variables()) {
    if (v.kind != rt::VariableKind::Parameter ||
        isAdapter(session.manifest(), v))
      continue;
    auto values = floatValues(session, v.name);
    if (!values)
      return values.status();
    trained.push_back({v.name, std::move(*values)});
  }
  std::vector<mlir::memfit::LoraMerge> merges;
  for (const rt::LoraAdapter &adapter : session.manifest().loraAdapters) {
    mlir::memfit::LoraMerge merge;
    auto a = floatValues(session, adapter.a);
    auto b = floatValues(session, adapter.b);
    if (!a || !b)
      return !a ? a.status() : b.status();
    const auto &shapeA =
        session.manifest()
            .buffers[session.manifest().findVariable(adapter.a)->buffer]
            .shape;
    merge.base = adapter.base;
    merge.rank = shapeA[0];
    merge.in = shapeA[1];
    merge.out = static_cast<int64_t>(b->size()) / merge.rank;
    merge.a = std::move(*a);
    merge.b = std::move(*b);
    merge.scale = adapter.scale;
    merge.transposed = adapter.transposed;
    merges.push_back(std::move(merge));
  }
  mlir::memfit::OnnxExportOptions options;
  options.externalData = exportExternalData;
  std::string error = mlir::memfit::exportTrainedOnnx(modelPath, path, trained,
                                                      merges, options);
  if (!error.empty())
    return rt::invalidArgument(error);
  return rt::Status::ok();
}

/// --load-adapters: sets trainable parameters from a safetensors file,
/// after checking every tensor (so on error nothing changed).
rt::Status loadParameters(rt::Session &session, const std::string &path) {
  auto tensors = rt::readSafetensors(path);
  if (!tensors)
    return tensors.status();
  std::vector<std::pair<std::string, rt::Tensor *>> writes;
  for (auto &[name, tensor] : *tensors) {
    llvm::StringRef key(name);
    key.consume_front(kPeftPrefix);
    const rt::Variable *var = nullptr;
    for (const rt::Variable &v : session.variables())
      if (v.name == key && v.kind == rt::VariableKind::Parameter)
        var = &v;
    if (!var)
      return rt::invalidArgument(path + ": tensor '" + name +
                                 "' names no trainable parameter of the model");
    const rt::Buffer &buffer = session.manifest().buffers[var->buffer];
    if (buffer.dtype != tensor.dtype || buffer.shape != tensor.shape)
      return rt::invalidArgument(path + ": tensor '" + name + "' is " +
                                 rt::describe(tensor.dtype, tensor.shape) +
                                 ", the parameter " +
                                 rt::describe(buffer.dtype, buffer.shape));
    writes.emplace_back(var->name, &tensor);
  }
  for (auto &[name, tensor] : writes)
    MEMFIT_RT_RETURN_IF_ERROR(session.writeVariable(name, *tensor));
  return rt::Status::ok();
}

/// --train: the runtime's training loop with the flags' data and schedule.
int trainModel(rt::Session &session,
               const std::map<std::string, std::string> &inputPaths,
               const std::map<std::string, std::string> &dataPaths) {
  auto trainer = rt::Trainer::create(session, accumulate);
  if (!trainer)
    return fail("--train: " + trainer.status().message());
  rt::TrainingDataOptions data;
  data.fixed = inputPaths;
  data.data = dataPaths;
  data.corpus = corpus;
  data.seed = seed;
  data.intHigh = intHigh;
  data.accumulationSteps = accumulate;
  auto source = rt::TrainingData::create(session.manifest(),
                                         trainer->batchInputs(), data);
  if (!source)
    return fail(source.status().message());

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
  loop.log = &out();
  if (!quiet && ::isatty(STDERR_FILENO))
    loop.progressBar = &std::cerr;
  loop.warn = [](const std::string &warning) {
    std::cerr << "memfit-run: warning: " << warning << "\n";
  };
  auto summary = rt::runTraining(session, *trainer, *source, loop);
  if (!summary)
    return fail(summary.status().message());
  for (auto [path, adaptersOnly] :
       {std::pair(exportAdapters.getValue(), true),
        std::pair(exportSafetensors.getValue(), false)}) {
    if (path.empty())
      continue;
    if (rt::Status written = exportParameters(session, path, adaptersOnly);
        !written)
      return fail(written.message());
    out() << "exported " << (adaptersOnly ? "LoRA adapters" : "parameters")
          << " to " << path << "\n";
  }
  if (!exportOnnx.empty()) {
    if (rt::Status written = exportModel(session, exportOnnx); !written)
      return fail(written.message());
    out() << "exported the trained model to " << exportOnnx << "\n";
  }
  return 0;
}

/// The one entry (the forward pass, or loss and gradients) on --input
/// files or random inputs, --repeat times; a summary of every output.
int runOnce(rt::Session &session,
            const std::map<std::string, std::string> &inputPaths) {
  const rt::Manifest &manifest = session.manifest();
  const rt::Entry &entry = manifest.entries.front();
  for (const auto &[name, path] : inputPaths)
    if (llvm::none_of(entry.inputs,
                      [&](const rt::Binding &b) { return b.name == name; }))
      return fail("--input=" + name + "=" + path +
                  ": the model has no input named '" + name + "'");
  for (auto [i, input] : llvm::enumerate(entry.inputs)) {
    const rt::Buffer &buffer = manifest.buffers[input.buffer];
    rt::Tensor tensor = rt::Tensor::zeros(buffer.dtype, buffer.shape);
    std::string origin = "random";
    if (auto it = inputPaths.find(input.name); it != inputPaths.end()) {
      auto read = rt::readNpy(it->second, buffer.dtype);
      if (!read)
        return fail(read.status().message());
      tensor = std::move(read.value());
      origin = it->second;
    } else {
      rt::fillRandom(tensor, seed + i, intHigh);
    }
    if (rt::Status set = session.setInput(input.name, tensor); !set)
      return fail(set.message());
    out() << "input " << input.name << ": "
          << rt::describe(tensor.dtype, tensor.shape) << " (" << origin
          << ")\n";
  }

  double best = INFINITY;
  for (unsigned r = 0; r < std::max(1u, unsigned(repeat)); ++r) {
    if (rt::Status ran = session.run(entry.name); !ran)
      return fail(ran.message());
    best = std::min(best, session.timings().runSeconds);
  }
  out() << llvm::formatv("{0}: {1:f3} ms",
                         gradients ? "loss and gradients" : "forward pass",
                         best * 1e3)
               .str()
        << (repeat > 1 ? " (best of " + std::to_string(repeat) + ")" : "")
        << "\noutputs:\n";
  if (!outputDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      return fail("--output-dir=" + outputDir + ": " + ec.message());
  for (const rt::Binding &output : entry.outputs) {
    auto tensor = session.getOutput(output.name);
    if (!tensor)
      return fail(tensor.status().message());
    out() << rt::formatTensorSummary(output.name, *tensor);
    if (outputDir.empty())
      continue;
    llvm::SmallString<256> path(outputDir);
    llvm::sys::path::append(path, rt::tensorFileName(output.name) + ".npy");
    if (rt::Status written = rt::writeNpy(std::string(path), *tensor); !written)
      return fail(written.message());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // A file-size limit (ulimit -f) reached while writing losses, checkpoints
  // or outputs is a failed write with a message (EFBIG), as a full disk is,
  // not a signal that kills the process with a stack dump.
  std::signal(SIGXFSZ, SIG_IGN);
  memfit::tools::showOnlyCategories(
      {&inputCategory, &deviceCategory, &outputCategory, &trainCategory,
       &loopCategory, &optimizerCategory, &rematCategory});
  cl::ParseCommandLineOptions(argc, argv, kOverview);

  std::map<std::string, std::string> inputPaths, dataPaths;
  std::optional<std::string> problem = parseSpecs(inputFiles, inputPaths);
  if (!problem)
    problem = parseSpecs(dataFiles, dataPaths);
  if (!problem)
    problem = checkFlags();
  if (problem)
    return fail(*problem);

  bool loaded = llvm::sys::fs::is_directory(modelPath);
  auto start = Clock::now();
  auto executable = loadOrCompile(loaded);
  if (!executable)
    return fail(executable.status().message());
  const rt::Manifest &manifest = executable->manifest;
  printExecutable(manifest, secondsSince(start));
  if (std::optional<std::string> mismatch = checkMode(manifest, loaded))
    return fail(*mismatch);
  // Before training, not after it.
  if (!exportAdapters.empty() && manifest.loraAdapters.empty())
    return fail("--export-adapters=" + exportAdapters +
                ": the model has no LoRA adapters (train with --lora-rank)");

  if (planOnly) {
    out() << "plan only: "
          << (loaded ? "the executable was not run"
                     : "the weights were not read and nothing was run")
          << "\n";
    return 0;
  }
  if (!saveDir.empty()) {
    if (rt::Status saved = rt::saveExecutable(*executable, saveDir); !saved)
      return fail(saved.message());
    out() << "saved executable to " << saveDir << "\n";
  }
  if (compileOnly)
    return compileAhead(manifest);
  auto session = openSession(*executable);
  if (!session)
    return fail(session.status().message());
  if (!loadAdapters.empty()) {
    if (rt::Status loaded = loadParameters(**session, loadAdapters); !loaded)
      return fail(loaded.message());
    out() << "loaded parameters from " << loadAdapters << "\n";
  }
  if (train)
    return trainModel(**session, inputPaths, dataPaths);
  return runOnce(**session, inputPaths);
}
