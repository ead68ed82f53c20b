//===- Passes.h - memfit passes ------------------------------------*- C++ -*-===//

#ifndef MEMFIT_PASSES_PASSES_H
#define MEMFIT_PASSES_PASSES_H

#include "memfit/Support/ByteSize.h"
#include "memfit/Support/KindOption.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace func {
class FuncOp;
} // namespace func
namespace memfit {

/// memfit-early-updates' work on one function: each update moved to just
/// after what it must follow. Returns how many moved. memfit-fuse runs it
/// on copies to plan the step as it will run.
unsigned moveUpdatesEarly(func::FuncOp func);

#define GEN_PASS_DECL
#include "memfit/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "memfit/Passes/Passes.h.inc"

} // namespace memfit
} // namespace mlir

#endif // MEMFIT_PASSES_PASSES_H
