//===- OnnxImportFuzzer.cpp - libFuzzer target of the ONNX importer -------===//
//
// Feeds arbitrary bytes to importOnnxModel as a model file. Any outcome is
// fine except a crash, a hang, an abort, a sanitizer report or unbounded
// allocation: malformed input must end in a diagnostic. Diagnostics are
// swallowed; the context is rebuilt every few hundred inputs so that the
// types and attributes it interns do not grow without bound.
//
// Symbolic dimensions common in the fixtures (batch, seq, ...) get small
// sizes so that the graphs import past their inputs. External data is looked
// up next to "$MEMFIT_FUZZ_MODEL_DIR/model.onnx" (scripts/fuzz.sh puts a
// small weights file there), or in a folder that does not exist. With
// MEMFIT_FUZZ_VERBOSE set, every diagnostic and outcome is printed.
//
//===----------------------------------------------------------------------===//

#include "memfit/Import/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

struct FuzzState {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::memfit::OnnxImportOptions options;
  std::string fileName;
  int uses = 0;
  static inline bool verbose = std::getenv("MEMFIT_FUZZ_VERBOSE") != nullptr;

  FuzzState() {
    const char *dir = std::getenv("MEMFIT_FUZZ_MODEL_DIR");
    fileName =
        std::string(dir ? dir : "/nonexistent-memfit-fuzz") + "/model.onnx";
    for (const char *name :
         {"batch", "seq", "sequence", "batch_size", "sequence_length"})
      options.dimValues[name] = 2;
  }

  mlir::MLIRContext &freshContext() {
    if (!context || ++uses > 256) {
      mlir::DialectRegistry registry;
      mlir::memfit::registerOnnxImportDialects(registry);
      context = std::make_unique<mlir::MLIRContext>(
          registry, mlir::MLIRContext::Threading::DISABLED);
      context->getDiagEngine().registerHandler([](mlir::Diagnostic &diag) {
        if (verbose)
          llvm::errs() << diag << "\n";
        return mlir::success();
      });
      uses = 0;
    }
    return *context;
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FuzzState state;
  mlir::MLIRContext &context = state.freshContext();
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::memfit::importOnnxModel(
      bytes, state.fileName, &context, state.options);
  if (FuzzState::verbose)
    llvm::errs() << (module ? "imported" : "refused") << " (" << size
                 << " bytes)\n";
  return 0;
}
