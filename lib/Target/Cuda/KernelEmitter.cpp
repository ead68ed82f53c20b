//===- KernelEmitter.cpp - CUDA C++ of one kernel --------------------------===//
//
// Every kernel is one __global__ function in the subset of CUDA C++ that
// runtime/KERNELS.md describes, so that NVRTC and the host backend compile
// the same text. Shapes are static, so sizes, strides and attributes are
// written into the code as constants. Three kernel shapes exist:
//
//  - pointwise: one thread per element of the result. Element-wise ops
//    compose as scalar expressions (the fusion-ready path: any chain of
//    element-wise ops of one shape becomes one kernel); inputs are loaded
//    with their broadcast or data-movement index mapping.
//  - row: one block per row of a normalization or reduction; the block's
//    threads stride over the row and combine partial results with warp
//    shuffles and shared memory.
//  - loss: one thread per (sample, position); reduced losses add up in one
//    block.
//
// Two training ops have templates of their own: gather_grad (one thread per
// column along the axis, adding the gradient in index order: deterministic,
// no atomics) and softmax_cross_entropy_grad (the row template of softmax).
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/ShapeInference.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::memfit;

namespace {

using Shape = SmallVector<int64_t>;

constexpr int64_t kPointwiseBlock = 256;
constexpr int64_t kMaxRowBlock = 256;

Shape shapeOf(Value value) {
  return Shape(cast<RankedTensorType>(value.getType()).getShape());
}
Type eltOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

Shape stridesOf(ArrayRef<int64_t> shape) {
  Shape strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t product(ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t v : values)
    result *= v;
  return result;
}

FailureOr<std::string> cType(Type type) {
  if (type.isF32())
    return std::string("float");
  if (type.isF64())
    return std::string("double");
  if (type.isInteger(1))
    return std::string("bool");
  // Unsigned 32- and 64-bit integers have no runtime dtype yet.
  if (type.isSignlessInteger(64) || type.isSignedInteger(64))
    return std::string("long long");
  if (type.isSignlessInteger(32) || type.isSignedInteger(32))
    return std::string("int");
  if (type.isSignlessInteger(8) || type.isSignedInteger(8))
    return std::string("signed char");
  if (type.isUnsignedInteger(8))
    return std::string("unsigned char");
  return failure();
}

/// The float function for `type`: expf for f32, exp for f64.
std::string mathFn(StringRef base, Type type) {
  return type.isF64() ? base.str() : (base + "f").str();
}

std::string floatLiteral(double value, bool isDouble) {
  if (std::isnan(value))
    return isDouble ? "__longlong_as_double(0x7ff8000000000000LL)"
                    : "__int_as_float(0x7fc00000)";
  if (std::isinf(value)) {
    if (isDouble)
      return value > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                       : "__longlong_as_double((long long)0xfff0000000000000ULL)";
    return value > 0 ? "__int_as_float(0x7f800000)"
                     : "__int_as_float((int)0xff800000u)";
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), isDouble ? "%.17g" : "%.9g", value);
  std::string text = buffer;
  if (text.find_first_of(".en") == std::string::npos)
    text += ".0";
  if (!isDouble)
    text += "f";
  return value < 0 ? "(" + text + ")" : text;
}

std::string intLiteral(int64_t value) {
  if (value == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  std::string text = std::to_string(value) + "LL";
  return value < 0 ? "(" + text + ")" : text;
}

/// A literal of `type` from an integer or float attribute.
FailureOr<std::string> literal(Attribute attr, Type type) {
  if (type.isInteger(1)) {
    if (auto i = dyn_cast<IntegerAttr>(attr))
      return std::string(i.getValue().isZero() ? "false" : "true");
    if (auto b = dyn_cast<BoolAttr>(attr))
      return std::string(b.getValue() ? "true" : "false");
    return failure();
  }
  if (isa<FloatType>(type)) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      return floatLiteral(f.getValueAsDouble(), type.isF64());
    if (auto i = dyn_cast<IntegerAttr>(attr))
      return floatLiteral(static_cast<double>(i.getInt()), type.isF64());
    return failure();
  }
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    FailureOr<std::string> t = cType(type);
    if (failed(t))
      return failure();
    return "((" + *t + ")" + intLiteral(i.getValue().getSExtValue()) + ")";
  }
  return failure();
}

/// ONNX node names for a `//` comment: control characters and backslashes
/// (which would continue the comment onto the next line) are replaced.
std::string nodeList(ArrayRef<std::string> nodes) {
  if (nodes.empty())
    return "(no ONNX node)";
  std::string text;
  for (auto [i, node] : llvm::enumerate(nodes)) {
    if (i)
      text += ", ";
    for (char c : node)
      text += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\')
                  ? '?'
                  : c;
  }
  return text;
}

std::string opLabel(Operation *op) {
  StringRef name = op->getName().getStringRef();
  name.consume_front("memfit.");
  return name.str();
}

/// Writes `const long long <prefix><d> = ...;` coordinates of `index` in
/// `shape`, one per dimension.
void emitCoords(raw_ostream &os, ArrayRef<int64_t> shape, StringRef index,
                StringRef prefix, StringRef indent = "  ") {
  Shape strides = stridesOf(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    os << indent << "const long long " << prefix << d << " = ";
    if (d == 0)
      os << "(" << index << ") / " << strides[d] << "LL;\n";
    else
      os << "((" << index << ") / " << strides[d] << "LL) % " << shape[d]
         << "LL;\n";
  }
}

/// The offset into a row-major tensor of shape `in` that broadcasts to a
/// result of rank `outRank` whose coordinates are `<prefix><d>`.
std::string broadcastOffset(ArrayRef<int64_t> in, size_t outRank,
                            StringRef prefix) {
  Shape strides = stridesOf(in);
  std::string expr;
  size_t lead = outRank - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1)
      continue;
    if (!expr.empty())
      expr += " + ";
    expr += llvm::formatv("{0}{1} * {2}LL", prefix, lead + d, strides[d]).str();
  }
  return expr.empty() ? "0" : expr;
}

/// The offset into a row-major tensor of shape `shape` at coordinates
/// `c<d>`, with the coordinate along `axis` shifted down by `begin` (a part
/// of a concat or a split).
std::string shiftedOffset(ArrayRef<int64_t> shape, int64_t axis,
                          int64_t begin) {
  Shape strides = stridesOf(shape);
  std::string offset;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    std::string c = d == axis ? llvm::formatv("(c{0} - {1}LL)", d, begin).str()
                              : "c" + std::to_string(d);
    offset +=
        llvm::formatv("{0}{1} * {2}LL", d ? " + " : "", c, strides[d]).str();
  }
  return offset.empty() ? "0" : offset;
}

