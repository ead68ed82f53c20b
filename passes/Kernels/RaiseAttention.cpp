//===- RaiseAttention.cpp - memfit-raise-attention ------------------------===//
//
// Spelled-out scaled dot-product attention as memfit.attention: from each
// softmax over the last axis of a rank-4 tensor, the matcher walks back
// through the masks, the scale and the key's transpose to the query-key
// contraction, and forward (through a training-mode dropout of the
// probabilities, which the op then draws itself) to the contraction with
// the values. What it proves equivalent becomes one op; every softmax it
// looked at gets a line in the report. See the pass description in
// Passes.td and docs/passes.md.
//
//===----------------------------------------------------------------------===//

#include "RaiseMatch.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITRAISEATTENTIONPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::raise;

namespace {

/// The most elements of a boolean mask that the matcher evaluates to look
/// for a causal pattern (a 4,096 x 4,096 mask is 16 M).
constexpr int64_t kMaxMaskElements = int64_t(1) << 26;

/// A boolean tensor evaluated at compile time: one byte per element.
struct BoolTensor {
  Shape shape;
  std::vector<uint8_t> data;
};

/// Evaluates `value` when it is a constant, or slices, negations and
/// reshapes of one; nothing otherwise.
std::optional<BoolTensor> evaluateBool(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!type.getElementType().isInteger(1) ||
      type.getNumElements() > kMaxMaskElements)
    return std::nullopt;
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto constant = dyn_cast<ConstantOp>(def)) {
    BoolTensor t{Shape(type.getShape()), {}};
    if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue())) {
      for (bool b : dense.getValues<bool>())
        t.data.push_back(b);
      if (dense.isSplat())
        t.data.assign(type.getNumElements(), t.data.front());
      return t;
    }
    // Resources hold one byte per boolean, as ONNX stores them.
    ArrayRef<char> bytes = storedBytes(cast<ElementsAttr>(constant.getValue()));
    if (static_cast<int64_t>(bytes.size()) != type.getNumElements())
      return std::nullopt;
    for (char c : bytes)
      t.data.push_back(c != 0);
    return t;
  }
  if (isa<ReshapeOp, UnsqueezeOp, SqueezeOp>(def)) {
    std::optional<BoolTensor> in = evaluateBool(def->getOperand(0));
    if (in)
      in->shape = Shape(type.getShape());
    return in;
  }
  if (auto negation = dyn_cast<NotOp>(def)) {
    std::optional<BoolTensor> in = evaluateBool(negation.getInput());
    if (in)
      for (uint8_t &b : in->data)
        b = !b;
    return in;
  }
  if (auto slice = dyn_cast<SliceOp>(def)) {
    std::optional<BoolTensor> in = evaluateBool(slice.getInput());
    SmallVector<SliceDim> dims;
    if (!in || failed(resolveSlice(in->shape, slice.getStarts(),
                                   slice.getEnds(), slice.getAxes(),
                                   slice.getSteps(), dims, std::nullopt)))
      return std::nullopt;
    Shape strides = stridesOf(in->shape);
    BoolTensor t{Shape(type.getShape()), {}};
    Shape outStrides = stridesOf(t.shape);
    int64_t n = type.getNumElements();
    t.data.resize(n);
    for (int64_t linear = 0; linear < n; ++linear) {
      int64_t src = 0;
      for (auto [d, dim] : llvm::enumerate(dims)) {
        int64_t idx = (linear / outStrides[d]) % std::max<int64_t>(dim.size, 1);
        src += (dim.start + idx * dim.step) * strides[d];
      }
      t.data[linear] = in->data[src];
    }
    return t;
  }
  return std::nullopt;
}

/// What a constant keep-mask of shape [..., S, T] (true where a query sees
/// a key) amounts to, when it does not vary over batch and heads.
enum class MaskPattern { None, Causal, Other };

