//===- SpecialEmitters.cpp - split and gather_grad --------------------------===//
//
// The KernelEmitterOpInterface models of the data-movement ops with a
// template of their own:
//  - split: one thread per input element, which it writes to the result
//    that holds it;
//  - gather_grad: one thread per column along the axis, adding the
//    gradient in index order (deterministic, no atomics), into zeros or in
//    place into the buffer it accumulates into.
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

namespace {

LogicalResult emitSpecial(SplitOp op, KernelWriter &w) {
  Shape shape(shapeOf(op.getInput()));
  FailureOr<int64_t> axis =
      normalizeAxis(op.getAxis(), shape.size(), op.getLoc());
  if (failed(axis))
    return failure();
  if (failed(cType(eltOf(op.getInput()))))
    return w.error(op) << "unsupported element type " << eltOf(op.getInput()),
           failure();
  raw_ostream &os = w.body();
  int64_t n = getNumElements(shape);
  w.threadLoop("idx", n);
  emitThreadLoopCoords(os, shape, "idx", "c", kPointwiseBlock);
  os << "  const " << *cType(eltOf(op.getInput())) << " v = "
     << w.param(op.getInput()) << "[idx];\n";
  int64_t begin = 0;
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    Shape outShape(shapeOf(result));
    int64_t end = begin + outShape[*axis];
    os << "  " << (i ? "else " : "") << "if (c" << *axis << " < " << end
       << "LL) out" << i << "[" << shiftedOffset(outShape, *axis, begin)
       << "] = v;\n";
    begin = end;
  }
  w.setPointwiseLaunch(n);
  return success();
}

LogicalResult emitSpecial(GatherGradOp op, KernelWriter &w) {
  Shape shape(shapeOf(op.getResult()));
  int64_t axis = op.getAxis();
  int64_t extent = shape[axis];
  int64_t outer = getNumElements(ArrayRef<int64_t>(shape).take_front(axis));
  int64_t inner = getNumElements(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t count = getNumElements(shapeOf(op.getIndices()));
  FailureOr<std::string> t = cType(eltOf(op.getResult()));
  // Accumulating into 16-bit floats would round at every addition.
  if (failed(t) || !isa<FloatType>(eltOf(op.getResult())) ||
      isHalfFloat(eltOf(op.getResult())))
    return w.error(op) << "unsupported element type " << eltOf(op.getResult()),
           failure();
  raw_ostream &os = w.body();
  int64_t columns = outer * inner;
  // Thread t owns column (o, i) of the result along the axis: it zeroes it
  // (unless the result accumulates into its init, whose buffer the memory
  // plan gives it), then adds every index position's gradient in order.
  w.threadLoop("t", columns);
  os << "  const long long o = t / " << std::max<int64_t>(inner, 1)
     << "LL, i = t % " << std::max<int64_t>(inner, 1) << "LL;\n";
  os << "  const long long base = o * " << extent * inner << "LL + i;\n";
  os << "  const long long gbase = o * " << count * inner << "LL + i;\n";
  if (!op.getInit())
    os << "  for (long long d = 0; d < " << extent
       << "LL; ++d) out0[base + d * " << inner << "LL] = (" << *t << ")0;\n";
  FailureOr<std::string> index = w.load(op.getIndices(), "j", op);
  FailureOr<std::string> grad = w.load(
      op.getGrad(), llvm::formatv("gbase + j * {0}LL", inner).str(), op);
  if (failed(index) || failed(grad))
    return failure();
  os << "  for (long long j = 0; j < " << count << "LL; ++j) {\n";
  os << "    long long k = (long long)" << *index << ";\n";
  os << "    if (k < 0) k += " << extent << "LL;\n";
  // Out-of-range indices contribute nothing.
  os << "    if (k >= 0 && k < " << extent << "LL) out0[base + k * " << inner
     << "LL] += " << *grad << ";\n";
  os << "  }\n";
  w.setPointwiseLaunch(columns);
  return success();
}

} // namespace

void cuda::attachSpecialEmitters(MLIRContext *context) {
  SplitOp::attachInterface<TemplateModel<SplitOp, emitSpecial>>(*context);
  GatherGradOp::attachInterface<TemplateModel<GatherGradOp, emitSpecial>>(
      *context);
}
