//===- memfit-opt.cpp - the memfit optimizer driver --------------------------===//
//
// mlir-opt for memfit: reads MLIR or an ONNX model (imported first, with
// --input-shape specializing its dynamic dimensions), runs passes given in
// mlir-opt's pipeline syntax and prints the result.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Import/OnnxImporter.h"
#include "memfit/Passes/Pipelines.h"

#include "ToolHelp.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

// --help lists these categories; MLIR's options that a user of memfit-opt
// needs are added to them by name (showMemfitOptions), the rest of MLIR's
// and LLVM's options are listed by --help-hidden only.
static cl::OptionCategory inputCategory("Inputs");
static cl::OptionCategory passCategory("Passes");
static cl::OptionCategory outputCategory("Output");
static cl::OptionCategory testCategory("Testing");

static cl::opt<std::string> inputFilename(cl::Positional, cl::init("-"),
                                          cl::desc("<input file: .mlir or "
                                                   ".onnx>"),
                                          cl::cat(inputCategory));
static cl::opt<std::string> outputFilename("o", cl::init("-"),
                                           cl::value_desc("filename"),
                                           cl::desc("Output filename"),
                                           cl::cat(outputCategory));
static cl::opt<std::string> inputShapes(
    "input-shape", cl::init(""), cl::cat(inputCategory),
    cl::desc("Shapes of ONNX graph inputs (name=2x16,...) or sizes of "
             "symbolic dimensions (batch=2,...)"));
static cl::list<std::string>
    inputValues("input-value", cl::cat(inputCategory),
                cl::desc("Values of an ONNX graph input needed at compile time "
                         "(name=1,2,3; repeatable): it becomes a constant"));
static cl::opt<bool> withoutWeights(
    "without-weights", cl::cat(inputCategory),
    cl::desc("Plan from shapes: do not read the ONNX model's external "
             "weight files (they may be absent); float tensors stored there "
             "import as zeros"));

static cl::extrahelp examples(R"(
EXAMPLES:
  memfit-opt model.onnx --input-shape=input_ids=2x16          import, print IR
  memfit-opt model.onnx --input-shape=batch=2,seq=16 --memfit-model-summary \
      -o /dev/null
  memfit-opt model.onnx --input-shape=batch=2,seq=16 --memfit-forward-pipeline \
      --memfit-memory-plan -o /dev/null                      kernels, memory plan
  memfit-opt model.onnx --input-shape=batch=2,seq=16 \
      --memfit-train-pipeline='loss=cross-entropy budget=1.2MiB remat-report=-'
                                            the training step memfit-run compiles
  memfit-opt in.mlir --pass-pipeline='builtin.module(memfit-autodiff{loss=mse},\
      canonicalize,cse,func.func(memfit-form-kernels),memfit-remat{report=-})'
  memfit-opt llama.onnx --without-weights --input-shape=batch=4,seq=2048 \
      --memfit-train-pipeline='loss=cross-entropy lora-rank=16' \
      --memfit-memory-plan -o /dev/null    plan, the weight files absent
  memfit-opt in.mlir --split-input-file --verify-diagnostics
)");

/// Puts MLIR's options that memfit-opt's users need into its categories
/// (an option missing from this MLIR is skipped) and hides the rest from
/// --help.
static void showMemfitOptions() {
  const std::pair<const char *, cl::OptionCategory *> shown[] = {
      // The pass list (one option, registered under every pass name).
      {"canonicalize", &passCategory},
      {"pass-pipeline", &passCategory},
      {"dump-pass-pipeline", &passCategory},
      {"mlir-disable-threading", &passCategory},
      {"mlir-pass-statistics", &passCategory},
      {"mlir-timing", &passCategory},
      {"mlir-print-debuginfo", &outputCategory},
      {"mlir-print-ir-after-all", &outputCategory},
      {"mlir-elide-elementsattrs-if-larger", &outputCategory},
      {"emit-bytecode", &outputCategory},
      {"split-input-file", &testCategory},
      {"verify-diagnostics", &testCategory},
      {"allow-unregistered-dialect", &testCategory},
  };
  auto &options = cl::getRegisteredOptions();
  for (auto [name, category] : shown)
    if (cl::Option *option = options.lookup(name))
      option->addCategory(*category);
  ::memfit::tools::showOnlyCategories(
      {&inputCategory, &passCategory, &outputCategory, &testCategory});
}

/// Imports an ONNX file into a bytecode buffer that MlirOptMain then reads
/// like any other input. Diagnostics go to stderr.
static std::unique_ptr<llvm::MemoryBuffer>
importOnnx(const llvm::MemoryBuffer &file, StringRef fileName,
           DialectRegistry &registry) {
  mlir::memfit::OnnxImportOptions options;
  std::string error = mlir::memfit::parseInputShapes(inputShapes, options);
  if (!error.empty()) {
    llvm::errs() << "memfit-opt: --input-shape: " << error << "\n";
    return nullptr;
  }
  for (const std::string &value : inputValues) {
    error = mlir::memfit::parseInputValue(value, options);
    if (!error.empty()) {
      llvm::errs() << "memfit-opt: --input-value: " << error << "\n";
      return nullptr;
    }
  }
  options.withoutWeights = withoutWeights;
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      mlir::memfit::importOnnxModel(file.getBuffer(), fileName, &context, options);
  if (!module)
    return nullptr;
  std::string bytecode;
  llvm::raw_string_ostream os(bytecode);
  if (failed(writeBytecodeToFile(*module, os)))
    return nullptr;
  return llvm::MemoryBuffer::getMemBufferCopy(bytecode, fileName);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::memfit::registerMemfitPipelines();
  registerSymbolDCEPass();

  DialectRegistry registry;
  mlir::memfit::registerOnnxImportDialects(registry);

  std::string helpHeader =
      registerCLIOptions("memfit optimizer driver\n", registry);
  showMemfitOptions();
  cl::ParseCommandLineOptions(argc, argv, helpHeader);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  const std::string &inputFile = inputFilename, &outputFile = outputFilename;

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(inputFile, &error);
  if (!file) {
    llvm::errs() << "memfit-opt: " << error << "\n";
    return 1;
  }
  if (mlir::memfit::looksLikeOnnx(inputFile, file->getBuffer())) {
    file = importOnnx(*file, inputFile, registry);
    if (!file)
      return 1;
  }
  // The output file is removed again unless everything succeeds, so a
  // failed run never leaves a half-written result behind.
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "memfit-opt: " << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}
