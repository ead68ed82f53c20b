//===- Passes.h - memfit passes ------------------------------------*- C++ -*-===//

#ifndef MEMFIT_PASSES_PASSES_H
#define MEMFIT_PASSES_PASSES_H

#include "memfit/Support/ByteSize.h"
#include "memfit/Support/KindOption.h"

#include "mlir/Pass/Pass.h"

namespace mlir::memfit {

#define GEN_PASS_DECL
#include "memfit/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "memfit/Passes/Passes.h.inc"

} // namespace mlir::memfit

#endif // MEMFIT_PASSES_PASSES_H
