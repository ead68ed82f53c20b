//===- memfit-run.cpp - compile a model and run or train it on a device ---===//
//
// Compiles the model (or loads an executable directory written by
// --save-executable), prints the memory plan, and then runs the forward
// pass (or, with --gradients, the loss and its gradients) on the chosen
// device with inputs from .npy files or random ones and prints a summary of
// every output, or trains it (--train) with data from a text corpus, .npy
// files or random inputs, with checkpoints. The flags and their translation
// into options are the driver's (memfit/Frontend/RunFlags.h), the work the
// compiler's (compileModelFile), the runtime's (Session, Trainer,
// TrainingData, runTraining, Summary.h) and the driver's trained-weight
// files (TrainedWeights.h); this file is the order they run in and what
// the tool prints.
//
// While it trains, SIGINT and SIGTERM stop the run between steps: the step
// in progress finishes, the checkpoint is written, and the tool says how to
// resume and exits with 128 + the signal's number (130, 143), as a shell
// reports a process the signal killed. A second signal exits at once (the
// checkpoint on disk is the last complete one: saves are atomic).
//
//===----------------------------------------------------------------------===//

#include "memfit/Frontend/RunFlags.h"
#include "memfit/Frontend/TrainedWeights.h"
#include "memfit/JIT/Compiler.h"
#include "memfit/runtime/Bytes.h"
#include "memfit/runtime/Checkpoint.h"
#include "memfit/runtime/Communicator.h"
#include "memfit/runtime/Nvrtc.h"
#include "memfit/runtime/Roofline.h"
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
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <signal.h>
#include <unistd.h>

namespace cl = llvm::cl;
namespace rt = memfit::rt;
using memfit::frontend::RunFlags;

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

/// The command line, constructed in main before it is parsed.
RunFlags *theFlags = nullptr;
const RunFlags &flags() { return *theFlags; }

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The ranks of a data-parallel launch (mpirun -np N): this process's place
/// and the communicator of its collectives (null for one rank).
struct Ranks {
  rt::LaunchInfo launch;
  std::shared_ptr<rt::Communicator> comm;
  bool many() const { return comm && comm->size() > 1; }
};
Ranks &ranks() {
  static Ranks r;
  return r;
}

/// Prints an error line (with the rank when there are several).
void printError(const std::string &message) {
  std::cout.flush();
  std::cerr << "memfit-run: "
            << (ranks().many()
                    ? "rank " + std::to_string(ranks().launch.rank) + ": "
                    : std::string())
            << message << "\n";
}

int fail(const std::string &message) {
  printError(message);
  // The other ranks would wait for this one in their next collective.
  if (ranks().many())
    ranks().comm->abort(1);
  return 1;
}

/// Where progress goes: stdout on rank 0, nowhere with --quiet or on the
/// other ranks.
std::ostream &out() {
  static std::ostream silent(nullptr);
  return flags().quiet || ranks().launch.rank != 0 ? silent : std::cout;
}

