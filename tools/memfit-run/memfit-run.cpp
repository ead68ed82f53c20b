//===- memfit-run.cpp - compile a model and run or train it on a device ----===//
//
//   memfit-run model.onnx --input-shape=batch=2,seq=16 [--device=host|cuda]
//              [--input=input_ids=ids.npy ...] [--output-dir=out]
//   memfit-run model.onnx --input-shape=batch=2,seq=16 --gradients
//              --loss=cross-entropy --output-dir=grads
//   memfit-run model.onnx --input-shape=batch=2,seq=16 --train --steps=200
//              --loss=cross-entropy --corpus=text.txt --checkpoint=ckpt
//
// Compiles the model (or loads an executable directory written by
// --save-executable), prints the memory plan, and then runs the forward
// pass (or, with --gradients, the loss and its gradients) on the chosen
// device with inputs from .npy files or random ones and prints a summary of
// every output, or trains it (--train) with data from a text corpus, .npy
// files or random inputs, with checkpoints.
//
//===----------------------------------------------------------------------===//

#include "memfit/JIT/Compiler.h"
#include "memfit/runtime/Bytes.h"
#include "memfit/runtime/Nvrtc.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/Tensor.h"
#include "memfit/runtime/Trainer.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <unistd.h>

namespace cl = llvm::cl;
namespace rt = memfit::rt;

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx | model.mlir | "
                                               "executable directory>"));
static cl::opt<std::string> inputShapes(
    "input-shape", cl::desc("ONNX input shapes (name=2x16) or symbolic "
                            "dimension sizes (batch=2,seq=16)"));
static cl::list<std::string> inputFiles(
    "input", cl::desc("An input from a .npy file: name=path (repeatable); "
                      "inputs not given are random"));
static cl::opt<std::string> device("device", cl::init("auto"),
                                   cl::desc("host, cuda, or auto (cuda where "
                                            "a GPU is usable, else host)"));
static cl::opt<std::string> outputDir(
    "output-dir", cl::desc("Write every output as <dir>/<name>.npy"));
static cl::opt<std::string> saveDir(
    "save-executable", cl::desc("Write the compiled executable (manifest, "
                                "kernels.cu, weights.bin) to this directory"));
static cl::opt<bool> compileOnly(
    "compile-only", cl::desc("Stop after compiling (and after NVRTC for each "
                             "--arch)"));
static cl::list<std::string> archs(
    "arch", cl::desc("With --compile-only: compile the kernels with NVRTC to "
                     "CUBIN for this architecture (sm_80, sm_90, ...)"));
static cl::opt<uint64_t> seed("seed", cl::init(0),
                              cl::desc("Seed of the random inputs"));
static cl::opt<int64_t> intHigh(
    "int-high", cl::init(2),
    cl::desc("Random integer inputs are drawn from [0, int-high)"));
static cl::opt<unsigned> repeat("repeat", cl::init(1),
                                cl::desc("Run the forward pass this many times "
                                         "and report the best time"));
static cl::opt<std::string> cacheDir(
    "cache-dir", cl::desc("Kernel cache directory (default: $MEMFIT_CACHE_DIR "
                          "or ~/.cache/memfit)"));
static cl::opt<bool> noCache("no-cache", cl::desc("Do not use the kernel cache"));
static cl::opt<bool> quiet("quiet", cl::desc("Print only errors"));
static cl::opt<bool> memoryReport(
    "memory-report", cl::desc("Print the memory report: weights, gradients, "
                              "optimizer states, activations and bytes per "
                              "parameter"));

// Training.
static cl::OptionCategory trainCategory("Training (--train, --gradients)");
static cl::opt<bool> train("train", cl::desc("Compile the training step and "
                                             "train the model"),
                           cl::cat(trainCategory));
static cl::opt<bool> gradients(
    "gradients", cl::desc("Compile loss and gradients only (no optimizer), "
                          "run them once and write every output (loss, "
                          "grad.<param>) to --output-dir"),
    cl::cat(trainCategory));
static cl::opt<int64_t> steps("steps", cl::init(20),
                              cl::desc("Optimizer steps to take (more, when "
                                       "resuming)"),
                              cl::cat(trainCategory));
static cl::opt<std::string> optimizer("optimizer", cl::init("adamw"),
                                      cl::desc("adamw or sgd"),
                                      cl::cat(trainCategory));
static cl::opt<double> learningRateFlag("lr", cl::init(1e-3),
                                        cl::desc("Peak learning rate"),
                                        cl::cat(trainCategory));
static cl::opt<std::string> lrSchedule(
    "lr-schedule", cl::init("constant"),
    cl::desc("constant, cosine or linear (decay to --min-lr at "
             "--decay-steps), after --warmup steps of linear warmup"),
    cl::cat(trainCategory));
static cl::opt<int64_t> warmup("warmup", cl::init(0),
                               cl::desc("Warmup steps"),
                               cl::cat(trainCategory));
static cl::opt<int64_t> decaySteps(
    "decay-steps", cl::init(0),
    cl::desc("The global step at which the decay ends (default: the last "
             "step of this run)"),
    cl::cat(trainCategory));
static cl::opt<double> minLr("min-lr", cl::init(0.0),
                             cl::desc("Learning rate at the end of the decay"),
                             cl::cat(trainCategory));
