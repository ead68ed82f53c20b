//===- PointwiseEmitters.cpp - element-wise and data-movement ops -----------===//
//
// The KernelEmitterOpInterface models of the ops that a pointwise kernel
// composes, one thread per element of the kernel's result:
//  - element-wise ops (ElementWise): a scalar expression of their operands'
//    expressions, one `expr` overload per op;
//  - data movement and range (IndexMapping): their input read at the index
//    that maps the kernel's coordinates `c<d>` to the input's, one
//    `mapping` overload per op; they take kernel inputs (or splat
//    constants) only.
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

namespace {

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

/// What an element-wise op's expression is written from: its operands'
/// expressions `x` and the element types of its result and first operand.
/// Expressions are register values: f16 and bf16 compute in float.
struct Scalar {
  Scalar(KernelWriter &writer, Operation *op, ArrayRef<std::string> x)
      : writer(writer), op(op), x(x), type(eltOf(op->getResult(0))),
        inType(op->getNumOperands() ? eltOf(op->getOperand(0)) : type),
        t(*regType(type)) {}

  /// The float function `base` for the result type (expf or exp).
  std::string fn(StringRef base) const { return mathFn(base, type); }
  std::string one() const { return type.isF64() ? "1.0" : "1.0f"; }
  /// `(<t>)0`, a zero of the result type.
  std::string zero() const { return "(" + t + ")0"; }
  std::string call(StringRef base) const {
    return fn(base) + "(" + x[0] + ")";
  }

  KernelWriter &writer;
  Operation *op;
  ArrayRef<std::string> x;
  Type type, inType;
  std::string t;
};

using Expr = FailureOr<std::string>;

Expr expr(NegOp, const Scalar &s) { return "-" + s.x[0]; }
Expr expr(ExpOp, const Scalar &s) { return s.call("exp"); }
Expr expr(LogOp, const Scalar &s) { return s.call("log"); }
Expr expr(SqrtOp, const Scalar &s) { return s.call("sqrt"); }
Expr expr(ReciprocalOp, const Scalar &s) { return s.one() + " / " + s.x[0]; }
Expr expr(ErfOp, const Scalar &s) { return s.call("erf"); }
Expr expr(TanhOp, const Scalar &s) { return s.call("tanh"); }
Expr expr(SigmoidOp, const Scalar &s) {
  return s.one() + " / (" + s.one() + " + " + s.fn("exp") + "(-" + s.x[0] +
         "))";
}
Expr expr(ReluOp, const Scalar &s) {
  // NaN propagates, as in PyTorch and onnxruntime.
  std::string nan =
      isa<FloatType>(s.type) ? " || " + s.x[0] + " != " + s.x[0] : "";
  return "((" + s.x[0] + " > " + s.zero() + nan + ") ? " + s.x[0] + " : " +
         s.zero() + ")";
}
Expr expr(SinOp, const Scalar &s) { return s.call("sin"); }
Expr expr(CosOp, const Scalar &s) { return s.call("cos"); }
Expr expr(NotOp, const Scalar &s) { return "!" + s.x[0]; }
// Comparisons, not isnan/isinf: the same text for nvcc's device code and
// the host compiler (kernels are never built with fast math).
Expr expr(IsNaNOp, const Scalar &s) {
  return "(" + s.x[0] + " != " + s.x[0] + ")";
}
Expr expr(IsInfOp op, const Scalar &s) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  bool d = s.inType.isF64();
  std::string x = s.x[0];
  std::string pos = "(" + x + " == " + floatLiteral(kInf, d) + ")";
  std::string neg = "(" + x + " == " + floatLiteral(-kInf, d) + ")";
  if (op.getDetectPositive() && op.getDetectNegative())
    return "(" + pos + " || " + neg + ")";
  if (op.getDetectPositive())
    return pos;
  if (op.getDetectNegative())
    return neg;
  return std::string("false");
}