MaskPattern classify(const BoolTensor &keep, int64_t queries, int64_t keys) {
  ArrayRef<int64_t> shape = keep.shape;
  if (shape.size() < 2 || getNumElements(shape.drop_back(2)) != 1 ||
      shape[shape.size() - 2] != queries || shape.back() != keys)
    return llvm::all_of(keep.data, [](uint8_t b) { return b; })
               ? MaskPattern::None
               : MaskPattern::Other;
  bool all = true, causal = true;
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < keys; ++j) {
      bool b = keep.data[i * keys + j];
      all &= b;
      causal &= b == (j <= i);
    }
  if (all)
    return MaskPattern::None;
  return causal ? MaskPattern::Causal : MaskPattern::Other;
}

/// Whether an additive mask value hides its key whatever the score: below
/// -1e30, the exponential of it plus any score that is not itself huge
/// underflows to zero in f32.
bool hides(double v) { return v <= -1e30; }

/// What an additive float mask amounts to: zeros (None), zeros on and
/// below the diagonal and hiding values above it (Causal: a Trilu that
/// keeps the strict upper triangle of a hiding fill, as exporters build
/// the causal mask, or a constant of that pattern), or something else.
MaskPattern classifyAdditive(Value mask, int64_t queries, int64_t keys) {
  auto type = cast<RankedTensorType>(mask.getType());
  ArrayRef<int64_t> shape = type.getShape();
  bool square = shape.size() >= 2 && getNumElements(shape.drop_back(2)) == 1 &&
                shape[shape.size() - 2] == queries && shape.back() == keys;
  if (auto trilu = mask.getDefiningOp<TriluOp>()) {
    std::optional<double> fill = splatValue(trilu.getInput());
    return square && fill && hides(*fill) && trilu.getUpper() &&
                   trilu.getK() == 1
               ? MaskPattern::Causal
               : MaskPattern::Other;
  }
  if (std::optional<double> c = splatValue(mask))
    return *c == 0 ? MaskPattern::None : MaskPattern::Other;
  auto constant = mask.getDefiningOp<ConstantOp>();
  if (!constant || !square || !type.getElementType().isF32() ||
      type.getNumElements() > kMaxMaskElements)
    return MaskPattern::Other;
  std::vector<float> data;
  if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue())) {
    for (float v : dense.getValues<float>())
      data.push_back(v);
  } else {
    ArrayRef<char> bytes = storedBytes(cast<ElementsAttr>(constant.getValue()));
    if (static_cast<int64_t>(bytes.size()) != type.getNumElements() * 4)
      return MaskPattern::Other;
    data.resize(type.getNumElements());
    std::memcpy(data.data(), bytes.data(), bytes.size());
  }
  // As a keep-mask: zeros keep their key, hiding values hide it.
  BoolTensor keep{Shape(shape), {}};
  for (float v : data) {
    if (v != 0 && !hides(v))
      return MaskPattern::Other;
    keep.data.push_back(v == 0);
  }
  return classify(keep, queries, keys) == MaskPattern::Causal
             ? MaskPattern::Causal
             : MaskPattern::Other;
}