static cl::opt<double> beta1("beta1", cl::desc("AdamW beta1 (default 0.9)"),
                             cl::cat(trainCategory));
static cl::opt<double> beta2("beta2", cl::desc("AdamW beta2 (default 0.999)"),
                             cl::cat(trainCategory));
static cl::opt<double> eps("eps", cl::desc("AdamW epsilon (default 1e-8)"),
                           cl::cat(trainCategory));
static cl::opt<double> weightDecay(
    "weight-decay", cl::desc("Decoupled weight decay (default 0.01)"),
    cl::cat(trainCategory));
static cl::opt<double> momentum("momentum",
                                cl::desc("SGD momentum (default 0)"),
                                cl::cat(trainCategory));
static cl::opt<bool> nesterov("nesterov", cl::desc("SGD Nesterov momentum"),
                              cl::cat(trainCategory));
static cl::opt<double> clipNorm(
    "clip-norm", cl::desc("Clip gradients to this global L2 norm (default 0: "
                          "no clipping)"),
    cl::cat(trainCategory));
static cl::opt<int64_t> accumulate(
    "accumulate", cl::init(1),
    cl::desc("Micro-batches per optimizer step (gradient accumulation)"),
    cl::cat(trainCategory));
static cl::opt<std::string> rematPolicy(
    "remat", cl::init("auto"),
    cl::desc("Rematerialization policy: none, checkpoint-layers, auto "
             "(default; needs --budget or --activation-fraction) or "
             "optimal"));
static cl::opt<std::string> budgetFlag(
    "budget", cl::desc("Peak device memory of the training step (weights + "
                       "arena): bytes, or with KiB/MiB/GiB/KB/MB/GB"));
static cl::opt<double> activationFractionFlag(
    "activation-fraction",
    cl::desc("Keep at most this fraction of the activation memory that "
             "saving every forward value takes"));
static cl::opt<std::string> rematReport(
    "remat-report", cl::ValueOptional,
    cl::desc("Print memfit-remat's decisions (each forward value saved or "
             "recomputed, and why), or write them to =FILE"));
static cl::opt<std::string> timelinePath(
    "memory-timeline",
    cl::desc("Write the memory timeline of the training step (bytes live "
             "per step by category) as SVG to this file"));
static cl::opt<std::string> timelineDataPath(
    "memory-timeline-data",
    cl::desc("Write the memory timeline's data as CSV to this file"));
static cl::opt<std::string> lossKind(
    "loss", cl::init("output"),
    cl::desc("output (the model's output is the loss), cross-entropy (input "
             "'labels') or mse (input 'target')"),
    cl::cat(trainCategory));
static cl::opt<int64_t> ignoreIndex(
    "ignore-index", cl::desc("Cross-entropy: labels to ignore (default -100)"),
    cl::cat(trainCategory));
static cl::list<std::string> trainablePatterns(
    "trainable", cl::CommaSeparated,
    cl::desc("Glob patterns of the parameters to train (default: all)"),
    cl::cat(trainCategory));
static cl::list<std::string> frozenPatterns(
    "frozen", cl::CommaSeparated,
    cl::desc("Glob patterns of parameters to leave alone"),
    cl::cat(trainCategory));
static cl::opt<std::string> corpus(
    "corpus", cl::desc("Train on a text file, character by character (see "
                       "the description above)"),
    cl::cat(trainCategory));
static cl::list<std::string> dataFiles(
    "data", cl::desc("name=FILE.npy: micro-batches of an input along the "
                     "first dimension (repeatable)"),
    cl::cat(trainCategory));
static cl::opt<std::string> lossesPath(
    "losses", cl::desc("Write step,loss lines (CSV) to this file"),
    cl::cat(trainCategory));
static cl::opt<std::string> checkpointPath(
    "checkpoint", cl::desc("Save the training state to this file at the end "
                           "(and every --save-every steps)"),
    cl::cat(trainCategory));
static cl::opt<int64_t> saveEvery(
    "save-every", cl::init(0),
    cl::desc("Save --checkpoint after every step whose global number is a "
             "multiple of this"),
    cl::cat(trainCategory));
static cl::opt<std::string> resumePath(
    "resume", cl::desc("Load this checkpoint before training; the step "
                       "counter continues from it"),
    cl::cat(trainCategory));

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int fail(const std::string &message) {
  llvm::errs() << "memfit-run: " << message << "\n";
  return 1;
}

std::string grouped(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(i, ",");
  return s;
}

double elementAsDouble(const rt::Tensor &t, int64_t i) {
  switch (t.dtype) {
  case rt::DType::f32:
    return t.as<float>()[i];
  case rt::DType::f64:
    return t.as<double>()[i];
  case rt::DType::i64:
    return static_cast<double>(t.as<int64_t>()[i]);
  case rt::DType::i32:
    return t.as<int32_t>()[i];
  case rt::DType::i8:
    return t.as<int8_t>()[i];
  case rt::DType::u8:
  case rt::DType::i1:
    return t.as<uint8_t>()[i];
  case rt::DType::f16:
  case rt::DType::bf16:
    return NAN; // summaries of half types are not printed element-wise
  }
  return NAN;
}