int64_t rowBlockSize(int64_t rowLength) {
  int64_t block = 32;
  while (block < rowLength && block < kMaxRowBlock)
    block *= 2;
  return block;
}

int64_t gridFor(int64_t threads, int64_t block) {
  return std::max<int64_t>(1, (threads + block - 1) / block);
}

/// CUDA's limit on gridDim.x.
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;

class KernelWriter {
public:
  KernelWriter(KernelOp kernel, unsigned index) : kernel(kernel), index(index) {}

  FailureOr<rt::Kernel> emit(raw_ostream &out);

private:
  InFlightDiagnostic error(Operation *op) {
    return op->emitError() << "cannot emit CUDA for '" << op->getName()
                           << "': ";
  }

  /// The single op of a row, reduction or loss kernel, or null for a
  /// pointwise kernel.
  FailureOr<Operation *> findAnchor();
  LogicalResult writeSignature(raw_ostream &out);

  // Pointwise kernels.
  LogicalResult emitPointwise();
  FailureOr<std::string> scalar(Value value);
  LogicalResult emitScalarOp(Operation *op);
  FailureOr<std::string> emitDataMovement(Operation *op);
  std::string define(Value value, StringRef expr);
  FailureOr<std::string> load(Value value, StringRef offset, Operation *user);

  // Row kernels.
  struct RowInput {
    Shape shape;
    int64_t axis;
    Type type;
    std::string acc; // accumulator type
    std::string in;  // the input's parameter name
  };
  FailureOr<RowInput> floatRowInput(Operation *op, int64_t axisAttr);
  void setRowLaunch(int64_t rowLength, int64_t rows) {
    info.block = {static_cast<uint32_t>(rowBlockSize(rowLength)), 1, 1};
    gridBlocks = std::max<int64_t>(rows, 1);
    info.usesBarriers = true;
  }
  /// One thread per element of `threads`, in blocks of kPointwiseBlock.
  void setPointwiseLaunch(int64_t threads) {
    info.block = {static_cast<uint32_t>(kPointwiseBlock), 1, 1};
    gridBlocks = gridFor(threads, kPointwiseBlock);
    info.usesBarriers = false;
  }
  /// Declares the shared scratch of the block reductions.
  void writeScratch(StringRef acc) {
    os << "  __shared__ " << acc << " scratch[32];\n";
  }
  /// Writes `m`, the maximum of a row of `n` elements `element` (an
  /// expression of `j`), and `s`, the sum of exp(element - m) over it.
  void writeRowMaxSum(StringRef acc, Type type, int64_t n, StringRef element);
  /// Blocks of the 1-D grid; checked against CUDA's limit before it goes
  /// into the manifest.
  int64_t gridBlocks = 1;
  LogicalResult emitSoftmax(Operation *op, int64_t axis, bool logSoftmax);
  LogicalResult emitNorm(Operation *op, Value scale, Value bias, int64_t axis,
                         double epsilon, bool rms);
  LogicalResult emitReduce(Operation *op, ArrayRef<int64_t> axes,
                           StringRef kind);
  LogicalResult emitLoss(Operation *op, Value scores, Value labels,
                         Value weights, std::optional<int64_t> ignoreIndex,
                         LossReduction reduction, bool fromLogits);
  LogicalResult emitSplit(SplitOp op);
  LogicalResult emitGatherGrad(GatherGradOp op);
  LogicalResult emitSoftmaxCrossEntropyGrad(SoftmaxCrossEntropyGradOp op);

  void collectNodeNamesInto(Location loc) {
    std::vector<std::string> found;
    cuda::collectNodeNames(loc, found);
    for (std::string &name : found)
      if (!llvm::is_contained(info.onnxNodes, name))
        info.onnxNodes.push_back(std::move(name));
  }

  std::string param(Value value) {
    return "in" + std::to_string(cast<BlockArgument>(value).getArgNumber());
  }

  KernelOp kernel;
  unsigned index;
  std::string body;
  llvm::raw_string_ostream os{body};
  rt::Kernel info;
  Shape domain;
  DenseMap<Value, std::string> names;
  unsigned nextVar = 0;
};

