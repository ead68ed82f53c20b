//===- AttentionEmitters.cpp - attention without a score matrix -----------===//
//
// The KernelEmitterOpInterface models of memfit.attention and its gradient
// ops. The portable kernels, which the host backend runs too: one thread
// per row, holding its row's vectors in registers and streaming the rows it
// pairs with, so that no score is ever stored:
//  - attention: a thread per query row goes over the keys it sees in tiles
//    of kKeyTile, with an online softmax (the tile's maximum rescales the
//    running sum and output once per tile); it writes the output row and
//    the row's log-sum-exp;
//  - attention_grad_query: a thread per query row recomputes each
//    probability from the log-sum-exp and adds its share to dquery;
//  - attention_grad_key_value: a thread per key row goes over the queries
//    of every head of its group that see it, adding to dkey and dvalue.
// No atomics: each thread owns the gradient rows it writes, and adds in
// key or query order, so results are deterministic.
// With a dropout on the probabilities, each pair's keep test is the one
// memfit.dropout of the same step makes of the [B, Hq, S, T]
// probabilities' element ((b * Hq + h) * S + i) * T + j: the forward skips the dropped keys'
// values and scales the kept ones by 1 / (1 - ratio) with the output; the
// gradients scale dresult . value and the pair's share of dvalue by the
// factor z (1 / (1 - ratio) kept, 0 dropped). Without dropout the kernels
// are written as before, character for character.
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

namespace {

/// Keys per tile of the forward's online softmax.
constexpr int64_t kKeyTile = 32;
/// Partial sums of a dot product (writeDot).
constexpr int64_t kLanes = 8;

/// What the three kernels share: sizes, types, and how they read the mask.
struct AttentionKernel {
  KernelWriter &w;
  Operation *op;
  int64_t batch, heads, kvHeads, group, queries, keys, d, dv;
  Type type;
  std::string acc;
  bool isDouble;
  double scale;
  bool causal;
  /// A row that sees no key attends to every key alike (log-sum-exp +inf).
  bool uniform;
  Value mask;
  /// The mask's strides over [B, Hq, S, T], 0 along broadcast dimensions.
  Shape maskStrides;
  /// The dropout on the probabilities: none when the ratio is 0.
  double dropoutRatio = 0;
  std::optional<int64_t> dropoutSeed;
  int64_t dropoutStream = 0;
  /// The step the dropout draws for: its operand's element, or 0.
  std::string dropoutStep = "0LL";

  /// Whether an operand is read through a view (memfit-fuse's views: the
  /// heads of a QKV projection, read in place).
  bool views = false;
  /// Each [B, H, S, D] result's strides in its output when the kernel
  /// yields it transposed (memfit-fuse: the heads merged back, written in
  /// place), else empty.
  SmallVector<Shape> resultStrides;

  /// The offset of row (b, h, i) of result `r` in its output: `packed`,
  /// or at the strides of the transposed result the kernel yields.
  std::string outRow(unsigned r, StringRef packed, StringRef b, StringRef h,
                     StringRef i) {
    if (r >= resultStrides.size() || resultStrides[r].empty())
      return packed.str();
    StringRef names[] = {b, h, i};
    std::string start;
    for (auto [name, stride] : llvm::zip(names, resultStrides[r]))
      start += (start.empty() ? "" : " + ") + name.str() + " * " + ll(stride);
    return start;
  }

  raw_ostream &os() { return w.body(); }
  /// The offset of row (b, h, i) of operand `v` ([B, H, S, D], rows
  /// adjacent): row `packedRow` times D in a buffer of its own, or a view's
  /// offset and strides in the viewed buffer.
  std::string rowStart(Value v, StringRef packedRow, StringRef b, StringRef h,
                       StringRef i) {
    StridedViewOp view = w.viewOf(v);
    if (!view) {
      std::string row = packedRow.contains(' ')
                            ? ("(" + packedRow + ")").str()
                            : packedRow.str();
      return row + " * " + ll(shapeOf(v).back());
    }
    ArrayRef<int64_t> strides = view.getStrides();
    std::string start = ll(view.getOffset());
    StringRef names[] = {b, h, i};
    for (auto [name, stride] : llvm::zip(names, strides.take_front(3)))
      if (stride != 0)
        start += " + " + name.str() + " * " + ll(stride);
    return start;
  }
  /// The elements of that row of `v`, at `k`.
  std::function<std::string(StringRef)> atRow(Value v, StringRef packedRow,
                                               StringRef b, StringRef h,
                                               StringRef i) {
    return at(v, rowStart(v, packedRow, b, h, i));
  }
  /// Element `e` of that row of `v`, in the accumulator type.
  std::string loadRow(Value v, StringRef packedRow, StringRef b, StringRef h,
                      StringRef i, StringRef e) {
    return load(v, rowStart(v, packedRow, b, h, i) + " + " + e.str());
  }
  std::string lit(double v) const { return floatLiteral(v, isDouble); }
  std::string exp() const { return mathFn("exp", type); }
  /// An element of `value` at `offset`, in the accumulator type.
  std::string load(Value value, StringRef offset) {
    return loadAs(acc, eltOf(value), w.param(value) + "[" + offset.str() + "]");
  }
  std::string ll(int64_t v) const { return std::to_string(v) + "LL"; }