Expr expr(GeluOp op, const Scalar &s) {
  bool d = s.type.isF64();
  if (op.getApproximate() == GeluApproximation::Tanh)
    return llvm::formatv("{0} * {1} * ({2} + {3}({4} * ({1} + {5} * {1} * {1} "
                         "* {1})))",
                         floatLiteral(0.5, d), s.x[0], s.one(), s.fn("tanh"),
                         floatLiteral(0.7978845608028654, d),
                         floatLiteral(0.044715, d))
        .str();
  return llvm::formatv("{0} * {1} * ({2} + {3}({1} * {4}))",
                       floatLiteral(0.5, d), s.x[0], s.one(), s.fn("erf"),
                       floatLiteral(0.7071067811865476, d))
      .str();
}

/// Whether a dropout of `ratio`, `seed`, `stream` and its step (operand 1,
/// step 0 without one) keeps element `idx`: the same for the dropout, its
/// mask and its gradient, wherever they run.
template <typename OpTy> std::string dropoutKeeps(OpTy op, const Scalar &s) {
  return dropoutKeepTest(op.getRatio().convertToDouble(), op.getSeed(),
                         op.getStream(), op.getDropoutStep() ? s.x[1] : "0LL",
                         "idx");
}

Expr expr(DropoutOp op, const Scalar &s) {
  double ratio = op.getRatio().convertToDouble();
  if (ratio <= 0)
    return s.x[0];
  return llvm::formatv("({0} ? {1} * {2} : ({3})0)", dropoutKeeps(op, s),
                       s.x[0],
                       floatLiteral(1.0 / (1.0 - ratio), s.type.isF64()), s.t)
      .str();
}

Expr expr(DropoutMaskOp op, const Scalar &s) {
  if (op.getRatio().convertToDouble() <= 0)
    return std::string("true");
  return dropoutKeeps(op, s);
}

Expr expr(CastOp op, const Scalar &s) {
  if (s.type.isInteger(1))
    return "(" + s.x[0] + " != 0)";
  if (s.inType.isInteger(1))
    return "(" + s.x[0] + " ? (" + s.t + ")1 : " + s.zero() + ")";
  // To a 4- or 2-bit integer, held in an int register: wrapped to its bits
  // (and sign-extended) as storing it would, so that a fused kernel that
  // reads it back in registers sees what an unfused one reads from memory.
  if (s.type.isInteger() && isPackedType(s.type))
    return widen(s.type, narrow(s.type, "(" + s.t + ")" + s.x[0]));
  std::optional<SmallFloat> format = roundingFormatOf(s.type);
  if (!format)
    return "(" + s.t + ")" + s.x[0];
  // To a 16-bit or small float: rounded once, to nearest even, from a
  // register that holds the source exactly (a double for f64 and integers
  // up to 32 bits), and held in a float register. A 64-bit integer is
  // exact in a double up to 2^53, and beyond it overflows f16 and the
  // small floats whatever the rounding; for bf16 it goes through a double
  // rounded to odd, which the rounding to bf16 does not round twice.
  unsigned intWidth =
      s.inType.isInteger() ? s.inType.getIntOrFloatBitWidth() : 0;
  std::string x = s.x[0];
  if (intWidth > 32 && s.type.isBF16())
    x = (s.inType.isUnsignedInteger() ? "memfit_u64_odd(" : "memfit_i64_odd(") +
        x + ")";
  bool half = isHalfFloat(s.type);
  if (half && !s.inType.isF64() && intWidth <= 16)
    return widen(s.type, narrow(s.type, "(float)" + x));
  // ONNX's saturate (FLOAT8 targets; FLOAT4E2M1 always saturates): values
  // beyond the largest finite one, infinities included, become it.
  bool saturate = !half && op.getSaturate().value_or(true);
  return llvm::formatv("(float)memfit_fp_round((double){0}, {1}, {2}, {3}, "
                       "{4}, {5})",
                       x, format->mbits, format->bias,
                       floatLiteral(format->maxValue, true), format->kind,
                       saturate ? "true" : "false")
      .str();
}

