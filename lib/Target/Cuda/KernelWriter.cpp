//===- KernelWriter.cpp - CUDA C++ of one kernel ----------------------------===//
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
// quantization block instead (emitBlockwise, QuantEmitters.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/Quantization.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <functional>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

#include "memfit/Target/Cuda/KernelEmitterInterface.cpp.inc"

//===----------------------------------------------------------------------===//
// Text of shapes, types and attributes
//===----------------------------------------------------------------------===//

int64_t cuda::product(ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t v : values)
    result *= v;
  return result;
}

bool cuda::isHalfFloat(Type type) { return type.isF16() || type.isBF16(); }

std::optional<cuda::SmallFloat> cuda::smallFloatOf(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return SmallFloat{4, 3, 7, 448.0, 1};
  if (isa<Float8E4M3FNUZType>(type))
    return SmallFloat{4, 3, 8, 240.0, 2};
  if (isa<Float8E5M2Type>(type))
    return SmallFloat{5, 2, 15, 57344.0, 0};
  if (isa<Float8E5M2FNUZType>(type))
    return SmallFloat{5, 2, 16, 57344.0, 2};
  if (isa<Float4E2M1FNType>(type))
    return SmallFloat{2, 1, 1, 6.0, 3};
  return std::nullopt;
}

std::optional<cuda::SmallFloat> cuda::roundingFormatOf(Type type) {
  if (type.isF16())
    return SmallFloat{5, 10, 15, 65504.0, 0};
  if (type.isBF16())
    return SmallFloat{8, 7, 127, 3.3895313892515355e38, 0};
  return smallFloatOf(type);
}

std::string cuda::SmallFloat::args(bool withMax) const {
  std::string text = llvm::formatv("{0}, {1}, {2}", ebits, mbits, bias);
  if (withMax)
    text += ", " + floatLiteral(maxValue, true);
  return text + ", " + std::to_string(kind);
}

/// The width of a 4- or 2-bit integer type (stored in a byte's low bits);
/// 0 for other types.
static unsigned subByteWidth(Type type) {
  auto integer = dyn_cast<IntegerType>(type);
  return integer && (integer.getWidth() == 4 || integer.getWidth() == 2)
             ? integer.getWidth()
             : 0;
}

bool cuda::isPackedType(Type type) {
  return smallFloatOf(type).has_value() || subByteWidth(type) != 0;
}

FailureOr<std::string> cuda::cType(Type type) {
  if (type.isF32())
    return std::string("float");
  if (type.isF16())
    return std::string("__half");
  if (type.isBF16())
    return std::string("__nv_bfloat16");
  if (type.isF64())
    return std::string("double");
  if (isPackedType(type))
    return std::string("unsigned char");
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer)
    return failure();
  bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 1:
    return std::string("bool");
  case 64:
    return std::string(isUnsigned ? "unsigned long long" : "long long");
  case 32:
    return std::string(isUnsigned ? "unsigned int" : "int");
  case 16:
    return std::string(isUnsigned ? "unsigned short" : "short");
  case 8:
    return std::string(isUnsigned ? "unsigned char" : "signed char");
  default:
    return failure();
  }
}

FailureOr<std::string> cuda::regType(Type type) {
  if (isHalfFloat(type) || smallFloatOf(type))
    return std::string("float");
  if (subByteWidth(type))
    return std::string("int");
  // Unsigned short operands would promote to int, whose products overflow.
  if (type.isUnsignedInteger(16))
    return std::string("unsigned int");
  return cType(type);
}

std::string cuda::widen(Type type, StringRef access) {
  if (type.isBF16())
    return ("__bfloat162float(" + access + ")").str();
  if (type.isF16())
    return ("__half2float(" + access + ")").str();
  if (std::optional<SmallFloat> f = smallFloatOf(type))
    return ("memfit_fp_decode(" + access + ", " + f->args(false) + ")").str();
  if (unsigned width = subByteWidth(type)) {
    unsigned shift = 8 - width;
    if (type.isUnsignedInteger())
      return llvm::formatv("((int)({0}) & {1})", access, (1 << width) - 1);
    // Sign-extended from the byte's low bits.
    return llvm::formatv("((int)(signed char)(({0}) << {1}) >> {1})", access,
                         shift);
  }
  return access.str();
}

