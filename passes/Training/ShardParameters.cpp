//===- ShardParameters.cpp - ZeRO stage 3: parameters sharded by rows -----===//
//
// Under ZeRO stage 3 a trained parameter is stored as this rank's rows
// only, like its optimizer states (Optimizer.cpp). Its value in the module
// is cut to those rows, so the executable each rank compiles holds its own
// part of the weights; the reads of the parameter become all-gathers of
// the ranks' rows, one for each layer pass that reads it: the function's
// ops fall into runs of one transformer layer (memfit::layerOf) in the
// forward or in the backward, and a run's readers of a parameter share one
// gather, placed at the start of the run, or of the layer's run before it
// (one layer of prefetch: the exchange may overlap that layer's compute);
// outside the layers, just before the first reader. The chains of
// per-element ops between a parameter and its readers (a transpose for a
// contraction, the 16-bit working copy of mixed precision, a reshape) are
// copied to each run, so that nothing the size of a whole parameter is
// kept from one layer pass to another: the backward gathers again. A cast
// to fewer bits runs on the rows, before the gather, so that the wire
// carries the narrower type.
//
//===----------------------------------------------------------------------===//

#include "ShardParameters.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <cstring>
#include <functional>
#include <optional>

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

/// A block's ops in layer passes: runs of the steps (the ops that read
/// more than weights) of one transformer layer (memfit::layerOf), in the
/// forward (before the first of memfit-autodiff's ops) or in the backward
/// (from it on). Each op belongs to the run of the latest step at or
/// before it; the backward's first run starts at its first op.
class LayerPasses {
public:
  explicit LayerPasses(Block &block);

  /// Where the weights that `op`'s layer reads are gathered: at the start
  /// of its run (its first step), or with `prefetch` at the start of the
  /// layer's run before it in the same pass. A pass's first layer is not
  /// prefetched (before it run the embeddings in the forward, the loss and
  /// the LM head in the backward: their gathers and the layer's would meet
  /// at the step's peak). Null outside the layers: there each weight is
  /// gathered at its first reader, so that a model whose layers are not
  /// known does not gather every weight at once.
  Operation *gatherPoint(Operation *op, bool prefetch) const {
    unsigned run = runOf(op);
    if (run >= backward_.size() || layer_[run].empty())
      return nullptr;
    if (prefetch && run > 0 && backward_[run - 1] == backward_[run] &&
        !layer_[run - 1].empty())
      return firstStep_[run - 1];
    return firstStep_[run];
  }
  unsigned runOf(Operation *op) const { return runOf_.lookup(op); }
  bool inBackward(Operation *op) const {
    unsigned run = runOf(op);
    return run < backward_.size() && backward_[run];
  }

private:
  DenseMap<Operation *, unsigned> runOf_;
  // Of each run: its first step, whether it is in the backward, its layer
  // (empty outside the layers).
  SmallVector<Operation *> firstStep_;
  SmallVector<bool> backward_;
  SmallVector<std::string> layer_;
};

LayerPasses::LayerPasses(Block &block) {
  // The ops that compute from weights alone: loads, constants and what
  // reads only them (a cast of a weight, its transpose, a gather of rows).
  DenseSet<Operation *> weightOnly;
  DenseMap<Operation *, std::string> layerOfStep;
  // The parameters that `op` reads, through the weight-only ops it reads.
  auto parametersRead = [&](Operation *op, SmallVectorImpl<StringRef> &names) {
    SmallVector<Operation *> work{op};
    DenseSet<Operation *> seen;
    while (!work.empty()) {
      Operation *next = work.pop_back_val();
      if (!seen.insert(next).second)
        continue;
      if (auto load = dyn_cast<LoadParameterOp>(next)) {
        names.push_back(load.getName());
        continue;
      }
      for (Value operand : next->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && weightOnly.contains(def))
          work.push_back(def);
    }
  };
  bool backward = false;
  // The current run's layer; none until its first step.
  std::optional<std::string> layer;
  for (Operation &op : block) {
    // The backward starts a run at its first op, even one that reads
    // only weights (its seed, a constant).
    if (!backward && isBackwardStep(&op)) {
      backward = true;
      if (firstStep_.empty()) { // a forward of weights alone
        firstStep_.push_back(nullptr);
        backward_.push_back(false);
        layer_.emplace_back();
      }
      firstStep_.push_back(nullptr);
      backward_.push_back(true);
      layer_.emplace_back();
      layer.reset();
    }
    bool step = false;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      step |= !def || !weightOnly.contains(def);
    }
    if (!step) {
      if (!op.hasTrait<OpTrait::IsTerminator>())
        weightOnly.insert(&op);
      runOf_[&op] = firstStep_.empty() ? 0 : firstStep_.size() - 1;
      continue;
    }
    // Its layer: by the parameters it reads and its location (a module
    // scope outside the layers is outside them), as memfit-remat finds
    // it; failing both, that of the latest step of the same pass it reads
    // (a reshape that the exporter named after no module, an op that a
    // pass made without a node); failing that, the current run's.
    SmallVector<StringRef> names;
    parametersRead(&op, names);
    std::string stepLayer = layerOf(op.getLoc(), names);
    if (stepLayer.empty() && names.empty() &&
        onnxNodeScope(op.getLoc()).empty()) {
      Operation *latest = nullptr;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && layerOfStep.count(def) &&
            backward_[runOf_.lookup(def)] == backward &&
            (!latest || latest->isBeforeInBlock(def)))
          latest = def;
      if (latest)
        stepLayer = layerOfStep.lookup(latest);
      else if (layer)
        stepLayer = *layer;
    }
    if (firstStep_.empty() || (layer && *layer != stepLayer)) {
      firstStep_.push_back(&op);
      backward_.push_back(backward);
      layer_.push_back(stepLayer);
    }
    if (!firstStep_.back()) {
      firstStep_.back() = &op;
      layer_.back() = stepLayer;
    }
    layer = stepLayer;
    layerOfStep[&op] = std::move(stepLayer);
    runOf_[&op] = firstStep_.size() - 1;
  }
}