Expr expr(TriluOp op, const Scalar &s) {
  size_t rank = s.writer.domain().size();
  if (rank < 2)
    return s.writer.error(op) << "trilu needs rank >= 2", failure();
  std::string diag = llvm::formatv("(c{0} - c{1})", rank - 1, rank - 2);
  std::string keep =
      llvm::formatv("{0} {1} {2}", diag, op.getUpper() ? ">=" : "<=",
                    intLiteral(static_cast<int64_t>(op.getK())));
  return "(" + keep + " ? " + s.x[0] + " : " + s.zero() + ")";
}

Expr expr(AddOp, const Scalar &s) { return s.x[0] + " + " + s.x[1]; }
Expr expr(SubOp, const Scalar &s) { return s.x[0] + " - " + s.x[1]; }
Expr expr(MulOp, const Scalar &s) { return s.x[0] + " * " + s.x[1]; }
// Integers through the prelude's memfit_idiv: x / 0 is 0 and never traps.
Expr expr(DivOp, const Scalar &s) {
  if (!isa<IntegerType>(s.type))
    return s.x[0] + " / " + s.x[1];
  return "memfit_idiv((" + s.t + ")" + s.x[0] + ", (" + s.t + ")" + s.x[1] +
         ")";
}
Expr expr(PowOp op, const Scalar &s) {
  if (!isa<IntegerType>(s.type))
    return s.fn("pow") + "(" + s.x[0] + ", " + s.x[1] + ")";
  if (isa<IntegerType>(eltOf(op.getRhs())))
    return "(" + s.t + ")memfit_ipow((long long)" + s.x[0] + ", (long long)" +
           s.x[1] + ")";
  return "(" + s.t + ")pow((double)" + s.x[0] + ", (double)" + s.x[1] + ")";
}
Expr expr(FmodOp, const Scalar &s) {
  return s.fn("fmod") + "(" + s.x[0] + ", " + s.x[1] + ")";
}
Expr expr(EqualOp, const Scalar &s) {
  return "(" + s.x[0] + " == " + s.x[1] + ")";
}
Expr expr(LessOp, const Scalar &s) {
  return "(" + s.x[0] + " < " + s.x[1] + ")";
}
Expr expr(GreaterOp, const Scalar &s) {
  return "(" + s.x[0] + " > " + s.x[1] + ")";
}
// NaN in either operand gives NaN, as torch.maximum and torch.minimum.
Expr expr(MaxOp, const Scalar &s) {
  return "((" + s.x[0] + " != " + s.x[0] + " || " + s.x[0] + " > " + s.x[1] +
         ") ? " + s.x[0] + " : " + s.x[1] + ")";
}
Expr expr(MinOp, const Scalar &s) {
  return "((" + s.x[0] + " != " + s.x[0] + " || " + s.x[0] + " < " + s.x[1] +
         ") ? " + s.x[0] + " : " + s.x[1] + ")";
}
Expr expr(AndOp, const Scalar &s) {
  return "(" + s.x[0] + " && " + s.x[1] + ")";
}
Expr expr(OrOp, const Scalar &s) {
  return "(" + s.x[0] + " || " + s.x[1] + ")";
}
Expr expr(XorOp, const Scalar &s) {
  return "(" + s.x[0] + " != " + s.x[1] + ")";
}
Expr expr(WhereOp, const Scalar &s) {
  return "(" + s.x[0] + " ? " + s.x[1] + " : " + s.x[2] + ")";
}

template <typename OpTy>
struct ElementWiseModel : EmitterModel<ElementWiseModel<OpTy>, OpTy> {
  EmitStyle getEmitStyle(Operation *) const { return EmitStyle::ElementWise; }
  FailureOr<std::string> emitScalar(Operation *op, KernelWriter &writer,
                                    ArrayRef<std::string> operands) const {
    return expr(cast<OpTy>(op), Scalar(writer, op, operands));
  }
};

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Input `i` of `op` read at `offset`.
Expr in(KernelWriter &w, Operation *op, unsigned i, StringRef offset) {
  return w.load(op->getOperand(i), offset, op);
}

