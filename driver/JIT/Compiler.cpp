//===- Compiler.cpp - model file to executable -----------------------------===//
//
// The driver of the C++ API: imports the model (ONNX or memfit IR), runs
// the registered pipeline that the options ask for (PipelineOptions.cpp)
// and emits the executable, with every diagnostic collected into the
// returned Status. It sits above everything else of the compiler: the
// importer, the passes and the CUDA target.
//
//===----------------------------------------------------------------------===//

#include "memfit/JIT/Compiler.h"

#include "PipelineOptions.h"

#include "memfit/Import/OnnxImporter.h"
#include "memfit/Target/Cuda/EmitCuda.h"

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/runtime/ExecutableCache.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>
#include <dlfcn.h>
#include <sys/stat.h>

using namespace mlir;
using namespace mlir::memfit;

namespace memfit {

namespace {

/// Collects every diagnostic as "file:line:col: error: message" lines, with
/// notes, so that API callers get them in one Status.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *context)
      : handler(context, [this](Diagnostic &diag) {
          append(diag);
          for (Diagnostic &note : diag.getNotes())
            append(note);
          return success();
        }) {}

  std::string text() const {
    return messages.empty() ? "compilation failed" : messages;
  }

private:
  void append(Diagnostic &diag) {
    if (!messages.empty())
      messages += "\n";
    llvm::raw_string_ostream os(messages);
    os << diag.getLocation() << ": ";
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error:
      os << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      os << "warning: ";
      break;
    case DiagnosticSeverity::Note:
      os << "note: ";
      break;
    case DiagnosticSeverity::Remark:
      os << "remark: ";
      break;
    }
    os << diag.str();
  }

  std::string messages;
  ScopedDiagnosticHandler handler;
};

} // namespace

