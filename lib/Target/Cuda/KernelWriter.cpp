//===- KernelWriter.cpp - CUDA C++ of one kernel --------------------------===//
//
// Every kernel is one __global__ function in the subset of CUDA C++ that
// runtime/KERNELS.md describes, so that NVRTC and the host backend compile
// the same text. Shapes are static, so sizes, strides and attributes are
// written into the code as constants. A kernel either has an anchor, an op
// whose KernelEmitterOpInterface style is Template (a row of a
// normalization, a reduction, a loss, split or gather_grad; see
// RowEmitters.cpp, LossEmitters.cpp and SpecialEmitters.cpp), which writes
// the whole body, or it is pointwise: one thread per element of the
// result, where element-wise ops compose as scalar expressions (the
// fusion-ready path: any chain of element-wise ops of one shape becomes one
// kernel) and inputs are loaded with their broadcast or data-movement index
// mapping (PointwiseEmitters.cpp). A pointwise kernel that ends in
// memfit.quantize (EmitStyle::Blockwise) runs one thread block per
// quantization block instead (emitBlockwise, QuantEmitters.cpp), and a
// kernel of fused reductions one block per row (emitRowProgram,
// RowProgram.cpp). This file picks the kernel's shape, writes its signature
// and composes a pointwise kernel's ops.
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "memfit/Analysis/MemoryPlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

/// The op's emission style; ops without the interface are treated as
/// element-wise ops without a template.
static EmitStyle styleOf(Operation *op) {
  auto emitter = dyn_cast<KernelEmitterOpInterface>(op);
  return emitter ? emitter.getEmitStyle() : EmitStyle::ElementWise;
}

//===----------------------------------------------------------------------===//
// KernelWriter: what the ops' emitters write with
//===----------------------------------------------------------------------===//

std::string KernelWriter::param(Value value) {
  return "in" + std::to_string(cast<BlockArgument>(value).getArgNumber());
}

StridedViewOp KernelWriter::viewOf(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &kernel.getBodyBlock())
    return {};
  return kernel.getInputs()[arg.getArgNumber()].getDefiningOp<StridedViewOp>();
}

std::string KernelWriter::viewOffset(StridedViewOp view, size_t rank) {
  ArrayRef<int64_t> shape = view.getType().getShape();
  ArrayRef<int64_t> strides = view.getStrides();
  // The view's dimensions are the domain's trailing ones; one of extent 1
  // is broadcast.
  size_t lead = rank - shape.size();
  std::string offset = std::to_string(view.getOffset()) + "LL";
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != 1 && strides[d] != 0)
      offset += llvm::formatv(" + c{0} * {1}LL", lead + d, strides[d]).str();
  return offset;
}

std::string KernelWriter::freshName(StringRef prefix) {
  return prefix.str() + std::to_string(nextVar++);
}

InFlightDiagnostic KernelWriter::missingModel(Operation *op) {
  return error(op) << "the op has no KernelEmitterOpInterface model "
                      "(cuda::registerKernelEmitterInterfaces attaches them)";
}

void KernelWriter::collectNodeNamesInto(Location loc) {
  std::vector<std::string> found;
  collectNodeNames(loc, found);
  for (std::string &name : found)
    if (!llvm::is_contained(info.onnxNodes, name))
      info.onnxNodes.push_back(std::move(name));
}

//===----------------------------------------------------------------------===//
// KernelWriter: the kernel
//===----------------------------------------------------------------------===//