void warn(const std::string &message) {
  std::cerr << "memfit-run: warning: " << message << "\n";
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

/// Where the time before the first step went (--timings).
struct RunTimings {
  memfit::CompileTimings compile;
  bool compiled = false; // else loaded from a directory
  double loadSeconds = 0;
  double sessionSeconds = 0; // Session::create, its kernels' compile included
  bool cuda = false;
  double kernelSeconds = 0; // the host compiler or NVRTC
  bool cacheHit = false;
  double firstStepSeconds = 0;
};

RunTimings &runTimings() {
  static RunTimings timings;
  return timings;
}

/// "timings: import 0.21 s, passes 0.40 s, ..." (or "executable from the
/// cache in 0.05 s, ...")
std::string formatTimings(const RunTimings &t) {
  std::string s = "timings: ";
  if (t.compiled && t.compile.cacheHit)
    s += llvm::formatv("executable from the cache in {0:f2} s",
                       t.compile.cache)
             .str();
  else if (t.compiled)
    s += llvm::formatv("import {0:f2} s, passes {1:f2} s, emission {2:f2} s, "
                       "executable cache {3:f2} s",
                       t.compile.import, t.compile.passes, t.compile.emission,
                       t.compile.cache)
             .str();
  else
    s += llvm::formatv("executable loaded in {0:f2} s", t.loadSeconds).str();
  s += llvm::formatv(", {0} {1:f2} s{2}, session {3:f2} s, first step {4:f2} s",
                     t.cuda ? "NVRTC" : "host compile", t.kernelSeconds,
                     t.cacheHit ? " (cached)" : "",
                     t.sessionSeconds - t.kernelSeconds, t.firstStepSeconds)
           .str();
  return s + "\n";
}

/// The executable: compiled from the model, or loaded from a directory.
rt::StatusOr<rt::Executable> loadOrCompile(bool loaded) {
  const RunFlags &f = flags();
  if (loaded) {
    auto start = std::chrono::steady_clock::now();
    auto executable = rt::loadExecutable(f.modelPath);
    runTimings().loadSeconds = std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
    if (executable)
      for (const std::string &flag : f.ignoredCompileFlags())
        warn(flag + " is ignored: the executable is compiled already");
    return executable;
  }
  auto options = f.compileOptions();
  if (!options)
    return options.status();
  if (f.printPipeline) {
    auto pipeline = memfit::pipelineArgument(*options);
    if (!pipeline)
      return pipeline.status();
    std::string values;
    for (const std::string &value : f.inputValues)
      values += " " + shellWord("--input-value=" + value);
    std::cout << "pipeline: memfit-opt " << shellWord(f.modelPath.getValue())
              << (f.planOnly ? " --without-weights" : "")
              << (f.inputShapes.empty()
                      ? std::string()
                      : " " + shellWord("--input-shape=" +
                                        f.inputShapes.getValue()))
              << values << " " << shellWord(*pipeline) << std::endl;
  }
  // The compiler's passes write their reports (--remat-report=-) through
  // LLVM's stdout stream: keep them in order with this tool's lines.
  std::cout.flush();
  options->timings = &runTimings().compile;
  runTimings().compiled = true;
  auto compiled = memfit::compileModelFile(f.modelPath, *options);
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
  const RunFlags &f = flags();
  size_t stepCount = 0, epilogues = 0;
  for (const rt::Entry &entry : manifest.entries)
    stepCount += entry.steps.size();
  size_t fallbacks = 0;
  for (const rt::Contraction &c : manifest.contractions) {
    epilogues += c.epilogue != rt::Epilogue::None;
    fallbacks += (c.fallbackKernel != rt::kNoKernel) +
                 (c.activationKernel != rt::kNoKernel);
  }
  // A contraction's epilogue replaces kernels, which stay in the source as
  // its fallbacks where cuBLASLt has no algorithm for it.
  std::string withEpilogues =
      epilogues ? llvm::formatv(" ({0} with an epilogue; {1} kernels with "
                                "their fallbacks)",
                                epilogues, manifest.kernels.size())
                      .str()
                : std::string();
  // Data parallel: the exchanges between ranks (memfit-shard's buckets).
  std::string collectives =
      manifest.collectives.empty()
          ? std::string()
          : llvm::formatv(", {0} collectives", manifest.collectives.size())
                .str();
  out() << llvm::formatv("compiled {0}: {1} kernels, {2} contractions{3}{4}, "
                         "{5} steps in {6:f1} ms\n",
                         llvm::sys::path::filename(f.modelPath),
                         manifest.kernels.size() - fallbacks,
                         manifest.contractions.size(), withEpilogues,
                         collectives, stepCount, seconds * 1e3)
               .str();
  if (manifest.entries.size() != 1 || manifest.entries[0].name != "main")
    out() << "entries: " << entryList(manifest) << "\n";
  out() << rt::formatPlanSummary(manifest);
  if (f.memoryReport || f.planOnly)
    std::cout << rt::formatMemoryReport(manifest);
}

/// What the executable is, against what was asked; --accumulate against a
/// saved training step (the manifest does not record k).
std::optional<std::string> checkMode(const rt::Manifest &manifest,
                                     bool loaded) {
  const RunFlags &f = flags();
  bool stepEntry = manifest.findEntry("train_step") != nullptr;
  bool isTraining = stepEntry || (manifest.findEntry("accumulate") &&
                                  manifest.findEntry("apply"));
  if (f.train && loaded && isTraining) {
    if (stepEntry && f.accumulate != 1)
      return llvm::formatv("--accumulate={0}: {1} has a 'train_step' entry "
                           "(one micro-batch per step)",
                           f.accumulate.getValue(), f.modelPath.getValue())
          .str();
    if (!stepEntry && !f.accumulate.getNumOccurrences())
      return f.modelPath + " accumulates micro-batches ('accumulate' + "
                         "'apply'): give the --accumulate=k it was "
                         "compiled with";
    if (!stepEntry && f.accumulate == 1)
      return "--accumulate=1: " + f.modelPath +
             " has 'accumulate' + 'apply' entries, compiled for k > 1";
  }
  if (f.train && !isTraining)
    return "--train: " + f.modelPath +
           " is not a training step (entries: " + entryList(manifest) +
           "); compile the model with --train";
  if (!f.train && isTraining)
    return f.modelPath + " is a training step (entries: " + entryList(manifest) +
           "): run it with --train";
  if (!f.train && manifest.entries.size() != 1)
    return f.modelPath + " has several entries (" + entryList(manifest) +
           "); memfit-run runs one";
  return std::nullopt;
}

rt::SessionOptions sessionOptions() {
  rt::SessionOptions options = flags().sessionOptions();
  options.warn = warn;
  options.communicator = ranks().comm;
  // Each rank of a node takes its own GPU, as torchrun and mpirun number
  // them (modulo the devices it sees: one, under per-rank binding).
  if (ranks().many()) {
    options.cudaDevice = ranks().launch.localRank;
    options.cudaDeviceByRank = true;
  }
  // A compile that takes more than two seconds says how it goes, on a
  // terminal.
  if (!flags().quiet && ::isatty(STDERR_FILENO))
    options.progress = [](const std::string &line) {
      std::cerr << "memfit-run: " << line << "\n";
    };
  return options;
}

/// NVRTC through the CUDA backend's kernel cache: compiling ahead of time
/// warms it for later sessions on GPUs of these architectures.
int compileAhead(const rt::Manifest &manifest) {
  const RunFlags &f = flags();
  for (const std::string &arch : f.archs) {
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
  const RunFlags &f = flags();
  rt::DeviceKind kind = rt::DeviceKind::Host;
  std::string whyNot;
  if (f.device == "cuda") {
    if (!rt::cudaUsable(&whyNot))
      return rt::unavailable("--device=cuda: " + whyNot);
    kind = rt::DeviceKind::Cuda;
  } else if (f.device == "auto") {
    if (rt::cudaUsable(&whyNot))
      kind = rt::DeviceKind::Cuda;
    else
      out() << "no usable GPU (" << whyNot
            << "); running on the host backend\n";
  }
  auto start = std::chrono::steady_clock::now();
  auto session = rt::Session::create(executable, kind, sessionOptions());
  if (!session)
    return session;
  const rt::SessionTimings &timings = (*session)->timings();
  RunTimings &t = runTimings();
  t.sessionSeconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  t.cuda = kind == rt::DeviceKind::Cuda;
  t.kernelSeconds = timings.compileSeconds;
  t.cacheHit = timings.cacheHit;
  out() << "device: " << (*session)->deviceDescription() << "\n"
        << "kernels: "
        << (timings.cacheHit
                ? std::string("loaded from the cache")
                : llvm::formatv("compiled in {0:f2} s", timings.compileSeconds)
                      .str())
        << "\nallocated: " << memfit::groupDigits((*session)->allocatedBytes())
        << " bytes (plan: "
        << memfit::groupDigits(executable.manifest.totalBytes())
        << ((*session)->allocatedBytes() > executable.manifest.totalBytes()
                ? "; the rest is cuBLASLt's workspace"
                : "")
        << ")\n";
  return session;
}

/// The signal that asked training to stop (0: none); set by onStopSignal.
volatile std::sig_atomic_t stopSignal = 0;

/// SIGINT/SIGTERM during training: the first one asks the loop to stop after
/// the current step; a second one exits now. Only async-signal-safe calls.
extern "C" void onStopSignal(int signo) {
  if (stopSignal) {
    static const char message[] =
        "memfit-run: second signal: exiting now; the checkpoint on disk is "
        "the last complete one\n";
    ssize_t written = ::write(STDERR_FILENO, message, sizeof(message) - 1);
    (void)written;
    ::_exit(128 + signo);
  }
  stopSignal = signo;
}

/// onStopSignal as the handler of SIGINT and SIGTERM while it lives, the
/// previous handlers (LLVM's) again after.
class StopSignals {
public:
  StopSignals() {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int i = 0; i < 2; ++i)
      ::sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~StopSignals() {
    for (int i = 0; i < 2; ++i)
      ::sigaction(kSignals[i], &previous_[i], nullptr);
  }
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;

private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  struct sigaction previous_[2];
};

const char *signalName(int signo) {
  return signo == SIGINT ? "SIGINT" : signo == SIGTERM ? "SIGTERM" : "a signal";
}

/// The run stopped by a signal: where its state is and how to go on.
int reportStop(const rt::TrainingSummary &summary) {
  const RunFlags &f = flags();
  std::string message = std::string("stopped by ") +
                        signalName(summary.stoppedBy) + " after step " +
                        std::to_string(summary.endStep) + " of " +
                        std::to_string(summary.plannedEndStep) + "; ";
  if (f.checkpointPath.empty())
    message += "no --checkpoint was given, so the run cannot be resumed";
  else
    message += "checkpoint in " + f.checkpointPath + "; resume with " +
               shellWord("--resume=" + f.checkpointPath.getValue()) +
               " --steps=" +
               std::to_string(summary.plannedEndStep - summary.endStep) +
               " and the other flags of this run";
  // Every rank stopped after the same step (agreeToStop): not a failure to
  // abort the others for; rank 0 says where the state is.
  if (ranks().launch.rank == 0)
    printError(message);
  return 128 + summary.stoppedBy;
}

/// Resumes each rank from its own file (ZeRO stage 1): the ranks agree on
/// the earliest step their newest files hold, and a rank whose file is a
/// save ahead (a kill landed between two ranks' writes) takes its previous
/// one (`path`.prev), which is of that step.
rt::Status resumeRankFiles(rt::Session &session, rt::Trainer &trainer,
                           const std::string &path) {
  auto stepOf = [&](const std::string &file) -> rt::StatusOr<int64_t> {
    MEMFIT_RT_RETURN_IF_ERROR(session.loadCheckpoint(file));
    return trainer.stepCount();
  };
  std::string previous = path + ".prev";
  bool current = ::access(path.c_str(), F_OK) == 0;
  rt::StatusOr<int64_t> mine = stepOf(current ? path : previous);
  if (!mine)
    return mine.status();
  rt::StatusOr<int64_t> common =
      ranks().comm->reduceScalar(*mine, rt::Collective::Reduction::Min);
  if (!common)
    return common.status();
  int64_t agreed = *common;
  if (*mine != agreed) {
    rt::StatusOr<int64_t> older = stepOf(previous);
    if (!older)
      return older.status();
    if (*older != agreed)
      return rt::invalidArgument(
          "--resume: the ranks' checkpoints are of steps " +
          std::to_string(agreed) + " and " + std::to_string(*mine) + "; " +
          previous + " is of step " + std::to_string(*older) +
          ", not the ranks' common step");
  }
  out() << "resumed every rank's own checkpoint (" << path << ", ...) at step "
        << agreed << "\n";
  return rt::Status::ok();
}

/// --train: the runtime's training loop with the flags' data and schedule,
/// then the exports.
int trainModel(rt::Session &session) {
  const RunFlags &f = flags();
  auto trainer = rt::Trainer::create(session, f.accumulate);
  if (!trainer)
    return fail("--train: " + trainer.status().message());
  // Each rank reads its slice of the global batch.
  rt::TrainingDataOptions data = f.dataOptions();
  data.rank = ranks().launch.rank;
  data.worldSize = ranks().launch.worldSize;
  auto source = rt::TrainingData::create(session.manifest(),
                                         trainer->batchInputs(), data);
  if (!source)
    return fail(source.status().message());

  rt::TrainingLoopOptions loop = f.loopOptions();
  loop.log = &out();
  bool first = ranks().launch.rank == 0;
  if (!f.quiet && first && ::isatty(STDERR_FILENO))
    loop.progressBar = &std::cerr;
  // Under ZeRO stage 0 every rank holds the same weights and states: rank 0
  // writes them. From stage 1 each rank holds its slices of the states and
  // writes (and resumes from) a file of its own beside --checkpoint.
  int64_t world = ranks().launch.worldSize, rank = ranks().launch.rank;
  bool rankFiles = session.manifest().zeroStage >= 1 && world > 1;
  if (!loop.resume.empty()) {
    // A checkpoint of this layout resumes as it was saved; one of another
    // world size (or a plain file on sliced states, or rank files on one
    // process) is put together and cut for this rank.
    rt::StatusOr<std::vector<std::string>> files =
        rt::checkpointFiles(loop.resume);
    if (!files)
      return fail("--resume: " + files.status().message());
    int64_t saved = static_cast<int64_t>(files->size());
    if (rankFiles && saved == world) {
      if (rt::Status resumed = resumeRankFiles(
              session, *trainer,
              rt::rankCheckpointPath(loop.resume, rank, world));
          !resumed)
        return fail(resumed.message());
      loop.resume.clear();
    } else if (rankFiles || saved > 1) {
      rt::StatusOr<std::vector<rt::CheckpointFile>> read =
          rt::readCheckpointFiles(*files);
      rt::StatusOr<rt::CheckpointFile> mine =
          read ? rt::reshardCheckpoint(*read, session.manifest(), rank)
               : read.status();
      if (!mine)
        return fail("--resume: " + mine.status().message());
      if (rt::Status loaded = session.loadCheckpoint(*mine); !loaded)
        return fail(loaded.message());
      rt::StatusOr<int64_t> step = trainer->stepCount();
      if (!step)
        return fail(step.status().message());
      out() << "resumed " << loop.resume << " (saved by " << saved
            << (saved == 1 ? " rank" : " ranks") << ") on " << world
            << (world == 1 ? " rank" : " ranks") << " at step " << *step
            << "\n";
      loop.resume.clear();
    }
  }
  // Every rank has read the checkpoint it resumes before rank 0 writes the
  // index of this run's (which may be the same path).
  if (ranks().many())
    if (rt::Status waited = ranks().comm->barrier(); !waited)
      return fail(waited.message());
  // The index beside --checkpoint names what a resume reads. It changes
  // only once this run's files exist on every rank: until then an earlier
  // run's index and files stay a checkpoint a kill cannot break.
  std::string base = loop.checkpoint;
  bool indexed = false;
  if (rankFiles) {
    if (!base.empty()) {
      loop.checkpoint = rt::rankCheckpointPath(base, rank, world);
      loop.afterSave = [base, world, rank, &indexed](int64_t) -> rt::Status {
        if (indexed)
          return rt::Status::ok();
        MEMFIT_RT_RETURN_IF_ERROR(ranks().comm->barrier());
        if (rank == 0)
          MEMFIT_RT_RETURN_IF_ERROR(rt::writeCheckpointIndex(base, world)
                                        .withContext("--checkpoint"));
        indexed = true;
        return rt::Status::ok();
      };
    }
    loop.keepPrevious = true;
  } else if (!first) {
    loop.checkpoint.clear();
  } else if (!base.empty()) {
    // A plain file from here on: an index of an earlier run's rank files
    // beside it would be taken for this checkpoint.
    loop.afterSave = [base, &indexed](int64_t) -> rt::Status {
      if (!indexed)
        ::unlink((base + ".index").c_str());
      indexed = true;
      return rt::Status::ok();
    };
  }
  if (!first)
    loop.losses.clear();
  // A signal reaches the ranks at slightly different times: they stop
  // after the step the first of them saw it at (the largest signal).
  if (ranks().many())
    loop.agreeToStop = [](int local) -> rt::StatusOr<int> {
      rt::StatusOr<int64_t> largest =
          ranks().comm->reduceScalar(local, rt::Collective::Reduction::Max);
      if (!largest)
        return largest.status();
      return static_cast<int>(*largest);
    };
  loop.warn = warn;
  loop.stop = &stopSignal;
  auto summary = [&] {
    StopSignals handlers;
    return rt::runTraining(session, *trainer, *source, loop);
  }();
  if (!summary)
    return fail(summary.status().message());
  runTimings().firstStepSeconds = summary->firstStepSeconds;
  if (summary->stoppedBy)
    return reportStop(*summary);
  // ZeRO stage 3: each rank holds rows of the parameters; every rank sends
  // its rows so that rank 0 exports whole ones.
  std::map<std::string, rt::Tensor> gathered;
  if (f.exportsWeights() && ranks().many())
    for (const rt::Variable &v : session.variables())
      if (v.wholeRows > 0 && v.kind != rt::VariableKind::WorkingCopy) {
        rt::StatusOr<rt::Tensor> whole =
            rt::gatherWholeVariable(session, *ranks().comm, v.name);
        if (!whole)
          return fail("exporting: " + whole.status().message());
        gathered[v.name] = std::move(*whole);
      }
  if (!first)
    return 0;
  memfit::frontend::ParameterReader read;
  if (!gathered.empty())
    read = [&](const std::string &name) -> rt::StatusOr<rt::Tensor> {
      auto it = gathered.find(name);
      if (it != gathered.end())
        return it->second;
      return session.readVariable(name);
    };
  for (auto [path, adaptersOnly] :
       {std::pair(f.exportAdapters.getValue(), true),
        std::pair(f.exportSafetensors.getValue(), false)}) {
    if (path.empty())
      continue;
    if (rt::Status written =
            memfit::frontend::exportParameters(session, path, adaptersOnly,
                                               read);
        !written)
      return fail(written.message());
    out() << "exported " << (adaptersOnly ? "LoRA adapters" : "parameters")
          << " to " << path << "\n";
  }
  if (!f.exportOnnx.empty()) {
    if (rt::Status written = memfit::frontend::exportModel(
            session, f.modelPath, f.exportOnnx, f.exportExternalData, read);
        !written)
      return fail(written.message());
    out() << "exported the trained model to " << f.exportOnnx << "\n";
  }
  return 0;
}

/// The one entry (the forward pass, or loss and gradients) on --input
/// files or random inputs, --repeat times; a summary of every output.
int runOnce(rt::Session &session) {
  const RunFlags &f = flags();
  const std::map<std::string, std::string> &inputPaths = f.inputPaths;
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
      rt::fillRandom(tensor, f.seed + i, f.intHigh);
    }
    if (rt::Status set = session.setInput(input.name, tensor); !set)
      return fail(set.message());
    out() << "input " << input.name << ": "
          << rt::describe(tensor.dtype, tensor.shape) << " (" << origin
          << ")\n";
  }

  double best = INFINITY;
  for (unsigned r = 0; r < std::max(1u, unsigned(f.repeat)); ++r) {
    if (rt::Status ran = session.run(entry.name); !ran)
      return fail(ran.message());
    if (r == 0)
      runTimings().firstStepSeconds = session.timings().runSeconds;
    best = std::min(best, session.timings().runSeconds);
  }
  out() << llvm::formatv("{0}: {1:f3} ms",
                         f.gradients ? "loss and gradients" : "forward pass",
                         best * 1e3)
               .str()
        << (f.repeat > 1 ? " (best of " + std::to_string(f.repeat) + ")" : "")
        << (session.timings().graphReplayed ? ", replayed as a CUDA graph"
                                            : "")
        << "\noutputs:\n";
  if (!f.outputDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(f.outputDir))
      return fail("--output-dir=" + f.outputDir + ": " + ec.message());
  for (const rt::Binding &output : entry.outputs) {
    auto tensor = session.getOutput(output.name);
    if (!tensor)
      return fail(tensor.status().message());
    out() << rt::formatTensorSummary(output.name, *tensor);
    if (f.outputDir.empty())
      continue;
    llvm::SmallString<256> path(f.outputDir);
    llvm::sys::path::append(path, rt::tensorFileName(output.name) + ".npy");
    if (rt::Status written = rt::writeNpy(std::string(path), *tensor); !written)
      return fail(written.message());
  }
  return 0;
}