namespace {

/// The values the function's integer inputs may take where they index
/// something, found on the imported model (before the pipeline wraps ops
/// into kernels): indices of a Gather (token ids: -rows to rows - 1),
/// followed through reshapes, transposes and slices, and labels of a
/// cross-entropy or NLL loss (0 to classes - 1, or its ignore index).
std::vector<rt::InputRange> inputRanges(ModuleOp module) {
  std::vector<rt::InputRange> ranges;
  module.walk([&](func::FuncOp func) {
    for (BlockArgument arg : func.getArguments()) {
      auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "onnx.name");
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!name || !type || !isa<IntegerType>(type.getElementType()))
        continue;
      SmallVector<Value> worklist{arg};
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (OpOperand &use : v.getUses()) {
          Operation *user = use.getOwner();
          if (isa<ReshapeOp, TransposeOp, SliceOp>(user)) {
            worklist.push_back(user->getResult(0));
          } else if (auto gather = dyn_cast<GatherOp>(user);
                     gather && use.getOperandNumber() == 1) {
            auto data = cast<RankedTensorType>(gather.getData().getType());
            int64_t axis = gather.getAxis();
            if (axis < 0)
              axis += data.getRank();
            if (axis < 0 || axis >= data.getRank())
              continue;
            int64_t rows = data.getDimSize(axis);
            std::string table = "a table";
            if (auto load = gather.getData().getDefiningOp<LoadParameterOp>())
              table = "'" + load.getName().str() + "'";
            ranges.push_back({name.str(),
                              -rows,
                              rows - 1,
                              {},
                              "the vocabulary (the " + std::to_string(rows) +
                                  " rows of " + table + ")"});
          } else if (isa<SoftmaxCrossEntropyLossOp,
                         NegativeLogLikelihoodLossOp>(user) &&
                     use.getOperandNumber() == 1) {
            auto scores = cast<RankedTensorType>(user->getOperand(0).getType());
            if (scores.getRank() < 2)
              continue;
            int64_t classes = scores.getDimSize(1);
            std::vector<int64_t> also;
            if (auto ignore = user->getAttrOfType<IntegerAttr>("ignore_index"))
              also.push_back(ignore.getInt());
            ranges.push_back(
                {name.str(), 0, classes - 1, also,
                 "the " + std::to_string(classes) + " classes of the loss"});
          }
        }
      }
    }
  });
  return ranges;
}

} // namespace

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The compile itself; `externalFiles`, when set, gets the external data
/// files an ONNX model's import read.
rt::StatusOr<rt::Executable>
compileUncached(const std::string &path, const CompileOptions &options,
                std::vector<std::string> *externalFiles) {
  auto lap = [last = Clock::now()](double CompileTimings::*phase,
                                   CompileTimings *timings) mutable {
    Clock::time_point now = Clock::now();
    if (timings)
      timings->*phase = std::chrono::duration<double>(now - last).count();
    last = now;
  };
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &error);
  if (!file)
    return rt::notFound(path + ": " + error);

  DialectRegistry registry;
  registerOnnxImportDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  DiagnosticCollector diagnostics(&context);

  OwningOpRef<ModuleOp> module;
  if (looksLikeOnnx(path, file->getBuffer())) {
    OnnxImportOptions importOptions;
    std::string shapeError = parseInputShapes(options.inputShapes, importOptions);
    if (!shapeError.empty())
      return rt::invalidArgument("input shapes: " + shapeError);
    for (const std::string &value : options.inputValues) {
      std::string valueError = parseInputValue(value, importOptions);
      if (!valueError.empty())
        return rt::invalidArgument("input values: " + valueError);
    }
    importOptions.withoutWeights = options.planOnly;
    importOptions.externalFiles = externalFiles;
    module = importOnnxModel(file->getBuffer(), path, &context, importOptions);
  } else {
    if (!options.inputShapes.empty() || !options.inputValues.empty())
      return rt::invalidArgument(path + ": input shapes and values apply to "
                                        "ONNX models; MLIR is already static");
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  if (!module)
    return rt::invalidArgument(diagnostics.text());
  lap(&CompileTimings::import, options.timings);

  std::vector<rt::InputRange> ranges = inputRanges(*module);
  // Cross-entropy training adds a 'labels' input that indexes the classes
  // of the model's first output (its last dimension; see memfit-autodiff).
  if (options.train && options.train->loss == LossKind::CrossEntropy)
    module->walk([&](func::FuncOp func) {
      ArrayRef<Type> results = func.getFunctionType().getResults();
      auto out = results.empty() ? RankedTensorType()
                                 : dyn_cast<RankedTensorType>(results[0]);
      if (!out || out.getRank() < 1)
        return;
      int64_t classes = out.getShape().back();
      ranges.push_back({"labels",
                        0,
                        classes - 1,
                        {options.train->ignoreIndex},
                        "the " + std::to_string(classes) +
                            " classes of the cross-entropy loss"});
    });

  PassManager pm(&context, ModuleOp::getOperationName());
  if (options.train) {
    auto trainOptions =
        trainPipelineOptions(*options.train, options.weights, options.fusion);
    if (!trainOptions)
      return trainOptions.status();
    buildTrainPipeline(pm, **trainOptions);
  } else {
    auto forward = forwardPipelineOptions(options);
    if (!forward)
      return forward.status();
    buildForwardPipeline(pm, **forward);
  }
  if (failed(pm.run(*module)))
    return rt::invalidArgument(diagnostics.text());
  lap(&CompileTimings::passes, options.timings);

  if (!options.mlirOutput.empty()) {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> output =
        openOutputFile(options.mlirOutput, &error);
    if (!output)
      return rt::invalidArgument("cannot write MLIR to '" +
                                 options.mlirOutput + "': " + error);
    module->print(output->os());
    output->os() << "\n";
    // Errors show at the flush or close; clear them before returning, or
    // the stream would abort the process when it is destroyed.
    if (options.mlirOutput == "-")
      output->os().flush();
    else
      output->os().close();
    if (output->os().has_error()) {
      std::string message = output->os().error().message();
      output->os().clear_error();
      return rt::invalidArgument("cannot write MLIR to '" +
                                 options.mlirOutput + "': " + message);
    }
    output->keep();
  }

  CudaEmitOptions emitOptions;
  emitOptions.modelName = llvm::sys::path::filename(path).str();
  emitOptions.entry = options.entry;
  emitOptions.planOnly = options.planOnly;
  rt::Executable executable;
  if (failed(emitExecutable(*module, emitOptions, executable)))
    return rt::invalidArgument(diagnostics.text());
  lap(&CompileTimings::emission, options.timings);
  // Only ranges of inputs the executable still has (a forward pass of a
  // training model has no labels).
  for (rt::InputRange &range : ranges)
    for (const rt::Entry &entry : executable.manifest.entries)
      if (llvm::any_of(entry.inputs, [&](const rt::Binding &b) {
            return b.name == range.name;
          })) {
        executable.manifest.inputRanges.push_back(std::move(range));
        break;
      }
  return executable;
}