FailureOr<Operation *> KernelWriter::findAnchor() {
  Operation *anchor = nullptr;
  for (Operation &op : kernel.getBodyOps()) {
    if (styleOf(&op) == EmitStyle::Blockwise)
      continue; // ends a pointwise kernel (emitBlockwise)
    // An op whose class needs a template but that has no model must not
    // pass for an element-wise op: its model was not attached.
    auto opClass = dyn_cast<OpClassInterface>(&op);
    if (!isa<KernelEmitterOpInterface>(op) && opClass &&
        (opClass.getOpClass() == OpClass::Normalization ||
         opClass.getOpClass() == OpClass::Reduction ||
         opClass.getOpClass() == OpClass::Loss ||
         opClass.getOpClass() == OpClass::Quantization ||
         opClass.getOpClass() == OpClass::Attention))
      return missingModel(&op), failure();
    if (styleOf(&op) != EmitStyle::Template)
      continue;
    if (anchor)
      return error(&op) << "a kernel holds at most one normalization, "
                           "reduction, loss or split (also has '"
                        << anchor->getName() << "')",
             failure();
    anchor = &op;
  }
  if (!anchor)
    return anchor;
  // An attention op's result may be yielded transposed (its model writes
  // it at the transposed strides).
  auto yieldedTransposeOfAnchor = [&](Operation &op) {
    auto transpose = dyn_cast<TransposeOp>(op);
    auto opClass = dyn_cast<OpClassInterface>(anchor);
    return transpose && opClass &&
           opClass.getOpClass() == OpClass::Attention &&
           transpose.getInput().getDefiningOp() == anchor &&
           transpose.getPerm().back() ==
               static_cast<int64_t>(transpose.getPerm().size()) - 1 &&
           llvm::all_of(transpose->getUsers(),
                        [](Operation *user) { return isa<YieldOp>(user); });
  };
  for (Operation &op : kernel.getBodyOps())
    if (&op != anchor && !isa<ConstantOp>(op) && !yieldedTransposeOfAnchor(op))
      return error(&op) << "fusing element-wise ops with '"
                        << anchor->getName()
                        << "' is not supported by the emitter yet",
             failure();
  // Row, reduction and loss templates read their operands from buffers;
  // gather_grad, the one anchor that kernelTakesLiterals, also takes splat
  // constants as literals.
  for (Value operand : anchor->getOperands())
    if (!isa<BlockArgument>(operand) &&
        !(kernelTakesLiterals(anchor) && operand.getDefiningOp<ConstantOp>()))
      return error(anchor) << "operands must be kernel inputs, not values "
                              "defined in the kernel",
             failure();
  return anchor;
}

LogicalResult KernelWriter::writeSignature(raw_ostream &out) {
  out << "extern \"C\" __global__ void " << info.name << "(";
  bool first = true;
  // A kernel whose results memfit.assign stores writes over the parameters
  // and states it reads (the memory plan updates them in place), and one
  // that accumulates a result into an input, has pointers that alias: they
  // must not be declared __restrict__.
  bool inPlace =
      llvm::any_of(kernel->getUsers(),
                   [](Operation *user) { return isa<AssignOp>(user); }) ||
      llvm::any_of(llvm::seq(kernel->getNumResults()), [&](unsigned i) {
        return static_cast<bool>(kernel.getTiedInput(i));
      });
  const char *pointer = inPlace ? "* " : "* __restrict__ ";
  for (BlockArgument arg : kernel.getBodyBlock().getArguments()) {
    FailureOr<std::string> t = cType(eltOf(arg));
    if (failed(t))
      return error(kernel) << "unsupported element type " << eltOf(arg),
             failure();
    out << (first ? "" : ", ") << "const " << *t << pointer << "in"
        << arg.getArgNumber();
    first = false;
  }
  for (auto [i, result] : llvm::enumerate(kernel.getResults())) {
    FailureOr<std::string> t = cType(eltOf(result));
    if (failed(t))
      return error(kernel) << "unsupported element type " << eltOf(result),
             failure();
    out << (first ? "" : ", ") << *t << pointer << "out" << i;
    first = false;
  }
  // The index-error word, last (checkIndex).
  if (!info.indexChecks.empty())
    out << (first ? "" : ", ") << "unsigned long long* memfit_err";
  out << ") {\n";
  return success();
}

FailureOr<rt::Kernel> KernelWriter::emit(raw_ostream &out) {
  // Reductions fused with element-wise ops; a reduction alone has its
  // template.
  std::optional<RowFrame> frame = rowFrameOf(kernel);
  if (frame && llvm::count_if(kernel.getBodyOps(), [](Operation &op) {
                 return !isa<ConstantOp>(op);
               }) < 2)
    frame.reset();
  FailureOr<Operation *> anchor =
      frame ? FailureOr<Operation *>(nullptr) : findAnchor();
  if (failed(anchor))
    return failure();

  std::string label;
  unsigned count = 0;
  for (Operation &op : kernel.getBodyOps()) {
    if (isa<ConstantOp>(op))
      continue;
    if (count++ < 3)
      label += "_" + opLabel(&op);
    collectNodeNamesInto(op.getLoc());
  }
  if (count > 3)
    label += llvm::formatv("_{0}ops", count).str();
  info.name = llvm::formatv("k{0}{1}", index, label).str();

  // findAnchor refuses any other op beside an anchor, quantize included.
  SmallVector<QuantizeOp> quantizes(kernel.getBody().getOps<QuantizeOp>());
  LogicalResult result =
      frame     ? emitRowProgram(*frame)
      : *anchor ? cast<KernelEmitterOpInterface>(*anchor).emitTemplate(*this)
      : quantizes.empty() ? emitPointwise()
                          : emitBlockwise(quantizes);
  if (failed(result))
    return failure();
  if (failed(checkGridLimit(kernel, gridBlocks)))
    return failure();
  info.grid = {static_cast<uint32_t>(gridBlocks), 1, 1};

  out << "// " << info.name << ": " << nodeList(info.onnxNodes) << "\n";
  if (failed(writeSignature(out)))
    return failure();
  out << text << closings << "}\n\n";
  return info;
}