Expr mapping(ExpandOp op, KernelWriter &w) {
  return in(w, op, 0,
            broadcastOffset(shapeOf(op.getInput()), w.domain().size(), "c"));
}

Expr mapping(TransposeOp op, KernelWriter &w) {
  Shape strides = stridesOf(shapeOf(op.getInput()));
  // Result dimension d is input dimension perm[d].
  Shape permuted;
  for (int64_t p : op.getPerm())
    permuted.push_back(strides[p]);
  return in(w, op, 0, offsetAt("c", permuted));
}

Expr mapping(SliceOp op, KernelWriter &w) {
  Shape inShape(shapeOf(op.getInput()));
  SmallVector<SliceDim> dims;
  if (failed(resolveSlice(inShape, op.getStarts(), op.getEnds(), op.getAxes(),
                          op.getSteps(), dims, op.getLoc())))
    return failure();
  Shape strides = stridesOf(inShape);
  std::string offset;
  for (auto [d, dim] : llvm::enumerate(dims))
    offset += llvm::formatv("{0}({1}LL + c{2} * {3}LL) * {4}LL",
                            d ? " + " : "", dim.start, d, dim.step, strides[d])
                  .str();
  return in(w, op, 0, offset.empty() ? "0" : offset);
}

Expr mapping(GatherOp op, KernelWriter &w) {
  Shape dataShape(shapeOf(op.getData()));
  Shape indexShape(shapeOf(op.getIndices()));
  FailureOr<int64_t> axis =
      normalizeAxis(op.getAxis(), dataShape.size(), op.getLoc());
  if (failed(axis))
    return failure();
  Shape indexStrides = stridesOf(indexShape);
  std::string indexOffset;
  for (size_t t = 0; t < indexShape.size(); ++t)
    indexOffset += llvm::formatv("{0}c{1} * {2}LL", t ? " + " : "", *axis + t,
                                 indexStrides[t])
                       .str();
  Expr index = in(w, op, 1, indexOffset.empty() ? "0" : indexOffset);
  if (failed(index))
    return failure();
  std::string g = w.freshName("g");
  int64_t extent = dataShape[*axis];
  w.body() << "  long long " << g << " = (long long)" << *index << ";\n";
  w.checkIndex(op, g, extent, indexIntoAxis(*axis, dataShape));
  w.body() << "  if (" << g << " < 0) " << g << " += " << extent << "LL;\n";
  Shape dataStrides = stridesOf(dataShape);
  int64_t r = indexShape.size();
  std::string offset = llvm::formatv("{0} * {1}LL", g, dataStrides[*axis]);
  for (int64_t d = 0; d < static_cast<int64_t>(dataShape.size()); ++d) {
    if (d == *axis)
      continue;
    int64_t c = d < *axis ? d : d + r - 1;
    offset += llvm::formatv(" + c{0} * {1}LL", c, dataStrides[d]).str();
  }
  Expr element = in(w, op, 0, offset);
  if (failed(element))
    return failure();
  // An index out of range fails the run (checkIndex); it reads as zero
  // rather than faulting.
  return llvm::formatv("(({0} >= 0 && {0} < {1}LL) ? {2} : ({3})0)", g, extent,
                       *element, *regType(eltOf(op.getResult())))
      .str();
}