/// Keys or values [B, Hkv, T, D] repeated to every query head of their
/// group, as Hugging Face's repeat_kv exports it: unsqueeze (or reshape) to
/// [B, Hkv, 1, T, D], expand to [B, Hkv, r, T, D], reshape to
/// [B, Hkv * r, T, D]. Query head h then reads head h / r, what
/// memfit.attention's grouped heads do. Returns the unrepeated tensor and r,
/// or `x` and 1.
std::pair<Value, int64_t> unrepeatHeads(Value x) {
  auto merged = x.getDefiningOp<ReshapeOp>();
  auto expand = merged ? merged.getInput().getDefiningOp<ExpandOp>() : nullptr;
  Operation *split = expand ? expand.getInput().getDefiningOp() : nullptr;
  if (!split || !isa<ReshapeOp, UnsqueezeOp>(split))
    return {x, 1};
  Value y = split->getOperand(0);
  ArrayRef<int64_t> ys = shapeOf(y), ss = shapeOf(split->getResult(0)),
                    es = shapeOf(expand.getResult()), xs = shapeOf(x);
  if (ys.size() != 4 || ss.size() != 5 || es.size() != 5)
    return {x, 1};
  int64_t r = es[2];
  bool ok = ss[0] == ys[0] && ss[1] == ys[1] && ss[2] == 1 &&
            ss.drop_front(3) == ys.drop_front(2) && es[0] == ys[0] &&
            es[1] == ys[1] && es.drop_front(3) == ys.drop_front(2) &&
            xs[0] == ys[0] && xs[1] == ys[1] * r &&
            xs.drop_front(2) == ys.drop_front(2);
  return ok ? std::pair{y, r} : std::pair{x, int64_t(1)};
}

/// One softmax that became attention, or why it did not.
struct Decision {
  std::string node;
  std::string outcome;
};

class AttentionRaiser {
public:
  /// Raises the attention that ends in `softmax`'s contraction with the
  /// values; returns the reason when it does not.
  std::string raise(SoftmaxOp softmax);

  int64_t numRaised = 0;

private:
  /// The scores' product: strips `where(hidden, -inf, x)` (or `where(keep,
  /// x, -inf)`) and `x + mask`
  /// off `scores` and records them; the reason when something else is in
  /// the way.
  std::string peelMasks(Value &scores);

  Value hidden;   // boolean, true where a key is hidden
  bool hiddenIsKeep = false; // `hidden` is the keep-mask of where(keep, x, -inf)
  bool finiteFill = false;   // an added mask hides with a finite fill
  Value additive; // float, added to the scaled scores
  SmallVector<Operation *> matched;
};

std::string AttentionRaiser::peelMasks(Value &scores) {
  for (int step = 0; step < 2; ++step) {
    Operation *def = scores.getDefiningOp();
    if (!def || !scores.hasOneUse())
      return "";
    if (auto where = dyn_cast<WhereOp>(def)) {
      if (hidden)
        return "two boolean masks";
      // where(hidden, fill, x) or where(keep, x, fill).
      std::optional<double> fill = splatValue(where.getLhs());
      hiddenIsKeep = !fill;
      if (hiddenIsKeep)
        fill = splatValue(where.getRhs());
      if (!fill)
        return "a where whose fill is not a constant";
      // A finite fill here would give a row with every key hidden scores
      // that do not depend on the queries and keys: uniform probabilities
      // but no gradient, which the op does not compute.
      if (!(std::isinf(*fill) && *fill < 0))
        return "a where whose fill is finite (a row with every key hidden "
               "would average every value, with no gradient to the scores)";
      hidden = where.getCondition();
      scores = hiddenIsKeep ? where.getLhs() : where.getRhs();
      matched.push_back(def);
      continue;
    }
    if (auto add = dyn_cast<AddOp>(def)) {
      if (additive)
        return "two float masks";
      // The scores are the side that is a product with a contraction.
      for (int side = 0; side < 2; ++side) {
        Value x = add->getOperand(side), mask = add->getOperand(1 - side);
        Product p = productOf(x);
        if (p.factors.size() == 1 && p.factors[0].getDefiningOp<MatMulOp>() &&
            x.getType() == add.getType()) {
          additive = mask;
          scores = x;
          matched.push_back(def);
          break;
        }
      }
      if (!additive)
        return "an addition to the scores that is not a mask";
      continue;
    }
    return "";
  }
  return "";
}

/// Dropout masks that nothing reads.
using UnreadMasks = llvm::SmallSetVector<Operation *, 2>;