  bool dropout() const { return dropoutRatio > 0; }
  /// Whether the dropout keeps the probability of the pair of query row
  /// `row` (over B * Hq * S) and key `j`: element row * T + j of the
  /// probabilities.
  std::string keeps(StringRef row, StringRef j) const {
    return dropoutKeepTest(dropoutRatio, dropoutSeed, dropoutStream,
                           dropoutStep,
                           (row + " * " + ll(keys) + " + " + j).str());
  }
  /// 1 / (1 - ratio), the scale of a kept probability.
  std::string keptScale() const { return lit(1.0 / (1.0 - dropoutRatio)); }
  /// Writes `z`, the dropout's factor of the pair (row, j): the kept scale
  /// or 0.
  void writeDropoutFactor(StringRef indent, StringRef row, StringRef j) {
    os() << indent << "const " << acc << " z = " << keeps(row, j) << " ? "
         << keptScale() << " : " << lit(0) << ";\n";
  }
  /// Writes `dp`, dresult . value_j for the pair of query row `row`
  /// (the products `a` and `b` over Dv), times the pair's dropout factor
  /// `z` with dropout.
  void writeDp(StringRef indent, function_ref<std::string(StringRef)> a,
               function_ref<std::string(StringRef)> b, StringRef row) {
    if (!dropout())
      return writeDot(indent, "dp", a, b, dv);
    writeDot(indent, "dpv", a, b, dv);
    writeDropoutFactor(indent, row, "j");
    os() << indent << "const " << acc << " dp = dpv * z;\n";
  }

  /// The mask's offset for the pair (b, h, i, j) of the named variables.
  std::string maskOffset(StringRef b, StringRef h, StringRef i, StringRef j) {
    std::string expr;
    StringRef names[] = {b, h, i, j};
    for (auto [name, stride] : llvm::zip(names, maskStrides)) {
      if (stride == 0)
        continue;
      if (!expr.empty())
        expr += " + ";
      expr += name.str() + " * " + ll(stride);
    }
    return expr.empty() ? "0" : expr;
  }

  /// Writes `x`, the score of the pair (b, h, i, j) from `dot` (the product
  /// of the query and key rows, already computed), and a `continue` of the
  /// enclosing loop when the pair is masked out.
  void writeScore(StringRef indent, StringRef dot, StringRef b, StringRef h,
                  StringRef i, StringRef j) {
    std::string x = (dot + " * " + lit(scale)).str();
    if (mask && isa<FloatType>(eltOf(mask)))
      x += " + " + load(mask, maskOffset(b, h, i, j));
    os() << indent << "const " << acc << " x = " << x << ";\n";
    os() << indent << "if (x == " << lit(-INFINITY) << ") continue;\n";
  }

  /// Writes the skip of a pair that a boolean mask hides.
  void writeBoolMask(StringRef indent, StringRef b, StringRef h, StringRef i,
                     StringRef j) {
    if (mask && !isa<FloatType>(eltOf(mask)))
      os() << indent << "if (!" << w.param(mask) << "["
           << maskOffset(b, h, i, j) << "]) continue;\n";
  }

  /// `name[k]`, an array in registers.
  static std::function<std::string(StringRef)> reg(StringRef name) {
    std::string n = name.str();
    return [n](StringRef k) { return n + "[" + k.str() + "]"; };
  }
  /// The element of `value` at `base + k`.
  std::function<std::string(StringRef)> at(Value value, std::string base) {
    return [this, value, base](StringRef k) {
      return load(value, base + " + " + k.str());
    };
  }

