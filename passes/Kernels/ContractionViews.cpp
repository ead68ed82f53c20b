//===- ContractionViews.cpp - matmul operands and results in place --------===//
//
// memfit-fuse's `views` rewrite: a matmul or kernel operand that kernels
// only transposed or split off another value (through reshapes; the
// attention heads split off a QKV projection) becomes a
// memfit.strided_view of that value, read in place by the library call or
// the kernel's code (element-wise ops and attention's rows), when every
// reader of those kernels' results takes a view; a kernel that only
// transposes a matmul's result (the heads merged back), or the
// concatenation of several, becomes the matmuls' result_perm, and one that
// only transposes an attention kernel's result is written in place by it.
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/RowFrame.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::fusion;

namespace {

//===----------------------------------------------------------------------===//
// Strided operands
//===----------------------------------------------------------------------===//

/// A tensor's elements in another's buffer: element i at offset +
/// sum(i[d] * strides[d]).
struct Strided {
  int64_t offset = 0;
  SmallVector<int64_t> shape, strides;
};

/// The row-major layout of a tensor of `shape` in its own buffer.
Strided packedLayout(ArrayRef<int64_t> shape) {
  Strided layout{0, SmallVector<int64_t>(shape),
                 SmallVector<int64_t>(shape.size(), 1)};
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    layout.strides[d] = layout.strides[d + 1] * shape[d + 1];
  return layout;
}

/// `layout` with the same elements, row-major, in `shape`, when strides
/// say it: the dimensions that merge (or split) must be contiguous in the
/// layout. Dimensions of extent 1 take stride 0.
std::optional<Strided> reshapeLayout(const Strided &layout,
                                     ArrayRef<int64_t> shape) {
  SmallVector<int64_t> from, fromStrides;
  for (auto [size, stride] : llvm::zip(layout.shape, layout.strides))
    if (size != 1) {
      from.push_back(size);
      fromStrides.push_back(stride);
    }
  Strided result{layout.offset, SmallVector<int64_t>(shape),
                 SmallVector<int64_t>(shape.size(), 0)};
  size_t i = 0, j = 0;
  while (true) {
    while (j < shape.size() && shape[j] == 1)
      ++j;
    if (i == from.size() || j == shape.size())
      return i == from.size() && j == shape.size()
                 ? std::optional<Strided>(result)
                 : std::nullopt;
    // The smallest groups [i, i1) and [j, j1) of equal extent.
    size_t i1 = i + 1, j1 = j + 1;
    int64_t a = from[i], b = shape[j];
    while (a != b) {
      if (a < b) {
        if (i1 == from.size())
          return std::nullopt;
        a *= from[i1++];
      } else {
        if (j1 == shape.size())
          return std::nullopt;
        b *= shape[j1++];
      }
    }
    for (size_t t = i; t + 1 < i1; ++t)
      if (fromStrides[t] != fromStrides[t + 1] * from[t + 1])
        return std::nullopt;
    int64_t stride = fromStrides[i1 - 1];
    for (size_t t = j1; t-- > j;) {
      result.strides[t] = shape[t] == 1 ? 0 : stride;
      stride *= shape[t];
    }
    i = i1;
    j = j1;
  }
}

/// The one op of a kernel that only moves data (a transpose, a split or a
/// slice of its first input), else null.
Operation *soleMovement(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return nullptr;
  Operation *op = &*ops.begin();
  if (!isa<TransposeOp, SplitOp, SliceOp>(op) || !isPure(op) ||
      !isa<BlockArgument>(op->getOperand(0)))
    return nullptr;
  return op;
}

/// The transpose of `kernel` when the kernel only transposes its one
/// input and is that input's only reader (a result that the producer can
/// write transposed instead), else null.
TransposeOp transposeOfSoleReader(KernelOp kernel) {
  auto transpose = dyn_cast_or_null<TransposeOp>(soleMovement(kernel));
  if (!transpose || kernel.getInputs().size() != 1 ||
      !kernel.getInputs()[0].hasOneUse())
    return {};
  return transpose;
}

/// How a matmul operand `value` reads another value's buffer when views
/// and kernels that only transpose or split (or, with `slices`, slice)
/// made it (`kernels`, collected) from that value: the value and the
/// layout, else nothing.
std::optional<std::pair<Value, Strided>>
traceStrided(Value value, SmallVectorImpl<KernelOp> &kernels, bool slices) {
  // What each step does to the layout, from `value` back to the source.
  SmallVector<std::function<std::optional<Strided>(const Strided &)>> steps;
  Value v = value;
  while (Operation *def = v.getDefiningOp()) {
    if (isBufferView(def) && !isa<StridedViewOp>(def)) {
      SmallVector<int64_t> shape(
          cast<RankedTensorType>(v.getType()).getShape());
      steps.push_back(
          [shape](const Strided &l) { return reshapeLayout(l, shape); });
      v = def->getOperand(0);
      continue;
    }
    auto kernel = dyn_cast<KernelOp>(def);
    Operation *op = kernel ? soleMovement(kernel) : nullptr;
    if (!op || (isa<SliceOp>(op) && !slices))
      break;
    Value yielded = cast<YieldOp>(kernel.getBodyBlock().getTerminator())
                        .getValues()[cast<OpResult>(v).getResultNumber()];
    if (yielded.getDefiningOp() != op)
      break;
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t> perm(transpose.getPerm());
      steps.push_back([perm](const Strided &l) -> std::optional<Strided> {
        Strided t{l.offset, {}, {}};
        for (int64_t d : perm) {
          t.shape.push_back(l.shape[d]);
          t.strides.push_back(l.strides[d]);
        }
        return t;
      });
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      // Each dimension from its start by its step (forward only: a view's
      // strides are not negative).
      SmallVector<SliceDim> dims;
      if (failed(resolveSlice(shapeOf(slice.getInput()), slice.getStarts(),
                              slice.getEnds(), slice.getAxes(),
                              slice.getSteps(), dims, std::nullopt)) ||
          llvm::any_of(dims, [](const SliceDim &d) { return d.step < 1; }))
        break;
      steps.push_back([dims](const Strided &l) {
        Strided t = l;
        for (auto [d, dim] : llvm::enumerate(dims)) {
          t.offset += dim.start * l.strides[d];
          t.strides[d] = l.strides[d] * dim.step;
          t.shape[d] = dim.size;
        }
        return std::optional<Strided>(t);
      });
    } else {
      auto split = cast<SplitOp>(op);
      unsigned index = cast<OpResult>(yielded).getResultNumber();
      int64_t rank = split.getInput().getType().getRank();
      // (ODS returns the I64Attr axis as uint64_t; it may count from the end.)
      int64_t axis = static_cast<int64_t>(split.getAxis());
      if (axis < 0)
        axis += rank;
      ArrayRef<int64_t> sizes = split.getSizes();
      int64_t start = 0;
      for (unsigned r = 0; r < index; ++r)
        start += sizes[r];
      int64_t size = sizes[index];
      steps.push_back([axis, start, size](const Strided &l) {
        Strided t = l;
        t.offset += start * t.strides[axis];
        t.shape[axis] = size;
        return std::optional<Strided>(t);
      });
    }
    kernels.push_back(kernel);
    v = kernel
            .getInputs()[cast<BlockArgument>(op->getOperand(0)).getArgNumber()];
  }
  if (kernels.empty())
    return std::nullopt;
  std::optional<Strided> layout =
      packedLayout(cast<RankedTensorType>(v.getType()).getShape());
  for (auto &step : llvm::reverse(steps)) {
    layout = step(*layout);
    if (!layout)
      return std::nullopt;
  }
  return std::make_pair(v, *layout);
}