/// The readers of `value` (one per use), but for dropout masks that
/// nothing reads (ONNX Dropout's mask output, which TorchScript exports
/// name and leave unread; not pure, so nothing else erases them), which go
/// to `unread`.
SmallVector<Operation *> readers(Value value, UnreadMasks &unread) {
  SmallVector<Operation *> users;
  for (Operation *user : value.getUsers()) {
    if (isa<DropoutMaskOp>(user) && user->use_empty())
      unread.insert(user);
    else
      users.push_back(user);
  }
  return users;
}

/// The probabilities as the contraction with the values (or a dropout of
/// them) reads them: the softmax's result, or `where(is_nan(p), 0, p)` when
/// the exporter zeroes the rows whose every key is hidden (they are NaN
/// after a softmax over -inf alone; memfit.attention gives them zeros).
/// Null when the softmax has other readers.
Value nanRowsZeroed(SoftmaxOp softmax, UnreadMasks &unread) {
  Value p = softmax.getResult();
  SmallVector<Operation *> users = readers(p, unread);
  if (users.size() == 1)
    return p;
  IsNaNOp isNan;
  WhereOp where;
  for (Operation *user : users) {
    if (auto n = dyn_cast<IsNaNOp>(user); n && !isNan)
      isNan = n;
    else if (auto w = dyn_cast<WhereOp>(user); w && !where)
      where = w;
    else
      return {};
  }
  std::optional<double> zero = where ? splatValue(where.getLhs()) : std::nullopt;
  if (!isNan || !where || !isNan->hasOneUse() ||
      where.getCondition() != isNan.getResult() || where.getRhs() != p ||
      !zero || *zero != 0 || where.getType() != p.getType())
    return {};
  return where.getResult();
}

