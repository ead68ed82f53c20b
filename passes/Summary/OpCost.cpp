//===- OpCost.cpp - FLOPs and bytes of every op that does work ------------===//

#include "memfit/Dialect/OpCost.h"
#include "memfit/Analysis/Traffic.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <optional>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITOPCOSTPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {


/// One field of a line: no spaces, '-' when empty.
std::string field(StringRef text) {
  if (text.empty())
    return "-";
  std::string s = text.str();
  for (char &c : s)
    if (llvm::isSpace(c))
      c = '_';
  return s;
}

/// Ops listed: those with a cost model that do work of their own.
bool isListed(Operation *op) {
  return isa<CostOpInterface>(op) && !isFreeOp(op);
}

/// The op's name; a kernel's is the names of its body ops joined by '+',
/// without the constants (literals) unless there is nothing else.
std::string displayName(Operation *op) {
  auto kernel = dyn_cast<KernelOp>(op);
  if (!kernel)
    return op->getName().getStringRef().str();
  SmallVector<StringRef> names, constants;
  for (Operation &inner : kernel.getBodyOps())
    (isa<ConstantOp>(inner) ? constants : names)
        .push_back(inner.getName().getStringRef());
  if (names.empty())
    names = constants;
  return names.empty() ? "-" : llvm::join(names, "+");
}

/// The class a kernel is counted under: that of its most significant body
/// op (a loss or normalization over the element-wise work fused into it).
OpClass classOf(Operation *op) {
  if (auto opClass = dyn_cast<OpClassInterface>(op))
    return opClass.getOpClass();
  auto rank = [](OpClass c) {
    switch (c) {
    case OpClass::Contraction:
    case OpClass::Collective: // never in a kernel
      return 0;
    case OpClass::Loss:
    case OpClass::Attention:
      return 1;
    case OpClass::Normalization:
      return 2;
    case OpClass::Reduction:
    case OpClass::Quantization:
      return 3;
    case OpClass::ElementWise:
      return 4;
    case OpClass::DataMovement:
      return 5;
    case OpClass::Constant:
      return 6;
    }
    return 6;
  };
  std::optional<OpClass> best;
  if (auto kernel = dyn_cast<KernelOp>(op))
    for (Operation &inner : kernel.getBodyOps())
      if (auto opClass = dyn_cast<OpClassInterface>(&inner))
        if (!best || rank(opClass.getOpClass()) < rank(*best))
          best = opClass.getOpClass();
  return best.value_or(OpClass::DataMovement);
}

/// `2x16x96xf32`; a scalar is its element type; results joined by ','.
std::string resultTypes(Operation *op) {
  SmallVector<std::string> types;
  for (Type type : op->getResultTypes()) {
    std::string s;
    llvm::raw_string_ostream os(s);
    if (auto tensor = dyn_cast<RankedTensorType>(type)) {
      for (int64_t dim : tensor.getShape())
        os << dim << "x";
      os << tensor.getElementType();
    } else {
      os << type;
    }
    types.push_back(field(s));
  }
  return types.empty() ? "-" : llvm::join(types, ",");
}

struct MemfitOpCostPass
    : public mlir::memfit::impl::MemfitOpCostPassBase<MemfitOpCostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::unique_ptr<llvm::ToolOutputFile> file =
        openPassOutput(module, output, "op cost");
    if (!file)
      return signalPassFailure();
    file->os() << "memfit op cost\n";
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        print(func, file->os());
    file->keep();
    markAllAnalysesPreserved();
  }

  void print(func::FuncOp func, raw_ostream &os) {
    struct ClassTotal {
      int64_t ops = 0;
      OpCost cost;
    };
    std::map<OpClass, ClassTotal> byClass;
    OpCost total;
    os << "function @" << func.getName() << "\n";
    int64_t index = 0;
    for (Operation &op : func.getBody().getOps()) {
      if (!isListed(&op))
        continue;
      OpCost cost = estimateCost(&op);
      OpClass opClass = classOf(&op);
      os << llvm::formatv(
          "  {0} op={1} node={2} result={3} class={4} flops={5} bytes={6}\n",
          index++, displayName(&op), field(onnxNodeName(op.getLoc())),
          resultTypes(&op), stringifyOpClass(opClass), cost.flops, cost.bytes);
      if (cost.wireBytes)
        os << llvm::formatv("    wire={0}\n", cost.wireBytes);
      ClassTotal &classTotal = byClass[opClass];
      ++classTotal.ops;
      classTotal.cost += cost;
      total += cost;
    }
    for (auto &[opClass, classTotal] : byClass)
      os << llvm::formatv("  class={0} ops={1} flops={2} bytes={3}\n",
                          stringifyOpClass(opClass), classTotal.ops,
                          classTotal.cost.flops, classTotal.cost.bytes);
    os << llvm::formatv("  total: {0} FLOPs, {1} bytes\n", total.flops,
                        total.bytes);
    // Once formed into kernels, the bytes against their lower bound.
    FailureOr<MemoryPlan> plan = failure();
    {
      ScopedDiagnosticHandler quiet(func.getContext(),
                                    [](Diagnostic &) { return success(); });
      plan = planMemory(func);
    }
    if (succeeded(plan))
      writeTraffic(stepTraffic(*plan), "  traffic", os);
  }
};

} // namespace
