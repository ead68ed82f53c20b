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

static llvm::cl::opt<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Shapes of ONNX graph inputs (name=2x16,...) or sizes of "
                   "symbolic dimensions (batch=2,...)"),
    llvm::cl::init(""));

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

  auto [inputFile, outputFile] = registerAndParseCLIOptions(
      argc, argv, "memfit optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();

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