  /// `name[n]` in registers, loaded from `value` at `base + k`.
  void writeRow(StringRef name, Value value, StringRef base, int64_t n) {
    os() << "  " << acc << " " << name << "[" << n << "];\n";
    os() << "  for (int k = 0; k < " << n << "; ++k) " << name
         << "[k] = " << load(value, (base + " + k").str()) << ";\n";
  }
  /// `name[D]` in registers, row (b, h, i) of `v` (rowStart).
  void writeRow(StringRef name, Value v, StringRef packedRow, StringRef b,
                StringRef h, StringRef i) {
    writeRow(name, v, rowStart(v, packedRow, b, h, i), shapeOf(v).back());
  }
  /// Writes `const acc name = sum over k < n of a(k) * b(k)`, in kLanes
  /// partial sums (`name0`, ...) added pairwise at the end: each is a chain
  /// of its own, which a C++ compiler packs into vector registers without
  /// reassociating anything (the host backend's kernels; an array of
  /// partial sums stays in memory instead), and a GPU keeps in registers.
  void writeDot(StringRef indent, StringRef name,
                function_ref<std::string(StringRef)> a,
                function_ref<std::string(StringRef)> b, int64_t n) {
    auto lane = [&](int64_t l) { return (name + Twine(l)).str(); };
    os() << indent << acc;
    for (int64_t l = 0; l < kLanes; ++l)
      os() << (l ? ", " : " ") << lane(l) << " = 0";
    os() << ";\n";
    int64_t full = n / kLanes * kLanes;
    if (full) {
      os() << indent << "for (int k = 0; k < " << full << "; k += " << kLanes
           << ") {\n";
      for (int64_t l = 0; l < kLanes; ++l) {
        std::string k = "k + " + std::to_string(l);
        os() << indent << "  " << lane(l) << " += " << a(k) << " * " << b(k)
             << ";\n";
      }
      os() << indent << "}\n";
    }
    for (int64_t k = full; k < n; ++k)
      os() << indent << lane(k - full) << " += " << a(std::to_string(k))
           << " * " << b(std::to_string(k)) << ";\n";
    std::function<std::string(int64_t, int64_t)> sum = [&](int64_t begin,
                                                           int64_t end) {
      if (end - begin == 1)
        return lane(begin);
      int64_t mid = begin + (end - begin) / 2;
      return "(" + sum(begin, mid) + " + " + sum(mid, end) + ")";
    };
    os() << indent << "const " << acc << " " << name << " = "
         << sum(0, kLanes) << ";\n";
  }

  /// `name[n]` in registers, zeros.
  void writeZeros(StringRef name, int64_t n) {
    os() << "  " << acc << " " << name << "[" << n << "];\n";
    os() << "  for (int k = 0; k < " << n << "; ++k) " << name
         << "[k] = 0;\n";
  }