/// Whether dimension `d` of `layout` is adjacent: extent 1 or stride 1.
bool adjacent(const Strided &layout, size_t d) {
  return layout.shape[d] == 1 || layout.strides[d] == 1;
}

/// Whether `layout` is the packed layout of its shape at some offset (a
/// contiguous run of rows: a slice of a gemm's operand).
bool packedAtOffset(const Strided &layout) {
  Strided packed = packedLayout(layout.shape);
  for (auto [size, stride, want] :
       llvm::zip(layout.shape, layout.strides, packed.strides))
    if (size != 1 && stride != want)
      return false;
  return true;
}

/// Whether a matmul's library call reads `layout`: a matrix whose rows or
/// columns are adjacent.
bool libraryReads(const Strided &layout) {
  size_t r = layout.shape.size();
  return r >= 2 && (adjacent(layout, r - 1) || adjacent(layout, r - 2));
}

/// Whether `kernel` can read its input `index` in place through a view of
/// `layout` (KernelWriter::scalar reads a view's elements at its strides;
/// the attention kernels read a row of a view whose last dimension is
/// adjacent): only element-wise ops of a pointwise or row kernel read it,
/// or it is an attention op's query, key, value or result gradient. Not a
/// kernel of several segments, one that quantizes, one that writes a
/// result in place into the input, or one that updates the parameter
/// `source` (the viewed value) is loaded from.
bool kernelReadsView(KernelOp kernel, unsigned index, const Strided &layout,
                     Value source) {
  if (kernel->hasAttr(kSegmentsAttr))
    return false;
  // Not a kernel that updates the viewed parameter in place: its threads
  // would read elements that others have written.
  if (auto load = bufferRoot(source).getDefiningOp<LoadParameterOp>()) {
    DenseSet<StringAttr> reads, writes;
    parametersOf(kernel, reads, writes);
    if (writes.contains(load.getNameAttr().getAttr()))
      return false;
  }
  for (unsigned r = 0; r < kernel->getNumResults(); ++r)
    if (kernel.getTiedInput(r) == kernel.getInputs()[index])
      return false;
  BlockArgument arg = kernel.getBodyBlock().getArgument(index);
  auto ops = kernel.getBodyOps();
  int64_t count = opCount(kernel);
  bool rows = count >= 2 && rowFrameOf(kernel).has_value();
  bool quantizes = llvm::any_of(
      ops, [](Operation &op) { return isa<QuantizeOp>(op); });
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    if (isa<AttentionOp, AttentionGradQueryOp, AttentionGradKeyValueOp>(user)) {
      unsigned n = use.getOperandNumber();
      bool row = n < 3 || (!isa<AttentionOp>(user) && n == 5);
      if (count != 1 || !row || !adjacent(layout, layout.shape.size() - 1))
        return false;
      continue;
    }
    // memfit.rotary reads its input at its own and its partner's
    // coordinates, at the view's strides (when the view is its domain).
    bool rotary = isa<RotaryOp>(user) && use.getOperandNumber() == 0 &&
                  ArrayRef<int64_t>(layout.shape) == shapeOf(user->getResult(0));
    if (quantizes || !(isScalarOp(user) || rotary || (rows && isRowOp(user))))
      return false;
    if (!rows && !isPointwise(kernel))
      return false;
  }
  return !arg.use_empty();
}