void printSummary(llvm::raw_ostream &os, const std::string &name,
                  const rt::Tensor &t) {
  int64_t n = t.numElements();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nonFinite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = elementAsDouble(t, i);
    if (!std::isfinite(v)) {
      ++nonFinite;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  os << llvm::formatv("  {0}: {1}", name, rt::describe(t.dtype, t.shape));
  if (n > nonFinite)
    os << llvm::formatv("  min {0:g} max {1:g} mean {2:g}", lo, hi,
                        sum / (n - nonFinite));
  if (nonFinite)
    os << "  non-finite " << nonFinite;
  os << "\n    [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
    os << (i ? ", " : "") << llvm::formatv("{0:g}", elementAsDouble(t, i));
  os << (n > 6 ? ", ...]\n" : "]\n");
}

std::string fileNameFor(const std::string &tensorName) {
  std::string name = tensorName;
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' &&
        c != '.')
      c = '_';
  return name;
}

void printPlan(llvm::raw_ostream &os, const rt::Manifest &m) {
  os << llvm::formatv("memory plan: {0} bytes in one allocation (weights "
                      "{1}, arena peak {2})\n",
                      grouped(m.totalBytes()), grouped(m.weightsBytes),
                      grouped(m.arenaBytes));
  os << "  by category (each buffer counted once; arena buffers share space):\n";
  for (const rt::MemoryCategory &c : m.memory)
    if (c.name != "weights region" && c.name != "arena peak")
      os << llvm::formatv("    {0,-22} {1,14} bytes\n", c.name, grouped(c.bytes));
}

/// Text of --help: what the modes do and the exact data scheme, which a
/// PyTorch reference script mirrors.
const char *kOverview = R"(memfit-run: compile a model and run its forward pass, its gradients, or
train it

  memfit-run MODEL [--input-shape=...]                 forward pass
  memfit-run MODEL --gradients --loss=...              loss and grad.<param>
  memfit-run MODEL --train --loss=... [--corpus=...]   training

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
(s*k + j) mod count; the rest of its shape is the input's. --input=NAME=FILE
gives one tensor used for every micro-batch. Other inputs are random
(--seed, --int-high), different for every micro-batch.

Learning rate of step s: peak * (s+1)/W during the first W = --warmup steps,
then constant, or with p = (s - W)/(D - W) clamped to [0, 1] and D =
--decay-steps (default: the last step of the run), cosine: min + (peak -
min)(1 + cos(pi p))/2, linear: peak + (min - peak) p.

Progress: one line per step on stdout ("step 12/200 loss 3.452110 lr
1.000e-03 15.2 ms"; steps are global, counter + 1), or a progress bar when
stderr is a terminal. --losses=FILE writes the same losses as CSV.
)";

/// Warns about compile-time flags that an executable directory ignores.
void warnIgnoredCompileFlags() {
  cl::Option *const compileFlags[] = {
      &inputShapes, &optimizer, &beta1,    &beta2,      &eps,
      &weightDecay, &momentum,  &nesterov, &clipNorm,   &lossKind,
      &ignoreIndex, std::addressof(trainablePatterns),    std::addressof(frozenPatterns)};
  for (cl::Option *option : compileFlags)
    if (option->getNumOccurrences())
      llvm::errs() << "memfit-run: warning: --" << option->ArgStr
                   << " is ignored: the executable is compiled already\n";
}

/// The training options the flags give; nothing when --budget does not
/// parse.
std::optional<memfit::TrainOptions> trainOptionsFromFlags() {
  memfit::TrainOptions t;
  t.loss = lossKind;
  if (ignoreIndex.getNumOccurrences())
    t.ignoreIndex = ignoreIndex;
  t.trainable.assign(trainablePatterns.begin(), trainablePatterns.end());
  t.frozen.assign(frozenPatterns.begin(), frozenPatterns.end());
  t.optimizer = gradients ? "none" : optimizer.getValue();
  if (beta1.getNumOccurrences())
    t.beta1 = beta1;
  if (beta2.getNumOccurrences())
    t.beta2 = beta2;
  if (eps.getNumOccurrences())
    t.eps = eps;
  if (weightDecay.getNumOccurrences())
    t.weightDecay = weightDecay;
  if (momentum.getNumOccurrences())
    t.momentum = momentum;
  t.nesterov = nesterov;
  if (clipNorm.getNumOccurrences())
    t.clipNorm = clipNorm;
  t.accumulate = gradients ? 1 : accumulate.getValue();
  t.remat = rematPolicy;
  if (budgetFlag.getNumOccurrences()) {
    std::optional<int64_t> bytes = memfit::parseBytes(budgetFlag);
    if (!bytes || *bytes <= 0)
      return std::nullopt;
    t.budget = *bytes;
  }
  t.activationFraction = activationFractionFlag;
  if (rematReport.getNumOccurrences())
    t.rematReport = rematReport.empty() ? "-" : rematReport.getValue();
  t.timeline = timelinePath;
  t.timelineData = timelineDataPath;
  return t;
}

/// Flags that only make sense with --train; an error names the first one
/// given without it.
std::optional<std::string> trainOnlyFlagWithoutTrain() {
  cl::Option *const runFlags[] = {
      &steps,      &learningRateFlag, &lrSchedule, &warmup,
      &decaySteps, &minLr,            &accumulate, &corpus,
      std::addressof(dataFiles),  &lossesPath,       &checkpointPath, &saveEvery,
      &resumePath};
  for (cl::Option *option : runFlags)
    if (option->getNumOccurrences())
      return option->ArgStr.str();
  cl::Option *const optimizerFlags[] = {&optimizer,   &beta1,    &beta2,
                                        &eps,         &weightDecay,
                                        &momentum,    &nesterov, &clipNorm};
  for (cl::Option *option : optimizerFlags)
    if (option->getNumOccurrences() && !gradients)
      return option->ArgStr.str();
  return std::nullopt;
}

