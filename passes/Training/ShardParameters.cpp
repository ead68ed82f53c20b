//===- ShardParameters.cpp - ZeRO stage 3: parameters sharded by rows -----===//
//
// Under ZeRO stage 3 a trained parameter is stored as this rank's rows
// only, like its optimizer states (Optimizer.cpp). Its value in the module
// is cut to those rows, so the executable each rank compiles holds its own
// part of the weights; every read of the parameter becomes an all-gather of
// the ranks' rows just before the op that reads it. The chains of
// per-element ops between a parameter and its readers (a transpose for a
// contraction, the 16-bit working copy of mixed precision, a reshape) are
// copied to each reader, so that nothing the size of a whole parameter is
// kept from the forward to the backward: what the backward reads is
// gathered again. A cast to fewer bits runs on the rows, before the
// gather, so that the wire carries the narrower type.
//
//===----------------------------------------------------------------------===//

#include "ShardParameters.h"

#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <cstring>
#include <functional>

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// An op that a parameter's value passes through on its way to a reader:
/// free of effects, one tensor in and one out with as many elements, a data
/// movement (transpose, reshape) or an element-wise op (a cast).
bool passesThrough(Operation *op) {
  auto opClass = dyn_cast<OpClassInterface>(op);
  if (!opClass || op->getNumOperands() != 1 || op->getNumResults() != 1 ||
      op->getNumRegions() != 0 || !isMemoryEffectFree(op))
    return false;
  if (opClass.getOpClass() != OpClass::DataMovement &&
      opClass.getOpClass() != OpClass::ElementWise)
    return false;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return in && out && in.hasStaticShape() && out.hasStaticShape() &&
         in.getNumElements() == out.getNumElements();
}

/// Whether `op` may run on the rows before the gather: element-wise, the
/// same shape out as in (a cast).
bool commutesWithGather(Operation *op) {
  auto opClass = cast<OpClassInterface>(op);
  return opClass.getOpClass() == OpClass::ElementWise &&
         cast<RankedTensorType>(op->getOperand(0).getType()).getShape() ==
             cast<RankedTensorType>(op->getResult(0).getType()).getShape();
}

/// The parameter's value cut to rank `rank`'s `c` rows (zero rows past the
/// end), or null where it is neither stored bytes nor a splat.
ElementsAttr rowsOf(ParameterOp param, RankedTensorType sliceType,
                    int64_t rank) {
  RankedTensorType type = param.getType();
  if (auto dense = dyn_cast<DenseElementsAttr>(param.getValue());
      dense && dense.isSplat())
    return cast<ElementsAttr>(dense.resizeSplat(sliceType));
  ArrayRef<char> bytes = storedBytes(param.getValue());
  int64_t rows = type.getDimSize(0), c = sliceType.getDimSize(0);
  if (bytes.empty() || rows == 0 || bytes.size() % uint64_t(rows))
    return nullptr;
  uint64_t rowBytes = bytes.size() / uint64_t(rows);
  std::vector<char> mine(uint64_t(c) * rowBytes, 0);
  int64_t begin = std::min(rows, rank * c), end = std::min(rows, begin + c);
  if (end > begin)
    std::memcpy(mine.data(), bytes.data() + uint64_t(begin) * rowBytes,
                uint64_t(end - begin) * rowBytes);
  return elementsFromBytes(sliceType, mine, param.getSymName());
}

/// Rebuilds one reader's operand from the parameter's rows.
class Regather {
public:
  Regather(ParameterOp param, int64_t shards, int64_t rows)
      : param_(param), shards_(shards), rows_(rows) {}

  /// `value` (the parameter's load or an op on its way) rebuilt at `b`'s
  /// point for `reader`: its own load, the gather, and copies of the ops
  /// between, all at the reader's location, so that they count as part of
  /// the reader's layer (memfit-remat recomputes a layer's gathers with
  /// it rather than keeping them from the forward).
  Value wholeAt(OpBuilder &b, Value value, Operation *reader) {
    at_ = reader->getLoc();
    Piece piece = rebuild(b, value);
    return piece.whole ? piece.value : gather(b, piece.value);
  }

private:
  struct Piece {
    Value value;
    bool whole; // gathered, or still this rank's rows
  };