//===----------------------------------------------------------------------===//
// Results written transposed (result_perm)
//===----------------------------------------------------------------------===//

/// The matmul whose result `value` is through views that only add or
/// drop dimensions of extent 1, when nothing else reads it and it can
/// take a result_perm; else null.
MatMulOp unitViewedMatMul(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!value.hasOneUse())
      return {};
    if (auto matmul = dyn_cast<MatMulOp>(def))
      return isa<FloatType>(matmul.getType().getElementType()) &&
                     matmul.getLhs().getType().getRank() >= 2 &&
                     matmul.getRhs().getType().getRank() >= 2 &&
                     !llvm::is_contained(matmul.getType().getShape(), 1)
                 ? matmul
                 : MatMulOp();
    if (!isBufferView(def) || isa<StridedViewOp>(def))
      return {};
    auto dropUnits = [](Type t) {
      SmallVector<int64_t> shape;
      for (int64_t d : cast<RankedTensorType>(t).getShape())
        if (d != 1)
          shape.push_back(d);
      return shape;
    };
    if (dropUnits(value.getType()) != dropUnits(def->getOperand(0).getType()))
      return {};
    value = def->getOperand(0);
  }
  return {};
}

/// `matmul` writing its result further transposed by `perm` (composed
/// with its result_perm), at `b`'s point, with its attributes.
MatMulOp withResultPerm(OpBuilder &b, MatMulOp matmul, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> composed;
  for (int64_t d : perm)
    composed.push_back(matmul.getResultPerm() ? (*matmul.getResultPerm())[d]
                                              : d);
  auto permuted = MatMulOp::create(
      b, matmul.getLoc(), matmul.getLhs(), matmul.getRhs(), matmul.getTransA(),
      matmul.getTransB(), b.getDenseI64ArrayAttr(composed));
  copyMemfitAttrs(matmul, permuted);
  return permuted;
}

