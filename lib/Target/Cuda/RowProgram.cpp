//===- RowProgram.cpp - fused row kernels ---------------------------------===//
//
// A kernel of memfit-fuse's reductions with their element-wise prologues
// and epilogues (rowFrameOf) runs one warp per row when the row fits one
// (beginRows), else one block per row. Row values (one element per row:
// the reductions' results and what is computed from them) are computed
// once per row by every thread of its warp or block; full values (the frame's
// shape) are computed inside each loop over the row's elements that reads
// them. Each row op writes its own reductions over the row through its
// KernelEmitterOpInterface model (emitRowReduction, RowEmitters.cpp): a
// reduction its value per row, a normalization or a softmax the row
// statistics from which its model's emitRowElement computes its elements.
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

//===----------------------------------------------------------------------===//
// What the row ops' models write with
//===----------------------------------------------------------------------===//

FailureOr<std::string>
KernelWriter::reduceRow(Value input, bool isMax,
                        function_ref<std::string(StringRef)> term) {
  const std::string &acc = row->acc;
  bool d = eltOf(input).isF64();
  std::string partial =
      openPartial(acc, isMax, isMax ? floatLiteral(-INFINITY, d) : "0");
  LogicalResult done = writeRowLoop([&]() -> LogicalResult {
    FailureOr<std::string> x = fullScalar(input);
    if (failed(x))
      return failure();
    os << foldPartial(partial, vectors ? "j0" : "j", isMax,
                      term("(" + acc + ")" + *x));
    return success();
  });
  if (failed(done))
    return failure();
  std::string a = freshName("a");
  os << "  const " << acc << " " << a << " = "
     << partialResult(partial, isMax) << ";\n";
  return a;
}

std::string KernelWriter::rowStatistic(StringRef expr) {
  std::string name = freshName("r");
  os << "  const " << row->acc << " " << name << " = " << expr << ";\n";
  return name;
}

void KernelWriter::defineRowValue(Value value, StringRef expr) {
  define(value, "(" + *regType(eltOf(value)) + ")(" + expr.str() + ")");
  rowValues.insert(value);
}

void KernelWriter::setRowStats(Operation *op, RowStats stats) {
  rowStats[op] = std::move(stats);
}

const KernelWriter::RowStats &KernelWriter::rowStatsOf(Operation *op) const {
  auto it = rowStats.find(op);
  assert(it != rowStats.end() && "the op's emitRowReduction sets them");
  return it->second;
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

void KernelWriter::writeFullResult(unsigned i, Value value, StringRef v) {
  if (vectors) {
    if (!llvm::is_contained(vectors->outputs, i))
      vectors->outputs.push_back(i);
    os << "    y" << i << ".v[k] = " << narrow(eltOf(value), v) << ";\n";
  } else {
    os << "    out" << i << "[idx] = " << narrow(eltOf(value), v) << ";\n";
  }
  row->written.insert(i);
}

LogicalResult KernelWriter::writeRowLoop(function_ref<LogicalResult()> body) {
  // Full values are computed in the loop (again in each loop that needs
  // them), inputs loaded at each element. A contiguous row of a whole
  // number of 16-byte vectors of the accumulator is taken a vector at a
  // time (beginRows): the inputs of the full shape loaded and the results
  // stored as vectors around a loop over the vector's elements.
  int64_t width = rowWidth;
  int64_t length = row->frame->length;
  size_t mark = 0;
  if (width > 1) {
    vectors = VectorLoop{width};
    os << rowStrideLoop("j0", "0LL", std::to_string(length) + "LL", width)
       << " {\n";
    os.flush();
    mark = text.size();
    os << "  for (int k = 0; k < " << width << "; ++k) {\n";
    os << "    const long long j = j0 + k;\n";
  } else {
    os << rowStrideLoop("j", length) << " {\n";
  }
  std::string offset = writeRowOffset(row->indexing, "    ");
  os << "  const long long idx = base + " << offset << ";\n";
  // The element's coordinates: the row's along the kept dimensions (q<d>,
  // once per block), j's along the reduced ones (r<k>; writeRowOffset
  // wrote them unless the reduced dimensions trail), not divisions of idx:
  // a read that broadcasts over the row's kept dimensions is then at a
  // constant offset plus j, which the host compiler vectorizes.
  if (row->indexing.trailing)
    emitCoords(os, row->indexing.redShape, "j", "r", "    ");
  size_t k = 0;
  for (auto [d, reduced] : llvm::enumerate(row->frame->reduced))
    os << "    const long long c" << d << " = "
       << (reduced ? "r" + std::to_string(k++) : "q" + std::to_string(d))
       << ";\n";
  DenseMap<Value, std::string> rowNames = names;
  for (BlockArgument arg : kernel.getBodyBlock().getArguments())
    names.erase(arg);
  domainShape = row->frame->full;
  domainIndex = "idx";
  LogicalResult result = body();
  // Results of the full shape that this loop computed are written here,
  // not computed again in a loop of their own: GELU's gradient beside the
  // column sum of the bias's gradient was computed twice. The kernel's
  // results never share a buffer with its inputs (the planner keeps an
  // input live through the step that reads it; only pointwise kernels and
  // tied results write in place), so later loops still read the inputs.
  auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    Operation *def = value.getDefiningOp();
    if (failed(result) || row->written.contains(i) || !def ||
        isa<ConstantOp>(def) || !names.count(value) ||
        rowValues.contains(value) ||
        shapeOf(value) != ArrayRef<int64_t>(row->frame->full) ||
        kernel.getTiedInput(i))
      continue;
    FailureOr<std::string> v = scalar(value);
    if (failed(v)) {
      result = failure();
      break;
    }
    writeFullResult(i, value, *v);
  }
  names = std::move(rowNames);
  domainShape = row->kept;
  domainIndex = "row";
  if (vectors) {
    // The loads before the loop over the vector's elements, the stores
    // after it.
    os << "  }\n";
    os.flush();
    std::string inner = text.substr(mark);
    text.resize(mark);
    auto vectorType = [&](Value v) {
      return "memfit_vec<" + *cType(eltOf(v)) + ", " +
             std::to_string(vectors->width) + ">";
    };
    auto yield = kernel.getBodyBlock().getTerminator();
    for (unsigned n : vectors->inputs) {
      Value arg = kernel.getBodyBlock().getArgument(n);
      os << "    const " << vectorType(arg) << " x" << n
         << " = memfit_load_vec<" << *cType(eltOf(arg)) << ", "
         << vectors->width << ">(in" << n << " + base + j0);\n";
    }
    for (unsigned i : vectors->outputs)
      os << "    " << vectorType(yield->getOperand(i)) << " y" << i << ";\n";
    os << inner;
    for (unsigned i : vectors->outputs)
      os << "    memfit_store_vec(out" << i << " + base + j0, y" << i
         << ");\n";
    vectors.reset();
  }
  os << "  }\n";
  return result;
}