  /// The query-row frame: `t` over B * Hq * S, its (b, h, i), and `kv`,
  /// the first key row of its key and value head.
  void writeQueryRowIndex() {
    w.threadLoop("t", batch * heads * queries);
    os() << "  const long long i = t % " << ll(queries) << ";\n";
    os() << "  const long long h = (t / " << ll(queries) << ") % "
         << ll(heads) << ";\n";
    os() << "  const long long b = t / " << ll(queries * heads) << ";\n";
    os() << "  const long long kv = (b * " << ll(kvHeads) << " + h / "
         << ll(group) << ") * " << ll(keys) << ";\n";
    if (views)
      os() << "  const long long hk = h / " << ll(group) << ";\n";
    os() << "  const long long keyEnd = "
         << (causal ? "i + 1 < " + ll(keys) + " ? i + 1 : " + ll(keys)
                    : ll(keys))
         << ";\n";
  }
};

/// Reads the shapes and attributes that every attention op has.
template <typename OpTy>
FailureOr<AttentionKernel> kernelFor(OpTy op, KernelWriter &w) {
  ArrayRef<int64_t> q = shapeOf(op.getQuery()), k = shapeOf(op.getKey()),
                    v = shapeOf(op.getValue());
  Type type = eltOf(op.getQuery());
  FailureOr<std::string> acc = accType(op, type);
  if (failed(acc) || !isa<FloatType>(type))
    return w.error(op) << "unsupported element type " << type, failure();
  AttentionKernel kernel{w,
                         op,
                         q[0],
                         q[1],
                         k[1],
                         q[1] / k[1],
                         q[2],
                         k[2],
                         q[3],
                         v[3],
                         type,
                         *acc,
                         type.isF64(),
                         op.getScale().convertToDouble(),
                         op.getCausal(),
                         op.getUniformHiddenRows(),
                         op.getMask(),
                         {}};
  for (Value operand : op->getOperands())
    kernel.views |= static_cast<bool>(w.viewOf(operand));
  // A result yielded transposed (the last dimension kept last): its
  // dimensions' strides in the transposed output.
  Operation *yield = op->getBlock()->getTerminator();
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    kernel.resultStrides.emplace_back();
    auto transpose = dyn_cast<TransposeOp>(yield->getOperand(r).getDefiningOp());
    if (!transpose)
      continue;
    ArrayRef<int64_t> perm = transpose.getPerm();
    Shape strides = stridesOf(shapeOf(transpose.getResult()));
    Shape &out = kernel.resultStrides.back();
    out.assign(perm.size(), 0);
    for (auto [d, from] : llvm::enumerate(perm))
      out[from] = strides[d];
  }
  kernel.dropoutRatio = op.getDropoutRatio().convertToDouble();
  kernel.dropoutSeed = op.getDropoutSeed();
  kernel.dropoutStream = op.getDropoutStream();
  if (Value step = op.getDropoutStep(); step && kernel.dropout()) {
    FailureOr<std::string> element = w.load(step, "0", op);
    if (failed(element))
      return failure();
    kernel.dropoutStep = *element;
  }
  if (Value mask = op.getMask()) {
    Shape shape(shapeOf(mask));
    shape.insert(shape.begin(), 4 - shape.size(), 1);
    Shape strides = stridesOf(shape);
    for (auto [dim, stride] : llvm::zip(shape, strides))
      kernel.maskStrides.push_back(dim == 1 ? 0 : stride);
  }
  return kernel;
}

LogicalResult emitAttention(AttentionOp op, KernelWriter &w) {
  FailureOr<AttentionKernel> k = kernelFor(op, w);
  if (failed(k))
    return failure();
  raw_ostream &os = k->os();
  std::string neg = k->lit(-INFINITY);
  k->writeQueryRowIndex();
  k->writeRow("q", op.getQuery(), "t", "b", "h", "i");
  k->writeZeros("o", k->dv);
  os << "  " << k->acc << " m = " << neg << ", l = 0;\n";
  os << "  " << k->acc << " s[" << kKeyTile << "];\n";
  os << "  for (long long j0 = 0; j0 < keyEnd; j0 += " << kKeyTile << ") {\n";
  os << "    const int n = keyEnd - j0 < " << kKeyTile << " ? (int)(keyEnd - j0) : "
     << kKeyTile << ";\n";
  os << "    " << k->acc << " tileMax = " << neg << ";\n";
  os << "    for (int jj = 0; jj < n; ++jj) {\n";
  os << "      const long long j = j0 + jj;\n";
  os << "      s[jj] = " << neg << ";\n";
  k->writeBoolMask("      ", "b", "h", "i", "j");
  k->writeDot("      ", "dot", k->reg("q"),
              k->atRow(op.getKey(), "kv + j", "b", "hk", "j"), k->d);
  k->writeScore("      ", "dot", "b", "h", "i", "j");
  os << "      s[jj] = x;\n";
  os << "      tileMax = memfit_max(tileMax, x);\n";
  os << "    }\n";
  os << "    if (tileMax == " << neg << ") continue;\n";
  // One rescale of the running sum and output per tile.
  os << "    const " << k->acc << " mNew = memfit_max(m, tileMax);\n";
  os << "    const " << k->acc << " c = " << k->exp() << "(m - mNew);\n";
  os << "    l *= c;\n";
  os << "    for (int e = 0; e < " << k->dv << "; ++e) o[e] *= c;\n";
  os << "    for (int jj = 0; jj < n; ++jj) {\n";
  os << "      if (s[jj] == " << neg << ") continue;\n";
  os << "      const " << k->acc << " p = " << k->exp() << "(s[jj] - mNew);\n";
  os << "      l += p;\n";
  if (k->dropout())
    os << "      if (!" << k->keeps("t", "j0 + jj") << ") continue;\n";
  os << "      for (int e = 0; e < " << k->dv << "; ++e) o[e] += p * "
     << k->loadRow(op.getValue(), "kv + j0 + jj", "b", "hk", "(j0 + jj)",
                   "e")
     << ";\n";
  os << "    }\n";
  os << "    m = mNew;\n";
  os << "  }\n";
  // A query that sees no key: zeros, and -inf for its log-sum-exp; or,
  // uniform, every value's mean and +inf.
  if (k->uniform) {
    os << "  if (l == 0) {\n";
    os << "    for (long long j = 0; j < " << k->ll(k->keys) << "; ++j)"
       << (k->dropout() ? " {" : "") << "\n";
    if (k->dropout())
      os << "      if (!" << k->keeps("t", "j") << ") continue;\n";
    os << "      for (int e = 0; e < " << k->dv << "; ++e) o[e] += "
       << k->loadRow(op.getValue(), "kv + j", "b", "hk", "j", "e")
       << ";\n";
    if (k->dropout())
      os << "    }\n";
    os << "    l = " << k->keys << ";\n";
    os << "    m = " << k->lit(INFINITY) << ";\n";
    os << "  }\n";
  }
  // The kept values' sum scaled by 1 / (1 - ratio) with the output.
  os << "  const " << k->acc << " inv = l > 0 ? "
     << (k->dropout() ? k->keptScale() : "1") << " / l : 0;\n";
  os << "  for (int e = 0; e < " << k->dv << "; ++e) out0["
     << k->outRow(0, "t * " + k->ll(k->dv), "b", "h", "i")
     << " + e] = " << narrow(k->type, "o[e] * inv") << ";\n";
  os << "  out1[t] = l > 0 ? (float)(m + " << mathFn("log", k->type)
     << "(l)) : " << floatLiteral(-INFINITY, false) << ";\n";
  w.setPointwiseLaunch(k->batch * k->heads * k->queries);
  return success();
}