/// A matmul that writes its result transposed by `perm` (over `viewed`,
/// its result seen through views adding dimensions of extent 1) in place,
/// when that keeps the last dimension last; else null.
MatMulOp permutedThroughUnits(OpBuilder &b, MatMulOp matmul,
                              RankedTensorType viewed, ArrayRef<int64_t> perm) {
  // Each non-unit dimension of the view is the next of the product's.
  SmallVector<int64_t> productDim(viewed.getRank(), -1);
  int64_t next = 0;
  for (auto [d, size] : llvm::enumerate(viewed.getShape()))
    if (size != 1)
      productDim[d] = next++;
  SmallVector<int64_t> induced;
  for (int64_t d : perm)
    if (productDim[d] >= 0)
      induced.push_back(productDim[d]);
  int64_t rank = matmul.getType().getRank();
  if (static_cast<int64_t>(induced.size()) != rank ||
      induced.back() != rank - 1)
    return {};
  return withResultPerm(b, matmul, induced);
}

/// When `kernel` only transposes the concatenation of matmul results
/// (through views of extent-1 dimensions; the gradients of Q, K and V
/// joined and moved back into the QKV projection's layout), the matmuls
/// write their results transposed and one kernel concatenates them along
/// the transposed axis: the concatenation before the transpose is not
/// stored. Returns whether it did.
bool permuteConcatInputs(KernelOp kernel) {
  TransposeOp transpose = transposeOfSoleReader(kernel);
  if (!transpose)
    return false;
  Value joined = kernel.getInputs()[0];
  auto concatKernel = joined.getDefiningOp<KernelOp>();
  if (!concatKernel || concatKernel->getNumResults() != 1)
    return false;
  auto ops = concatKernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return false;
  auto concat = dyn_cast<ConcatOp>(*ops.begin());
  if (!concat || !isPure(concat))
    return false;
  SmallVector<MatMulOp> matmuls;
  for (Value input : concat.getInputs()) {
    auto arg = dyn_cast<BlockArgument>(input);
    MatMulOp matmul =
        arg ? unitViewedMatMul(concatKernel.getInputs()[arg.getArgNumber()])
            : MatMulOp();
    if (!matmul || llvm::is_contained(matmuls, matmul))
      return false;
    matmuls.push_back(matmul);
  }
  ArrayRef<int64_t> perm = transpose.getPerm();
  int64_t rank = perm.size();
  int64_t axis = static_cast<int64_t>(concat.getAxis());
  if (axis < 0)
    axis += rank;
  int64_t newAxis = llvm::find(perm, axis) - perm.begin();
  OpBuilder b(concatKernel);
  SmallVector<Value> pieces;
  SmallVector<Operation *> made;
  for (auto [matmul, input] : llvm::zip(matmuls, concat.getInputs())) {
    auto viewed = cast<RankedTensorType>(input.getType());
    b.setInsertionPoint(matmul);
    MatMulOp permuted = permutedThroughUnits(b, matmul, viewed, perm);
    if (!permuted) {
      for (Operation *op : llvm::reverse(made))
        op->erase();
      return false;
    }
    made.push_back(permuted);
    SmallVector<int64_t> shape;
    for (int64_t d : perm)
      shape.push_back(viewed.getDimSize(d));
    b.setInsertionPointAfter(permuted);
    auto piece = ReshapeOp::create(
        b, matmul.getLoc(),
        RankedTensorType::get(shape, viewed.getElementType()), permuted);
    made.push_back(piece);
    pieces.push_back(piece);
  }
  b.setInsertionPoint(concatKernel);
  MergedKernel merged;
  for (Value piece : pieces)
    merged.addInput(piece);
  KernelOp joinedKernel =
      merged.create(b, concatKernel.getLoc(), kernel->getResultTypes());
  copyMemfitAttrs(concatKernel, joinedKernel);
  copyMemfitAttrs(kernel, joinedKernel);
  SmallVector<Value> args;
  for (Value piece : pieces)
    args.push_back(merged.body->getArgument(merged.index.lookup(piece)));
  auto newConcat =
      ConcatOp::create(b, concat.getLoc(), args, b.getI64IntegerAttr(newAxis));
  for (NamedAttribute attr : concat->getAttrs())
    if (attr.getName() != concat.getAxisAttrName())
      newConcat->setAttr(attr.getName(), attr.getValue());
  YieldOp::create(b, concat.getLoc(), newConcat.getResult());
  kernel->getResult(0).replaceAllUsesWith(joinedKernel->getResult(0));
  kernel->erase();
  SmallVector<Value> inputs(concatKernel.getInputs());
  concatKernel->erase();
  // The views between and the matmuls that the permuted ones replace.
  for (Value input : inputs)
    while (Operation *def = input.getDefiningOp()) {
      if (!def->use_empty())
        break;
      input = isa<MatMulOp>(def) ? Value() : def->getOperand(0);
      def->erase();
      if (!input)
        break;
    }
  return true;
}