//===----------------------------------------------------------------------===//
// KernelWriter: pointwise kernels
//===----------------------------------------------------------------------===//

std::string KernelWriter::define(Value value, StringRef expr) {
  std::string name = "v" + std::to_string(nextVar++);
  os << "  const " << *regType(eltOf(value)) << " " << name << " = " << expr
     << ";\n";
  names[value] = name;
  return name;
}

FailureOr<std::string> KernelWriter::scalar(Value value) {
  // Values computed in the kernel exist at the kernel's index only (a row
  // kernel's row values, once per row).
  if (value.getDefiningOp() && !value.getDefiningOp<ConstantOp>() &&
      !rowValues.contains(value) &&
      shapeOf(value) != ArrayRef<int64_t>(domainShape))
    return error(value.getDefiningOp())
               << "an intermediate value of shape "
               << shapeToString(shapeOf(value))
               << " is broadcast inside the kernel of shape "
               << shapeToString(domainShape),
           failure();
  if (auto it = names.find(value); it != names.end())
    return it->second;
  if (auto constant = value.getDefiningOp<ConstantOp>()) {
    auto elements = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!elements || !elements.isSplat())
      return error(constant) << "only splat constants can be kernel literals",
             failure();
    FailureOr<std::string> text =
        literal(elements.getSplatValue<Attribute>(), eltOf(value));
    if (failed(text))
      return error(constant) << "unsupported constant type " << eltOf(value),
             failure();
    return names[value] = *text;
  }
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Shape shape(shapeOf(arg));
    if (!isBroadcastableTo(shape, domainShape))
      return error(kernel) << "input " << arg.getArgNumber() << " of shape "
                           << shapeToString(shape)
                           << " does not broadcast to the kernel's shape "
                           << shapeToString(domainShape),
             failure();
    // An input of the domain's shape is read at the domain's index (the
    // offset its coordinates would add up to); a view of another value's
    // buffer at its own offset and strides.
    std::string offset;
    StridedViewOp view = viewOf(arg);
    if (vectors && !view && shape == domainShape && domainIndex == "idx") {
      // In a row loop of vectors: the element of the loaded vector.
      unsigned n = arg.getArgNumber();
      if (!llvm::is_contained(vectors->inputs, n))
        vectors->inputs.push_back(n);
      return define(value, widen(eltOf(arg),
                                 "x" + std::to_string(n) + ".v[k]"));
    }
    if (view)
      offset = viewOffset(view, domainShape.size());
    else
      offset = shape == domainShape
                   ? domainIndex
                   : broadcastOffset(shape, domainShape.size(), "c");
    return define(value,
                  widen(eltOf(arg), param(arg) + "[" + offset + "]"));
  }
  return error(value.getDefiningOp()) << "value used before its definition",
         failure();
}

FailureOr<SmallVector<std::string>> KernelWriter::scalars(ValueRange values) {
  SmallVector<std::string> result;
  for (Value value : values) {
    FailureOr<std::string> s = scalar(value);
    if (failed(s))
      return failure();
    result.push_back(*s);
  }
  return result;
}

FailureOr<std::string> KernelWriter::load(Value value, StringRef offset,
                                          Operation *user) {
  if (viewOf(value))
    return error(user) << "data movement of a view (memfit-fuse gives views "
                          "to element-wise ops and attention rows only)",
           failure();
  if (auto arg = dyn_cast<BlockArgument>(value))
    return widen(eltOf(arg), param(arg) + "[" + offset.str() + "]");
  if (value.getDefiningOp<ConstantOp>())
    return scalar(value);
  return error(user) << "data movement of a value computed in the same "
                        "kernel is not supported",
         failure();
}

LogicalResult KernelWriter::emitScalarOp(Operation *op) {
  if (isa<ConstantOp>(op))
    return success(); // literals, written where used
  auto emitter = dyn_cast<KernelEmitterOpInterface>(op);
  if (emitter && emitter.getEmitStyle() == EmitStyle::IndexMapping) {
    // Their index mappings are written for the kernel's own coordinates.
    if (shapeOf(op->getResult(0)) != ArrayRef<int64_t>(domainShape))
      return error(op) << "a data-movement result of shape "
                       << shapeToString(shapeOf(op->getResult(0)))
                       << " inside a kernel of shape "
                       << shapeToString(domainShape) << " is not supported",
             failure();
    FailureOr<std::string> expr = emitter.emitScalar(*this, {});
    if (failed(expr))
      return failure();
    define(op->getResult(0), *expr);
    return success();
  }

  FailureOr<SmallVector<std::string>> operands = scalars(op->getOperands());
  if (failed(operands))
    return failure();
  if (!emitter)
    return error(op) << "no element-wise template", failure();
  FailureOr<std::string> expr = emitter.emitScalar(*this, *operands);
  if (failed(expr))
    return failure();
  define(op->getResult(0), *expr);
  return success();
}

