//===- memfit-translate.cpp - memfit IR to CUDA C++ or a manifest ----------===//

#include "memfit/Target/Cuda/EmitCuda.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::memfit::registerCudaTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "memfit translation driver\n"));
}