/// When `kernel` only transposes a float matmul's result that nothing
/// else reads, keeping the last dimension last, the matmul writes its
/// result so transposed (result_perm) and the kernel goes. Returns
/// whether it did.
bool permuteIntoProducer(KernelOp kernel) {
  TransposeOp transpose = transposeOfSoleReader(kernel);
  if (!transpose)
    return false;
  auto matmul = kernel.getInputs()[0].getDefiningOp<MatMulOp>();
  ArrayRef<int64_t> perm = transpose.getPerm();
  if (!matmul || !isa<FloatType>(matmul.getType().getElementType()) ||
      matmul.getLhs().getType().getRank() < 2 ||
      matmul.getRhs().getType().getRank() < 2 ||
      perm.back() != static_cast<int64_t>(perm.size()) - 1)
    return false;
  OpBuilder b(matmul);
  MatMulOp permuted = withResultPerm(b, matmul, perm);
  for (Operation *from : {kernel.getOperation(), transpose.getOperation()})
    copyMemfitAttrs(from, permuted);
  kernel->getResult(0).replaceAllUsesWith(permuted.getResult());
  kernel->erase();
  matmul->erase();
  return true;
}

/// When `kernel` only transposes a result of an attention kernel (one
/// attention op, that result yielded as it is) that nothing else reads,
/// keeping the last dimension last, the attention kernel yields the result
/// so transposed, which its code writes in place (the heads of Q's, K's
/// and V's gradients merged back into the projection's layout), and the
/// kernel goes. Returns whether it did.
bool permuteIntoAttention(KernelOp kernel) {
  TransposeOp transpose = transposeOfSoleReader(kernel);
  if (!transpose)
    return false;
  Value input = kernel.getInputs()[0];
  auto producer = input.getDefiningOp<KernelOp>();
  ArrayRef<int64_t> perm = transpose.getPerm();
  if (!producer || perm.size() != 4 || perm.back() != 3)
    return false;
  auto ops = producer.getBodyOps();
  Operation *attention = nullptr;
  for (Operation &op : ops) {
    if (isa<AttentionOp, AttentionGradQueryOp, AttentionGradKeyValueOp>(op))
      attention = attention ? nullptr : &op;
    else if (!isa<TransposeOp, ConstantOp>(op))
      return false;
  }
  auto yield = cast<YieldOp>(producer.getBodyBlock().getTerminator());
  unsigned r = cast<OpResult>(input).getResultNumber();
  if (!attention || yield.getValues()[r].getDefiningOp() != attention)
    return false;
  OpBuilder b(yield);
  IRMapping mapping;
  mapping.map(transpose.getInput(), yield.getValues()[r]);
  Operation *moved = b.clone(*transpose, mapping);
  copyMemfitAttrs(kernel, moved);
  yield->setOperand(r, moved->getResult(0));
  producer->getResult(r).setType(kernel->getResult(0).getType());
  kernel->getResult(0).replaceAllUsesWith(producer->getResult(r));
  kernel->erase();
  return true;
}

} // namespace