FailureOr<Operation *> KernelWriter::findAnchor() {
  Operation *anchor = nullptr;
  for (Operation &op : kernel.getBodyOps()) {
    auto opClass = cast<OpClassInterface>(&op).getOpClass();
    bool special = opClass == OpClass::Normalization ||
                   opClass == OpClass::Reduction || opClass == OpClass::Loss ||
                   isa<SplitOp, GatherGradOp>(op);
    if (!special)
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
  for (Operation &op : kernel.getBodyOps())
    if (&op != anchor && !isa<ConstantOp>(op))
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
  // and states it reads (the memory plan updates them in place): its
  // pointers alias, so they must not be declared __restrict__.
  bool inPlace = llvm::any_of(kernel->getUsers(),
                              [](Operation *user) { return isa<AssignOp>(user); });
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
  out << ") {\n";
  return success();
}

FailureOr<rt::Kernel> KernelWriter::emit(raw_ostream &out) {
  FailureOr<Operation *> anchor = findAnchor();
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

  LogicalResult result =
      !*anchor
          ? emitPointwise()
          : llvm::TypeSwitch<Operation *, LogicalResult>(*anchor)
                .Case([&](SoftmaxOp op) {
                  return emitSoftmax(op, op.getAxis(), /*logSoftmax=*/false);
                })
                .Case([&](LogSoftmaxOp op) {
                  return emitSoftmax(op, op.getAxis(), /*logSoftmax=*/true);
                })
                .Case([&](LayerNormOp op) {
                  return emitNorm(op, op.getScale(), op.getBias(), op.getAxis(),
                                  op.getEpsilon().convertToDouble(),
                                  /*rms=*/false);
                })
                .Case([&](RMSNormOp op) {
                  return emitNorm(op, op.getScale(), nullptr, op.getAxis(),
                                  op.getEpsilon().convertToDouble(),
                                  /*rms=*/true);
                })
                .Case([&](ReduceSumOp op) {
                  return emitReduce(op, op.getAxes(), "sum");
                })
                .Case([&](ReduceMeanOp op) {
                  return emitReduce(op, op.getAxes(), "mean");
                })
                .Case([&](ReduceMaxOp op) {
                  return emitReduce(op, op.getAxes(), "max");
                })
                .Case([&](SoftmaxCrossEntropyLossOp op) {
                  return emitLoss(op, op.getScores(), op.getLabels(),
                                  op.getWeights(), op.getIgnoreIndex(),
                                  op.getReduction(), /*fromLogits=*/true);
                })
                .Case([&](NegativeLogLikelihoodLossOp op) {
                  return emitLoss(op, op.getInput(), op.getTarget(),
                                  op.getWeights(), op.getIgnoreIndex(),
                                  op.getReduction(), /*fromLogits=*/false);
                })
                .Case([&](SplitOp op) { return emitSplit(op); })
                .Case([&](GatherGradOp op) { return emitGatherGrad(op); })
                .Case([&](SoftmaxCrossEntropyGradOp op) {
                  return emitSoftmaxCrossEntropyGrad(op);
                })
                .Default([&](Operation *op) {
                  return error(op) << "no kernel template", failure();
                });
  if (failed(result))
    return failure();
  if (gridBlocks > kMaxGridX)
    return error(kernel) << gridBlocks
                         << " blocks exceed CUDA's grid limit of " << kMaxGridX,
           failure();
  info.grid = {static_cast<uint32_t>(gridBlocks), 1, 1};

  out << "// " << info.name << ": " << nodeList(info.onnxNodes) << "\n";
  if (failed(writeSignature(out)))
    return failure();
  out << body << "}\n\n";
  return info;
}

//===----------------------------------------------------------------------===//
// Pointwise kernels
//===----------------------------------------------------------------------===//

std::string KernelWriter::define(Value value, StringRef expr) {
  std::string name = "v" + std::to_string(nextVar++);
  os << "  const " << *cType(eltOf(value)) << " " << name << " = " << expr
     << ";\n";
  names[value] = name;
  return name;
}

/// A kernel input used by an element-wise op: loaded once, broadcast to the
/// domain.
FailureOr<std::string> KernelWriter::scalar(Value value) {
  // Values computed in the kernel exist at the kernel's index only.
  if (value.getDefiningOp() && !value.getDefiningOp<ConstantOp>() &&
      shapeOf(value) != domain)
    return error(value.getDefiningOp())
               << "an intermediate value of shape "
               << shapeToString(shapeOf(value))
               << " is broadcast inside the kernel of shape "
               << shapeToString(domain),
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
    Shape shape = shapeOf(arg);
    if (!isBroadcastableTo(shape, domain))
      return error(kernel) << "input " << arg.getArgNumber() << " of shape "
                           << shapeToString(shape)
                           << " does not broadcast to the kernel's shape "
                           << shapeToString(domain),
             failure();
    return define(value,
                  param(arg) + "[" + broadcastOffset(shape, domain.size(), "c") +
                      "]");
  }
  return error(value.getDefiningOp()) << "value used before its definition",
         failure();
}

/// The element of a kernel input at `offset`, or a splat constant's value.
FailureOr<std::string> KernelWriter::load(Value value, StringRef offset,
                                          Operation *user) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return param(arg) + "[" + offset.str() + "]";
  if (value.getDefiningOp<ConstantOp>())
    return scalar(value);
  return error(user) << "data movement of a value computed in the same "
                        "kernel is not supported",
         failure();
}

/// Data-movement ops read their input at a mapped index; they take kernel
/// inputs only.
FailureOr<std::string> KernelWriter::emitDataMovement(Operation *op) {
  Value result = op->getResult(0);
  size_t rank = domain.size();
  auto in = [&](unsigned i, StringRef offset) {
    return load(op->getOperand(i), offset, op);
  };
  return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([&](ExpandOp expand) -> FailureOr<std::string> {
        return in(0, broadcastOffset(shapeOf(expand.getInput()), rank, "c"));
      })
      .Case([&](TransposeOp transpose) -> FailureOr<std::string> {
        Shape strides = stridesOf(shapeOf(transpose.getInput()));
        std::string offset;
        for (auto [d, p] : llvm::enumerate(transpose.getPerm()))
          offset += llvm::formatv("{0}c{1} * {2}LL", d ? " + " : "", d,
                                  strides[p])
                        .str();
        return in(0, offset.empty() ? "0" : offset);
      })
      .Case([&](SliceOp slice) -> FailureOr<std::string> {
        Shape inShape = shapeOf(slice.getInput());
        SmallVector<SliceDim> dims;
        if (failed(resolveSlice(inShape, slice.getStarts(), slice.getEnds(),
                                slice.getAxes(), slice.getSteps(), dims,
                                slice.getLoc())))
          return failure();
        Shape strides = stridesOf(inShape);
        std::string offset;
        for (auto [d, dim] : llvm::enumerate(dims))
          offset += llvm::formatv("{0}({1}LL + c{2} * {3}LL) * {4}LL",
                                  d ? " + " : "", dim.start, d, dim.step,
                                  strides[d])
                        .str();
        return in(0, offset.empty() ? "0" : offset);
      })
      .Case([&](GatherOp gather) -> FailureOr<std::string> {
        Shape dataShape = shapeOf(gather.getData());
        Shape indexShape = shapeOf(gather.getIndices());
        FailureOr<int64_t> axis =
            normalizeAxis(gather.getAxis(), dataShape.size(), gather.getLoc());
        if (failed(axis))
          return failure();
        Shape indexStrides = stridesOf(indexShape);
        std::string indexOffset;
        for (size_t t = 0; t < indexShape.size(); ++t)
          indexOffset += llvm::formatv("{0}c{1} * {2}LL", t ? " + " : "",
                                       *axis + t, indexStrides[t])
                             .str();
        FailureOr<std::string> index =
            in(1, indexOffset.empty() ? "0" : indexOffset);
        if (failed(index))
          return failure();
        std::string g = "g" + std::to_string(nextVar++);
        int64_t extent = dataShape[*axis];
        os << "  long long " << g << " = (long long)" << *index << ";\n";
        os << "  if (" << g << " < 0) " << g << " += " << extent << "LL;\n";
        Shape dataStrides = stridesOf(dataShape);
        int64_t r = indexShape.size();
        std::string offset = llvm::formatv("{0} * {1}LL", g, dataStrides[*axis]);
        for (int64_t d = 0; d < static_cast<int64_t>(dataShape.size()); ++d) {
          if (d == *axis)
            continue;
          int64_t c = d < *axis ? d : d + r - 1;
          offset += llvm::formatv(" + c{0} * {1}LL", c, dataStrides[d]).str();
        }
        FailureOr<std::string> element = in(0, offset);
        if (failed(element))
          return failure();
        // An index out of range reads as zero rather than faulting.
        return llvm::formatv("(({0} >= 0 && {0} < {1}LL) ? {2} : ({3})0)", g,
                             extent, *element, *cType(eltOf(result)))
            .str();
      })
      .Case([&](ConcatOp concat) -> FailureOr<std::string> {
        FailureOr<int64_t> axis =
            normalizeAxis(concat.getAxis(), rank, concat.getLoc());
        if (failed(axis))
          return failure();
        std::string v = "v" + std::to_string(nextVar++);
        os << "  " << *cType(eltOf(result)) << " " << v << ";\n";
        int64_t begin = 0;
        for (auto [i, input] : llvm::enumerate(concat.getInputs())) {
          Shape shape = shapeOf(input);
          std::string offset = shiftedOffset(shape, *axis, begin);
          int64_t end = begin + shape[*axis];
          bool last = i + 1 == concat.getInputs().size();
          os << "  " << (i ? "else " : "");
          if (!last)
            os << "if (c" << *axis << " < " << end << "LL) ";
          FailureOr<std::string> element = load(input, offset, op);
          if (failed(element))
            return failure();
          os << v << " = " << *element << ";\n";
          begin = end;
        }
        return v;
      })
      .Case([&](RangeOp range) -> FailureOr<std::string> {
        Type type = eltOf(result);
        FailureOr<std::string> start = literal(range.getStart(), type);
        FailureOr<std::string> delta = literal(range.getDelta(), type);
        if (failed(start) || failed(delta))
          return error(op) << "unsupported range type " << type, failure();
        return llvm::formatv("({0} + ({1})idx * {2})", *start, *cType(type),
                             *delta)
            .str();
      })
      .Default([&](Operation *) -> FailureOr<std::string> {
        return error(op) << "not a data-movement op", failure();
      });
}

