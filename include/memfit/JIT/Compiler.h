//===- Compiler.h - the public C++ API: model file to executable -*- C++ -*-===//
//
// Compiling a model:
//
//   memfit::CompileOptions options;
//   options.inputShapes = "batch=2,seq=16";
//   auto exe = memfit::compileModelFile("gpt.onnx", options);
//   if (!exe) { puts(exe.status().message().c_str()); return 1; }
//
// and running it with the runtime (memfit/runtime/Session.h):
//
//   auto session = memfit::rt::Session::create(*exe, memfit::rt::DeviceKind::Host);
//   session.value()->setInput("input_ids", ids);
//   session.value()->run();
//   auto logits = session.value()->getOutput("logits");
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_JIT_COMPILER_H
#define MEMFIT_JIT_COMPILER_H

#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Status.h"

#include <string>

namespace memfit {

struct CompileOptions {
  /// Shapes of the ONNX graph's inputs ("input_ids=2x16") or sizes of its
  /// symbolic dimensions ("batch=2,seq=16"); see memfit-opt --input-shape.
  std::string inputShapes;
  /// The function to compile when the input is MLIR with several.
  std::string entry;
};

/// The textual pass pipeline that compileModelFile runs after import;
/// `memfit-opt --pass-pipeline='<this>'` reproduces it step by step.
const char *forwardPipeline();

/// Registers the pipeline above as `memfit-forward-pipeline` for
/// memfit-opt.
void registerForwardPipeline();

/// Compiles an ONNX model (.onnx) or memfit IR (.mlir, .mlirbc) into an
/// executable for the runtime. Errors carry the compiler's diagnostics,
/// each with the file and ONNX node it concerns.
rt::StatusOr<rt::Executable> compileModelFile(const std::string &path,
                                              const CompileOptions &options);

} // namespace memfit

#endif // MEMFIT_JIT_COMPILER_H