void fusion::viewContractionOperands(func::FuncOp func, bool slices) {
  Block &block = func.getBody().front();
  Schedule schedule(block);
  struct Candidate {
    OpOperand *use;
    Value source;
    Strided layout;
    SmallVector<KernelOp> kernels;
  };
  SmallVector<Candidate> candidates;
  // A matmul's operand that its library call reads, or a kernel's that
  // its code reads, in place.
  for (Operation &op : block) {
    auto matmul = dyn_cast<MatMulOp>(op);
    auto gemm = slices ? dyn_cast<GemmOp>(op) : GemmOp();
    auto kernel = dyn_cast<KernelOp>(op);
    if (matmul && !isa<FloatType>(matmul.getType().getElementType()))
      continue;
    if (!matmul && !gemm && !kernel)
      continue;
    for (OpOperand &use : op.getOpOperands()) {
      // A gemm reads its A and B at an offset (not its bias C, which a
      // kernel copies into the output).
      if (gemm && use.getOperandNumber() > 1)
        continue;
      Candidate c{&use, {}, {}, {}};
      auto traced = traceStrided(use.get(), c.kernels, slices);
      if (!traced)
        continue;
      c.source = traced->first;
      c.layout = traced->second;
      bool reads =
          matmul ? libraryReads(c.layout)
          : gemm ? packedAtOffset(c.layout)
                 : kernelReadsView(kernel, use.getOperandNumber(), c.layout,
                                   c.source);
      if (!reads)
        continue;
      int64_t first = schedule.position.lookup(c.kernels.back());
      if (schedule.writeBetween(first, schedule.position.lookup(&op),
                                c.source))
        continue;
      candidates.push_back(std::move(c));
    }
  }
  // Keep the candidates whose kernels all go: every reader of their
  // results (through views) is a kernel that goes or a kept candidate's
  // operand.
  bool changed = true;
  while (changed) {
    changed = false;
    llvm::SmallPtrSet<Operation *, 16> going;
    llvm::SmallPtrSet<OpOperand *, 16> taken;
    for (Candidate &c : candidates) {
      going.insert(c.kernels.begin(), c.kernels.end());
      taken.insert(c.use);
    }
    auto gone = [&](KernelOp kernel) {
      SmallVector<Value> work(kernel->getResults());
      while (!work.empty()) {
        Value v = work.pop_back_val();
        for (OpOperand &use : v.getUses()) {
          Operation *owner = use.getOwner();
          if (isBufferView(owner) && !isa<StridedViewOp>(owner))
            work.push_back(owner->getResult(0));
          else if (!going.contains(owner) && !taken.contains(&use))
            return false;
        }
      }
      return true;
    };
    auto kept = llvm::remove_if(candidates, [&](Candidate &c) {
      return !llvm::all_of(c.kernels, gone);
    });
    changed = kept != candidates.end();
    candidates.erase(kept, candidates.end());
  }
  llvm::SmallSetVector<Operation *, 16> dead;
  for (Candidate &c : candidates) {
    OpBuilder b(c.use->getOwner());
    auto view = StridedViewOp::create(b, c.use->getOwner()->getLoc(),
                                      c.use->get().getType(), c.source,
                                      b.getI64IntegerAttr(c.layout.offset),
                                      b.getDenseI64ArrayAttr(c.layout.strides));
    Value old = c.use->get();
    c.use->set(view);
    // The views that led to the kernels, when nothing else reads them.
    while (Operation *def = old.getDefiningOp()) {
      if (!def->use_empty())
        break;
      if (isa<KernelOp>(def)) {
        dead.insert(def);
        break;
      }
      old = def->getOperand(0);
      def->erase();
    }
  }
  // Kernels (last first: a split's reader before the transpose it reads)
  // and the views between them.
  std::function<void(Operation *)> erase = [&](Operation *op) {
    SmallVector<Value> inputs(op->getOperands());
    op->erase();
    for (Value input : inputs)
      if (Operation *def = input.getDefiningOp())
        if (def->use_empty() && (isBufferView(def) || isa<KernelOp>(def)))
          erase(def);
  };
  for (Operation *kernel : dead)
    if (kernel->use_empty())
      erase(kernel);
  for (KernelOp kernel : llvm::to_vector(block.getOps<KernelOp>()))
    if (!permuteIntoProducer(kernel) && !permuteIntoAttention(kernel))
      permuteConcatInputs(kernel);
}