/// The character-level encoding of --corpus; errors name the file, line
/// and column.
rt::StatusOr<std::vector<int64_t>> readCorpus(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return rt::invalidArgument("--corpus=" + path + ": " +
                               buffer.getError().message());
  llvm::StringRef text = (*buffer)->getBuffer();
  std::vector<int64_t> tokens;
  tokens.reserve(text.size());
  size_t line = 1, column = 1;
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      tokens.push_back(0);
      ++line;
      column = 1;
      continue;
    }
    if (c < ' ' || c > '~')
      return rt::invalidArgument(llvm::formatv(
          "{0}:{1}:{2}: byte 0x{3:x-2} is not in the character vocabulary "
          "('\\n' and ' '..'~')", path, line, column, unsigned(c)).str());
    tokens.push_back(int64_t(c) - 31);
    ++column;
  }
  return tokens;
}

/// Writes `text` to `path` through a temporary renamed into place.
rt::Status writeTextAtomic(const std::string &path, const std::string &text) {
  std::string temporary =
      path + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(temporary, ec);
    if (ec)
      return rt::invalidArgument(path + ": cannot create " + temporary + ": " +
                                 ec.message());
    out << text;
    out.close();
    if (out.has_error()) {
      llvm::sys::fs::remove(temporary);
      return rt::invalidArgument(path + ": cannot write: " +
                                 out.error().message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return rt::invalidArgument(path + ": cannot rename " + temporary +
                               " into place: " + ec.message());
  }
  return rt::Status::ok();
}

/// Where each input of a micro-batch comes from.
class TrainingData {
public:
  /// Checks the sources against the training step's inputs.
  rt::Status init(const rt::Manifest &m,
                  const std::vector<rt::Binding> &inputs,
                  const std::map<std::string, std::string> &fixedPaths,
                  const std::map<std::string, std::string> &dataPaths,
                  int64_t k, llvm::raw_ostream &os);
  /// Micro-batch j of optimizer step s (0-based).
  rt::StatusOr<rt::MicroBatch> batch(int64_t s, int64_t j) const;

private:
  struct Input {
    std::string name;
    const rt::Buffer *buffer = nullptr;
    enum { Random, Fixed, Data, Tokens, Labels } source = Random;
    rt::Tensor tensor; // Fixed: the tensor; Data: all micro-batches
    int64_t count = 0; // Data: micro-batches in `tensor`
    uint64_t seed = 0;
  };
  std::vector<Input> inputs_;
  std::vector<int64_t> tokens_;
  int64_t k_ = 1;
};

std::string bindingList(const rt::Manifest &m,
                        const std::vector<rt::Binding> &inputs) {
  std::string s;
  for (const rt::Binding &b : inputs) {
    const rt::Buffer &buffer = m.buffers[b.buffer];
    s += (s.empty() ? "'" : ", '") + b.name + "' " +
         rt::describe(buffer.dtype, buffer.shape);
  }
  return s.empty() ? "none" : s;
}

rt::Status TrainingData::init(const rt::Manifest &m,
                              const std::vector<rt::Binding> &inputs,
                              const std::map<std::string, std::string> &fixed,
                              const std::map<std::string, std::string> &data,
                              int64_t k, llvm::raw_ostream &os) {
  k_ = k;
  for (const auto *paths : {&fixed, &data})
    for (const auto &[name, path] : *paths) {
      bool known = false;
      for (const rt::Binding &b : inputs)
        known |= b.name == name;
      if (!known)
        return rt::invalidArgument(
            std::string(paths == &fixed ? "--input=" : "--data=") + name +
            "=" + path + ": the training step has no input named '" + name +
            "' (inputs: " + bindingList(m, inputs) + ")");
      if (paths == &data && fixed.count(name))
        return rt::invalidArgument("--data=" + name + " and --input=" + name +
                                   ": give one of them");
    }
  for (auto [i, b] : llvm::enumerate(inputs)) {
    Input input;
    input.name = b.name;
    input.buffer = &m.buffers[b.buffer];
    input.seed = seed + i;
    const rt::Buffer &buffer = *input.buffer;
    if (auto it = fixed.find(b.name); it != fixed.end()) {
      auto read = rt::readNpy(it->second);
      if (!read)
        return read.status().withContext("--input=" + b.name);
      if (read->dtype != buffer.dtype || read->shape != buffer.shape)
        return rt::invalidArgument(
            "--input=" + b.name + "=" + it->second + ": expected " +
            rt::describe(buffer.dtype, buffer.shape) + ", got " +
            rt::describe(read->dtype, read->shape));
      input.source = Input::Fixed;
      input.tensor = std::move(*read);
    } else if (auto it = data.find(b.name); it != data.end()) {
      auto read = rt::readNpy(it->second);
      if (!read)
        return read.status().withContext("--data=" + b.name);
      std::vector<int64_t> rest;
      if (!read->shape.empty())
        rest.assign(read->shape.begin() + 1, read->shape.end());
      if (read->dtype != buffer.dtype || read->shape.empty() ||
          read->shape[0] < 1 || rest != buffer.shape)
        return rt::invalidArgument(
            "--data=" + b.name + "=" + it->second + ": expected " +
            rt::describe(buffer.dtype, buffer.shape) +
            " micro-batches along a first dimension (Nx" +
            rt::describe(buffer.dtype, buffer.shape) + "), got " +
            rt::describe(read->dtype, read->shape));
      input.source = Input::Data;
      input.count = read->shape[0];
      input.tensor = std::move(*read);
    }
    inputs_.push_back(std::move(input));
  }

  if (!corpus.empty()) {
    // The tokens go to the one int64 input of rank 2 not given otherwise,
    // the next ones to 'labels'.
    Input *tokenInput = nullptr, *labels = nullptr;
    std::string candidates;
    for (Input &input : inputs_) {
      if (input.source != Input::Random)
        continue;
      if (input.name == "labels") {
        labels = &input;
        continue;
      }
      if (input.buffer->dtype != rt::DType::i64 ||
          input.buffer->shape.size() != 2)
        continue;
      candidates += (candidates.empty() ? "'" : ", '") + input.name + "'";
      if (tokenInput)
        return rt::invalidArgument(
            "--corpus: the model has several int64 inputs of shape [B, T] (" +
            candidates + "): give all but the tokens with --data or --input");
      tokenInput = &input;
    }
    if (!tokenInput)
      return rt::invalidArgument(
          "--corpus: the model has no int64 input of shape [B, T] for the "
          "tokens (inputs of the training step: " +
          bindingList(m, inputs) + ")");
    if (!labels)
      return rt::invalidArgument(
          "--corpus: the training step has no 'labels' input (train with "
          "--loss=cross-entropy)");
    if (labels->buffer->dtype != rt::DType::i64 ||
        labels->buffer->shape != tokenInput->buffer->shape)
      return rt::invalidArgument(
          "--corpus: 'labels' is " +
          rt::describe(labels->buffer->dtype, labels->buffer->shape) +
          ", expected the shape of '" + tokenInput->name + "' (" +
          rt::describe(tokenInput->buffer->dtype, tokenInput->buffer->shape) +
          ")");
    auto tokens = readCorpus(corpus);
    if (!tokens)
      return tokens.status();
    tokens_ = std::move(*tokens);
    int64_t T = tokenInput->buffer->shape[1];
    if (int64_t(tokens_.size()) <= T + 1)
      return rt::invalidArgument(
          llvm::formatv("--corpus={0}: {1} tokens, but sequences of {2} need "
                        "more than {3}",
                        corpus, tokens_.size(), T, T + 1)
              .str());
    tokenInput->source = Input::Tokens;
    labels->source = Input::Labels;
  }
  for (const Input &input : inputs_) {
    const char *origin[] = {"random", "fixed, ", "micro-batches of ",
                            "tokens of ", "next tokens of "};
    std::string from = origin[input.source];
    if (input.source == Input::Fixed)
      from += fixed.at(input.name);
    else if (input.source == Input::Data)
      from += data.at(input.name) + " (" + std::to_string(input.count) + ")";
    else if (input.source != Input::Random)
      from += corpus + " (" + std::to_string(tokens_.size()) + " tokens)";
    os << "input " << input.name << ": "
       << rt::describe(input.buffer->dtype, input.buffer->shape) << " ("
       << from << ")\n";
  }
  return rt::Status::ok();
}

rt::StatusOr<rt::MicroBatch> TrainingData::batch(int64_t s, int64_t j) const {
  rt::MicroBatch batch;
  uint64_t micro = uint64_t(s) * uint64_t(k_) + uint64_t(j);
  for (const Input &input : inputs_) {
    const rt::Buffer &buffer = *input.buffer;
    rt::Tensor t = rt::Tensor::zeros(buffer.dtype, buffer.shape);
    switch (input.source) {
    case Input::Random:
      rt::fillRandom(t, input.seed + micro * 1000003ull, intHigh);
      break;
    case Input::Fixed:
      t = input.tensor;
      break;
    case Input::Data: {
      uint64_t index = micro % uint64_t(input.count);
      std::copy_n(input.tensor.data.begin() + index * buffer.bytes,
                  buffer.bytes, t.data.begin());
      break;
    }
    case Input::Tokens:
    case Input::Labels: {
      uint64_t B = uint64_t(buffer.shape[0]), T = uint64_t(buffer.shape[1]);
      uint64_t N = tokens_.size();
      uint64_t shift = input.source == Input::Labels ? 1 : 0;
      for (uint64_t r = 0; r < B; ++r) {
        uint64_t idx = micro * B + r;
        uint64_t offset = (idx * T) % (N - T - 1);
        std::copy_n(tokens_.begin() + offset + shift, T,
                    t.as<int64_t>() + r * T);
      }
      break;
    }
    }
    batch.emplace(input.name, std::move(t));
  }
  return batch;
}

std::string formatDuration(double seconds) {
  long long s = std::llround(seconds);
  char text[48];
  if (s >= 3600)
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", s / 3600,
                  (s / 60) % 60, s % 60);
  else
    std::snprintf(text, sizeof(text), "%lld:%02lld", s / 60, s % 60);
  return text;
}

