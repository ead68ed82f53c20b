//===- ChainsAndRows.cpp - producers merged into their consumers ----------===//
//
// memfit-fuse's kernel merges: a kernel is merged into the kernel that
// first reads its results, as one pointwise kernel (an element-wise chain)
// or as one row kernel (a reduction with its element-wise prologue or
// epilogue, reductions of one frame in sequence), and a row kernel into a
// later sibling of the same frame that reads one of its inputs. A merge is
// made only when it keeps the schedule's rules (FusionRules.h): no
// in-place update of what the producer reads comes between, and no step
// holds more bytes than the function's peak.
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/RowFrame.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::fusion;

namespace {

/// How many kernels after a row kernel are looked at for a sibling.
constexpr int64_t kSiblingWindow = 8;

/// The kernel that reads `producer`'s results first, when every other
/// reader comes after it (so the merged kernel, at its place, can hand
/// them the results); else null.
KernelOp firstConsumer(KernelOp producer,
                       DenseMap<Operation *, int64_t> &position) {
  // The ops that read the results, through views (a view runs nothing:
  // Llama's cos table, unsqueezed right after the kernel that computes
  // it, is not its first reader).
  SmallVector<Operation *> readers, throughViews;
  for (Value result : producer->getResults())
    for (Operation *user : result.getUsers()) {
      if (isBufferView(user))
        collectViewReaders(user->getResult(0), throughViews);
      else
        readers.push_back(user);
    }
  llvm::append_range(readers, throughViews);
  KernelOp consumer;
  int64_t first = INT64_MAX;
  for (Operation *reader : readers)
    if (position.lookup(reader) < first) {
      first = position.lookup(reader);
      consumer = dyn_cast<KernelOp>(reader);
    }
  // It reads the results themselves, none through a view (the merged
  // kernel would read a view of its own result).
  if (!consumer || llvm::is_contained(throughViews, consumer.getOperation()))
    return {};
  for (Operation *reader : readers)
    if (reader != consumer && position.lookup(reader) <= first)
      return {};
  return consumer;
}

/// Whether `producer` has results that ops other than `consumer` read.
bool readElsewhere(KernelOp producer, KernelOp consumer) {
  return llvm::any_of(producer->getUsers(),
                      [&](Operation *user) { return user != consumer; });
}

/// Whether pointwise kernels merge as one pointwise kernel: the
/// producer's results exist at the consumer's index only, so they must
/// have its shape, and only its element-wise ops may read them (data
/// movement reads kernel inputs).
bool fitsPointwise(KernelOp producer, KernelOp consumer) {
  if (!isPointwise(producer) || !isPointwise(consumer))
    return false;
  ArrayRef<int64_t> domain =
      cast<RankedTensorType>(consumer->getResult(0).getType()).getShape();
  for (Type type : producer->getResultTypes())
    if (cast<RankedTensorType>(type).getShape() != domain)
      return false;
  for (auto [i, input] : llvm::enumerate(consumer.getInputs())) {
    if (input.getDefiningOp() != producer)
      continue;
    for (Operation *user : consumer.getBodyBlock().getArgument(i).getUsers())
      if (!isScalarOp(user))
        return false;
  }
  return true;
}

/// Whether every op of `kernel` belongs in a row kernel of `frame`:
/// reductions of that frame, element-wise ops computing full or row
/// values, constants. A reduction's results must be row values too: one
/// without keepdims whose reduced axes are not all leading (a sum over the
/// last axis of 2x4x8 to 2x4) has a value per row but not the row shape
/// that the row kernel writes and that element-wise ops broadcast, so it
/// stays a kernel of its own.
bool fitsFrame(KernelOp kernel, const RowFrame &frame) {
  auto fullOrRow = [&](Type type) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(type).getShape();
    return shape == ArrayRef<int64_t>(frame.full) || frame.isRowShape(shape);
  };
  return llvm::all_of(kernel.getBodyOps(), [&](Operation &op) {
    if (isa<ConstantOp>(op))
      return true;
    if (isRowOp(&op)) {
      std::optional<RowFrame> own = rowFrameOf(&op);
      return own && *own == frame && llvm::all_of(op.getResultTypes(), fullOrRow);
    }
    if (!isScalarOp(&op) || op.getNumResults() != 1)
      return false;
    return fullOrRow(op.getResult(0).getType());
  });
}