  Piece rebuild(OpBuilder &b, Value value) {
    Operation *def = value.getDefiningOp();
    if (isa<LoadParameterOp>(def))
      return {LoadParameterOp::create(
                  b, at_, param_.getType(),
                  FlatSymbolRefAttr::get(param_.getSymNameAttr())),
              false};
    Piece in = rebuild(b, def->getOperand(0));
    if (!in.whole && commutesWithGather(def)) {
      Operation *copy = b.clone(*def);
      copy->setLoc(at_);
      copy->setOperand(0, in.value);
      auto type = cast<RankedTensorType>(def->getResult(0).getType());
      copy->getResult(0).setType(
          withRows(type, cast<RankedTensorType>(in.value.getType())
                             .getDimSize(0)));
      return {copy->getResult(0), false};
    }
    Value whole = in.whole ? in.value : gather(b, in.value);
    Operation *copy = b.clone(*def);
    copy->setLoc(at_);
    copy->setOperand(0, whole);
    return {copy->getResult(0), true};
  }

  /// Every rank's rows, concatenated, less the padding rows.
  Value gather(OpBuilder &b, Value rowsOfRank) {
    Location loc = at_;
    auto gatherOp =
        AllGatherOp::create(b, loc, rowsOfRank, shards_, DenseI64ArrayAttr());
    // Numbered, so that CSE keeps one gather per reader rather than one
    // whole parameter from the forward to the backward.
    gatherOp->setAttr(kRegatherAttr, b.getI64IntegerAttr(count_++));
    Value whole = gatherOp.getResult();
    auto type = cast<RankedTensorType>(whole.getType());
    if (type.getDimSize(0) > rows_)
      whole = SliceOp::create(b, loc, whole, ArrayRef<int64_t>{0},
                              ArrayRef<int64_t>{rows_}, ArrayRef<int64_t>{0},
                              ArrayRef<int64_t>{1});
    return whole;
  }

  ParameterOp param_;
  int64_t shards_, rows_;
  int64_t count_ = 0;
  Location at_ = UnknownLoc::get(param_.getContext());
};

} // namespace

RankedTensorType mlir::memfit::withRows(RankedTensorType type,
                                        int64_t rows) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = rows;
  return RankedTensorType::get(shape, type.getElementType());
}

LogicalResult mlir::memfit::shardParameterRows(ModuleOp module,
                                               ParameterOp param,
                                               int64_t shards, int64_t rank) {
  RankedTensorType type = param.getType();
  if (type.getRank() == 0 || !type.hasStaticShape())
    return param.emitError("ZeRO stage 3 shards parameters by rows; '")
           << param.getSymName() << "' is " << type;
  const int64_t rows = type.getDimSize(0);
  const int64_t c = (rows + shards - 1) / shards;
  RankedTensorType sliceType = withRows(type, c);

  // The reads: each load, and through the ops a value passes, the ops that
  // read it (the readers, each with the value it reads).
  SmallVector<LoadParameterOp> loads;
  module.walk([&](LoadParameterOp load) {
    if (load.getName() == param.getSymName())
      loads.push_back(load);
  });
  llvm::SetVector<Operation *> between;
  SmallVector<std::pair<Operation *, Value>> readers;
  std::function<void(Value)> visit = [&](Value value) {
    llvm::SetVector<Operation *> users(value.user_begin(), value.user_end());
    for (Operation *user : users) {
      if (passesThrough(user)) {
        if (between.insert(user))
          visit(user->getResult(0));
        continue;
      }
      readers.push_back({user, value});
    }
  };
  for (LoadParameterOp load : loads)
    visit(load.getResult());

  ElementsAttr cut = rowsOf(param, sliceType, rank);
  if (!cut)
    return param.emitError("ZeRO stage 3: cannot cut the rows of '")
           << param.getSymName() << "' (its value is neither stored bytes "
           << "nor a splat)";
  param.setValueAttr(cut);
  param->setAttr(kWholeRowsAttr,
                 IntegerAttr::get(IntegerType::get(module.getContext(), 64),
                                  rows));

  // Each reader gets its own gather, right before it.
  Regather regather(param, shards, rows);
  for (auto [reader, value] : readers) {
    OpBuilder b(reader);
    Value whole = regather.wholeAt(b, value, reader);
    reader->replaceUsesOfWith(value, whole);
  }
  // The old loads and the ops between, unread now.
  for (Operation *op : llvm::reverse(between))
    op->erase();
  for (LoadParameterOp load : loads)
    load->erase();
  return success();
}
