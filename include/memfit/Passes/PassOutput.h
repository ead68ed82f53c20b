//===- PassOutput.h - the output file of a reporting pass ---------*- C++ -*-===//

#ifndef MEMFIT_PASSES_PASSOUTPUT_H
#define MEMFIT_PASSES_PASSOUTPUT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#include <memory>

namespace mlir::memfit {

/// Opens the file a pass writes its report to ('-' is standard output).
/// The file is removed again unless the caller calls keep(), so a failing
/// pass leaves none. On failure, emits "cannot open <what> output '<path>':
/// <reason>" on `module` and returns null.
inline std::unique_ptr<llvm::ToolOutputFile>
openPassOutput(ModuleOp module, StringRef path, StringRef what) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    module.emitError() << "cannot open " << what << " output '" << path
                       << "': " << error;
  return file;
}

} // namespace mlir::memfit

#endif // MEMFIT_PASSES_PASSOUTPUT_H