std::string cuda::loadAs(StringRef acc, Type type, StringRef access) {
  if (isHalfFloat(type))
    return widen(type, access);
  if (isPackedType(type))
    return ("(" + acc + ")" + widen(type, access)).str();
  return ("(" + acc + ")" + access).str();
}

std::string cuda::narrow(Type type, StringRef expr) {
  if (type.isBF16())
    return ("__float2bfloat16_rn(" + expr + ")").str();
  if (type.isF16())
    return ("__float2half_rn(" + expr + ")").str();
  if (std::optional<SmallFloat> f = smallFloatOf(type))
    return ("(unsigned char)memfit_fp_encode(" + expr + ", " + f->args(true) +
            ")")
        .str();
  if (unsigned width = subByteWidth(type))
    return llvm::formatv("(unsigned char)((int)({0}) & {1})", expr,
                         (1 << width) - 1);
  return expr.str();
}

FailureOr<std::string> cuda::accType(Operation *op, Type type) {
  if (type.isF32() || isHalfFloat(type) || smallFloatOf(type))
    return std::string("float");
  if (type.isF64())
    return std::string("double");
  if (type.isUnsignedInteger(64))
    return std::string("unsigned long long");
  if (succeeded(cType(type)) && type.isInteger())
    return std::string("long long");
  return op->emitError() << "cannot emit CUDA for '" << op->getName()
                         << "': unsupported element type " << type,
         failure();
}

std::string cuda::mathFn(StringRef base, Type type) {
  return type.isF64() ? base.str() : (base + "f").str();
}