/// Whether the kernels merge as one row kernel (a reduction with its
/// element-wise prologue or epilogue, or reductions of one frame in
/// sequence). A row kernel runs a block per row: element-wise work joins
/// one only where there are enough rows to fill a GPU (or little work).
/// A column sum's block reads its column with a stride, as the reduction
/// template does, and so does its prologue (on the host this measured no
/// slower than the pointwise kernel before it; a GPU would want a tiled
/// column template).
bool fitsRow(KernelOp producer, KernelOp consumer) {
  std::optional<RowFrame> frame = rowFrameOf(consumer);
  if (!frame)
    frame = rowFrameOf(producer);
  if (!frame || !fitsFrame(producer, *frame) || !fitsFrame(consumer, *frame))
    return false;
  constexpr int64_t kMinRows = 64, kSmall = 1 << 16;
  return frame->rows >= kMinRows || getNumElements(frame->full) <= kSmall;
}

/// Whether `first`, a row kernel, can run inside `second`, a later row
/// kernel of the same frame that reads one of its inputs (layer norm's
/// scale and bias gradients, column sums of one gradient): nothing reads
/// `first`'s results before `second` (so `second` does not depend on
/// it), no in-place update comes between, and every arena input of
/// `first` is read at `second` or later anyway (no bytes live longer). The
/// two hold at most `maxOps` ops (0: no limit).
bool canMergeSiblings(KernelOp first, KernelOp second, const Schedule &schedule,
                      int64_t maxOps) {
  std::optional<RowFrame> frame = rowFrameOf(first);
  std::optional<RowFrame> other = rowFrameOf(second);
  if (!frame || !other || !(*frame == *other) || !fitsRow(first, second))
    return false;
  if (llvm::none_of(first.getInputs(), [&](Value v) {
        return llvm::is_contained(second.getInputs(), v);
      }))
    return false;
  if (maxOps > 0 && opCount(first) + opCount(second) > maxOps)
    return false;
  int64_t from = schedule.position.lookup(first);
  int64_t at = schedule.position.lookup(second);
  for (Operation *user : first->getUsers())
    if (schedule.position.lookup(user) <= at)
      return false;
  if (schedule.writeBetween(from, at, first.getInputs()) ||
      updatesWhatItReads(first, second))
    return false;
  for (StringRef attr :
       {kRecomputedFromAttr, kCompressedAttr, kOffloadedAttr, kOnHostAttr})
    if (first->hasAttr(attr) != second->hasAttr(attr))
      return false;
  return llvm::all_of(first.getInputs(), [&](Value input) {
    Value root = bufferRoot(input);
    return outsideArena(root) || schedule.lastUse.lookup(root) >= at;
  });
}

/// Whether `producer` can be merged into `consumer`, its first reader: as
/// pointwise kernels (fitsPointwise) or, with `options.rows`, as a row
/// kernel (fitsRow), of at most `options.maxOps` ops, with no in-place
/// update of what the producer reads between the two and no step holding
/// more bytes than the peak. When it can, `accepted` is set to the merge's
/// changes of the live bytes.
bool canFuse(KernelOp producer, KernelOp consumer, const Schedule &schedule,
             const FusionOptions &options,
             SmallVectorImpl<Schedule::LiveChange> &accepted) {
  if (options.maxOps > 0 &&
      opCount(producer) + opCount(consumer) > options.maxOps)
    return false;
  bool pointwise = fitsPointwise(producer, consumer);
  if (!pointwise && !(options.rows && fitsRow(producer, consumer)))
    return false;
  // The host's update kernels (memfit.on_host) take in only what the
  // device sends them: a device kernel joins one only as a one-input
  // pointwise producer that no other step reads and whose input is no
  // larger than its result (a gradient's cast to f32: the narrower value
  // crosses), and none joins a device kernel.
  if (producer->hasAttr(kOnHostAttr) != consumer->hasAttr(kOnHostAttr)) {
    if (!consumer->hasAttr(kOnHostAttr) || !pointwise ||
        producer.getInputs().size() != 1 ||
        readElsewhere(producer, consumer))
      return false;
    int64_t results = 0;
    for (Value result : producer->getResults())
      results += bytesOf(result);
    if (bytesOf(producer.getInputs()[0]) > results)
      return false;
  }
  // Only a pointwise kernel may read a parameter that it updates in
  // place (each element is read before it is written).
  if (!pointwise && updatesWhatItReads(producer, consumer))
    return false;
  // A result that others read too becomes the merged kernel's: the
  // memory plan tells recomputed, compressed and offloaded values by their
  // kernel's attributes, which are the consumer's.
  if (readElsewhere(producer, consumer))
    for (StringRef attr :
         {kRecomputedFromAttr, kCompressedAttr, kOffloadedAttr})
      if (producer->hasAttr(attr) != consumer->hasAttr(attr))
        return false;
  // The merged kernel runs where the consumer does: no in-place update
  // of what the producer reads may come between.
  int64_t from = schedule.position.lookup(producer);
  if (schedule.writeBetween(from, schedule.position.lookup(consumer),
                            producer.getInputs()))
    return false;
  // Nor may it keep more bytes live: the producer's inputs that it read
  // last now live until the consumer, in place of its results that only
  // the consumer reads (results that others read too are still written,
  // by the merged kernel, and live from the consumer's step on).
  // Or, when it does, the bytes live at no step between the two exceed
  // the most the step holds anywhere (its peak is where it was).
  int64_t at = schedule.position.lookup(consumer);
  int64_t extended = 0, freed = 0;
  SmallVector<Schedule::LiveChange> changes;
  llvm::SmallPtrSet<Value, 8> seen;
  for (Value input : producer.getInputs()) {
    Value root = bufferRoot(input);
    if (!seen.insert(root).second || outsideArena(root) ||
        schedule.lastUse.lookup(root) > from)
      continue;
    extended += bytesOf(root);
    changes.push_back({from + 1, at, bytesOf(root)});
  }
  for (Value result : producer->getResults()) {
    if (llvm::all_of(result.getUsers(),
                     [&](Operation *user) { return user == consumer; })) {
      freed += bytesOf(result);
      changes.push_back({from, at, -bytesOf(result)});
    } else {
      // Written at the consumer's step instead of the producer's.
      changes.push_back({from, at - 1, -bytesOf(result)});
    }
  }
  if (extended > freed && !schedule.fitsPeak(changes, from, at))
    return false;
  accepted = std::move(changes);
  return true;
}

