//===- MixedPrecision.cpp - bf16/fp16 compute with fp32 master weights
//-----===//
//
// Decides, op by op, the float type each op of a forward model runs in, from
// its precision requirement (OpClassInterface::getPrecision) and the user's
// keep-fp32 patterns, and inserts the casts where a value meets an op of
// another type. Parameters stay fp32: their low-precision working copies
// are casts at their uses, so autodiff's gradient of the cast brings each
// parameter's gradient back to fp32 for the optimizer.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Passes/Passes.h"
#include "memfit/Support/GlobList.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITMIXEDPRECISIONPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// Rewrites the functions of a module, one at a time.
class PrecisionRewriter {
public:
  PrecisionRewriter(Type low, const GlobList &keep) : low(low), keep(keep) {}

  LogicalResult run(func::FuncOp func);

private:
  /// f32 or the low type: the values this pass retypes.
  bool isManaged(Type elt) const { return elt.isF32() || elt == low; }
  bool isFloatTensor(Value v) const {
    return isa<FloatType>(getElementTypeOrSelf(v));
  }
  /// Whether the op's ONNX node name or module scope matches keep-fp32.
  bool keptInFp32(Operation *op) const;
  LogicalResult rewriteOp(Operation *op);
  /// `value` as a tensor of `elt`: one cast per value and type, built before
  /// `user`, its first user of that type.
  Value castTo(Value value, Type elt, StringRef reason, Operation *user);

  Type low;
  const GlobList &keep;
  DenseMap<std::pair<Value, Type>, Value> casts;
  /// fp32 values computed in fp32 on purpose: results of fp32 ops and of
  /// element-wise ops continuing them, constants, integers made float.
  DenseSet<Value> fp32Chain;
};

bool PrecisionRewriter::keptInFp32(Operation *op) const {
  if (keep.empty())
    return false;
  StringRef node = onnxNodeName(op->getLoc());
  StringRef scope = onnxNodeScope(op->getLoc());
  return (!node.empty() && keep.match(node)) ||
         (!scope.empty() && keep.match(scope));
}

Value PrecisionRewriter::castTo(Value value, Type elt, StringRef reason,
                                Operation *user) {
  auto key = std::make_pair(value, elt);
  if (auto it = casts.find(key); it != casts.end())
    return it->second;
  OpBuilder b(user);
  auto type = RankedTensorType::get(
      cast<RankedTensorType>(value.getType()).getShape(), elt);
  // Constants fold into constants of the new type; a cast of a cast folds
  // when its middle type is exact.
  Value result = b.createOrFold<CastOp>(value.getLoc(), type, value,
                                        b.getStringAttr(reason));
  casts[key] = result;
  return result;
}

