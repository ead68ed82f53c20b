//===- ModelSummary.cpp - parameters, bytes and op counts of a model --------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"
#include "memfit/runtime/Bytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITMODELSUMMARYPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

struct MemfitModelSummaryPass
    : public mlir::memfit::impl::MemfitModelSummaryPassBase<MemfitModelSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::unique_ptr<llvm::ToolOutputFile> file =
        openPassOutput(module, output, "summary");
    if (!file)
      return signalPassFailure();
    print(module, file->os());
    file->keep();
  }

  void print(ModuleOp module, raw_ostream &os) {
    int64_t paramCount = 0, paramTensors = 0;
    std::map<std::string, int64_t> paramBytes, constBytes;
    for (auto p : module.getOps<ParameterOp>()) {
      ++paramTensors;
      paramCount += p.getType().getNumElements();
      paramBytes[typeName(p.getType().getElementType())] +=
          tensorBytes(p.getType());
    }
    std::map<std::string, int64_t> byClass, byName;
    int64_t totalOps = 0;
    module.walk([&](Operation *op) {
      if (auto c = dyn_cast<ConstantOp>(op)) {
        auto t = cast<RankedTensorType>(c.getType());
        constBytes[typeName(t.getElementType())] += tensorBytes(t);
      }
      auto cls = dyn_cast<OpClassInterface>(op);
      if (!cls || isa<ParameterOp>(op))
        return;
      ++totalOps;
      ++byClass[stringifyOpClass(cls.getOpClass()).str()];
      ++byName[op->getName().getStringRef().str()];
    });

    os << "memfit model summary\n";
    os << llvm::formatv("  parameters: {0} in {1} tensors\n",
                        ::memfit::groupDigits(paramCount), paramTensors);
    auto printBytes = [&](StringRef what,
                          const std::map<std::string, int64_t> &bytes) {
      int64_t total = 0;
      for (auto &[k, v] : bytes)
        total += v;
      os << llvm::formatv("  {0} bytes: {1}", what, ::memfit::groupDigits(total));
      for (auto &[k, v] : bytes)
        os << llvm::formatv(" ({0}: {1})", k, ::memfit::groupDigits(v));
      os << "\n";
    };
    printBytes("parameter", paramBytes);
    printBytes("constant", constBytes);
    for (auto func : module.getOps<func::FuncOp>()) {
      os << "  function @" << func.getName() << "\n";
      for (auto [i, t] : llvm::enumerate(func.getArgumentTypes())) {
        auto name = func.getArgAttrOfType<StringAttr>(i, "onnx.name");
        os << "    input  " << (name ? name.getValue() : "") << ": " << t
           << "\n";
      }
      for (auto [i, t] : llvm::enumerate(func.getResultTypes())) {
        auto name = func.getResultAttrOfType<StringAttr>(i, "onnx.name");
        os << "    output " << (name ? name.getValue() : "") << ": " << t
           << "\n";
      }
    }
    os << "  ops: " << totalOps << "\n    by class:";
    for (auto &[k, v] : byClass)
      os << " " << k << " " << v << ";";
    os << "\n    by op:";
    for (auto &[k, v] : byName)
      os << " " << k << " " << v << ";";
    os << "\n";
  }
};

} // namespace