/// When `producer`'s first reader `first` cannot take it (a column sum of
/// a normalization's gradient between the statistics' row kernel and the
/// input gradient's), the next reader that could once `first` ran after
/// it: a kernel that `producer` fits (pointwise or as one row kernel),
/// with every other reader of `producer` after it, none of `first`'s
/// results read up to it, and no in-place update of what `first` reads in
/// between. Else null.
KernelOp consumerPastFirst(KernelOp producer, KernelOp first,
                           const Schedule &schedule,
                           const FusionOptions &options) {
  int64_t from = schedule.position.lookup(first);
  KernelOp next;
  int64_t at = INT64_MAX;
  for (Operation *user : producer->getUsers()) {
    int64_t p = schedule.position.lookup(user);
    if (user != first && p > from && p < at) {
      at = p;
      next = dyn_cast<KernelOp>(user);
    }
  }
  if (!next)
    return {};
  for (Operation *user : producer->getUsers())
    if (user != first && user != next && schedule.position.lookup(user) <= at)
      return {};
  for (Operation *user : first->getUsers())
    if (schedule.position.lookup(user) <= at)
      return {};
  if (schedule.writeBetween(from, at + 1, first.getInputs()))
    return {};
  // Nor may a kernel it would then follow write in place what it reads:
  // a result accumulated into an input (gather_grad's `into`) or stored
  // by memfit.assign into a parameter (an update writes its parameter's
  // bytes at its own step).
  DenseSet<StringAttr> reads, unused;
  parametersOf(first, reads, unused);
  llvm::SmallPtrSet<Value, 8> roots;
  for (Value input : first.getInputs())
    roots.insert(bufferRoot(input));
  for (Operation *op = first->getNextNode(); op; op = op->getNextNode()) {
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      for (unsigned r = 0; r < kernel->getNumResults(); ++r)
        if (Value tied = kernel.getTiedInput(r);
            tied && roots.contains(bufferRoot(tied)))
          return {};
      DenseSet<StringAttr> kernelReads, writes;
      parametersOf(kernel, kernelReads, writes);
      if (llvm::any_of(writes,
                       [&](StringAttr p) { return reads.contains(p); }))
        return {};
    }
    if (op == next.getOperation())
      break;
  }
  if (!fitsPointwise(producer, next) &&
      !(options.rows && fitsRow(producer, next)))
    return {};
  return next;
}