LogicalResult emitAttention(AttentionGradQueryOp op, KernelWriter &w) {
  FailureOr<AttentionKernel> k = kernelFor(op, w);
  if (failed(k))
    return failure();
  raw_ostream &os = k->os();
  k->writeQueryRowIndex();
  k->writeRow("q", op.getQuery(), "t", "b", "h", "i");
  k->writeRow("g", op.getDresult(), "t", "b", "h", "i");
  k->writeZeros("dq", k->d);
  os << "  const " << k->acc << " lse = " << k->load(op.getLogsumexp(), "t")
     << ";\n";
  os << "  const " << k->acc << " delta = " << k->load(op.getDelta(), "t")
     << ";\n";
  // dresult . value_j, and dq's update by ds = p * (dp - delta).
  auto writeDp = [&] {
    k->writeDp("    ", k->reg("g"),
               k->atRow(op.getValue(), "kv + j", "b", "hk", "j"),
               "t");
  };
  auto writeDqUpdate = [&] {
    os << "    for (int c = 0; c < " << k->d << "; ++c) dq[c] += ds * "
       << k->loadRow(op.getKey(), "kv + j", "b", "hk", "j", "c")
       << ";\n";
  };
  // A uniform row: p = 1 / T for every key.
  if (k->uniform) {
    os << "  if (lse == " << k->lit(INFINITY) << ")\n";
    os << "  for (long long j = 0; j < " << k->ll(k->keys) << "; ++j) {\n";
    writeDp();
    os << "    const " << k->acc << " ds = (dp - delta) / " << k->keys
       << ";\n";
    writeDqUpdate();
    os << "  }\n  else\n";
  }
  os << "  if (lse != " << k->lit(-INFINITY) << ")\n";
  os << "  for (long long j = 0; j < keyEnd; ++j) {\n";
  k->writeBoolMask("    ", "b", "h", "i", "j");
  k->writeDot("    ", "dot", k->reg("q"),
              k->atRow(op.getKey(), "kv + j", "b", "hk", "j"), k->d);
  k->writeScore("    ", "dot", "b", "h", "i", "j");
  os << "    const " << k->acc << " p = " << k->exp() << "(x - lse);\n";
  writeDp();
  os << "    const " << k->acc << " ds = p * (dp - delta);\n";
  writeDqUpdate();
  os << "  }\n";
  os << "  for (int c = 0; c < " << k->d << "; ++c) out0["
     << k->outRow(0, "t * " + k->ll(k->d), "b", "h", "i")
     << " + c] = " << narrow(k->type, "dq[c] * " + k->lit(k->scale)) << ";\n";
  w.setPointwiseLaunch(k->batch * k->heads * k->queries);
  return success();
}