LogicalResult KernelWriter::emitScalarOp(Operation *op) {
  if (isa<ConstantOp>(op))
    return success(); // literals, written where used
  if (isa<ExpandOp, TransposeOp, SliceOp, GatherOp, ConcatOp, RangeOp>(op)) {
    // Their index mappings are written for the kernel's own coordinates.
    if (shapeOf(op->getResult(0)) != domain)
      return error(op) << "a data-movement result of shape "
                       << shapeToString(shapeOf(op->getResult(0)))
                       << " inside a kernel of shape " << shapeToString(domain)
                       << " is not supported",
             failure();
    FailureOr<std::string> expr = emitDataMovement(op);
    if (failed(expr))
      return failure();
    define(op->getResult(0), *expr);
    return success();
  }

  SmallVector<std::string> x;
  for (Value operand : op->getOperands()) {
    FailureOr<std::string> s = scalar(operand);
    if (failed(s))
      return failure();
    x.push_back(*s);
  }
  Value result = op->getResult(0);
  Type type = eltOf(result);
  Type inType = op->getNumOperands() ? eltOf(op->getOperand(0)) : type;
  std::string t = *cType(type);
  auto fn = [&](StringRef base) { return mathFn(base, type); };
  auto one = [&]() { return type.isF64() ? "1.0" : "1.0f"; };

  FailureOr<std::string> expr =
      llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
          .Case([&](NegOp) { return "-" + x[0]; })
          .Case([&](ExpOp) { return fn("exp") + "(" + x[0] + ")"; })
          .Case([&](LogOp) { return fn("log") + "(" + x[0] + ")"; })
          .Case([&](SqrtOp) { return fn("sqrt") + "(" + x[0] + ")"; })
          .Case([&](ReciprocalOp) {
            return std::string(one()) + " / " + x[0];
          })
          .Case([&](ErfOp) { return fn("erf") + "(" + x[0] + ")"; })
          .Case([&](TanhOp) { return fn("tanh") + "(" + x[0] + ")"; })
          .Case([&](SigmoidOp) {
            return std::string(one()) + " / (" + one() + " + " + fn("exp") +
                   "(-" + x[0] + "))";
          })
          .Case([&](ReluOp) {
            // NaN propagates, as in PyTorch and onnxruntime.
            std::string nan = isa<FloatType>(type) ? " || " + x[0] + " != " + x[0] : "";
            return "((" + x[0] + " > (" + t + ")0" + nan + ") ? " + x[0] +
                   " : (" + t + ")0)";
          })
          .Case([&](SinOp) { return fn("sin") + "(" + x[0] + ")"; })
          .Case([&](CosOp) { return fn("cos") + "(" + x[0] + ")"; })
          .Case([&](NotOp) { return "!" + x[0]; })
          .Case([&](GeluOp gelu) {
            bool d = type.isF64();
            if (gelu.getApproximate() == GeluApproximation::Tanh)
              return llvm::formatv(
                         "{0} * {1} * ({2} + {3}({4} * ({1} + {5} * {1} * {1} * "
                         "{1})))",
                         floatLiteral(0.5, d), x[0], one(), fn("tanh"),
                         floatLiteral(0.7978845608028654, d),
                         floatLiteral(0.044715, d))
                  .str();
            return llvm::formatv("{0} * {1} * ({2} + {3}({1} * {4}))",
                                 floatLiteral(0.5, d), x[0], one(), fn("erf"),
                                 floatLiteral(0.7071067811865476, d))
                .str();
          })
          .Case([&](DropoutOp dropout) -> FailureOr<std::string> {
            double ratio = dropout.getRatio().convertToDouble();
            if (ratio <= 0)
              return x[0];
            if (ratio >= 1)
              return "(" + t + ")0";
            uint64_t seed = dropout.getSeed().value_or(0) * 1000003ull + index;
            return llvm::formatv(
                       "(memfit_dropout_keep({0}ull, idx, {1}) ? {2} * {3} : "
                       "({4})0)",
                       seed, floatLiteral(ratio, false), x[0],
                       floatLiteral(1.0 / (1.0 - ratio), type.isF64()), t)
                .str();
          })
          .Case([&](CastOp) -> FailureOr<std::string> {
            if (type.isInteger(1))
              return "(" + x[0] + " != 0)";
            if (inType.isInteger(1))
              return "(" + x[0] + " ? (" + t + ")1 : (" + t + ")0)";
            return "(" + t + ")" + x[0];
          })
          .Case([&](TriluOp trilu) -> FailureOr<std::string> {
            size_t rank = domain.size();
            if (rank < 2)
              return error(op) << "trilu needs rank >= 2", failure();
            std::string diag = llvm::formatv("(c{0} - c{1})", rank - 1, rank - 2);
            std::string keep = llvm::formatv(
                "{0} {1} {2}", diag, trilu.getUpper() ? ">=" : "<=",
                intLiteral(static_cast<int64_t>(trilu.getK())));
            return "(" + keep + " ? " + x[0] + " : (" + t + ")0)";
          })
          .Case([&](AddOp) { return x[0] + " + " + x[1]; })
          .Case([&](SubOp) { return x[0] + " - " + x[1]; })
          .Case([&](MulOp) { return x[0] + " * " + x[1]; })
          .Case([&](DivOp) { return x[0] + " / " + x[1]; })
          .Case([&](PowOp) {
            return fn("pow") + "(" + x[0] + ", " + x[1] + ")";
          })
          .Case([&](EqualOp) { return "(" + x[0] + " == " + x[1] + ")"; })
          .Case([&](LessOp) { return "(" + x[0] + " < " + x[1] + ")"; })
          .Case([&](GreaterOp) { return "(" + x[0] + " > " + x[1] + ")"; })
          .Case([&](WhereOp) {
            return "(" + x[0] + " ? " + x[1] + " : " + x[2] + ")";
          })
          .Default([&](Operation *) -> FailureOr<std::string> {
            return error(op) << "no element-wise template", failure();
          });
  if (failed(expr))
    return failure();
  define(result, *expr);
  return success();
}