/// A kernel at `consumer`'s place that computes `producer`'s body, then
/// `consumer`'s, and yields `consumer`'s results, then those of
/// `producer`'s results that other ops read. The two are unlinked from
/// the block and added to `unlinked`, for the caller to destroy.
KernelOp fuseInto(KernelOp producer, KernelOp consumer,
                  SmallVectorImpl<Operation *> &unlinked) {
  MergedKernel parts;
  for (Value v : producer.getInputs())
    parts.addInput(v);
  for (Value v : consumer.getInputs())
    if (v.getDefiningOp() != producer)
      parts.addInput(v);

  SmallVector<OpResult> kept; // the producer's results read elsewhere
  for (OpResult result : producer->getResults())
    if (llvm::any_of(result.getUsers(),
                     [&](Operation *user) { return user != consumer; }))
      kept.push_back(result);
  SmallVector<Type> types(consumer->getResultTypes());
  for (OpResult result : kept)
    types.push_back(result.getType());

  OpBuilder builder(consumer);
  KernelOp merged = parts.create(builder, consumer.getLoc(), types);
  copyMemfitAttrs(consumer, merged);
  IRMapping first;
  SmallVector<Value> produced = parts.clone(builder, producer, first);
  // The consumer reads the producer's results as computed in the body.
  IRMapping second;
  for (auto [i, v] : llvm::enumerate(consumer.getInputs()))
    if (auto result = dyn_cast<OpResult>(v);
        result && result.getOwner() == producer)
      second.map(consumer.getBodyBlock().getArgument(i),
                 produced[result.getResultNumber()]);
  SmallVector<Value> yielded = parts.clone(builder, consumer, second);
  for (OpResult result : kept)
    yielded.push_back(produced[result.getResultNumber()]);
  YieldOp::create(builder, consumer.getLoc(), yielded);

  unsigned n = consumer->getNumResults();
  consumer->replaceAllUsesWith(merged->getResults().take_front(n));
  // Views of the producer's results between the two now view the merged
  // kernel's: they follow it.
  SmallVector<Value> keptValues(kept.begin(), kept.end());
  fusion::moveViewsAfter(keptValues, merged);
  for (auto [i, result] : llvm::enumerate(kept))
    result.replaceAllUsesWith(merged->getResult(n + i));
  for (Operation *op : {consumer.getOperation(), producer.getOperation()}) {
    op->dropAllReferences();
    op->remove();
    unlinked.push_back(op);
  }
  return merged;
}

} // namespace

void fusion::fuseChainsAndRows(func::FuncOp func,
                               const FusionOptions &options) {
  Block &block = func.getBody().front();
  // A merged kernel takes its consumer's position.
  Schedule schedule(block);
  schedule.computeLive(block);
  if (options.planPeak > 0)
    schedule.peak = std::min(schedule.peak, options.planPeak);
  const int64_t bound = schedule.peak;
  auto &position = schedule.position;
  // The schedule of the block as it now is (after a kernel moved), under
  // the same bound; false when some step holds more than the bound.
  auto reschedule = [&]() {
    schedule = Schedule(block);
    schedule.computeLive(block);
    bool fits = schedule.peak <= bound;
    schedule.peak = bound;
    return fits;
  };

  bool changed = true;
  while (changed) {
    changed = false;
    // Kernels merged in this round are looked at in the next.
    SmallVector<KernelOp> kernels(block.getOps<KernelOp>());
    // The kernels merged away are unlinked, and destroyed only when the
    // round ends: a kernel made in the round never takes the address of
    // one in `kernels` or `erased`, so what merges does not depend on
    // where the allocator puts ops (it did: a merged kernel that reused a
    // merged-away one's memory was taken for it and skipped).
    llvm::SmallPtrSet<Operation *, 16> erased;
    SmallVector<Operation *> unlinked;
    auto merge = [&](KernelOp first, KernelOp second) {
      int64_t at = position[second];
      position.erase(second);
      position.erase(first);
      erased.insert(first);
      erased.insert(second);
      KernelOp merged = fuseInto(first, second, unlinked);
      position[merged] = at;
      schedule.noteUses(*merged);
      for (Value result : merged->getResults())
        schedule.noteReaders(result);
      changed = true;
    };
    // The live-byte changes of the merge that canFuse accepted.
    SmallVector<Schedule::LiveChange> liveChanges;
    for (KernelOp producer : kernels) {
      if (erased.contains(producer))
        continue;
      KernelOp consumer = firstConsumer(producer, position);
      if (!consumer || erased.contains(consumer))
        continue;
      if (!canFuse(producer, consumer, schedule, options, liveChanges)) {
        // The first reader moved past a later one that can take the
        // producer, when the step keeps within the bound.
        KernelOp next =
            consumerPastFirst(producer, consumer, schedule, options);
        if (!next || erased.contains(next))
          continue;
        Operation *before = consumer->getNextNode();
        consumer->moveAfter(next);
        if (!reschedule() ||
            !canFuse(producer, next, schedule, options, liveChanges)) {
          consumer->moveBefore(before);
          reschedule();
          continue;
        }
        consumer = next;
      }
      schedule.apply(liveChanges);
      merge(producer, consumer);
    }
    // Siblings, once producers and consumers are merged.
    if (!changed && options.rows)
      for (auto [i, first] : llvm::enumerate(kernels)) {
        if (erased.contains(first))
          continue;
        for (KernelOp second :
             ArrayRef(kernels).drop_front(i + 1).take_front(kSiblingWindow)) {
          if (erased.contains(second) ||
              !canMergeSiblings(first, second, schedule, options.maxOps))
            continue;
          merge(first, second);
          break;
        }
      }
    // Every round, whichever merges it made (a round of producers and
    // consumers that skipped the siblings leaked its kernels: found by
    // memfit-compile-fuzz under LeakSanitizer).
    for (Operation *op : unlinked)
      op->destroy();
  }
}