std::string AttentionRaiser::raise(SoftmaxOp softmax) {
  hidden = additive = Value();
  hiddenIsKeep = finiteFill = false;
  matched.clear();
  auto type = cast<RankedTensorType>(softmax.getType());
  if (type.getRank() != 4)
    return llvm::formatv("rank {0}, not [batch, heads, queries, keys]",
                         type.getRank());
  int64_t axis = static_cast<int64_t>(softmax.getAxis());
  if (axis < 0)
    axis += 4;
  if (axis != 3)
    return "a softmax over another axis than the keys";
  UnreadMasks unread;
  Value probs = nanRowsZeroed(softmax, unread);
  SmallVector<Operation *> users;
  if (probs)
    users = readers(probs, unread);
  // A training-mode dropout of the probabilities, which the op draws
  // itself when nothing else reads its result or its mask.
  DropoutOp dropout =
      users.size() == 1 ? dyn_cast<DropoutOp>(users[0]) : DropoutOp();
  if (dropout) {
    probs = dropout.getResult();
    users = readers(probs, unread);
    if (users.size() != 1)
      return "the dropout's result is also read elsewhere";
  }
  if (users.size() != 1) {
    Value read = probs ? probs : softmax.getResult();
    bool maskRead = llvm::any_of(read.getUsers(), [](Operation *user) {
      return isa<DropoutMaskOp>(user) && !user->use_empty();
    });
    return maskRead ? "the dropout's mask is read"
                    : "its probabilities are also read elsewhere";
  }
  auto pv = dyn_cast<MatMulOp>(users[0]);
  if (!pv || pv.getLhs() != probs || pv.getTransA() || pv.getTransB())
    return llvm::formatv("its probabilities go to '{0}', not to a "
                         "contraction with the values",
                         users[0]->getName());
  Value scores = softmax.getInput();
  if (std::string why = peelMasks(scores); !why.empty())
    return why;
  Product p = productOf(scores);
  MatMulOp qk = p.factors.size() == 1 ? p.factors[0].getDefiningOp<MatMulOp>()
                                      : MatMulOp();
  if (!qk || qk.getTransA() || qk.getTransB() ||
      qk.getType() != softmax.getType())
    return "the scores are not a scaled contraction of queries and keys";
  Product pq = productOf(qk.getLhs()), pk = productOf(qk.getRhs());
  if (pq.factors.size() != 1 || pk.factors.size() != 1)
    return "the queries or keys are products of several tensors";
  double scale = p.coefficient * pq.coefficient * pk.coefficient;
  if (!std::isfinite(scale) || scale == 0)
    return "a scale that is zero or not finite";
  Value q = pq.factors[0], kT = pk.factors[0], v = pv.getRhs();
  if (cast<RankedTensorType>(q.getType()).getRank() != 4 ||
      cast<RankedTensorType>(kT.getType()).getRank() != 4 ||
      cast<RankedTensorType>(v.getType()).getRank() != 4 ||
      eltOf(q) != eltOf(v) || eltOf(kT) != eltOf(v))
    return "queries, keys or values not of rank 4 and one type";
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(kT), vs = shapeOf(v);
  Shape keyShape{ks[0], ks[1], ks[3], ks[2]};
  Shape result, rows;
  if (failed(inferAttentionShapes(qs, keyShape, vs, std::nullopt, result,
                                  rows, std::nullopt)) ||
      ArrayRef<int64_t>(result) != shapeOf(pv.getResult()))
    return "query, key and value shapes that attention does not take";
  int64_t queries = qs[2], keys = ks[3];

  // The masks as the conjuncts of one boolean keep-mask, where they are
  // boolean: `where(hidden, -inf, x)` keeps !hidden (`where(keep, x, -inf)`
  // keeps keep), `x + where(c, 0,
  // -inf)` keeps c, and `and`s split. A constant causal conjunct becomes
  // the flag, one of all ones goes; the rest stay the op's mask, at their
  // own broadcast shapes.
  if (additive && eltOf(additive) != eltOf(q))
    return "a mask of another type than the scores";
  SmallVector<std::pair<Value, bool>> conjuncts; // (value, negated)
  if (hidden)
    conjuncts.push_back({hidden, !hiddenIsKeep});
  bool causal = false;
  if (additive) {
    MaskPattern pattern = classifyAdditive(additive, queries, keys);
    if (pattern != MaskPattern::Other) {
      causal = pattern == MaskPattern::Causal;
      additive = Value();
    }
  }
  if (auto select = additive ? additive.getDefiningOp<WhereOp>() : WhereOp()) {
    std::optional<double> shown = splatValue(select.getLhs());
    std::optional<double> fill = splatValue(select.getRhs());
    if (shown && *shown == 0 && fill && hides(*fill)) {
      conjuncts.push_back({select.getCondition(), false});
      additive = Value();
      finiteFill |= !std::isinf(*fill);
    }
  }
  for (size_t i = 0; i < conjuncts.size(); ++i)
    if (auto both = conjuncts[i].first.getDefiningOp<AndOp>();
        both && !conjuncts[i].second) {
      conjuncts[i] = {both.getLhs(), false};
      conjuncts.push_back({both.getRhs(), false});
      --i;
    }
  SmallVector<std::pair<Value, bool>> kept;
  for (auto [value, negated] : conjuncts) {
    std::optional<BoolTensor> keep = evaluateBool(value);
    if (keep && negated)
      for (uint8_t &bit : keep->data)
        bit = !bit;
    MaskPattern pattern =
        keep ? classify(*keep, queries, keys) : MaskPattern::Other;
    if (pattern == MaskPattern::Causal && !causal)
      causal = true;
    else if (pattern != MaskPattern::None)
      kept.push_back({value, negated});
  }
  if (!kept.empty() && additive)
    return "a boolean and a float mask together";
  Shape scoreShape{qs[0], qs[1], queries, keys};
  for (auto [value, negated] : kept)
    if (shapeOf(value).size() > 4 ||
        !isBroadcastableTo(shapeOf(value), scoreShape))
      return "a mask that does not broadcast to the scores";
  if (additive && (shapeOf(additive).size() > 4 ||
                   !isBroadcastableTo(shapeOf(additive), scoreShape)))
    return "a mask that does not broadcast to the scores";

  // With a finite fill, a row whose every key a run-time mask hides
  // attends to every key alike in the spelled-out graph.
  bool uniform = finiteFill && !kept.empty();
  OpBuilder b(pv);
  matched.append({softmax, qk, pv});
  if (dropout)
    matched.push_back(dropout);
  Location loc = fusedLoc(matched);
  Value mask = additive;
  for (auto [value, negated] : kept) {
    if (negated) {
      auto negation = value.getDefiningOp<NotOp>();
      value = negation ? negation.getInput()
                       : Value(NotOp::create(b, loc, value));
    }
    mask = mask ? Value(AndOp::create(b, loc, mask, value)) : value;
  }
  // The key from k^T: the transpose's source permuted without the swap.
  Value key;
  if (auto t = kT.getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> perm(t.getPerm());
    std::swap(perm[2], perm[3]);
    bool identity = llvm::equal(perm, llvm::seq<int64_t>(0, 4));
    key = identity ? t.getInput()
                   : Value(TransposeOp::create(b, loc, t.getInput(), perm));
  } else {
    key = TransposeOp::create(b, loc, kT, ArrayRef<int64_t>{0, 1, 3, 2});
  }
  // Keys and values repeated alike to every query head of a group: the
  // op's grouped heads read them unrepeated (no [B, Hq, T, D] copies).
  auto [groupedKey, keyRepeat] = unrepeatHeads(key);
  auto [groupedValue, valueRepeat] = unrepeatHeads(v);
  if (keyRepeat > 1 && keyRepeat == valueRepeat) {
    key = groupedKey;
    v = groupedValue;
  }
  auto attention = AttentionOp::create(
      b, loc, q, key, v,
      AttentionOp::extrasOf(mask, dropout ? dropout.getDropoutStep() : Value()),
      b.getF32FloatAttr(static_cast<float>(scale)),
      causal ? b.getUnitAttr() : UnitAttr(),
      uniform ? b.getUnitAttr() : UnitAttr(),
      dropout ? dropout.getRatioAttr() : FloatAttr(),
      dropout ? dropout.getSeedAttr() : IntegerAttr(),
      dropout ? dropout.getStreamAttr() : IntegerAttr());
  pv.getResult().replaceAllUsesWith(attention.getResult());
  // Neither a dropout nor its mask is pure: the sweep of dead ops would
  // keep them, and the probabilities they read.
  if (dropout) {
    pv.erase();
    dropout.erase();
  }
  for (Operation *mask : unread)
    mask->erase();
  ++numRaised;
  return "";
}