/// Reads index input 1 of `op` at `offset` into a fresh variable made
/// non-negative for `axis` of data of `shape`; appends the in-range test.
/// An index out of range fails the run (checkIndex).
FailureOr<std::string> readIndex(KernelWriter &w, Operation *op,
                                 StringRef offset, int64_t axis,
                                 ArrayRef<int64_t> shape,
                                 std::string &inRange,
                                 StringRef indent = "  ") {
  Expr index = in(w, op, 1, offset);
  if (failed(index))
    return failure();
  std::string g = w.freshName("g");
  int64_t extent = shape[axis];
  w.body() << indent << "long long " << g << " = (long long)" << *index
           << ";\n";
  w.checkIndex(op, g, extent, indexIntoAxis(axis, shape), indent);
  w.body() << indent << "if (" << g << " < 0) " << g << " += " << extent
           << "LL;\n";
  inRange += llvm::formatv("{0}{1} >= 0 && {1} < {2}LL",
                           inRange.empty() ? "" : " && ", g, extent)
                 .str();
  return g;
}

/// `element` where every index is in range, else zero (an index out of
/// range fails the run; it reads as zero rather than faulting).
Expr guarded(Operation *op, StringRef inRange, Expr element) {
  if (failed(element))
    return failure();
  return llvm::formatv("(({0}) ? {1} : ({2})0)", inRange, *element,
                       *regType(eltOf(op->getResult(0))))
      .str();
}

Expr mapping(GatherElementsOp op, KernelWriter &w) {
  Shape dataShape(shapeOf(op.getData()));
  FailureOr<int64_t> axis =
      normalizeAxis(op.getAxis(), dataShape.size(), op.getLoc());
  if (failed(axis))
    return failure();
  Shape indexStrides = stridesOf(shapeOf(op.getIndices()));
  std::string inRange;
  FailureOr<std::string> g = readIndex(
      w, op, offsetAlong(indexStrides, *axis, "c" + std::to_string(*axis)),
      *axis, dataShape, inRange);
  if (failed(g))
    return failure();
  return guarded(op, inRange,
                 in(w, op, 0, offsetAlong(stridesOf(dataShape), *axis, *g)));
}

Expr mapping(GatherNDOp op, KernelWriter &w) {
  Shape dataShape(shapeOf(op.getData()));
  Shape indexShape(shapeOf(op.getIndices()));
  int64_t b = op.getBatchDims(), k = indexShape.back();
  int64_t q = indexShape.size(), r = dataShape.size();
  Shape indexStrides = stridesOf(indexShape);
  Shape dataStrides = stridesOf(dataShape);
  // The tuple's first entry: the result's leading q - 1 coordinates.
  std::string tuple, offset, inRange;
  for (int64_t t = 0; t < q - 1; ++t)
    tuple += llvm::formatv(" + c{0} * {1}LL", t, indexStrides[t]).str();
  for (int64_t d = 0; d < b; ++d)
    offset += llvm::formatv(" + c{0} * {1}LL", d, dataStrides[d]).str();
  for (int64_t j = 0; j < k; ++j) {
    FailureOr<std::string> g =
        readIndex(w, op, std::to_string(j) + "LL" + tuple, b + j, dataShape,
                  inRange);
    if (failed(g))
      return failure();
    offset += llvm::formatv(" + {0} * {1}LL", *g, dataStrides[b + j]).str();
  }
  for (int64_t u = b + k; u < r; ++u)
    offset +=
        llvm::formatv(" + c{0} * {1}LL", q - 1 + u - b - k, dataStrides[u])
            .str();
  return guarded(op, inRange, in(w, op, 0, "0LL" + offset));
}

Expr mapping(CumSumOp op, KernelWriter &w) {
  Shape shape(shapeOf(op.getInput()));
  FailureOr<int64_t> axis =
      normalizeAxis(op.getAxis(), shape.size(), op.getLoc());
  if (failed(axis))
    return failure();
  std::string j = w.freshName("j"), sum = w.freshName("s");
  std::string offset = offsetAlong(stridesOf(shape), *axis, j);
  // The elements up to this one along the axis (from the end, reversed).
  std::string at = "c" + std::to_string(*axis);
  std::string from = op.getReverse() ? (op.getExclusive() ? at + " + 1" : at)
                                     : std::string("0");
  std::string to = op.getReverse() ? std::to_string(shape[*axis]) + "LL"
                                   : (op.getExclusive() ? at : at + " + 1");
  Expr element = in(w, op, 0, offset);
  if (failed(element))
    return failure();
  std::string t = *regType(eltOf(op.getResult()));
  w.body() << "  " << t << " " << sum << " = (" << t << ")0;\n";
  w.body() << "  for (long long " << j << " = " << from << "; " << j << " < "
           << to << "; ++" << j << ") " << sum << " += " << *element << ";\n";
  return sum;
}