/// Rebuilds the readers' operands of one layer pass from the parameter's
/// rows.
class Regather {
public:
  Regather(ParameterOp param, int64_t shards, int64_t rows)
      : param_(param), shards_(shards), rows_(rows) {}

  /// Starts a layer pass: its loads, casts and gathers go before
  /// `gatherAt`, the ops after the gathers before `firstReader`, all at
  /// `firstReader`'s location, so that they count as part of its layer
  /// (memfit-remat recomputes a layer's gathers with it rather than
  /// keeping them from the forward); in the backward, marked as
  /// memfit-autodiff's ops.
  void startPass(Operation *gatherAt, Operation *firstReader, bool backward) {
    gatherAt_ = gatherAt;
    useAt_ = firstReader;
    at_ = firstReader->getLoc();
    backward_ = backward;
    built_.clear();
    gathered_.clear();
  }

  /// `value` (the parameter's load or an op on its way) whole, for a
  /// reader of the current pass.
  Value whole(Value value) {
    Piece piece = rebuild(value);
    return piece.whole ? piece.value : gather(piece.value);
  }

private:
  struct Piece {
    Value value;
    bool whole; // gathered, or still this rank's rows
  };

  Operation *made(Operation *op) {
    op->setLoc(at_);
    if (backward_)
      op->setAttr(kBackwardAttr, UnitAttr::get(op->getContext()));
    return op;
  }

  Piece rebuild(Value value) {
    if (auto it = built_.find(value); it != built_.end())
      return it->second;
    Operation *def = value.getDefiningOp();
    Piece piece;
    if (isa<LoadParameterOp>(def)) {
      OpBuilder b(gatherAt_);
      piece = {LoadParameterOp::create(
                   b, at_, param_.getType(),
                   FlatSymbolRefAttr::get(param_.getSymNameAttr())),
               false};
    } else if (Piece in = rebuild(def->getOperand(0));
               !in.whole && commutesWithGather(def)) {
      OpBuilder b(gatherAt_);
      Operation *copy = made(b.clone(*def));
      copy->setOperand(0, in.value);
      auto type = cast<RankedTensorType>(def->getResult(0).getType());
      copy->getResult(0).setType(
          withRows(type, cast<RankedTensorType>(in.value.getType())
                             .getDimSize(0)));
      piece = {copy->getResult(0), false};
    } else {
      Value whole = in.whole ? in.value : gather(in.value);
      OpBuilder b(useAt_);
      Operation *copy = made(b.clone(*def));
      copy->setOperand(0, whole);
      piece = {copy->getResult(0), true};
    }
    built_[value] = piece;
    return piece;
  }

  /// Every rank's rows, concatenated, less the padding rows.
  Value gather(Value rowsOfRank) {
    Value &whole = gathered_[rowsOfRank];
    if (whole)
      return whole;
    OpBuilder b(gatherAt_);
    auto gatherOp =
        AllGatherOp::create(b, at_, rowsOfRank, shards_, DenseI64ArrayAttr());
    made(gatherOp);
    // Numbered, so that CSE keeps one gather per layer pass rather than
    // one whole parameter from the forward to the backward.
    gatherOp->setAttr(kRegatherAttr, b.getI64IntegerAttr(count_++));
    whole = gatherOp.getResult();
    auto type = cast<RankedTensorType>(whole.getType());
    if (type.getDimSize(0) > rows_)
      whole = made(SliceOp::create(b, at_, whole, ArrayRef<int64_t>{0},
                                   ArrayRef<int64_t>{rows_},
                                   ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1}))
                  ->getResult(0);
    return whole;
  }

  ParameterOp param_;
  int64_t shards_, rows_;
  int64_t count_ = 0;
  Operation *gatherAt_ = nullptr, *useAt_ = nullptr;
  Location at_ = UnknownLoc::get(param_.getContext());
  bool backward_ = false;
  DenseMap<Value, Piece> built_;
  DenseMap<Value, Value> gathered_;
};