LogicalResult emitAttention(AttentionGradKeyValueOp op, KernelWriter &w) {
  FailureOr<AttentionKernel> k = kernelFor(op, w);
  if (failed(k))
    return failure();
  raw_ostream &os = k->os();
  // Thread t owns key row j of key head hk of sample b.
  k->w.threadLoop("t", k->batch * k->kvHeads * k->keys);
  os << "  const long long j = t % " << k->ll(k->keys) << ";\n";
  os << "  const long long hk = (t / " << k->ll(k->keys) << ") % "
     << k->ll(k->kvHeads) << ";\n";
  os << "  const long long b = t / " << k->ll(k->keys * k->kvHeads) << ";\n";
  k->writeRow("kr", op.getKey(), "t", "b", "hk", "j");
  k->writeRow("vr", op.getValue(), "t", "b", "hk", "j");
  k->writeZeros("dk", k->d);
  k->writeZeros("dv", k->dv);
  os << "  for (long long h = hk * " << k->ll(k->group) << "; h < (hk + 1) * "
     << k->ll(k->group) << "; ++h) {\n";
  os << "    const long long rows = (b * " << k->ll(k->heads) << " + h) * "
     << k->ll(k->queries) << ";\n";
  // Uniform rows see every key, the ones before j under causal too.
  os << "    for (long long i = " << (k->causal && !k->uniform ? "j" : "0")
     << "; i < " << k->ll(k->queries) << "; ++i) {\n";
  os << "      const long long r = rows + i;\n";
  os << "      const " << k->acc << " lse = " << k->load(op.getLogsumexp(), "r")
     << ";\n";
  os << "      if (lse == " << k->lit(-INFINITY) << ") continue;\n";
  os << "      " << k->acc << " p = " << k->lit(1.0) << " / " << k->keys
     << ";\n";
  if (k->uniform)
    os << "      if (lse != " << k->lit(INFINITY) << ") {\n";
  else
    os << "      {\n";
  if (k->uniform && k->causal)
    os << "      if (i < j) continue;\n";
  k->writeBoolMask("      ", "b", "h", "i", "j");
  k->writeDot("      ", "dot", k->reg("kr"),
              k->atRow(op.getQuery(), "r", "b", "h", "i"), k->d);
  k->writeScore("      ", "dot", "b", "h", "i", "j");
  os << "      p = " << k->exp() << "(x - lse);\n";
  os << "      }\n";
  k->writeDp("      ", k->reg("vr"),
             k->atRow(op.getDresult(), "r", "b", "h", "i"), "r");
  // The pair's share of dvalue: its dropped probability z * p.
  if (k->dropout())
    os << "      const " << k->acc << " pz = p * z;\n";
  os << "      for (int e = 0; e < " << k->dv << "; ++e) dv[e] += "
     << (k->dropout() ? "pz" : "p") << " * "
     << k->loadRow(op.getDresult(), "r", "b", "h", "i", "e")
     << ";\n";
  os << "      const " << k->acc << " ds = p * (dp - "
     << k->load(op.getDelta(), "r") << ");\n";
  os << "      for (int c = 0; c < " << k->d << "; ++c) dk[c] += ds * "
     << k->loadRow(op.getQuery(), "r", "b", "h", "i", "c")
     << ";\n";
  os << "    }\n";
  os << "  }\n";
  os << "  for (int c = 0; c < " << k->d << "; ++c) out0["
     << k->outRow(0, "t * " + k->ll(k->d), "b", "hk", "j")
     << " + c] = " << narrow(k->type, "dk[c] * " + k->lit(k->scale)) << ";\n";
  os << "  for (int e = 0; e < " << k->dv << "; ++e) out1["
     << k->outRow(1, "t * " + k->ll(k->dv), "b", "hk", "j")
     << " + e] = " << narrow(k->type, "dv[e]") << ";\n";
  w.setPointwiseLaunch(k->batch * k->kvHeads * k->keys);
  return success();
}

} // namespace

void cuda::attachAttentionEmitters(MLIRContext *context) {
  AttentionOp::attachInterface<TemplateModel<AttentionOp, emitAttention>>(
      *context);
  AttentionGradQueryOp::attachInterface<
      TemplateModel<AttentionGradQueryOp, emitAttention>>(*context);
  AttentionGradKeyValueOp::attachInterface<
      TemplateModel<AttentionGradKeyValueOp, emitAttention>>(*context);
}