Expr mapping(ScatterElementsOp op, KernelWriter &w) {
  Shape dataShape(shapeOf(op.getData()));
  Shape updShape(shapeOf(op.getUpdates()));
  FailureOr<int64_t> axis =
      normalizeAxis(op.getAxis(), dataShape.size(), op.getLoc());
  if (failed(axis))
    return failure();
  std::string j = w.freshName("j"), v = w.freshName("v");
  std::string updOffset = offsetAlong(stridesOf(updShape), *axis, j);
  // The updates may be shorter than the data along the other axes.
  std::string within;
  for (size_t d = 0; d < dataShape.size(); ++d)
    if (static_cast<int64_t>(d) != *axis && updShape[d] < dataShape[d])
      within += llvm::formatv(" && c{0} < {1}LL", d, updShape[d]).str();
  Expr data = in(w, op, 0, broadcastOffset(dataShape, dataShape.size(), "c"));
  Expr update = in(w, op, 2, updOffset);
  if (failed(data) || failed(update))
    return failure();
  // The updates along the axis that name this entry, in order.
  w.body() << "  " << *regType(eltOf(op.getResult())) << " " << v << " = "
           << *data << ";\n";
  w.body() << "  for (long long " << j << " = 0; " << j << " < "
           << updShape[*axis] << "LL" << within << "; ++" << j << ") {\n";
  std::string inRange; // out-of-range indices name no entry
  FailureOr<std::string> g =
      readIndex(w, op, updOffset, *axis, dataShape, inRange, "    ");
  if (failed(g))
    return failure();
  w.body() << "    if (" << *g << " == c" << *axis << ") " << v << " = "
           << scatterCombine(op.getReduction(), v, *update) << ";\n";
  w.body() << "  }\n";
  return v;
}

Expr mapping(ConcatOp op, KernelWriter &w) {
  FailureOr<int64_t> axis =
      normalizeAxis(op.getAxis(), w.domain().size(), op.getLoc());
  if (failed(axis))
    return failure();
  std::string v = w.freshName("v");
  w.body() << "  " << *regType(eltOf(op.getResult())) << " " << v << ";\n";
  int64_t begin = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    Shape shape(shapeOf(input));
    std::string offset = shiftedOffset(shape, *axis, begin);
    int64_t end = begin + shape[*axis];
    bool last = i + 1 == op.getInputs().size();
    w.body() << "  " << (i ? "else " : "");
    if (!last)
      w.body() << "if (c" << *axis << " < " << end << "LL) ";
    Expr element = w.load(input, offset, op);
    if (failed(element))
      return failure();
    w.body() << v << " = " << *element << ";\n";
    begin = end;
  }
  return v;
}

