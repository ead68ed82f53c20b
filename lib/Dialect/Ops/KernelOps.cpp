//===- KernelOps.cpp - memfit.kernel --------------------------------------===//
//
// The kernel's verifier (its body, its segments, what it may hold) and
// the input its in-place result is tied to.
//
// The ops are defined in include/memfit/Dialect/Ops/KernelOps.td.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"

using namespace mlir;
using namespace mlir::memfit;

LogicalResult KernelOp::verify() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size()
                         << " inputs but its body takes "
                         << body.getNumArguments() << " arguments";
  for (auto [index, input, arg] :
       llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError() << "input " << index << " has type "
                           << input.getType() << " but body argument "
                           << index << " has type " << arg.getType();
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(&body.back());
  if (!yield)
    return emitOpError() << "body must end with memfit.yield";
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values of types (" << yield.getValues().getTypes()
                         << ") but has results of types (" << getResultTypes()
                         << ")";
  if (Attribute attr = (*this)->getAttr(kSegmentsAttr)) {
    auto sizes = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!sizes)
      return emitOpError() << kSegmentsAttr << " must be an array of i64";
    int64_t first = 0;
    for (int64_t size : sizes.asArrayRef()) {
      if (size <= 0 || first + size > getNumResults())
        return emitOpError()
               << kSegmentsAttr << " " << sizes << " does not split its "
               << getNumResults() << " results";
      for (int64_t i = first + 1; i < first + size; ++i)
        if (shapeOf(getResult(i)) != shapeOf(getResult(first)))
          return emitOpError() << "results " << first << " and " << i
                               << " of one segment differ in shape";
      first += size;
    }
    if (first != static_cast<int64_t>(getNumResults()))
      return emitOpError() << kSegmentsAttr << " " << sizes
                           << " does not split its " << getNumResults()
                           << " results";
  }
  for (Operation &op : getBodyOps()) {
    auto opClass = dyn_cast<OpClassInterface>(&op);
    if (!opClass || opClass.getOpClass() == OpClass::Contraction ||
        opClass.getOpClass() == OpClass::Collective ||
        isa<ParameterOp, LoadParameterOp>(op))
      return emitOpError() << "cannot contain '" << op.getName()
                           << "': kernels hold element-wise, normalization, "
                              "reduction, data-movement and loss ops";
    // An in-place accumulation needs a buffer to write into: a kernel
    // input, whose buffer becomes the result's.
    if (auto scatter = dyn_cast<GatherGradOp>(op); scatter && scatter.getInit())
      if (!isa<BlockArgument>(scatter.getInit()) ||
          !llvm::hasSingleElement(scatter->getUses()) ||
          !isa<YieldOp>(*scatter->user_begin()))
        return emitOpError() << "a gather_grad into another value must "
                                "accumulate into a kernel input and be "
                                "yielded, nothing else reading it";
  }
  return success();
}

Value KernelOp::getTiedInput(unsigned index) {
  Value yielded = getBodyBlock().getTerminator()->getOperand(index);
  auto scatter = yielded.getDefiningOp<GatherGradOp>();
  if (!scatter || !scatter.getInit())
    return {};
  auto arg = dyn_cast<BlockArgument>(scatter.getInit());
  return arg ? getInputs()[arg.getArgNumber()] : Value();
}