LogicalResult KernelWriter::emitPointwise() {
  auto results = kernel.getResults();
  if (results.empty())
    return error(kernel) << "a kernel without results", failure();
  domain = shapeOf(results[0]);
  for (Value result : results)
    if (shapeOf(result) != domain)
      return error(kernel) << "results of different shapes need a split",
             failure();
  for (Operation &op : kernel.getBodyOps()) {
    if (isBufferView(&op))
      return error(&op) << "views are not supported inside kernels", failure();
    for (Value result : op.getResults())
      if (failed(cType(eltOf(result))))
        return error(&op) << "unsupported element type " << eltOf(result),
               failure();
  }

  int64_t n = product(domain);
  os << "  const long long idx = (long long)blockIdx.x * blockDim.x + "
        "threadIdx.x;\n";
  os << "  if (idx >= " << n << "LL) return;\n";
  emitCoords(os, domain, "idx", "c");
  for (Operation &op : kernel.getBodyOps())
    if (failed(emitScalarOp(&op)))
      return failure();
  auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    FailureOr<std::string> s = scalar(value);
    if (failed(s))
      return failure();
    os << "  out" << i << "[idx] = " << *s << ";\n";
  }
  setPointwiseLaunch(n);
  return success();
}

//===----------------------------------------------------------------------===//
// Row kernels
//===----------------------------------------------------------------------===//

/// The accumulator type of a row: float for f32, double for f64.
FailureOr<std::string> accType(Operation *op, Type type) {
  if (type.isF32())
    return std::string("float");
  if (type.isF64())
    return std::string("double");
  if (succeeded(cType(type)) && type.isInteger())
    return std::string("long long");
  return op->emitError() << "cannot emit CUDA for '" << op->getName()
                         << "': unsupported element type " << type,
         failure();
}

/// The input of a softmax or normalization: float, with its axis normalized.
FailureOr<KernelWriter::RowInput>
KernelWriter::floatRowInput(Operation *op, int64_t axisAttr) {
  Value input = op->getOperand(0);
  RowInput row;
  row.shape = shapeOf(input);
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
  row.in = param(cast<BlockArgument>(input));
  return row;
}

void KernelWriter::writeRowMaxSum(StringRef acc, Type type, int64_t n,
                                  StringRef element) {
  std::string loop = llvm::formatv("  for (long long j = threadIdx.x; j < "
                                   "{0}LL; j += blockDim.x)\n",
                                   n);
  os << "  " << acc << " m = " << floatLiteral(-INFINITY, type.isF64())
     << ";\n";
  os << loop << "    m = memfit_max(m, " << element << ");\n";
  os << "  m = memfit_block_max(m, scratch);\n";
  os << "  " << acc << " s = 0;\n";
  os << loop << "    s += " << mathFn("exp", type) << "(" << element
     << " - m);\n";
  os << "  s = memfit_block_sum(s, scratch);\n";
}

LogicalResult KernelWriter::emitSoftmax(Operation *op, int64_t axisAttr,
                                        bool logSoftmax) {
  FailureOr<RowInput> row = floatRowInput(op, axisAttr);
  if (failed(row))
    return failure();
  auto &[shape, axis, type, acc, in] = *row;
  int64_t n = shape[axis];
  int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t rows = product(shape) / std::max<int64_t>(n, 1);
  std::string at = llvm::formatv("base + j * {0}LL", inner);
  std::string e = mathFn("exp", type);

  writeScratch(acc);
  os << "  const long long row = blockIdx.x;\n";
  os << llvm::formatv("  const long long base = (row / {0}LL) * {1}LL + row "
                      "% {0}LL;\n",
                      inner, n * inner);
  writeRowMaxSum(acc, type, n, "(" + acc + ")" + in + "[" + at + "]");
  if (logSoftmax)
    os << "  const " << acc << " shift = m + " << mathFn("log", type) << "(s);\n";
  os << "  for (long long j = threadIdx.x; j < " << n
     << "LL; j += blockDim.x)\n";
  if (logSoftmax)
    os << "    out0[" << at << "] = (" << acc << ")" << in << "[" << at
       << "] - shift;\n";
  else
    os << "    out0[" << at << "] = " << e << "((" << acc << ")" << in << "["
       << at << "] - m) / s;\n";
  setRowLaunch(n, rows);
  return success();
}