/// Element i of the last dimension (2h) reads x at i and at its partner
/// i + h (below h) or i - h; the inverse reads sin at the partner too.
Expr mapping(RotaryOp op, KernelWriter &w) {
  size_t rank = w.domain().size();
  int64_t last = int64_t(rank) - 1, half = w.domain().back() / 2;
  std::string c = "c" + std::to_string(last);
  std::string p = w.freshName("p");
  w.body() << "  const long long " << p << " = " << c << " < " << half
           << "LL ? " << c << " + " << half << "LL : " << c << " - " << half
           << "LL;\n";
  auto at = [&](unsigned i, bool partner) -> Expr {
    Value v = op->getOperand(i);
    // The input read in place (memfit-fuse's view of the domain's shape):
    // the viewed buffer at the view's offset and strides.
    if (StridedViewOp view = w.viewOf(v))
      return widen(eltOf(v),
                   w.param(v) + "[" + std::to_string(view.getOffset()) +
                       "LL + " +
                       offsetAlong(view.getStrides(), last, partner ? p : c) +
                       "]");
    Shape strides = broadcastStrides(shapeOf(v), rank);
    return in(w, op, i, offsetAlong(strides, last, partner ? p : c));
  };
  Expr x = at(0, false), xp = at(0, true), cos = at(1, false),
       sin = at(2, op.getInverse());
  if (failed(x) || failed(xp) || failed(cos) || failed(sin))
    return failure();
  // Forward: x cos + (i < h ? -x[p] : x[p]) sin; inverse: x cos + (i < h ?
  // x[p] sin[p] : -x[p] sin[p]).
  std::string below = op.getInverse() ? "" : "-";
  std::string above = op.getInverse() ? "-" : "";
  return llvm::formatv("({0} * {1} + ({2} < {3}LL ? {4}({5} * {6}) : "
                       "{7}({5} * {6})))",
                       *x, *cos, c, half, below, *xp, *sin, above)
      .str();
}

Expr mapping(RangeOp op, KernelWriter &w) {
  Type type = eltOf(op.getResult());
  Expr start = literal(op.getStart(), type);
  Expr delta = literal(op.getDelta(), type);
  if (failed(start) || failed(delta))
    return w.error(op) << "unsupported range type " << type, failure();
  return llvm::formatv("({0} + ({1})idx * {2})", *start, *regType(type), *delta)
      .str();
}

template <typename OpTy>
struct IndexMappingModel : EmitterModel<IndexMappingModel<OpTy>, OpTy> {
  static_assert(OpTy::template hasTrait<OpTrait::memfit::IndexMapping>(),
                "an op emitted as an index mapping has the dialect's "
                "IndexMapping trait, which memfit-fuse reads");
  EmitStyle getEmitStyle(Operation *) const { return EmitStyle::IndexMapping; }
  FailureOr<std::string> emitScalar(Operation *op, KernelWriter &writer,
                                    ArrayRef<std::string>) const {
    return mapping(cast<OpTy>(op), writer);
  }
};

template <template <typename> class Model, typename... OpTys>
void attach(MLIRContext *context) {
  (OpTys::template attachInterface<Model<OpTys>>(*context), ...);
}

} // namespace

std::string cuda::dropoutKeepTest(double ratio, std::optional<int64_t> seed,
                                  int64_t stream, StringRef step,
                                  StringRef idx) {
  uint64_t combined = static_cast<uint64_t>(seed.value_or(0)) * 1000003ull +
                      static_cast<uint64_t>(stream);
  return llvm::formatv("memfit_dropout_keep({0}ull, {1}, {2}, {3})", combined,
                       step, idx, floatLiteral(ratio, false))
      .str();
}

void cuda::attachPointwiseEmitters(MLIRContext *context) {
  attach<ElementWiseModel, NegOp, ExpOp, LogOp, SqrtOp, ReciprocalOp, ErfOp,
         TanhOp, SigmoidOp, ReluOp, SinOp, CosOp, NotOp, IsNaNOp, IsInfOp,
         GeluOp, DropoutOp, DropoutMaskOp, CastOp, TriluOp, AddOp, SubOp, MulOp,
         DivOp, PowOp, FmodOp, EqualOp, LessOp, GreaterOp, MaxOp, MinOp, AndOp,
         OrOp, XorOp, WhereOp>(context);
  attach<IndexMappingModel, ExpandOp, TransposeOp, SliceOp, GatherOp,
         GatherElementsOp, GatherNDOp, ScatterElementsOp, CumSumOp, ConcatOp,
         RangeOp, RotaryOp>(context);
}
