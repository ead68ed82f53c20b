//===- CollectiveOps.cpp - all-reduce, reduce-scatter, all-gather ---------===//
//
// Result types and verifiers of the Collective ops
// (include/memfit/Dialect/Ops/CollectiveOps.td). Their cost (bytes on the
// wire) is in CostModel.cpp; the runtime runs them through a communicator.
//
//===----------------------------------------------------------------------===//

#include "OpHelpers.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// The group every collective names: at least one rank; `ranks`, when
/// given, lists group_size distinct non-negative ranks.
LogicalResult verifyGroup(Operation *op, int64_t groupSize,
                          std::optional<ArrayRef<int64_t>> ranks) {
  if (groupSize < 1)
    return op->emitOpError()
           << "group_size " << groupSize << " must be at least 1";
  if (!ranks)
    return success();
  if (static_cast<int64_t>(ranks->size()) != groupSize)
    return op->emitOpError() << "lists " << ranks->size()
                             << " ranks for a group of " << groupSize;
  llvm::DenseSet<int64_t> seen;
  for (int64_t rank : *ranks) {
    if (rank < 0)
      return op->emitOpError() << "rank " << rank << " is negative";
    if (!seen.insert(rank).second)
      return op->emitOpError() << "lists rank " << rank << " twice";
  }
  return success();
}

/// A reduction that averages needs a float type.
LogicalResult verifyReduction(Operation *op, CollectiveReduction reduction,
                              Type elt) {
  if (reduction == CollectiveReduction::Mean && !isa<FloatType>(elt))
    return op->emitOpError()
           << "mean over the ranks needs a float type, not " << elt;
  return success();
}

/// Dimension 0 of `shape` scaled by `groupSize`: multiplied (gathering) or
/// divided (scattering, which must divide evenly).
LogicalResult scaleLeading(ArrayRef<int64_t> input, int64_t groupSize,
                           bool gather, Shape &shape, OptLoc loc,
                           StringRef what) {
  shape.assign(input.begin(), input.end());
  if (groupSize < 1)
    return emitOptionalError(loc, what, ": group_size ", groupSize,
                             " must be at least 1");
  if (shape.empty())
    return emitOptionalError(loc, what,
                             " needs a tensor of rank 1 or more: it splits "
                             "or joins dimension 0");
  if (gather) {
    shape[0] *= groupSize;
  } else {
    if (shape[0] % groupSize != 0)
      return emitOptionalError(loc, what, ": dimension 0 (", shape[0],
                               ") does not split into ", groupSize,
                               " equal slices");
    shape[0] /= groupSize;
  }
  return success();
}

} // namespace

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *, OptLoc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyGroup(*this, getGroupSize(), getRanks())))
    return failure();
  return verifyReduction(*this, getReduction(), eltOf(getInput()));
}

LogicalResult ReduceScatterOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(scaleLeading(shapeOf(adaptor.getInput()), adaptor.getGroupSize(),
                          /*gather=*/false, shape, loc,
                          "memfit.reduce_scatter")))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyGroup(*this, getGroupSize(), getRanks())))
    return failure();
  return verifyReduction(*this, getReduction(), eltOf(getInput()));
}

LogicalResult AllGatherOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(scaleLeading(shapeOf(adaptor.getInput()), adaptor.getGroupSize(),
                          /*gather=*/true, shape, loc, "memfit.all_gather")))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

LogicalResult AllGatherOp::verify() {
  return verifyGroup(*this, getGroupSize(), getRanks());
}

LogicalResult BroadcastOp::inferReturnTypes(MLIRContext *, OptLoc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult BroadcastOp::verify() {
  if (failed(verifyGroup(*this, getGroupSize(), getRanks())))
    return failure();
  auto root = static_cast<int64_t>(getRoot());
  auto groupSize = static_cast<int64_t>(getGroupSize());
  if (root < 0 || root >= groupSize)
    return emitOpError() << "root " << root << " is outside the group of "
                         << groupSize;
  return success();
}