LogicalResult KernelWriter::emitPointwise() {
  auto results = kernel.getResults();
  if (results.empty())
    return error(kernel) << "a kernel without results", failure();
  for (Operation &op : kernel.getBodyOps()) {
    if (isBufferView(&op))
      return error(&op) << "views are not supported inside kernels", failure();
    for (Value result : op.getResults())
      if (failed(cType(eltOf(result))))
        return error(&op) << "unsupported element type " << eltOf(result),
               failure();
  }
  if (auto sizes = kernel->getAttrOfType<DenseI64ArrayAttr>(kSegmentsAttr))
    return emitSegments(sizes.asArrayRef());
  domainShape = Shape(shapeOf(results[0]));
  for (Value result : results)
    if (shapeOf(result) != ArrayRef<int64_t>(domainShape))
      return error(kernel) << "results of different shapes need a split",
             failure();

  int64_t n = getNumElements(domainShape);
  threadLoop("idx", n);
  emitThreadLoopCoords(os, domainShape, "idx", "c", kPointwiseBlock);
  for (Operation &op : kernel.getBodyOps())
    if (failed(emitScalarOp(&op)))
      return failure();
  auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    FailureOr<std::string> s = scalar(value);
    if (failed(s))
      return failure();
    os << "  out" << i << "[idx] = " << narrow(eltOf(value), *s) << ";\n";
  }
  setPointwiseLaunch(n);
  return success();
}

LogicalResult KernelWriter::emitSegments(ArrayRef<int64_t> sizes) {
  // Each block updates one chunk of one segment, its threads striding over
  // the chunk (coalesced on a GPU; on the host, each call of the kernel
  // runs a loop, not one element).
  constexpr int64_t kChunk = 32 * kPointwiseBlock;
  auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
  // Each segment's element count, first block and first result.
  SmallVector<int64_t> elements, blockBegins{0};
  SmallVector<unsigned> firsts{0};
  for (int64_t size : sizes) {
    Value value = yield.getValues()[firsts.back()];
    elements.push_back(getNumElements(shapeOf(value)));
    blockBegins.push_back(blockBegins.back() +
                          (elements.back() + kChunk - 1) / kChunk);
    firsts.push_back(firsts.back() + static_cast<unsigned>(size));
  }
  os << "  const long long block = blockIdx.x;\n";
  // The segment of a block by bisection: a few comparisons however many
  // segments.
  std::function<LogicalResult(size_t, size_t)> emitRange =
      [&](size_t lo, size_t hi) -> LogicalResult {
    if (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      os << "  if (block < " << blockBegins[mid] << "LL) {\n";
      if (failed(emitRange(lo, mid)))
        return failure();
      os << "  } else {\n";
      if (failed(emitRange(mid, hi)))
        return failure();
      os << "  }\n";
      return success();
    }
    ValueRange values = yield.getValues().slice(firsts[lo], sizes[lo]);
    domainShape = Shape(shapeOf(values[0]));
    // The ops this segment's results depend on.
    llvm::SmallPtrSet<Operation *, 32> needed;
    SmallVector<Value> work(values.begin(), values.end());
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (def && needed.insert(def).second)
        llvm::append_range(work, def->getOperands());
    }
    // Each segment is a scope of its own: its index, coordinates and
    // variables.
    names.clear();
    os << "  {\n";
    os << "  const long long first = (block - " << blockBegins[lo] << "LL) * "
       << kChunk << "LL;\n";
    os << "  const long long last = first + " << kChunk << "LL < "
       << elements[lo] << "LL ? first + " << kChunk << "LL : " << elements[lo]
       << "LL;\n";
    os << blockStrideLoop("idx", "first", "last") << " {\n";
    emitCoords(os, domainShape, "idx", "c");
    for (Operation &op : kernel.getBodyOps())
      if (needed.contains(&op) && failed(emitScalarOp(&op)))
        return failure();
    for (auto [i, value] : llvm::enumerate(values)) {
      FailureOr<std::string> v = scalar(value);
      if (failed(v))
        return failure();
      os << "  out" << firsts[lo] + i << "[idx] = " << narrow(eltOf(value), *v)
         << ";\n";
    }
    os << "  }\n  }\n";
    return success();
  };
  if (failed(emitRange(0, sizes.size())))
    return failure();
  setLaunch(kPointwiseBlock, std::max<int64_t>(blockBegins.back(), 1),
            /*barriers=*/false, /*threadLoops=*/true);
  return success();
}