LogicalResult KernelWriter::emitNorm(Operation *op, Value scale, Value bias,
                                     int64_t axisAttr, double epsilon,
                                     bool rms) {
  FailureOr<RowInput> row = floatRowInput(op, axisAttr);
  if (failed(row))
    return failure();
  auto &[shape, axis, type, acc, in] = *row;
  Shape normShape(ArrayRef<int64_t>(shape).drop_front(axis));
  int64_t n = product(normShape);
  int64_t rows = product(ArrayRef<int64_t>(shape).take_front(axis));
  bool d = type.isF64();
  auto paramAt = [&](Value v) {
    Shape s = shapeOf(v);
    std::string name = param(cast<BlockArgument>(v));
    if (s == normShape)
      return name + "[j]";
    return name + "[" + broadcastOffset(s, normShape.size(), "s") + "]";
  };
  bool needCoords = shapeOf(scale) != normShape ||
                    (bias && shapeOf(bias) != normShape);

  writeScratch(acc);
  os << "  const long long base = (long long)blockIdx.x * " << n << "LL;\n";
  std::string loop = llvm::formatv("  for (long long j = threadIdx.x; j < "
                                   "{0}LL; j += blockDim.x)",
                                   n);
  std::string x = "(" + acc + ")" + in + "[base + j]";
  if (!rms) {
    os << "  " << acc << " sum = 0;\n";
    os << loop << "\n    sum += " << x << ";\n";
    os << "  const " << acc << " mean = memfit_block_sum(sum, scratch) / "
       << floatLiteral(static_cast<double>(n), d) << ";\n";
    os << "  " << acc << " sq = 0;\n";
    os << loop << " {\n    const " << acc << " t = " << x
       << " - mean;\n    sq += t * t;\n  }\n";
  } else {
    os << "  " << acc << " sq = 0;\n";
    os << loop << " {\n    const " << acc << " t = " << x
       << ";\n    sq += t * t;\n  }\n";
  }
  os << "  const " << acc << " inv = " << floatLiteral(1.0, d) << " / "
     << mathFn("sqrt", type) << "(memfit_block_sum(sq, scratch) / "
     << floatLiteral(static_cast<double>(n), d) << " + "
     << floatLiteral(epsilon, d) << ");\n";
  os << loop << " {\n";
  if (needCoords)
    emitCoords(os, normShape, "j", "s", "    ");
  os << "    out0[base + j] = (" << x << (rms ? "" : " - mean") << ") * inv * "
     << paramAt(scale);
  if (bias)
    os << " + " << paramAt(bias);
  os << ";\n  }\n";
  setRowLaunch(n, rows);
  return success();
}

LogicalResult KernelWriter::emitReduce(Operation *op, ArrayRef<int64_t> axes,
                                       StringRef kind) {
  Value input = op->getOperand(0);
  Shape shape = shapeOf(input);
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
  Shape strides = stridesOf(shape);
  Shape keptShape, keptStrides, redShape, redStrides;
  for (size_t d = 0; d < rank; ++d) {
    (reduced[d] ? redShape : keptShape).push_back(shape[d]);
    (reduced[d] ? redStrides : keptStrides).push_back(strides[d]);
  }
  int64_t n = product(redShape);
  int64_t rows = product(keptShape);
  bool trailing = true;
  for (size_t d = 0; d < rank; ++d)
    if (reduced[d] && shape[d] != 1)
      for (size_t e = d + 1; e < rank; ++e)
        trailing &= reduced[e] || shape[e] == 1;
  std::string in = param(cast<BlockArgument>(input));
  bool isMax = kind == "max";
  bool isFloat = isa<FloatType>(type);

  writeScratch(*acc);
  os << "  const long long row = blockIdx.x;\n";
  std::string base;
  if (trailing) {
    base = llvm::formatv("row * {0}LL", n);
  } else {
    emitCoords(os, keptShape, "row", "k");
    for (size_t i = 0; i < keptShape.size(); ++i)
      base += llvm::formatv("{0}k{1} * {2}LL", i ? " + " : "", i,
                            keptStrides[i])
                  .str();
    if (base.empty())
      base = "0";
  }
  os << "  const long long base = " << base << ";\n";
  // The identity of max is the lowest value of the element type, which is
  // also ONNX's result for a reduction over no elements.
  std::string init =
      !isMax ? "0"
             : (isFloat ? floatLiteral(-INFINITY, type.isF64())
                        : intLiteral(type.isUnsignedInteger()
                                         ? 0
                                         : llvm::APInt::getSignedMinValue(
                                               type.getIntOrFloatBitWidth())
                                               .getSExtValue()));
  os << "  " << *acc << " a = " << init << ";\n";
  os << "  for (long long j = threadIdx.x; j < " << n
     << "LL; j += blockDim.x) {\n";
  std::string offset = "j";
  if (!trailing) {
    emitCoords(os, redShape, "j", "r", "    ");
    offset.clear();
    for (size_t i = 0; i < redShape.size(); ++i)
      offset += llvm::formatv("{0}r{1} * {2}LL", i ? " + " : "", i,
                              redStrides[i])
                    .str();
    if (offset.empty())
      offset = "0";
  }
  std::string x = "(" + *acc + ")" + in + "[base + " + offset + "]";
  if (isMax)
    os << "    a = memfit_max(a, " << x << ");\n  }\n";
  else
    os << "    a += " << x << ";\n  }\n";
  os << "  a = " << (isMax ? "memfit_block_max" : "memfit_block_sum")
     << "(a, scratch);\n";
  std::string value = "a";
  // A mean over no elements is NaN for floats (0/0) and 0 for integers.
  if (kind == "mean")
    value = isFloat ? "a / " + floatLiteral(static_cast<double>(n), type.isF64())
                    : (n ? llvm::formatv("a / {0}LL", n).str() : "0");
  os << "  if (threadIdx.x == 0) out0[row] = (" << *cType(eltOf(op->getResult(0)))
     << ")(" << value << ");\n";
  setRowLaunch(n, rows);
  return success();
}