/// Joins the launch's ranks: --world-size and the launcher must agree
/// (any --world-size plans with --plan-only); more than one rank opens the
/// MPI communicator. Returns a failed status code, or 0.
int startRanks(RunFlags &runFlags) {
  auto launch = rt::detectLaunch();
  if (!launch)
    return fail(launch.status().message());
  int64_t asked = runFlags.worldSize;
  if (launch->worldSize > 1 && asked && asked != launch->worldSize)
    return fail("--world-size=" + std::to_string(asked) + " but " +
                launch->launcher + " started " +
                std::to_string(launch->worldSize) + " ranks");
  if (launch->worldSize > 1 && !runFlags.train && !runFlags.gradients)
    return fail(launch->launcher + " started " +
                std::to_string(launch->worldSize) +
                " ranks: data parallelism needs --train or --gradients");
  if (launch->worldSize == 1 && asked > 1 && !runFlags.planOnly)
    return fail("--world-size=" + std::to_string(asked) +
                ": launch the ranks with mpirun -np " + std::to_string(asked) +
                " (or plan them with --plan-only)");
  if (!asked)
    runFlags.worldSize = launch->worldSize;
  runFlags.rank = launch->rank;
  ranks().launch = *launch;
  // torchrun's ranks exchange tensors through NCCL: on GPUs only.
  bool onGpu = runFlags.device == "cuda" ||
               (runFlags.device == "auto" && rt::cudaUsable(nullptr));
  if (launch->worldSize > 1 && !runFlags.planOnly &&
      launch->launcher == "torchrun" && !onGpu)
    return fail("torchrun started " + std::to_string(launch->worldSize) +
                " ranks: under torchrun memfit's ranks exchange tensors "
                "through NCCL, on GPUs: add --device=cuda, or launch the host "
                "backend's ranks with mpirun -np " +
                std::to_string(launch->worldSize));
  if (launch->worldSize > 1 && !runFlags.planOnly) {
    auto comm = rt::createCommunicator(*launch);
    if (!comm)
      return fail(comm.status().message());
    ranks().comm = std::move(*comm);
    out() << "data parallel: " << ranks().comm->description()
          << "; the global batch is " << launch->worldSize
          << " times --input-shape\n";
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
  RunFlags runFlags;
  theFlags = &runFlags;
  memfit::tools::showOnlyCategories(runFlags.categories());
  cl::ParseCommandLineOptions(argc, argv, RunFlags::overview());
  const RunFlags &f = runFlags;
  if (std::optional<std::string> problem = runFlags.check())
    return fail(*problem);
  if (int status = startRanks(runFlags))
    return status;

  bool loaded = llvm::sys::fs::is_directory(f.modelPath);
  auto start = Clock::now();
  // Rank 0 compiles first; the others then find the executable in the cache.
  Ranks &r = ranks();
  if (r.many() && r.launch.rank > 0)
    if (rt::Status waited = r.comm->barrier(); !waited)
      return fail(waited.message());
  auto executable = loadOrCompile(loaded);
  if (!executable)
    return fail(executable.status().message());
  if (r.many() && r.launch.rank == 0)
    if (rt::Status waited = r.comm->barrier(); !waited)
      return fail(waited.message());
  const rt::Manifest &manifest = executable->manifest;
  printExecutable(manifest, secondsSince(start));
  if (std::optional<std::string> mismatch = checkMode(manifest, loaded))
    return fail(*mismatch);
  // Before training, not after it.
  if (!f.exportAdapters.empty() && manifest.loraAdapters.empty())
    return fail("--export-adapters=" + f.exportAdapters +
                ": the model has no LoRA adapters (train with --lora-rank)");
  // Exports gather stage 3's rows through the communicator, and under
  // torchrun it carries no tensors.
  if (manifest.zeroStage >= 3 && ranks().many() &&
      ranks().launch.launcher == "torchrun" && f.exportsWeights())
    return fail("--zero=3 under torchrun cannot export the trained weights "
                "(each rank holds rows of them): launch with mpirun, or "
                "write a --checkpoint, resume it in one process and export "
                "there");
  // Asked for, so printed with --quiet too.
  if (!f.predict.empty())
    for (const rt::GpuSpec &gpu : rt::GpuSpec::all())
      if (f.predict == "all" || rt::GpuSpec::find(f.predict) == &gpu)
        std::cout << rt::formatPrediction(manifest, gpu, f.tf32);

  if (f.planOnly) {
    out() << "plan only: "
          << (loaded ? "the executable was not run"
                     : "the weights were not read and nothing was run")
          << "\n";
    return 0;
  }
  if (!f.saveDir.empty()) {
    if (rt::Status saved = rt::saveExecutable(*executable, f.saveDir); !saved)
      return fail(saved.message());
    out() << "saved executable to " << f.saveDir << "\n";
  }
  if (f.compileOnly)
    return compileAhead(manifest);
  auto session = openSession(*executable);
  if (!session)
    return fail(session.status().message());
  if (!f.loadAdapters.empty()) {
    if (rt::Status loaded =
            memfit::frontend::loadParameters(**session, f.loadAdapters);
        !loaded)
      return fail(loaded.message());
    out() << "loaded parameters from " << f.loadAdapters << "\n";
  }
  int status = f.train ? trainModel(**session) : runOnce(**session);
  // Asked for, so printed with --quiet too.
  if (status == 0 && f.profile) {
    std::cout << rt::formatStepProfile(manifest, (*session)->stepProfile());
    // On a GPU of the table, where the time went against where it would go.
    if (const rt::GpuSpec *gpu =
            (*session)->device() == rt::DeviceKind::Cuda
                ? rt::GpuSpec::find((*session)->deviceDescription())
                : nullptr)
      std::cout << rt::formatMeasuredAgainstPredicted(
          manifest, (*session)->stepProfile(), *gpu, f.tf32);
  }
  if (status == 0 && f.timings)
    std::cout << formatTimings(runTimings());
  return status;
}
