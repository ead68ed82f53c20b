//===- Compiler.cpp - model file to executable -----------------------------===//

#include "memfit/JIT/Compiler.h"

#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Import/OnnxImporter.h"
#include "memfit/Passes/Passes.h"
#include "memfit/Target/Cuda/EmitCuda.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdio>

using namespace mlir;
using mlir::memfit::CudaEmitOptions;
using mlir::memfit::emitExecutable;
using mlir::memfit::importOnnxModel;
using mlir::memfit::looksLikeOnnx;
using mlir::memfit::OnnxImportOptions;
using mlir::memfit::parseInputShapes;
using mlir::memfit::registerOnnxImportDialects;

namespace memfit {

/// The passes of the forward pipeline, without the module anchor (the form
/// parsePassPipeline expects when it adds to an existing pass manager).
static const char kForwardPasses[] =
    "canonicalize,cse,func.func(memfit-form-kernels)";

const char *forwardPipeline() {
  static const std::string anchored =
      std::string("builtin.module(") + kForwardPasses + ")";
  return anchored.c_str();
}

void registerForwardPipeline() {
  static PassPipelineRegistration<> pipeline(
      "memfit-forward-pipeline",
      "What the C++ API runs between import and CUDA emission",
      [](OpPassManager &pm) {
        (void)parsePassPipeline(kForwardPasses, pm);
      });
}

static std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

static std::string joined(const std::vector<std::string> &items) {
  std::string out;
  for (const std::string &item : items)
    out += (out.empty() ? "" : ",") + item;
  return out;
}

/// The passes of a training step, without the module anchor.
static std::string trainingPasses(const TrainOptions &options) {
  std::string autodiff = "memfit-autodiff{loss=" + options.loss +
                         " ignore-index=" + std::to_string(options.ignoreIndex);
  if (!options.trainable.empty())
    autodiff += " trainable=" + joined(options.trainable);
  if (!options.frozen.empty())
    autodiff += " frozen=" + joined(options.frozen);
  autodiff += "}";
  std::string passes = "canonicalize,cse,memfit-tie-parameters," + autodiff;
  if (options.optimizer != "none")
    passes += ",memfit-optimizer{optimizer=" + options.optimizer +
              " beta1=" + number(options.beta1) +
              " beta2=" + number(options.beta2) + " eps=" + number(options.eps) +
              " weight-decay=" + number(options.weightDecay) +
              " momentum=" + number(options.momentum) +
              " nesterov=" + (options.nesterov ? "true" : "false") +
              " clip-norm=" + number(options.clipNorm) +
              " accumulate=" + std::to_string(options.accumulate) + "}";
  passes += ",canonicalize,cse,func.func(memfit-form-kernels)";
  std::string remat = "memfit-remat{policy=" + options.remat;
  if (options.budget > 0)
    remat += " budget=" + std::to_string(options.budget);
  if (options.activationFraction > 0)
    remat += " activation-fraction=" + number(options.activationFraction);
  // Paths are quoted so that spaces and separators survive the parser.
  auto path = [&](const char *name, const std::string &value) {
    if (!value.empty())
      remat += std::string(" ") + name + "=\"" + value + "\"";
  };
  path("report", options.rematReport);
  path("timeline", options.timeline);
  path("timeline-data", options.timelineData);
  return passes + "," + remat + "}";
}

std::string trainingPipeline(const TrainOptions &options) {
  return "builtin.module(" + trainingPasses(options) + ")";
}

namespace {

/// The passes the forward pipeline names, registered once so that its
/// text parses.
void registerPipelinePasses() {
  static bool registered = [] {
    registerCanonicalizerPass();
    registerCSEPass();
    mlir::memfit::registerMemfitPasses();
    return true;
  }();
  (void)registered;
}

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

rt::StatusOr<rt::Executable> compileModelFile(const std::string &path,
                                              const CompileOptions &options) {
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
    module = importOnnxModel(file->getBuffer(), path, &context, importOptions);
  } else {
    if (!options.inputShapes.empty())
      return rt::invalidArgument(
          path + ": input shapes apply to ONNX models; MLIR is already static");
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  if (!module)
    return rt::invalidArgument(diagnostics.text());

  registerPipelinePasses();
  PassManager pm(&context, ModuleOp::getOperationName());
  if (options.train) {
    const TrainOptions &train = *options.train;
    if (train.optimizer != "adamw" && train.optimizer != "sgd" &&
        train.optimizer != "none")
      return rt::invalidArgument("unknown optimizer '" + train.optimizer +
                                 "'; expected adamw, sgd or none");
    if (train.accumulate < 1)
      return rt::invalidArgument("accumulation steps must be at least 1");
    for (const auto *patterns : {&train.trainable, &train.frozen})
      for (const std::string &pattern : *patterns)
        if (pattern.find_first_of(" {}") != std::string::npos)
          return rt::invalidArgument("parameter pattern '" + pattern +
                                     "' may not contain spaces or braces");
    if (failed(parsePassPipeline(trainingPasses(train), pm)))
      return rt::internalError("the training pipeline does not parse");
  } else if (failed(parsePassPipeline(kForwardPasses, pm))) {
    return rt::internalError("the forward pipeline does not parse");
  }
  if (failed(pm.run(*module)))
    return rt::invalidArgument(diagnostics.text());

  CudaEmitOptions emitOptions;
  emitOptions.modelName = llvm::sys::path::filename(path).str();
  emitOptions.entry = options.entry;
  rt::Executable executable;
  if (failed(emitExecutable(*module, emitOptions, executable)))
    return rt::invalidArgument(diagnostics.text());
  return executable;
}

} // namespace memfit
