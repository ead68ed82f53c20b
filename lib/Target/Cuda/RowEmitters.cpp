//===- RowEmitters.cpp - softmax, normalizations, reductions ----------------===//
//
// The KernelEmitterOpInterface models of the row templates: one warp per
// row of a softmax, a normalization or a reduction when the row fits a
// warp, whose lanes stride over it and combine partial results with
// shuffles (memfit_warp_sum and memfit_warp_max), else one block per row,
// whose threads combine them with shuffles and shared memory (the
// prelude's memfit_block_sum and memfit_block_max). Each
// op's model picks its template and passes the template's parameters.
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

namespace {

/// The input of a softmax or normalization: float, with its axis
/// normalized.
struct RowInput {
  Shape shape;
  int64_t axis;
  Type type;
  std::string acc; // accumulator type
  std::string in;  // the input's parameter name
};

FailureOr<RowInput> floatRowInput(KernelWriter &w, Operation *op,
                                  int64_t axisAttr) {
  Value input = op->getOperand(0);
  RowInput row;
  row.shape = Shape(shapeOf(input));
  FailureOr<int64_t> axis =
      normalizeAxis(axisAttr, row.shape.size(), op->getLoc());
  if (failed(axis))
    return failure();
  row.axis = *axis;
  row.type = eltOf(input);
  FailureOr<std::string> acc = accType(op, row.type);
  if (failed(acc))
    return failure();
  row.acc = *acc;
  row.in = w.param(input);
  return row;
}

/// softmax or log_softmax along `axisAttr`.
LogicalResult emitSoftmax(KernelWriter &w, Operation *op, int64_t axisAttr,
                          bool logSoftmax) {
  FailureOr<RowInput> row = floatRowInput(w, op, axisAttr);
  if (failed(row))
    return failure();
  auto &[shape, axis, type, acc, in] = *row;
  raw_ostream &os = w.body();
  int64_t n = shape[axis];
  int64_t inner = getNumElements(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t rows = getNumElements(shape) / std::max<int64_t>(n, 1);
  std::string at = llvm::formatv("base + j * {0}LL", inner);
  std::string e = mathFn("exp", type);

  w.beginRows(n, rows, /*contiguous=*/inner == 1, acc);
  os << llvm::formatv("  const long long base = (row / {0}LL) * {1}LL + row "
                      "% {0}LL;\n",
                      inner, n * inner);
  std::string x = loadAs(acc, type, in + "[" + at + "]");
  w.writeRowMaxSum(acc, type, n, x);
  if (logSoftmax)
    os << "  const " << acc << " shift = m + " << mathFn("log", type)
       << "(s);\n";
  os << w.rowStrideLoop("j", n) << "\n";
  os << "    out0[" << at << "] = "
     << narrow(type, logSoftmax ? x + " - shift" : e + "(" + x + " - m) / s")
     << ";\n";
  w.setRowLaunch(n, rows);
  return success();
}

/// layer_norm (with `bias`, possibly null) or rms_norm over the dimensions
/// from `axisAttr` on.
LogicalResult emitNorm(KernelWriter &w, Operation *op, Value scale, Value bias,
                       int64_t axisAttr, double epsilon, bool rms) {
  FailureOr<RowInput> row = floatRowInput(w, op, axisAttr);
  if (failed(row))
    return failure();
  auto &[shape, axis, type, acc, in] = *row;
  raw_ostream &os = w.body();
  Shape normShape(ArrayRef<int64_t>(shape).drop_front(axis));
  int64_t n = getNumElements(normShape);
  int64_t rows = getNumElements(ArrayRef<int64_t>(shape).take_front(axis));
  bool d = type.isF64();
  auto paramAt = [&](Value v) {
    Shape s(shapeOf(v));
    std::string name = w.param(v);
    if (s == normShape)
      return widen(eltOf(v), name + "[j]");
    return widen(eltOf(v),
                 name + "[" + broadcastOffset(s, normShape.size(), "s") + "]");
  };
  bool needCoords = shapeOf(scale) != ArrayRef<int64_t>(normShape) ||
                    (bias && shapeOf(bias) != ArrayRef<int64_t>(normShape));

  w.beginRows(n, rows, /*contiguous=*/true, acc);
  os << "  const long long base = row * " << n << "LL;\n";
  std::string loop = w.rowStrideLoop("j", n);
  std::string x = loadAs(acc, type, in + "[base + j]");
  std::string t = x;
  if (!rms) {
    std::string sum = w.writeReduction(acc, /*isMax=*/false, "0", "j", n, x);
    os << "  const " << acc << " mean = " << sum << " / "
       << floatLiteral(static_cast<double>(n), d) << ";\n";
    t = "(" + x + " - mean)";
  }
  std::string sq =
      w.writeReduction(acc, /*isMax=*/false, "0", "j", n, t + " * " + t);
  os << "  const " << acc << " inv = " << floatLiteral(1.0, d) << " / "
     << mathFn("sqrt", type) << "(" << sq << " / "
     << floatLiteral(static_cast<double>(n), d) << " + "
     << floatLiteral(epsilon, d) << ");\n";
  os << loop << " {\n";
  if (needCoords)
    emitCoords(os, normShape, "j", "s", "    ");
  std::string value =
      "(" + x + (rms ? "" : " - mean") + ") * inv * " + paramAt(scale);
  if (bias)
    value += " + " + paramAt(bias);
  os << "    out0[base + j] = " << narrow(type, value) << ";\n  }\n";
  w.setRowLaunch(n, rows);
  return success();
}

enum class ReduceKind { Sum, Mean, Max };

/// reduce_sum, reduce_mean or reduce_max over `axes` (all if empty).
LogicalResult emitReduce(KernelWriter &w, Operation *op, ArrayRef<int64_t> axes,
                         ReduceKind kind) {
  Value input = op->getOperand(0);
  Shape shape(shapeOf(input));
  size_t rank = shape.size();
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    FailureOr<int64_t> axis = normalizeAxis(a, rank, op->getLoc());
    if (failed(axis))
      return failure();
    reduced[*axis] = true;
  }
  Type type = eltOf(input);
  FailureOr<std::string> acc = accType(op, type);
  if (failed(acc))
    return failure();
  raw_ostream &os = w.body();
  int64_t n = 1, rows = 1;
  for (size_t d = 0; d < rank; ++d)
    (reduced[d] ? n : rows) *= shape[d];
  std::string in = w.param(input);
  bool isMax = kind == ReduceKind::Max;
  bool isFloat = isa<FloatType>(type);

  w.beginRows(n, rows, reducedTrailing(shape, reduced), *acc);
  KernelWriter::RowIndexing indexing = w.writeRowBase(shape, reduced);
  // The identity of max is the lowest value of the element type, which is
  // also ONNX's result for a reduction over no elements (false for i1).
  std::string init =
      !isMax
          ? "0"
          : (isFloat ? floatLiteral(-INFINITY, type.isF64())
                     : intLiteral(type.isUnsignedInteger() || type.isInteger(1)
                                      ? 0
                                      : llvm::APInt::getSignedMinValue(
                                            type.getIntOrFloatBitWidth())
                                            .getSExtValue()));
  // A contiguous row in the order of a fused row kernel's (writeReduction
  // takes it a vector at a time where it can).
  std::string result;
  if (indexing.trailing) {
    result = w.writeReduction(*acc, isMax, init, "j", n,
                              loadAs(*acc, type, in + "[base + j]"));
  } else {
    os << "  MEMFIT_PARTIAL(" << *acc << ", p, " << init << ");\n";
    os << w.rowStrideLoop("j", n) << " {\n";
    std::string offset = w.writeRowOffset(indexing, "    ");
    std::string x = loadAs(*acc, type, in + "[base + " + offset + "]");
    if (isMax)
      os << "    MEMFIT_LANE(p, j) = memfit_max(MEMFIT_LANE(p, j), " << x
         << ");\n  }\n";
    else
      os << "    MEMFIT_LANE(p, j) += " << x << ";\n  }\n";
    result = w.partialResult("p", isMax);
  }
  os << "  const " << *acc << " a = " << result << ";\n";
  std::string value = "a";
  // A mean over no elements is NaN for floats (0/0) and 0 for integers.
  if (kind == ReduceKind::Mean)
    value = isFloat ? "a / " + floatLiteral(static_cast<double>(n), type.isF64())
                    : (n ? llvm::formatv("a / {0}LL", n).str() : "0");
  Type outType = eltOf(op->getResult(0));
  os << "  if (" << w.rowLeader() << ") out0[row] = "
     << (isHalfFloat(outType) ? narrow(outType, value)
                              : "(" + *cType(outType) + ")(" + value + ")")
     << ";\n";
  w.setRowLaunch(n, rows);
  return success();
}

/// Each op's template and its parameters.
LogicalResult emitRow(SoftmaxOp op, KernelWriter &w) {
  return emitSoftmax(w, op, op.getAxis(), /*logSoftmax=*/false);
}
LogicalResult emitRow(LogSoftmaxOp op, KernelWriter &w) {
  return emitSoftmax(w, op, op.getAxis(), /*logSoftmax=*/true);
}
LogicalResult emitRow(LayerNormOp op, KernelWriter &w) {
  return emitNorm(w, op, op.getScale(), op.getBias(), op.getAxis(),
                  op.getEpsilon().convertToDouble(), /*rms=*/false);
}
LogicalResult emitRow(RMSNormOp op, KernelWriter &w) {
  return emitNorm(w, op, op.getScale(), /*bias=*/nullptr, op.getAxis(),
                  op.getEpsilon().convertToDouble(), /*rms=*/true);
}
LogicalResult emitRow(ReduceSumOp op, KernelWriter &w) {
  return emitReduce(w, op, op.getAxes(), ReduceKind::Sum);
}
LogicalResult emitRow(ReduceMeanOp op, KernelWriter &w) {
  return emitReduce(w, op, op.getAxes(), ReduceKind::Mean);
}
LogicalResult emitRow(ReduceMaxOp op, KernelWriter &w) {
  return emitReduce(w, op, op.getAxes(), ReduceKind::Max);
}

//===----------------------------------------------------------------------===//
// In a fused row kernel (RowProgram.cpp)
//===----------------------------------------------------------------------===//

/// The terms of a row's reductions, from its element `t`: `t` itself or
/// its square.
std::string asIs(StringRef t) { return t.str(); }
std::string squared(StringRef t) {
  return "(" + t.str() + ") * (" + t.str() + ")";
}

/// A reduction's value per row.
LogicalResult reduceInRow(KernelWriter &w, Operation *op, ReduceKind kind) {
  Value input = op->getOperand(0);
  FailureOr<std::string> a =
      w.reduceRow(input, /*isMax=*/kind == ReduceKind::Max, asIs);
  if (failed(a))
    return failure();
  std::string value = *a;
  if (kind == ReduceKind::Mean)
    value += " / " + floatLiteral(static_cast<double>(w.rowLength()),
                                  eltOf(input).isF64());
  w.defineRowValue(op->getResult(0), value);
  return success();
}

/// The row statistics of a layer_norm (mean and 1/std) or an rms_norm
/// (1/rms).
LogicalResult normStatsInRow(KernelWriter &w, Operation *op, double epsilon,
                             bool rms) {
  Value input = op->getOperand(0);
  Type type = eltOf(input);
  bool d = type.isF64();
  std::string n = floatLiteral(static_cast<double>(w.rowLength()), d);
  KernelWriter::RowStats stats;
  FailureOr<std::string> sumOfSquares = failure();
  if (rms) {
    sumOfSquares = w.reduceRow(input, /*isMax=*/false, squared);
  } else {
    FailureOr<std::string> sum = w.reduceRow(input, /*isMax=*/false, asIs);
    if (failed(sum))
      return failure();
    stats.shift = w.rowStatistic(*sum + " / " + n);
    std::string m = stats.shift;
    sumOfSquares = w.reduceRow(input, /*isMax=*/false, [&](StringRef t) {
      return squared(t.str() + " - " + m);
    });
  }
  if (failed(sumOfSquares))
    return failure();
  stats.scale = w.rowStatistic(floatLiteral(1.0, d) + " / " +
                               mathFn("sqrt", type) + "(" + *sumOfSquares +
                               " / " + n + " + " + floatLiteral(epsilon, d) +
                               ")");
  w.setRowStats(op, std::move(stats));
  return success();
}

/// The row statistics of a softmax (max and sum of exp) or a log_softmax
/// (max + log(sum)).
LogicalResult softmaxStatsInRow(KernelWriter &w, Operation *op,
                                bool logSoftmax) {
  Value input = op->getOperand(0);
  Type type = eltOf(input);
  std::string e = mathFn("exp", type);
  FailureOr<std::string> max = w.reduceRow(input, /*isMax=*/true, asIs);
  if (failed(max))
    return failure();
  std::string m = *max;
  FailureOr<std::string> sum =
      w.reduceRow(input, /*isMax=*/false, [&](StringRef t) {
        return e + "(" + t.str() + " - " + m + ")";
      });
  if (failed(sum))
    return failure();
  KernelWriter::RowStats stats{m, *sum};
  if (logSoftmax)
    stats.shift = w.rowStatistic(m + " + " + mathFn("log", type) + "(" +
                                 *sum + ")");
  w.setRowStats(op, std::move(stats));
  return success();
}

/// Each op's reductions over the row.
LogicalResult reduceInRow(SoftmaxOp op, KernelWriter &w) {
  return softmaxStatsInRow(w, op, /*logSoftmax=*/false);
}
LogicalResult reduceInRow(LogSoftmaxOp op, KernelWriter &w) {
  return softmaxStatsInRow(w, op, /*logSoftmax=*/true);
}
LogicalResult reduceInRow(LayerNormOp op, KernelWriter &w) {
  return normStatsInRow(w, op, op.getEpsilon().convertToDouble(),
                        /*rms=*/false);
}
LogicalResult reduceInRow(RMSNormOp op, KernelWriter &w) {
  return normStatsInRow(w, op, op.getEpsilon().convertToDouble(),
                        /*rms=*/true);
}
LogicalResult reduceInRow(ReduceSumOp op, KernelWriter &w) {
  return reduceInRow(w, op, ReduceKind::Sum);
}
LogicalResult reduceInRow(ReduceMeanOp op, KernelWriter &w) {
  return reduceInRow(w, op, ReduceKind::Mean);
}
LogicalResult reduceInRow(ReduceMaxOp op, KernelWriter &w) {
  return reduceInRow(w, op, ReduceKind::Max);
}

using Expr = FailureOr<std::string>;

/// The input's expression `x[0]` in the accumulator type.
std::string accumulated(KernelWriter &w, ArrayRef<std::string> x) {
  return "(" + w.rowAcc().str() + ")" + x[0];
}
/// Each normalization's and softmax's element from its row statistics and
/// its operands' expressions `x`.
Expr elementInRow(LayerNormOp op, KernelWriter &w, ArrayRef<std::string> x) {
  const KernelWriter::RowStats &stats = w.rowStatsOf(op);
  return "(" + accumulated(w, x) + " - " + stats.shift + ") * " + stats.scale +
         " * " + x[1] + (x.size() > 2 ? " + " + x[2] : "");
}
Expr elementInRow(RMSNormOp op, KernelWriter &w, ArrayRef<std::string> x) {
  return "(" + accumulated(w, x) + ") * " + w.rowStatsOf(op).scale + " * " +
         x[1];
}
Expr elementInRow(SoftmaxOp op, KernelWriter &w, ArrayRef<std::string> x) {
  const KernelWriter::RowStats &stats = w.rowStatsOf(op);
  return mathFn("exp", eltOf(op->getOperand(0))) + "(" + accumulated(w, x) +
         " - " + stats.shift + ") / " + stats.scale;
}
Expr elementInRow(LogSoftmaxOp op, KernelWriter &w, ArrayRef<std::string> x) {
  return accumulated(w, x) + " - " + w.rowStatsOf(op).shift;
}

/// A reduction: its template; in a fused row kernel, its value per row.
template <typename OpTy>
struct ReductionModel : TemplateEmitterModel<ReductionModel<OpTy>, OpTy> {
  LogicalResult emitTemplate(Operation *op, KernelWriter &writer) const {
    return emitRow(cast<OpTy>(op), writer);
  }
  LogicalResult emitRowReduction(Operation *op, KernelWriter &writer) const {
    return reduceInRow(cast<OpTy>(op), writer);
  }
};

/// A normalization or a softmax: its template; in a fused row kernel, its
/// row statistics and its elements from them.
template <typename OpTy>
struct NormalizationModel
    : TemplateEmitterModel<NormalizationModel<OpTy>, OpTy> {
  LogicalResult emitTemplate(Operation *op, KernelWriter &writer) const {
    return emitRow(cast<OpTy>(op), writer);
  }
  LogicalResult emitRowReduction(Operation *op, KernelWriter &writer) const {
    return reduceInRow(cast<OpTy>(op), writer);
  }
  Expr emitRowElement(Operation *op, KernelWriter &writer,
                      ArrayRef<std::string> operands) const {
    return elementInRow(cast<OpTy>(op), writer, operands);
  }
};

} // namespace

void cuda::attachRowEmitters(MLIRContext *context) {
  SoftmaxOp::attachInterface<NormalizationModel<SoftmaxOp>>(*context);
  LogSoftmaxOp::attachInterface<NormalizationModel<LogSoftmaxOp>>(*context);
  LayerNormOp::attachInterface<NormalizationModel<LayerNormOp>>(*context);
  RMSNormOp::attachInterface<NormalizationModel<RMSNormOp>>(*context);
  ReduceSumOp::attachInterface<ReductionModel<ReduceSumOp>>(*context);
  ReduceMeanOp::attachInterface<ReductionModel<ReduceMeanOp>>(*context);
  ReduceMaxOp::attachInterface<ReductionModel<ReduceMaxOp>>(*context);
}