/// This build of the compiler: the files its code was loaded from (the
/// program, or the library that holds the compiler, such as a Python
/// extension), by path, size and modification time, so that a rebuilt
/// memfit never loads what another build compiled. Empty when neither can
/// be examined.
std::string buildIdentity() {
  std::string identity;
  auto add = [&](const char *path) {
    struct stat st;
    if (!path || !*path || ::stat(path, &st) != 0)
      return;
    identity += std::string(path) + " " + std::to_string(st.st_size) + " " +
                std::to_string(st.st_mtim.tv_sec) + "." +
                std::to_string(st.st_mtim.tv_nsec) + "\n";
  };
  add("/proc/self/exe");
  Dl_info info;
  if (::dladdr(reinterpret_cast<void *>(&buildIdentity), &info))
    add(info.dli_fname);
  return identity;
}

/// Whether the compile writes nothing but the executable, so that loading
/// a cached one gives the caller all it would have had.
bool onlyTheExecutable(const CompileOptions &options) {
  const TrainOptions *train = options.train ? &*options.train : nullptr;
  return !options.planOnly && options.mlirOutput.empty() &&
         options.fusion.report.empty() &&
         options.fusion.attentionReport.empty() &&
         (!train || (train->rematReport.empty() && train->timeline.empty() &&
                     train->timelineData.empty()));
}

} // namespace

rt::StatusOr<rt::Executable> compileModelFile(const std::string &path,
                                              const CompileOptions &options) {
  if (options.disableCache || !onlyTheExecutable(options))
    return compileUncached(path, options, nullptr);
  Clock::time_point start = Clock::now();
  rt::ExecutableCache cache(options.cacheDir, /*disabled=*/false);
  std::string build = buildIdentity();
  rt::StatusOr<std::string> pipeline = pipelineArgument(options);
  // Options the pipeline refuses, and a model that cannot be read, are
  // reported by the compile.
  if (!cache.enabled() || build.empty() || !pipeline)
    return compileUncached(path, options, nullptr);
  // Everything else the executable depends on: the options the pipeline
  // does not hold, the model's file name (the manifest's `model`) and its
  // folder (where its external data is found: the same bytes elsewhere
  // read other files, or none).
  SmallString<256> folder;
  if (llvm::sys::fs::real_path(llvm::sys::path::parent_path(path).empty()
                                   ? StringRef(".")
                                   : llvm::sys::path::parent_path(path),
                               folder))
    return compileUncached(path, options, nullptr);
  std::string configuration = "memfit executable cache 1\nbuild " + build +
                              "folder " + folder.str().str() + "\nname " +
                              llvm::sys::path::filename(path).str() +
                              "\nshapes " + options.inputShapes + "\nentry " +
                              options.entry + "\npipeline " + *pipeline;
  for (const std::string &value : options.inputValues)
    configuration += "\nvalue " + value;
  rt::StatusOr<std::string> key = cache.key(configuration, path);
  if (!key)
    return compileUncached(path, options, nullptr);
  if (std::optional<rt::Executable> cached = cache.load(*key)) {
    if (options.timings) {
      *options.timings = CompileTimings{};
      options.timings->cache = secondsSince(start);
      options.timings->cacheHit = true;
    }
    return std::move(*cached);
  }
  double lookup = secondsSince(start);
  std::vector<std::string> externalFiles;
  rt::StatusOr<rt::Executable> compiled =
      compileUncached(path, options, &externalFiles);
  if (!compiled)
    return compiled;
  // Best effort: an entry that cannot be written costs the next compile
  // its time, nothing else.
  Clock::time_point stored = Clock::now();
  (void)cache.store(*key, externalFiles, *compiled);
  if (options.timings)
    options.timings->cache = lookup + secondsSince(stored);
  return compiled;
}

} // namespace memfit
