//===- memfit-translate.cpp - memfit IR to CUDA C++ or a manifest ---------===//
//
// mlir-translate with memfit's translations. --help lists the translations
// and mlir-translate's own flags (input, -o, --split-input-file,
// --verify-diagnostics); MLIR's printer and context options and LLVM's are
// listed by --help-hidden only.
//
//===----------------------------------------------------------------------===//

#include "memfit/Target/Cuda/EmitCuda.h"

#include "ToolHelp.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

static llvm::cl::extrahelp examples(R"(
EXAMPLES:
  memfit-opt model.onnx --input-shape=batch=2,seq=16 --memfit-forward-pipeline \
      --mlir-print-debuginfo | memfit-translate --memfit-to-cuda -o kernels.cu
  memfit-translate kernels.mlir --memfit-to-cuda --split-input-file
)");

int main(int argc, char **argv) {
  mlir::memfit::registerCudaTranslations();
  // mlirTranslateMain registers these again (a no-op) and its own flags,
  // which --help then lists with the translations.
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerTranslationCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  memfit::tools::showOnlyCategories({});
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "memfit translation driver\n"));
}