std::string cuda::floatLiteral(double value, bool isDouble) {
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

std::string cuda::intLiteral(int64_t value) {
  if (value == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  std::string text = std::to_string(value) + "LL";
  return value < 0 ? "(" + text + ")" : text;
}

FailureOr<std::string> cuda::literal(Attribute attr, Type type) {
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
    FailureOr<std::string> t = regType(type);
    if (failed(t))
      return failure();
    return "((" + *t + ")" + intLiteral(i.getValue().getSExtValue()) + ")";
  }
  return failure();
}

void cuda::emitCoords(raw_ostream &os, ArrayRef<int64_t> shape,
                      StringRef index, StringRef prefix, StringRef indent) {
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

std::string cuda::broadcastOffset(ArrayRef<int64_t> in, size_t outRank,
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

std::string cuda::shiftedOffset(ArrayRef<int64_t> shape, int64_t axis,
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

namespace {

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

int64_t rowBlockSize(int64_t rowLength) {
  int64_t block = 32;
  while (block < rowLength && block < kMaxRowBlock)
    block *= 2;
  return block;
}

int64_t gridFor(int64_t threads, int64_t block) {
  return std::max<int64_t>(1, (threads + block - 1) / block);
}

/// The op's emission style; ops without the interface are treated as
/// element-wise ops without a template.
EmitStyle styleOf(Operation *op) {
  auto emitter = dyn_cast<KernelEmitterOpInterface>(op);
  return emitter ? emitter.getEmitStyle() : EmitStyle::ElementWise;
}

} // namespace

//===----------------------------------------------------------------------===//
// KernelWriter: what the ops' emitters write with
//===----------------------------------------------------------------------===//

InFlightDiagnostic KernelWriter::error(Operation *op) {
  return op->emitError() << "cannot emit CUDA for '" << op->getName() << "': ";
}

std::string KernelWriter::param(Value value) {
  return "in" + std::to_string(cast<BlockArgument>(value).getArgNumber());
}

std::string KernelWriter::freshName(StringRef prefix) {
  return prefix.str() + std::to_string(nextVar++);
}

void KernelWriter::setPointwiseLaunch(int64_t threads) {
  info.block = {static_cast<uint32_t>(kPointwiseBlock), 1, 1};
  gridBlocks = gridFor(threads, kPointwiseBlock);
  info.usesBarriers = false;
}

void KernelWriter::setRowLaunch(int64_t rowLength, int64_t rows) {
  info.block = {static_cast<uint32_t>(rowBlockSize(rowLength)), 1, 1};
  gridBlocks = std::max<int64_t>(rows, 1);
  info.usesBarriers = true;
}

void KernelWriter::setSingleBlockLaunch() {
  info.block = {static_cast<uint32_t>(kMaxRowBlock), 1, 1};
  gridBlocks = 1;
  info.usesBarriers = true;
}

void KernelWriter::writeScratch(StringRef acc) {
  os << "  __shared__ " << acc << " scratch[32];\n";
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

KernelWriter::RowIndexing KernelWriter::writeRowBase(ArrayRef<int64_t> shape,
                                                     ArrayRef<bool> reduced) {
  size_t rank = shape.size();
  Shape strides = stridesOf(shape);
  Shape keptShape, keptStrides;
  RowIndexing indexing;
  for (size_t d = 0; d < rank; ++d) {
    (reduced[d] ? indexing.redShape : keptShape).push_back(shape[d]);
    (reduced[d] ? indexing.redStrides : keptStrides).push_back(strides[d]);
  }
  for (size_t d = 0; d < rank; ++d)
    if (reduced[d] && shape[d] != 1)
      for (size_t e = d + 1; e < rank; ++e)
        indexing.trailing &= reduced[e] || shape[e] == 1;
  os << "  const long long row = blockIdx.x;\n";
  std::string base;
  if (indexing.trailing) {
    base = llvm::formatv("row * {0}LL", product(indexing.redShape));
  } else {
    emitCoords(os, keptShape, "row", "k");
    for (size_t i = 0; i < keptShape.size(); ++i)
      base +=
          llvm::formatv("{0}k{1} * {2}LL", i ? " + " : "", i, keptStrides[i])
              .str();
    if (base.empty())
      base = "0";
  }
  os << "  const long long base = " << base << ";\n";
  return indexing;
}

std::string KernelWriter::writeRowOffset(const RowIndexing &indexing,
                                         StringRef indent) {
  if (indexing.trailing)
    return "j";
  emitCoords(os, indexing.redShape, "j", "r", indent);
  std::string offset;
  for (size_t i = 0; i < indexing.redShape.size(); ++i)
    offset += llvm::formatv("{0}r{1} * {2}LL", i ? " + " : "", i,
                            indexing.redStrides[i])
                  .str();
  return offset.empty() ? "0" : offset;
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
         opClass.getOpClass() == OpClass::Quantization))
      return error(&op) << "the op has no KernelEmitterOpInterface model "
                           "(cuda::registerKernelEmitterInterfaces attaches "
                           "them)",
             failure();
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
  if (gridBlocks > kMaxGridX)
    return error(kernel) << gridBlocks
                         << " blocks exceed CUDA's grid limit of " << kMaxGridX,
           failure();
  info.grid = {static_cast<uint32_t>(gridBlocks), 1, 1};

  out << "// " << info.name << ": " << nodeList(info.onnxNodes) << "\n";
  if (failed(writeSignature(out)))
    return failure();
  out << text << "}\n\n";
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
      !rowValues.contains(value) && shapeOf(value) != ArrayRef<int64_t>(domainShape))
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
    return define(
        value,
        widen(eltOf(arg), param(arg) + "[" +
                              broadcastOffset(shape, domainShape.size(), "c") +
                              "]"));
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

  int64_t n = product(domainShape);
  os << "  const long long idx = (long long)blockIdx.x * blockDim.x + "
        "threadIdx.x;\n";
  os << "  if (idx >= " << n << "LL) return;\n";
  emitCoords(os, domainShape, "idx", "c");
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
    elements.push_back(product(shapeOf(value)));
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
    os << "  for (long long idx = first + threadIdx.x; idx < last; idx += "
          "blockDim.x) {\n";
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
  info.block = {static_cast<uint32_t>(kPointwiseBlock), 1, 1};
  gridBlocks = std::max<int64_t>(blockBegins.back(), 1);
  info.usesBarriers = false;
  return success();
}

//===----------------------------------------------------------------------===//
// KernelWriter: row kernels
//===----------------------------------------------------------------------===//

LogicalResult KernelWriter::defineFull(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || isa<ConstantOp>(def) || names.count(value) ||
      rowValues.contains(value))
    return success();
  for (Value operand : def->getOperands())
    if (failed(defineFull(operand)))
      return failure();
  if (auto it = rowStats.find(def); it != rowStats.end()) {
    // A normalization's or softmax's element, from its row statistics.
    const RowStats &stats = it->second;
    FailureOr<SmallVector<std::string>> scalarOperands =
        scalars(def->getOperands());
    if (failed(scalarOperands))
      return failure();
    ArrayRef<std::string> operands = *scalarOperands;
    Type type = eltOf(def->getOperand(0));
    std::string x = "(" + stats.acc + ")" + operands[0], expr;
    if (isa<LayerNormOp>(def))
      expr = "(" + x + " - " + stats.shift + ") * " + stats.scale + " * " +
             operands[1] + (operands.size() > 2 ? " + " + operands[2] : "");
    else if (isa<RMSNormOp>(def))
      expr = "(" + x + ") * " + stats.scale + " * " + operands[1];
    else if (isa<SoftmaxOp>(def))
      expr = mathFn("exp", type) + "(" + x + " - " + stats.shift + ") / " +
             stats.scale;
    else
      expr = x + " - " + stats.shift;
    define(value, "(" + *regType(eltOf(value)) + ")(" + expr + ")");
    return success();
  }
  return emitScalarOp(def);
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
  writeScratch(acc);
  RowIndexing indexing = writeRowBase(frame.full, frame.reduced);
  // Row values are computed by every thread of the block, at the row's
  // coordinates in the kept shape.
  emitCoords(os, kept, "row", "c");
  // A loop over the row's elements: full values are computed in it (again
  // in each loop that needs them), inputs loaded at each element.
  auto loop = [&](function_ref<LogicalResult()> body) {
    os << "  for (long long j = threadIdx.x; j < " << frame.length
       << "LL; j += blockDim.x) {\n";
    std::string offset = writeRowOffset(indexing, "    ");
    os << "  const long long idx = base + " << offset << ";\n";
    emitCoords(os, frame.full, "idx", "c");
    DenseMap<Value, std::string> rowNames = names;
    for (BlockArgument arg : kernel.getBodyBlock().getArguments())
      names.erase(arg);
    domainShape = frame.full;
    LogicalResult result = body();
    names = std::move(rowNames);
    domainShape = kept;
    os << "  }\n";
    return result;
  };
  domainShape = kept;
  for (Operation &op : kernel.getBodyOps()) {
    if (isa<ConstantOp>(op))
      continue;
    Value result = op.getResult(0);
    if (isRowOp(&op)) {
      Value input = op.getOperand(0);
      Type type = eltOf(input);
      bool d = type.isF64();
      std::string n = floatLiteral(static_cast<double>(frame.length), d);
      // A block-wide sum or max over the row of `term` (an expression of
      // the element `t`, in the accumulator type).
      auto reduce = [&](bool isMax, function_ref<std::string(StringRef)> term)
          -> FailureOr<std::string> {
        std::string a = freshName("a");
        os << "  " << acc << " " << a << " = "
           << (isMax ? floatLiteral(-INFINITY, d) : "0") << ";\n";
        LogicalResult done = loop([&]() -> LogicalResult {
          FailureOr<std::string> x = fullScalar(input);
          if (failed(x))
            return failure();
          std::string element = term("(" + acc + ")" + *x);
          os << "    " << a << " = "
             << (isMax ? "memfit_max(" + a + ", " + element + ")"
                       : a + " + " + element)
             << ";\n";
          return success();
        });
        if (failed(done))
          return failure();
        os << "  " << a << " = "
           << (isMax ? "memfit_block_max" : "memfit_block_sum") << "(" << a
           << ", scratch);\n";
        return a;
      };
      auto identity = [](StringRef t) { return t.str(); };
      auto square = [](StringRef t) {
        return "(" + t.str() + ") * (" + t.str() + ")";
      };
      // A row statistic, shared by every thread of the block.
      auto stat = [&](StringRef expr) {
        std::string name = freshName("r");
        os << "  const " << acc << " " << name << " = " << expr << ";\n";
        return name;
      };
      FailureOr<std::string> a = failure(), b = failure();
      if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op)) {
        if (failed(a = reduce(isa<ReduceMaxOp>(op), identity)))
          return failure();
        std::string value = *a;
        if (isa<ReduceMeanOp>(op))
          value += " / " + n;
        define(result, "(" + *regType(eltOf(result)) + ")(" + value + ")");
        rowValues.insert(result);
        continue;
      }
      // Normalizations and softmax as their templates compute them: the
      // full result is written where a loop reads it.
      RowStats &stats = rowStats[&op];
      stats.acc = acc;
      auto inverse = [&](StringRef sumOfSquares, double epsilon) {
        return stat(floatLiteral(1.0, d) + " / " + mathFn("sqrt", type) + "(" +
                    sumOfSquares.str() + " / " + n + " + " +
                    floatLiteral(epsilon, d) + ")");
      };
      if (auto norm = dyn_cast<LayerNormOp>(op)) {
        if (failed(a = reduce(false, identity)))
          return failure();
        stats.shift = stat(*a + " / " + n);
        std::string m = stats.shift;
        if (failed(b = reduce(false, [&](StringRef t) {
                     return square(t.str() + " - " + m);
                   })))
          return failure();
        stats.scale = inverse(*b, norm.getEpsilon().convertToDouble());
      } else if (auto norm = dyn_cast<RMSNormOp>(op)) {
        if (failed(b = reduce(false, square)))
          return failure();
        stats.scale = inverse(*b, norm.getEpsilon().convertToDouble());
      } else {
        std::string e = mathFn("exp", type);
        if (failed(a = reduce(true, identity)))
          return failure();
        std::string m = *a;
        if (failed(b = reduce(false, [&](StringRef t) {
                     return e + "(" + t.str() + " - " + m + ")";
                   })))
          return failure();
        stats.shift = m;
        stats.scale = *b;
        if (isa<LogSoftmaxOp>(op))
          stats.shift = stat(m + " + " + mathFn("log", type) + "(" + *b + ")");
      }
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
  if (!full.empty()) {
    LogicalResult done = loop([&]() -> LogicalResult {
      for (unsigned i : full) {
        Value value = yield.getValues()[i];
        FailureOr<std::string> v = fullScalar(value);
        if (failed(v))
          return failure();
        os << "    out" << i << "[idx] = " << narrow(eltOf(value), *v) << ";\n";
      }
      return success();
    });
    if (failed(done))
      return failure();
  }
  if (!rows.empty()) {
    os << "  if (threadIdx.x == 0) {\n";
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

//===----------------------------------------------------------------------===//
// KernelWriter: pointwise kernels that end in quantize ops
//===----------------------------------------------------------------------===//

LogicalResult
KernelWriter::emitBlockwise(MutableArrayRef<QuantizeOp> quantizes) {
  QuantizeOp first = quantizes.front();
  domainShape = Shape(shapeOf(first.getInput()));
  int64_t blockSize = static_cast<int64_t>(first.getBlockSize());
  for (QuantizeOp q : quantizes)
    if (shapeOf(q.getInput()) != ArrayRef<int64_t>(domainShape) ||
        static_cast<int64_t>(q.getBlockSize()) != blockSize)
      return error(q) << "the quantize ops of one kernel need one input shape "
                         "and one block size",
             failure();
  for (Operation &op : kernel.getBodyOps()) {
    if (isBufferView(&op))
      return error(&op) << "views are not supported inside kernels", failure();
    if (auto q = dyn_cast<QuantizeOp>(op))
      for (OpOperand &use : q->getUses())
        if (!isa<YieldOp>(use.getOwner()))
          return error(q) << "quantized codes are used inside their kernel",
                 failure();
  }
  // Where each result goes: out<i>.
  auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
  SmallVector<std::pair<Value, unsigned>> pointwise;
  DenseMap<Value, unsigned> outOf;
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    outOf.try_emplace(value, i);
    if (!value.getDefiningOp<QuantizeOp>()) {
      if (shapeOf(value) != ArrayRef<int64_t>(domainShape))
        return error(kernel)
                   << "a result of shape " << shapeToString(shapeOf(value))
                   << " beside quantized values of shape "
                   << shapeToString(domainShape),
               failure();
      pointwise.push_back({value, i});
    }
  }

  int64_t n = product(domainShape);
  int64_t threads = 32;
  while (threads < blockSize && threads < kMaxRowBlock)
    threads *= 2;
  int64_t perThread = (blockSize + threads - 1) / threads;
  writeScratch("float");
  os << "  const long long base = (long long)blockIdx.x * " << blockSize
     << "LL;\n";
  for (auto [k, q] : llvm::enumerate(quantizes))
    os << "  float q" << k << "[" << perThread << "];\n  float a" << k
       << " = 0.0f;\n";
  std::string loop =
      llvm::formatv("  for (int e = 0; e < {0}; ++e) {{\n"
                    "    const long long local = (long long)e * {1} + "
                    "threadIdx.x;\n"
                    "    const long long idx = base + local;\n"
                    "    if (local >= {2}LL || idx >= {3}LL) continue;\n",
                    perThread, threads, blockSize, n)
          .str();
  // Pass 1: the element-wise values, the pointwise results and each
  // quantized value's block maximum of |x|.
  os << loop;
  emitCoords(os, domainShape, "idx", "c", "    ");
  for (Operation &op : kernel.getBodyOps())
    if (!isa<QuantizeOp>(op) && failed(emitScalarOp(&op)))
      return failure();
  for (auto [value, i] : pointwise) {
    FailureOr<std::string> s = scalar(value);
    if (failed(s))
      return failure();
    os << "    out" << i << "[idx] = " << narrow(eltOf(value), *s) << ";\n";
  }
  for (auto [k, q] : llvm::enumerate(quantizes)) {
    FailureOr<std::string> s = scalar(q.getInput());
    if (failed(s))
      return failure();
    os << "    q" << k << "[e] = " << *s << ";\n";
    os << "    a" << k << " = memfit_max(a" << k << ", fabsf(q" << k
       << "[e]));\n";
  }
  os << "  }\n";
  // Pass 2: the block's absmax, then every code.
  for (auto [k, q] : llvm::enumerate(quantizes)) {
    unsigned codesOut = outOf.lookup(q.getCodes());
    unsigned absmaxOut = outOf.lookup(q.getAbsmax());
    os << "  a" << k << " = memfit_block_max(a" << k << ", scratch);\n";
    std::string code =
        quantEncodeExpr(q.getScheme(), "q" + std::to_string(k) + "[e]",
                        "a" + std::to_string(k));
    if (quantCodeBits(q.getScheme()) == 8) {
      os << loop << "    out" << codesOut << "[idx] = " << code << ";\n  }\n";
    } else {
      // Two codes per byte, the first in the high nibble: the block's codes
      // meet in shared memory first.
      std::string nibbles = "nibbles" + std::to_string(k);
      os << "  __shared__ unsigned char " << nibbles << "[" << blockSize
         << "];\n";
      os << loop << "    " << nibbles << "[local] = " << code << ";\n  }\n";
      os << "  __syncthreads();\n";
      os << llvm::formatv(
          "  for (long long j = threadIdx.x; 2 * j < {0}LL && base + 2 * j < "
          "{1}LL; j += {2}) {{\n"
          "    const unsigned char low = base + 2 * j + 1 < {1}LL ? {3}[2 * j "
          "+ 1] : 0;\n"
          "    out{4}[base / 2 + j] = (unsigned char)(({3}[2 * j] << 4) | "
          "low);\n  }\n",
          blockSize, n, threads, nibbles, codesOut);
      os << "  __syncthreads();\n";
    }
    os << "  if (threadIdx.x == 0) out" << absmaxOut << "[blockIdx.x] = a" << k
       << ";\n";
  }
  info.block = {static_cast<uint32_t>(threads), 1, 1};
  gridBlocks = std::max<int64_t>(1, quantBlockCount(n, blockSize));
  info.usesBarriers = true;
  return success();
}

//===----------------------------------------------------------------------===//
// The target's entry points (KernelEmitter.h, KernelEmitterInterface.h)
//===----------------------------------------------------------------------===//

void cuda::collectNodeNames(Location loc, std::vector<std::string> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.push_back(name.getName().str());
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      collectNodeNames(inner, names);
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

/// Attaches every model; a named function, so that the registry and the
/// context recognize the extension when it is added again.
static void attachKernelEmitters(MLIRContext *context, MemfitDialect *) {
  attachPointwiseEmitters(context);
  attachRowEmitters(context);
  attachLossEmitters(context);
  attachSpecialEmitters(context);
  attachQuantEmitters(context);
}

void cuda::registerKernelEmitterInterfaces(DialectRegistry &registry) {
  registry.addExtension(attachKernelEmitters);
}

namespace mlir::memfit::cuda {
/// The text of Prelude.cuh (the generated Prelude.cpp).
extern const char kCudaPrelude[];
} // namespace mlir::memfit::cuda

void cuda::emitPrelude(raw_ostream &os, bool halfTypes) {
  if (halfTypes)
    os << "// __half and __nv_bfloat16; the host backend's emulation header "
          "defines them.\n#ifndef MEMFIT_CUDA_HOST_H\n#include "
          "<cuda_fp16.h>\n#include <cuda_bf16.h>\n#endif\n\n";
  // A blank line between the helpers and the first kernel.
  os << kCudaPrelude << "\n";
}
