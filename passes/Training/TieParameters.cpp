//===- TieParameters.cpp - re-tie transposed duplicate weights -------------===//
//
// Finds 2-D parameters stored twice, once transposed, and makes the second
// a transpose of the first, so that training updates one tensor.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITTIEPARAMETERSPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// Whether every element has the same bytes (a tie found on such data
/// would be a coincidence, e.g. two layer-norm scales of ones).
bool isUniform(ArrayRef<char> bytes, size_t eltBytes) {
  for (size_t i = eltBytes; i < bytes.size(); i += eltBytes)
    if (memcmp(bytes.data(), bytes.data() + i, eltBytes) != 0)
      return false;
  return true;
}

/// Whether `b` ([n, m]) is the transpose of `a` ([m, n]), bit for bit.
bool isTransposeOf(ArrayRef<char> a, ArrayRef<char> b, int64_t m, int64_t n,
                   size_t eltBytes) {
  if (a.size() != b.size() || a.size() != size_t(m * n) * eltBytes)
    return false;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (memcmp(a.data() + (i * n + j) * eltBytes,
                 b.data() + (j * m + i) * eltBytes, eltBytes) != 0)
        return false;
  return true;
}

struct MemfitTieParametersPass
    : public mlir::memfit::impl::MemfitTieParametersPassBase<
          MemfitTieParametersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<ParameterOp> candidates;
    for (auto param : module.getOps<ParameterOp>()) {
      RankedTensorType type = param.getType();
      if (type.getRank() == 2 && isa<FloatType>(type.getElementType()))
        candidates.push_back(param);
    }
    // B -> A for every B that is a transposed copy of an earlier A.
    SmallVector<std::pair<ParameterOp, ParameterOp>> ties;
    llvm::SmallPtrSet<Operation *, 8> tied;
    for (size_t bi = 0; bi < candidates.size(); ++bi) {
      ParameterOp b = candidates[bi];
      RankedTensorType bType = b.getType();
      size_t eltBytes = bType.getElementTypeBitWidth() / 8;
      ArrayRef<char> bBytes = storedBytes(b.getValue());
      if (bBytes.empty() || isUniform(bBytes, eltBytes))
        continue;
      for (size_t ai = 0; ai < bi; ++ai) {
        ParameterOp a = candidates[ai];
        RankedTensorType aType = a.getType();
        if (tied.contains(a) || aType.getElementType() != bType.getElementType() ||
            aType.getDimSize(0) != bType.getDimSize(1) ||
            aType.getDimSize(1) != bType.getDimSize(0))
          continue;
        if (isTransposeOf(storedBytes(a.getValue()), bBytes,
                          aType.getDimSize(0), aType.getDimSize(1), eltBytes)) {
          ties.push_back({b, a});
          tied.insert(b);
          break;
        }
      }
    }

    OpBuilder builder(&getContext());
    for (auto [b, a] : ties) {
      SmallVector<LoadParameterOp> loads;
      module.walk([&](LoadParameterOp load) {
        if (load.getName() == b.getSymName())
          loads.push_back(load);
      });
      for (LoadParameterOp load : loads) {
        builder.setInsertionPoint(load);
        Value source = LoadParameterOp::create(
            builder, load.getLoc(), a.getType(),
            FlatSymbolRefAttr::get(a.getSymNameAttr()));
        Value transposed = TransposeOp::create(
            builder, load.getLoc(), source, builder.getDenseI64ArrayAttr({1, 0}));
        load.replaceAllUsesWith(transposed);
        load.erase();
      }
      b.emitRemark() << "'" << b.getSymName() << "' is the transpose of '"
                     << a.getSymName() << "'; reading it as transpose('"
                     << a.getSymName() << "') so that both are one weight";
      b.erase();
    }
  }
};

} // namespace