LogicalResult PrecisionRewriter::rewriteOp(Operation *op) {
  // Casts keep the types the model or an earlier decision gave them;
  // parameters and constants are read in their own type. Constants, ranges
  // and integers made float are exact fp32 values: an fp32 chain may start
  // from them.
  if (isa<ConstantOp, RangeOp>(op) ||
      (isa<CastOp>(op) &&
       !isa<FloatType>(getElementTypeOrSelf(op->getOperand(0))))) {
    for (Value result : op->getResults())
      if (isFloatTensor(result))
        fp32Chain.insert(result);
    return success();
  }
  if (isa<CastOp, LoadParameterOp, func::ReturnOp>(op))
    return success();
  auto opClass = dyn_cast<OpClassInterface>(op);
  if (!opClass)
    return success();
  SmallVector<unsigned> floatOperands;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isFloatTensor(operand.get()))
      continue;
    // Another float type (f64, or the other 16-bit type): not ours.
    if (!isManaged(getElementTypeOrSelf(operand.get())))
      return success();
    floatOperands.push_back(operand.getOperandNumber());
  }
  if (floatOperands.empty())
    return success();
  for (Value result : op->getResults())
    if (isFloatTensor(result) && !isManaged(getElementTypeOrSelf(result)))
      return success();

  bool kept = keptInFp32(op);
  Precision precision = kept ? Precision::Fp32 : opClass.getPrecision();
  if (precision == Precision::LowWideRange)
    precision = low.isBF16() ? Precision::Low : Precision::Fp32;
  // An element-wise op whose every float operand is part of an fp32 chain
  // (a statistic from a reduction, an exponential, positions and angles
  // from constants) continues it in fp32 rather than rounding it: the
  // chain meets the low type at the first op that also reads a low value.
  bool onlyFp32Chain = llvm::all_of(floatOperands, [&](unsigned i) {
    return fp32Chain.contains(op->getOperand(i));
  });
  if (precision == Precision::Low && onlyFp32Chain &&
      opClass.getOpClass() == OpClass::ElementWise)
    precision = Precision::Fp32;
  Type f32 = Float32Type::get(op->getContext());
  Type target = precision == Precision::Low ? low : f32;
  if (precision == Precision::Follow)
    target =
        llvm::any_of(floatOperands,
                     [&](unsigned i) {
                       return getElementTypeOrSelf(op->getOperand(i)).isF32();
                     })
            ? f32
            : low;
  if (target == f32 && (precision != Precision::Follow || onlyFp32Chain))
    for (Value result : op->getResults())
      if (isFloatTensor(result))
        fp32Chain.insert(result);

  for (unsigned i : floatOperands) {
    Value operand = op->getOperand(i);
    if (getElementTypeOrSelf(operand) == target)
      continue;
    StringRef reason;
    if (target == low)
      reason =
          operand.getDefiningOp<LoadParameterOp>() ? "working-copy" : "lower";
    else
      reason = kept ? "keep-fp32"
                    : (precision == Precision::Follow ? "promote" : "fp32");
    op->setOperand(i, castTo(operand, target, reason, op));
  }
  for (OpResult result : op->getResults())
    if (isFloatTensor(result) && !opClass.isFp32Result(result.getResultNumber()))
      result.setType(RankedTensorType::get(
          cast<RankedTensorType>(result.getType()).getShape(), target));
  return success();
}

LogicalResult PrecisionRewriter::run(func::FuncOp func) {
  if (func.isExternal())
    return success();
  for (Operation &op : func.getOps())
    if (isa<KernelOp>(op) || op.hasAttr("memfit.backward"))
      return op.emitError("memfit-mixed-precision runs on a forward model, "
                          "before memfit-autodiff and memfit-form-kernels");
  casts.clear();
  fp32Chain.clear();
  for (Operation &op : llvm::make_early_inc_range(func.getOps()))
    if (failed(rewriteOp(&op)))
      return failure();

  // Results keep the function's signature.
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    Value value = ret.getOperand(i);
    if (value.getType() != type)
      ret.setOperand(i,
                     castTo(value, getElementTypeOrSelf(type), "result", ret));
  }
  // Constants and casts that every user now reads in another type.
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(func.getBody().front().getOperations())))
    if (isa<ConstantOp, CastOp>(op) && isOpTriviallyDead(&op))
      op.erase();
  return success();
}

struct MemfitMixedPrecisionPass
    : public mlir::memfit::impl::MemfitMixedPrecisionPassBase<
          MemfitMixedPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    Type low;
    if (precision == ::memfit::PrecisionKind::Bf16)
      low = BFloat16Type::get(context);
    else if (precision == ::memfit::PrecisionKind::Fp16)
      low = Float16Type::get(context);
    else {
      module.emitError("memfit-mixed-precision: precision must be bf16 or "
                       "fp16, not ")
          << ::memfit::nameOf(precision.getValue());
      return signalPassFailure();
    }
    GlobList keep;
    std::string error;
    if (!keep.parse(keepFp32, "keep-fp32", error)) {
      module.emitError(error);
      return signalPassFailure();
    }
    PrecisionRewriter rewriter(low, keep);
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(rewriter.run(func)))
        return signalPassFailure();
  }
};

} // namespace