LogicalResult KernelWriter::emitLoss(Operation *op, Value scores, Value labels,
                                     Value weights,
                                     std::optional<int64_t> ignoreIndex,
                                     LossReduction reduction, bool fromLogits) {
  Shape shape = shapeOf(scores);
  if (shape.size() < 2)
    return error(op) << "scores need rank >= 2", failure();
  Type type = eltOf(scores);
  FailureOr<std::string> acc = accType(op, type);
  if (failed(acc))
    return failure();
  bool d = type.isF64();
  int64_t classes = shape[1];
  int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(2));
  int64_t rows = shape[0] * inner;
  std::string x = param(cast<BlockArgument>(scores));
  auto xAt = [&](StringRef c) {
    return llvm::formatv("({0}){1}[base + ({2}) * {3}LL]", *acc, x, c, inner)
        .str();
  };

  auto writeRow = [&](StringRef indent) {
    std::string i = indent.str();
    os << i << "const long long base = (r / " << inner << "LL) * "
       << classes * inner << "LL + r % " << inner << "LL;\n";
    os << i << "const long long label = (long long)"
       << param(cast<BlockArgument>(labels)) << "[r];\n";
    os << i << *acc << " loss = 0, w = 0;\n";
    std::string ii = i;
    if (ignoreIndex) {
      os << i << "if (label != " << intLiteral(*ignoreIndex) << ") {\n";
      ii += "  ";
    }
    os << ii << "if (label < 0 || label >= " << classes << "LL) {\n";
    os << ii << "  loss = " << floatLiteral(NAN, d) << ";\n";
    os << ii << "  w = 1;\n";
    os << ii << "} else {\n";
    os << ii << "  w = "
       << (weights ? "(" + *acc + ")" + param(cast<BlockArgument>(weights)) +
                         "[label]"
                   : floatLiteral(1.0, d))
       << ";\n";
    if (fromLogits) {
      os << ii << "  " << *acc << " m = " << floatLiteral(-INFINITY, d)
         << ";\n";
      os << ii << "  for (long long c = 0; c < " << classes
         << "LL; ++c) m = memfit_max(m, " << xAt("c") << ");\n";
      os << ii << "  " << *acc << " s = 0;\n";
      os << ii << "  for (long long c = 0; c < " << classes << "LL; ++c) s += "
         << mathFn("exp", type) << "(" << xAt("c") << " - m);\n";
      os << ii << "  loss = (m + " << mathFn("log", type) << "(s) - "
         << xAt("label") << ") * w;\n";
    } else {
      os << ii << "  loss = -" << xAt("label") << " * w;\n";
    }
    os << ii << "}\n";
    if (ignoreIndex)
      os << i << "}\n";
  };

  if (reduction == LossReduction::None) {
    os << "  const long long r = (long long)blockIdx.x * blockDim.x + "
          "threadIdx.x;\n";
    os << "  if (r >= " << rows << "LL) return;\n";
    writeRow("  ");
    os << "  (void)w;\n";
    os << "  out0[r] = loss;\n";
    setPointwiseLaunch(rows);
    return success();
  }
  writeScratch(*acc);
  os << "  " << *acc << " total = 0, weight = 0;\n";
  os << "  for (long long r = threadIdx.x; r < " << rows
     << "LL; r += blockDim.x) {\n";
  writeRow("    ");
  os << "    total += loss;\n    weight += w;\n  }\n";
  os << "  total = memfit_block_sum(total, scratch);\n";
  os << "  weight = memfit_block_sum(weight, scratch);\n";
  os << "  if (threadIdx.x == 0) out0[0] = "
     << (reduction == LossReduction::Mean ? "total / weight" : "total")
     << ";\n";
  info.block = {static_cast<uint32_t>(kMaxRowBlock), 1, 1};
  gridBlocks = 1;
  info.usesBarriers = true;
  return success();
}

LogicalResult KernelWriter::emitSplit(SplitOp op) {
  Shape shape = shapeOf(op.getInput());
  FailureOr<int64_t> axis =
      normalizeAxis(op.getAxis(), shape.size(), op.getLoc());
  if (failed(axis))
    return failure();
  if (failed(cType(eltOf(op.getInput()))))
    return error(op) << "unsupported element type " << eltOf(op.getInput()),
           failure();
  int64_t n = product(shape);
  os << "  const long long idx = (long long)blockIdx.x * blockDim.x + "
        "threadIdx.x;\n";
  os << "  if (idx >= " << n << "LL) return;\n";
  emitCoords(os, shape, "idx", "c");
  os << "  const " << *cType(eltOf(op.getInput())) << " v = "
     << param(cast<BlockArgument>(op.getInput())) << "[idx];\n";
  int64_t begin = 0;
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    Shape outShape = shapeOf(result);
    int64_t end = begin + outShape[*axis];
    os << "  " << (i ? "else " : "") << "if (c" << *axis << " < " << end
       << "LL) out" << i << "[" << shiftedOffset(outShape, *axis, begin)
       << "] = v;\n";
    begin = end;
  }
  setPointwiseLaunch(n);
  return success();
}