struct MemfitRaiseAttentionPass
    : public mlir::memfit::impl::MemfitRaiseAttentionPassBase<
          MemfitRaiseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    AttentionRaiser raiser;
    std::vector<Decision> decisions;
    module.walk([&](func::FuncOp func) {
      SmallVector<SoftmaxOp> softmaxes(func.getOps<SoftmaxOp>());
      for (SoftmaxOp softmax : softmaxes) {
        std::string node = onnxNodeName(softmax.getLoc()).str();
        std::string why = raiser.raise(softmax);
        decisions.push_back(
            {node.empty() ? "(unnamed softmax)" : node,
             why.empty() ? "memfit.attention" : "stays spelled out: " + why});
      }
      // The chains that attention replaced.
      for (Operation &op : llvm::make_early_inc_range(
               llvm::reverse(func.getBody().front().getOperations())))
        if (isOpTriviallyDead(&op))
          op.erase();
    });
    if (report.empty())
      return;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openPassOutput(module, report, "attention report");
    if (!file)
      return signalPassFailure();
    raw_ostream &os = file->os();
    os << "memfit-raise-attention: " << raiser.numRaised << " of "
       << decisions.size() << " softmaxes became memfit.attention\n";
    for (const Decision &d : decisions)
      os << "  " << d.node << ": " << d.outcome << "\n";
    file->keep();
  }
};

} // namespace