LogicalResult KernelWriter::defineFull(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || isa<ConstantOp>(def) || names.count(value) ||
      rowValues.contains(value))
    return success();
  for (Value operand : def->getOperands())
    if (failed(defineFull(operand)))
      return failure();
  if (!rowStats.count(def))
    return emitScalarOp(def);
  // A normalization's or softmax's element, from its row statistics.
  FailureOr<SmallVector<std::string>> operands = scalars(def->getOperands());
  if (failed(operands))
    return failure();
  FailureOr<std::string> expr =
      cast<KernelEmitterOpInterface>(def).emitRowElement(*this, *operands);
  if (failed(expr))
    return failure();
  define(value, "(" + *regType(eltOf(value)) + ")(" + *expr + ")");
  return success();
}

FailureOr<std::string> KernelWriter::fullScalar(Value value) {
  if (failed(defineFull(value)))
    return failure();
  return scalar(value);
}

LogicalResult KernelWriter::emitRowProgram(const RowFrame &frame) {
  std::string acc;
  for (Operation &op : kernel.getBodyOps()) {
    for (Value result : op.getResults())
      if (failed(cType(eltOf(result))))
        return error(&op) << "unsupported element type " << eltOf(result),
               failure();
    if (!isRowOp(&op))
      continue;
    if (!isa<KernelEmitterOpInterface>(op))
      return missingModel(&op), failure();
    FailureOr<std::string> a = accType(&op, eltOf(op.getOperand(0)));
    if (failed(a))
      return failure();
    if (!acc.empty() && acc != *a)
      return error(&op) << "the reductions of a row kernel accumulate in "
                           "one type",
             failure();
    acc = *a;
  }
  Shape kept = frame.keptShape();
  beginRows(frame.length, frame.rows,
            reducedTrailing(frame.full, frame.reduced), acc);
  RowIndexing indexing = writeRowBase(frame.full, frame.reduced);
  row = RowProgram{&frame, acc, std::move(indexing), kept};
  // Row values are computed by every thread of the block, at the row's
  // coordinates in the kept shape.
  emitCoords(os, kept, "row", "c");
  emitCoords(os, kept, "row", "q"); // for the loops over the row
  domainShape = kept;
  domainIndex = "row";
  for (Operation &op : kernel.getBodyOps()) {
    if (isa<ConstantOp>(op))
      continue;
    Value result = op.getResult(0);
    if (isRowOp(&op)) {
      if (failed(cast<KernelEmitterOpInterface>(op).emitRowReduction(*this)))
        return failure();
      continue;
    }
    if (shapeOf(result) == ArrayRef<int64_t>(frame.full))
      continue; // computed in the loops that read it
    if (failed(emitScalarOp(&op)))
      return failure();
    rowValues.insert(result);
  }

  auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
  SmallVector<unsigned> full, rows;
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    if (shapeOf(value) == ArrayRef<int64_t>(frame.full))
      full.push_back(i);
    else if (frame.isRowShape(shapeOf(value)))
      rows.push_back(i);
    else
      return error(kernel) << "result " << i << " of shape "
                           << shapeToString(shapeOf(value))
                           << " is neither the row kernel's shape "
                           << shapeToString(frame.full) << " nor one per row",
             failure();
  }
  llvm::erase_if(full, [&](unsigned i) { return row->written.contains(i); });
  if (!full.empty()) {
    LogicalResult done = writeRowLoop([&]() -> LogicalResult {
      for (unsigned i : full) {
        Value value = yield.getValues()[i];
        FailureOr<std::string> v = fullScalar(value);
        if (failed(v))
          return failure();
        writeFullResult(i, value, *v);
      }
      return success();
    });
    if (failed(done))
      return failure();
  }
  if (!rows.empty()) {
    os << "  if (" << rowLeader() << ") {\n";
    for (unsigned i : rows) {
      Value value = yield.getValues()[i];
      FailureOr<std::string> v = scalar(value);
      if (failed(v))
        return failure();
      os << "    out" << i << "[row] = " << narrow(eltOf(value), *v) << ";\n";
    }
    os << "  }\n";
  }
  setRowLaunch(frame.length, frame.rows);
  return success();
}