/// One parameter's reads: its loads, the ops between them and the
/// readers, and each reader with the value it reads.
struct Reads {
  SmallVector<LoadParameterOp> loads;
  llvm::SetVector<Operation *> between;
  SmallVector<std::pair<Operation *, Value>> readers;
};

Reads readsOf(ModuleOp module, ParameterOp param) {
  Reads reads;
  module.walk([&](LoadParameterOp load) {
    if (load.getName() == param.getSymName())
      reads.loads.push_back(load);
  });
  std::function<void(Value)> visit = [&](Value value) {
    llvm::SetVector<Operation *> users(value.user_begin(), value.user_end());
    for (Operation *user : users) {
      if (passesThrough(user)) {
        if (reads.between.insert(user))
          visit(user->getResult(0));
        continue;
      }
      reads.readers.push_back({user, value});
    }
  };
  for (LoadParameterOp load : reads.loads)
    visit(load.getResult());
  return reads;
}

/// Whether an op between `from` and `to` (in one block) assigns `param`.
bool assignedBetween(Operation *from, Operation *to, ParameterOp param) {
  for (Operation *op = from; op && op != to; op = op->getNextNode())
    if (auto assign = dyn_cast<AssignOp>(op);
        assign && assign.getName() == param.getSymName())
      return true;
  return false;
}

} // namespace

RankedTensorType mlir::memfit::withRows(RankedTensorType type,
                                        int64_t rows) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = rows;
  return RankedTensorType::get(shape, type.getElementType());
}

/// Cuts `param` to the rank's rows and gathers it for each layer pass
/// that reads it.
static LogicalResult
shardOne(ModuleOp module, ParameterOp param, const Reads &reads,
         int64_t shards, int64_t rank, bool prefetch,
         const DenseMap<Block *, std::unique_ptr<LayerPasses>> &passes) {
  RankedTensorType type = param.getType();
  const int64_t rows = type.getDimSize(0);
  const int64_t c = (rows + shards - 1) / shards;
  ElementsAttr cut = rowsOf(param, withRows(type, c), rank);
  if (!cut)
    return param.emitError("ZeRO stage 3: cannot cut the rows of '")
           << param.getSymName() << "' (its value is neither stored bytes "
           << "nor a splat)";
  param.setValueAttr(cut);
  param->setAttr(kWholeRowsAttr,
                 IntegerAttr::get(IntegerType::get(module.getContext(), 64),
                                  rows));

  // The readers by layer pass, in the order of their first reader.
  llvm::MapVector<std::pair<Block *, unsigned>,
                  SmallVector<std::pair<Operation *, Value>>>
      byPass;
  for (auto [reader, value] : reads.readers) {
    Block *block = reader->getBlock();
    byPass[{block, passes.at(block)->runOf(reader)}].push_back(
        {reader, value});
  }
  Regather regather(param, shards, rows);
  for (auto &[key, readers] : byPass) {
    const LayerPasses &layers = *passes.at(key.first);
    Operation *first = readers.front().first;
    for (auto [reader, value] : readers)
      if (reader->isBeforeInBlock(first))
        first = reader;
    // At the start of the layer pass or of the one before (unless the
    // parameter is assigned in between), else at the first reader.
    Operation *at = layers.gatherPoint(first, prefetch);
    if (!at || (at != first && (!at->isBeforeInBlock(first) ||
                                assignedBetween(at, first, param))))
      at = first;
    regather.startPass(at, first, layers.inBackward(first));
    for (auto [reader, value] : readers)
      reader->replaceUsesOfWith(value, regather.whole(value));
  }
  // The old loads and the ops between, unread now.
  for (Operation *op : llvm::reverse(reads.between))
    op->erase();
  for (LoadParameterOp load : reads.loads)
    load->erase();
  return success();
}

LogicalResult mlir::memfit::shardParameterRows(ModuleOp module,
                                               ArrayRef<ParameterOp> params,
                                               int64_t shards, int64_t rank,
                                               bool prefetch) {
  // Every read first, and the layer passes of the blocks that read, from
  // the step as it was: the gathers and loads that sharding adds compute
  // from weights alone and change no run.
  SmallVector<Reads> reads;
  DenseMap<Block *, std::unique_ptr<LayerPasses>> passes;
  for (ParameterOp param : params) {
    RankedTensorType type = param.getType();
    if (type.getRank() == 0 || !type.hasStaticShape())
      return param.emitError("ZeRO stage 3 shards parameters by rows; '")
             << param.getSymName() << "' is " << type;
    reads.push_back(readsOf(module, param));
    for (auto [reader, value] : reads.back().readers) {
      std::unique_ptr<LayerPasses> &block = passes[reader->getBlock()];
      if (!block)
        block = std::make_unique<LayerPasses>(*reader->getBlock());
    }
  }
  for (auto [param, paramReads] : llvm::zip(params, reads))
    if (failed(shardOne(module, param, paramReads, shards, rank, prefetch,
                        passes)))
      return failure();
  return success();
}