/// The training loop: --resume, steps, progress, --losses, --checkpoint.
int trainSession(rt::Session &session, int64_t k,
                 const std::map<std::string, std::string> &fixedPaths,
                 const std::map<std::string, std::string> &dataPaths,
                 llvm::raw_ostream &os) {
  auto trainer = rt::Trainer::create(session, k);
  if (!trainer)
    return fail("--train: " + trainer.status().message());
  if (!resumePath.empty()) {
    rt::Status loaded = session.loadCheckpoint(resumePath);
    if (!loaded.isOk())
      return fail(loaded.message());
  }
  auto counter = trainer->stepCount();
  if (!counter)
    return fail(counter.status().message());
  int64_t start = *counter, end = start + steps;
  if (!resumePath.empty())
    os << "resumed from " << resumePath << " at step " << start << "\n";

  auto scheduleKind = rt::parseLrScheduleKind(lrSchedule);
  if (!scheduleKind)
    return fail("--lr-schedule: " + scheduleKind.status().message());
  rt::LrSchedule schedule;
  schedule.kind = *scheduleKind;
  schedule.peak = float(learningRateFlag);
  schedule.minimum = float(minLr);
  schedule.warmupSteps = warmup;
  schedule.decaySteps = decaySteps ? int64_t(decaySteps) : end;

  TrainingData data;
  rt::Status ready = data.init(session.manifest(), trainer->batchInputs(),
                               fixedPaths, dataPaths, k, os);
  if (!ready.isOk())
    return fail(ready.message());
  char peak[32];
  std::snprintf(peak, sizeof(peak), "%.3e", double(schedule.peak));
  os << llvm::formatv("training: steps {0} to {1}, {2} micro-batch{3} per "
                      "step, {4} learning rate {5}\n",
                      start + 1, end, k, k == 1 ? "" : "es", lrSchedule, peak);

  bool bar = !quiet && ::isatty(STDERR_FILENO);
  std::string losses = "step,loss\n";
  auto saveState = [&](int64_t global) -> rt::Status {
    if (!checkpointPath.empty()) {
      MEMFIT_RT_RETURN_IF_ERROR(session.saveCheckpoint(checkpointPath));
      if (!bar)
        os << "saved checkpoint " << checkpointPath << " at step " << global
           << "\n";
    }
    if (!lossesPath.empty())
      MEMFIT_RT_RETURN_IF_ERROR(writeTextAtomic(lossesPath, losses));
    return rt::Status::ok();
  };

  auto trainStart = Clock::now();
  float last = NAN;
  for (int64_t s = start; s < end; ++s) {
    std::vector<rt::MicroBatch> batches;
    for (int64_t j = 0; j < k; ++j) {
      auto batch = data.batch(s, j);
      if (!batch)
        return fail(batch.status().message());
      batches.push_back(std::move(*batch));
    }
    float lr = rt::learningRate(schedule, s);
    auto stepStart = Clock::now();
    auto loss = trainer->step(batches, lr);
    if (!loss) {
      if (bar)
        llvm::errs() << "\n";
      return fail(llvm::formatv("step {0}: {1}", s + 1,
                                loss.status().message())
                      .str());
    }
    double ms = secondsSince(stepStart) * 1e3;
    last = *loss;
    int64_t global = s + 1;
    char text[64];
    std::snprintf(text, sizeof(text), "%.9g", double(last));
    losses += std::to_string(global) + "," + text + "\n";
    if (bar) {
      double done = double(global - start) / double(end - start);
      double eta = secondsSince(trainStart) / double(global - start) *
                   double(end - global);
      int width = 24, filled = int(done * width);
      llvm::errs() << llvm::formatv(
          "\r[{0}{1}] step {2}/{3} loss {4:f6} lr {5:e} {6:f1} ms/step ETA "
          "{7}   ",
          std::string(filled, '#'), std::string(width - filled, '.'), global,
          end, double(last), double(lr), ms, formatDuration(eta));
      if (global == end)
        llvm::errs() << "\n";
    } else {
      std::snprintf(text, sizeof(text), "%.3e", double(lr));
      os << llvm::formatv("step {0}/{1} loss {2:f6} lr {3} {4:f1} ms\n",
                          global, end, double(last), text, ms);
    }
    if (saveEvery > 0 && global % saveEvery == 0 && global != end) {
      rt::Status saved = saveState(global);
      if (!saved.isOk())
        return fail(saved.message());
    }
  }
  os.flush();
  double total = secondsSince(trainStart);
  auto finalCount = trainer->stepCount();
  if (!finalCount)
    return fail(finalCount.status().message());
  if (*finalCount != end)
    llvm::errs() << "memfit-run: warning: the executable's step counter is "
                 << *finalCount << ", expected " << end << "\n";
  rt::Status saved = saveState(end);
  if (!saved.isOk())
    return fail(saved.message());
  if (steps > 0)
    os << llvm::formatv("trained {0} steps in {1:f2} s ({2:f1} ms/step), "
                        "last loss {3:f6}\n",
                        steps.getValue(), total, total * 1e3 / steps, last);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, kOverview);
  llvm::raw_ostream &os = quiet ? llvm::nulls() : llvm::outs();

  // Parse and check the flags before any work, so that a typo fails fast.
  auto parseSpecs = [](const cl::list<std::string> &specs, const char *flag,
                       std::map<std::string, std::string> &out) {
    for (const std::string &spec : specs) {
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        return fail(std::string("--") + flag + "=" + spec +
                    ": expected name=path.npy");
      out[spec.substr(0, eq)] = spec.substr(eq + 1);
    }
    return 0;
  };
  std::map<std::string, std::string> inputPaths, dataPaths;
  if (parseSpecs(inputFiles, "input", inputPaths) ||
      parseSpecs(dataFiles, "data", dataPaths))
    return 1;
  if (device != "auto" && device != "host" && device != "cuda")
    return fail("--device=" + device + ": expected host, cuda or auto");
  if (!archs.empty() && !compileOnly)
    return fail("--arch needs --compile-only");
  if (train && gradients)
    return fail("--train and --gradients: choose one");
  if (!train) {
    if (std::optional<std::string> flag = trainOnlyFlagWithoutTrain())
      return fail("--" + *flag + " needs --train");
    cl::Option *const lossFlags[] = {&lossKind,
                                     &ignoreIndex,
                                     std::addressof(trainablePatterns),
                                     std::addressof(frozenPatterns),
                                     &rematPolicy,
                                     &budgetFlag,
                                     &activationFractionFlag,
                                     &rematReport,
                                     &timelinePath,
                                     &timelineDataPath};
    if (!gradients)
      for (cl::Option *option : lossFlags)
        if (option->getNumOccurrences())
          return fail("--" + option->ArgStr.str() +
                      " needs --train or --gradients");
  }
  if (train) {
    if (optimizer != "adamw" && optimizer != "sgd")
      return fail("--optimizer=" + optimizer + ": expected adamw or sgd");
    if (steps < 0)
      return fail("--steps must not be negative");
    if (accumulate < 1)
      return fail("--accumulate must be at least 1");
    if (warmup < 0 || decaySteps < 0 || saveEvery < 0)
      return fail("--warmup, --decay-steps and --save-every must not be "
                  "negative");
    if (auto kind = rt::parseLrScheduleKind(lrSchedule); !kind)
      return fail("--lr-schedule=" + lrSchedule + ": expected constant, "
                  "cosine or linear");
    if (!(learningRateFlag >= 0) || !(minLr >= 0))
      return fail("--lr and --min-lr must be non-negative numbers");
    if (saveEvery > 0 && checkpointPath.empty() && lossesPath.empty())
      return fail("--save-every needs --checkpoint (or --losses)");
  }
  if ((train || gradients) && lossKind != "output" &&
      lossKind != "cross-entropy" && lossKind != "mse")
    return fail("--loss=" + lossKind +
                ": expected output, cross-entropy or mse");

  // 1. The executable: compiled from a model, or loaded from a directory.
  rt::Executable executable;
  bool loaded = llvm::sys::fs::is_directory(modelPath);
  auto start = Clock::now();
  if (loaded) {
    auto read = rt::loadExecutable(modelPath);
    if (!read)
      return fail(read.status().message());
    executable = std::move(read.value());
    warnIgnoredCompileFlags();
  } else {
    memfit::CompileOptions options;
    options.inputShapes = inputShapes;
    if (train || gradients) {
      options.train = trainOptionsFromFlags();
      if (!options.train)
        return fail("--budget=" + budgetFlag +
                    ": expected a positive size in bytes, or with a unit "
                    "(512MiB, 1.5GiB, 800MB)");
    }
    auto compiled = memfit::compileModelFile(modelPath, options);
    if (!compiled)
      return fail(compiled.status().message());
    executable = std::move(compiled.value());
  }
  const rt::Manifest &manifest = executable.manifest;
  size_t stepCount = 0;
  std::string entryList;
  for (const rt::Entry &entry : manifest.entries) {
    stepCount += entry.steps.size();
    entryList += llvm::formatv("{0}{1} ({2} steps)", entryList.empty() ? "" : ", ",
                               entry.name, entry.steps.size())
                     .str();
  }
  os << llvm::formatv("compiled {0}: {1} kernels, {2} contractions, {3} steps "
                      "in {4:f1} ms\n",
                      llvm::sys::path::filename(modelPath),
                      manifest.kernels.size(), manifest.contractions.size(),
                      stepCount, secondsSince(start) * 1e3);
  if (manifest.entries.size() != 1 || manifest.entries[0].name != "main")
    os << "entries: " << entryList << "\n";
  printPlan(os, manifest);
  if (memoryReport)
    llvm::outs() << rt::formatMemoryReport(manifest);

  // What the executable is, against what was asked.
  bool isTraining = manifest.findEntry("train_step") ||
                    (manifest.findEntry("accumulate") &&
                     manifest.findEntry("apply"));
  int64_t k = accumulate;
  if (train && loaded && isTraining) {
    // The manifest does not record k: it must be given as compiled.
    bool stepEntry = manifest.findEntry("train_step") != nullptr;
    if (stepEntry && k != 1)
      return fail(llvm::formatv("--accumulate={0}: {1} has a 'train_step' "
                                "entry (one micro-batch per step)",
                                k, modelPath.getValue())
                      .str());
    if (!stepEntry && !accumulate.getNumOccurrences())
      return fail(modelPath + " accumulates micro-batches ('accumulate' + "
                              "'apply'): give the --accumulate=k it was "
                              "compiled with");
    if (!stepEntry && k == 1)
      return fail("--accumulate=1: " + modelPath +
                  " has 'accumulate' + 'apply' entries, compiled for k > 1");
  }
  if (train && !isTraining)
    return fail("--train: " + modelPath +
                " is not a training step (entries: " + entryList +
                "); compile the model with --train");
  if (!train && isTraining)
    return fail(modelPath + " is a training step (entries: " + entryList +
                "): run it with --train");
  if (!train && manifest.entries.size() != 1)
    return fail(modelPath + " has several entries (" + entryList +
                "); memfit-run runs one");

  if (!saveDir.empty()) {
    rt::Status saved = rt::saveExecutable(executable, saveDir);
    if (!saved.isOk())
      return fail(saved.message());
    os << "saved executable to " << saveDir << "\n";
  }

  rt::SessionOptions sessionOptions;
  sessionOptions.cacheDir = cacheDir;
  sessionOptions.disableCache = noCache;

  if (compileOnly) {
    // NVRTC through the CUDA backend's kernel cache: compiling ahead of
    // time warms it for later sessions on GPUs of these architectures.
    for (const std::string &arch : archs) {
      auto nvrtcStart = Clock::now();
      bool hit = false;
      auto cubin =
          rt::compileToCubinCached(manifest.source, arch, sessionOptions, &hit);
      if (!cubin)
        return fail(arch + ": " + cubin.status().message());
      os << llvm::formatv("{0}: {1} kernels, {2} bytes of CUBIN {3} in {4:f3} "
                          "s\n",
                          arch, manifest.kernels.size(),
                          grouped(cubin->cubin.size()),
                          hit ? "from the cache" : "compiled",
                          secondsSince(nvrtcStart));
    }
    return 0;
  }
  // 2. The device.
  rt::DeviceKind kind = rt::DeviceKind::Host;
  std::string whyNot;
  if (device == "cuda") {
    if (!rt::cudaUsable(&whyNot))
      return fail("--device=cuda: " + whyNot);
    kind = rt::DeviceKind::Cuda;
  } else if (device == "auto") {
    if (rt::cudaUsable(&whyNot))
      kind = rt::DeviceKind::Cuda;
    else
      os << "no usable GPU (" << whyNot << "); running on the host backend\n";
  }

  auto created = rt::Session::create(executable, kind, sessionOptions);
  if (!created)
    return fail(created.status().message());
  rt::Session &session = *created.value();
  os << "device: " << session.deviceDescription() << "\n";
  const rt::SessionTimings &timings = session.timings();
  os << llvm::formatv("kernels: {0}\n",
                      timings.cacheHit
                          ? std::string("loaded from the cache")
                          : llvm::formatv("compiled in {0:f2} s",
                                          timings.compileSeconds)
                                .str());
  os << llvm::formatv("allocated: {0} bytes (plan: {1})\n",
                      grouped(session.allocatedBytes()),
                      grouped(manifest.totalBytes()));

  if (train)
    return trainSession(session, k, inputPaths, dataPaths, os);

  // 3. Inputs of the one entry (the forward pass, or loss and gradients).
  const rt::Entry &entry = manifest.entries.front();
  for (const auto &[name, path] : inputPaths) {
    bool known = false;
    for (const rt::Binding &input : entry.inputs)
      known |= input.name == name;
    if (!known)
      return fail("--input=" + name + "=" + path +
                  ": the model has no input named '" + name + "'");
  }
  for (auto [i, input] : llvm::enumerate(entry.inputs)) {
    const rt::Buffer &buffer = manifest.buffers[input.buffer];
    rt::Tensor tensor;
    std::string origin;
    if (auto it = inputPaths.find(input.name); it != inputPaths.end()) {
      auto read = rt::readNpy(it->second);
      if (!read)
        return fail(read.status().message());
      tensor = std::move(read.value());
      origin = it->second;
    } else {
      tensor = rt::Tensor::zeros(buffer.dtype, buffer.shape);
      rt::fillRandom(tensor, seed + i, intHigh);
      origin = "random";
    }
    rt::Status set = session.setInput(input.name, tensor);
    if (!set.isOk())
      return fail(set.message());
    os << "input " << input.name << ": "
       << rt::describe(tensor.dtype, tensor.shape) << " (" << origin << ")\n";
  }

  // 4. Run.
  double best = INFINITY;
  for (unsigned r = 0; r < std::max(1u, unsigned(repeat)); ++r) {
    rt::Status ran = session.run(entry.name);
    if (!ran.isOk())
      return fail(ran.message());
    best = std::min(best, session.timings().runSeconds);
  }
  os << llvm::formatv("{0}: {1:f3} ms{2}\n",
                      gradients ? "loss and gradients" : "forward pass",
                      best * 1e3,
                      repeat > 1 ? llvm::formatv(" (best of {0})",
                                                 repeat.getValue())
                                       .str()
                                 : std::string());

  // 5. Outputs.
  os << "outputs:\n";
  if (!outputDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      return fail("--output-dir=" + outputDir + ": " + ec.message());
  for (const rt::Binding &output : entry.outputs) {
    auto tensor = session.getOutput(output.name);
    if (!tensor)
      return fail(tensor.status().message());
    printSummary(os, output.name, tensor.value());
    if (!outputDir.empty()) {
      llvm::SmallString<256> path(outputDir);
      llvm::sys::path::append(path, fileNameFor(output.name) + ".npy");
      rt::Status written = rt::writeNpy(std::string(path), tensor.value());
      if (!written.isOk())
        return fail(written.message());
    }
  }
  return 0;
}