LogicalResult KernelWriter::emitGatherGrad(GatherGradOp op) {
  Shape shape = shapeOf(op.getResult());
  int64_t axis = op.getAxis();
  int64_t extent = shape[axis];
  int64_t outer = product(ArrayRef<int64_t>(shape).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t count = product(shapeOf(op.getIndices()));
  FailureOr<std::string> t = cType(eltOf(op.getResult()));
  if (failed(t) || !isa<FloatType>(eltOf(op.getResult())))
    return error(op) << "unsupported element type " << eltOf(op.getResult()),
           failure();
  int64_t columns = outer * inner;
  // Thread t owns column (o, i) of the result along the axis: it zeroes it,
  // then adds every index position's gradient in order.
  os << "  const long long t = (long long)blockIdx.x * blockDim.x + "
        "threadIdx.x;\n";
  os << "  if (t >= " << columns << "LL) return;\n";
  os << "  const long long o = t / " << std::max<int64_t>(inner, 1)
     << "LL, i = t % " << std::max<int64_t>(inner, 1) << "LL;\n";
  os << "  const long long base = o * " << extent * inner << "LL + i;\n";
  os << "  const long long gbase = o * " << count * inner << "LL + i;\n";
  os << "  for (long long d = 0; d < " << extent << "LL; ++d) out0[base + d * "
     << inner << "LL] = (" << *t << ")0;\n";
  FailureOr<std::string> index =
      load(op.getIndices(), "j", op);
  FailureOr<std::string> grad =
      load(op.getGrad(), llvm::formatv("gbase + j * {0}LL", inner).str(), op);
  if (failed(index) || failed(grad))
    return failure();
  os << "  for (long long j = 0; j < " << count << "LL; ++j) {\n";
  os << "    long long k = (long long)" << *index << ";\n";
  os << "    if (k < 0) k += " << extent << "LL;\n";
  // Out-of-range indices contribute nothing.
  os << "    if (k >= 0 && k < " << extent << "LL) out0[base + k * " << inner
     << "LL] += " << *grad << ";\n";
  os << "  }\n";
  setPointwiseLaunch(columns);
  return success();
}

LogicalResult
KernelWriter::emitSoftmaxCrossEntropyGrad(SoftmaxCrossEntropyGradOp op) {
  Shape shape = shapeOf(op.getScores());
  int64_t rows = shape[0], classes = shape[1];
  Type type = eltOf(op.getScores());
  FailureOr<std::string> acc = accType(op, type);
  if (failed(acc) || !isa<FloatType>(type))
    return error(op) << "unsupported element type " << type, failure();
  bool d = type.isF64();
  std::string x = param(cast<BlockArgument>(op.getScores()));
  std::string labels = param(cast<BlockArgument>(op.getLabels()));
  std::string dloss = param(cast<BlockArgument>(op.getDloss()));
  std::optional<int64_t> ignoreIndex;
  if (op.getIgnoreIndex())
    ignoreIndex = static_cast<int64_t>(*op.getIgnoreIndex());
  std::string e = mathFn("exp", type);
  std::string at = "(" + *acc + ")" + x + "[base + j]";
  std::string loop = llvm::formatv("  for (long long j = threadIdx.x; j < "
                                   "{0}LL; j += blockDim.x)",
                                   classes);

  writeScratch(*acc);
  os << "  const long long row = blockIdx.x;\n";
  os << "  const long long base = row * " << classes << "LL;\n";
  os << "  const long long label = (long long)" << labels << "[row];\n";
  // The loss gradient of this row; `mean` divides by the number of labels
  // not ignored, which every block counts for itself.
  std::string g = "(" + *acc + ")" + dloss +
                  (op.getReduction() == LossReduction::None ? "[row]" : "[0]");
  if (op.getReduction() == LossReduction::Mean) {
    if (ignoreIndex) {
      os << "  " << *acc << " count = 0;\n";
      os << "  for (long long r = threadIdx.x; r < " << rows
         << "LL; r += blockDim.x)\n";
      os << "    if ((long long)" << labels << "[r] != "
         << intLiteral(*ignoreIndex) << ") count += " << floatLiteral(1.0, d)
         << ";\n";
      os << "  count = memfit_block_sum(count, scratch);\n";
      g += " / count";
    } else {
      g += " / " + floatLiteral(static_cast<double>(rows), d);
    }
  }
  if (ignoreIndex) {
    // The whole block takes this branch or none of it.
    os << "  if (label == " << intLiteral(*ignoreIndex) << ") {\n";
    os << "  " << loop << " out0[base + j] = 0;\n";
    os << "    return;\n  }\n";
  }
  writeRowMaxSum(*acc, type, classes, at);
  os << "  const " << *acc << " g = " << g << ";\n";
  // A label out of range makes the loss NaN, and so its gradient.
  os << "  const bool valid = label >= 0 && label < " << classes << "LL;\n";
  os << loop << "\n    out0[base + j] = valid ? (" << e << "(" << at
     << " - m) / s - (j == label ? " << floatLiteral(1.0, d) << " : "
     << floatLiteral(0.0, d) << ")) * g : " << floatLiteral(NAN, d) << ";\n";
  setRowLaunch(classes, rows);
  return success();
}

} // namespace

void cuda::collectNodeNames(Location loc, std::vector<std::string> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.push_back(name.getName().str());
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      collectNodeNames(inner, names);
}

void cuda::emitPrelude(raw_ostream &os) {
  os << R"cuda(// Helpers shared by the kernels below.
static __device__ __forceinline__ float memfit_max(float a, float b) { return (a != a || a > b) ? a : b; }
static __device__ __forceinline__ double memfit_max(double a, double b) { return (a != a || a > b) ? a : b; }
static __device__ __forceinline__ long long memfit_max(long long a, long long b) { return a > b ? a : b; }

template <typename T> static __device__ __forceinline__ T memfit_warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename T> static __device__ __forceinline__ T memfit_warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = memfit_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide reductions: every thread gets the result. `scratch` holds one
// value per warp; blockDim.x is a multiple of 32.
template <typename T> static __device__ __forceinline__ T memfit_block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = memfit_warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : (T)0;
  v = memfit_warp_sum(v);
  __syncthreads();
  return v;
}
template <typename T> static __device__ __forceinline__ T memfit_block_max(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = memfit_warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : scratch[0];
  v = memfit_warp_max(v);
  __syncthreads();
  return v;
}
// Dropout's keep decision: a counter-based hash (splitmix64) of the seed and
// the element index, compared with the drop ratio.
static __device__ __forceinline__ bool memfit_dropout_keep(unsigned long long seed, long long i, float ratio) {
  unsigned long long z = seed + 0x9e3779b97f4a7c15ull * (unsigned long long)(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.0f / 16777216.0f) >= ratio;
}

)cuda";
}

FailureOr<rt::Kernel> cuda::emitKernel(KernelOp kernel, unsigned index,
                                       raw_ostream &os) {
  return KernelWriter(kernel, index).emit(os);
}

FailureOr<rt::Kernel> cuda::emitBroadcastCopy(Operation *op, unsigned index,
                                              RankedTensorType from,
                                              RankedTensorType to,
                                              raw_ostream &os) {
  FailureOr<std::string> t = cType(from.getElementType());
  if (failed(t) || from.getElementType() != to.getElementType())
    return op->emitError() << "cannot emit CUDA for '" << op->getName()
                           << "': unsupported bias type " << from,
           failure();
  rt::Kernel info;
  info.name = llvm::formatv("k{0}_{1}_bias", index, opLabel(op)).str();
  collectNodeNames(op->getLoc(), info.onnxNodes);
  int64_t n = to.getNumElements();
  int64_t blocks = gridFor(n, kPointwiseBlock);
  if (blocks > kMaxGridX)
    return op->emitError() << "cannot emit CUDA for '" << op->getName()
                           << "': " << blocks
                           << " blocks exceed CUDA's grid limit of "
                           << kMaxGridX,
           failure();
  os << "// " << info.name << ": bias of " << nodeList(info.onnxNodes)
     << "\nextern \"C\" __global__ void " << info.name << "(const " << *t
     << "* __restrict__ in0, " << *t << "* __restrict__ out0) {\n";
  os << "  const long long idx = (long long)blockIdx.x * blockDim.x + "
        "threadIdx.x;\n";
  os << "  if (idx >= " << n << "LL) return;\n";
  emitCoords(os, to.getShape(), "idx", "c");
  os << "  out0[idx] = in0["
     << broadcastOffset(from.getShape(), to.getRank(), "c") << "];\n}\n\n";
  info.block = {static_cast<uint32_t>(kPointwiseBlock), 1, 1};
  info.grid = {static_cast<uint32_t>(blocks), 1, 1};
  return info;
}
