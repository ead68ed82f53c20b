//===- Indexing.cpp - index arithmetic of the generated kernels -----------===//
//
// Coordinates and offsets (Indexing.h), and how a row kernel finds the
// elements of its row (KernelWriter::writeRowBase and writeRowOffset).
//
//===----------------------------------------------------------------------===//

#include "Indexing.h"

#include "KernelWriter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

namespace {

/// The unsigned type and literal suffix the coordinates of `shape` divide
/// in. Below 2^31 elements (the index, even a block's overshoot past the
/// last element, then fits 32 bits) the division is 32-bit: one by a
/// constant that is not a power of two is a 64-bit multiply-high otherwise,
/// which AVX2 has no vector form of (and a GPU does in several
/// instructions).
std::pair<StringRef, StringRef> divisionType(ArrayRef<int64_t> shape) {
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  if (elements < (int64_t(1) << 31))
    return {"unsigned", "U"};
  return {"unsigned long long", "ULL"};
}

/// "(long long)((<type>)<operand> / <stride> % <size>)", `operand` an
/// index in parentheses, without the division or the remainder where
/// `stride` or `size` is absent.
std::string coordinate(std::pair<StringRef, StringRef> division,
                       StringRef operand, std::optional<int64_t> stride,
                       std::optional<int64_t> size) {
  auto [type, suffix] = division;
  std::string expr = ("(long long)((" + type + ")" + operand).str();
  if (stride)
    expr += (" / " + Twine(*stride) + suffix).str();
  if (size)
    expr += (" % " + Twine(*size) + suffix).str();
  return expr + ")";
}

} // namespace

void cuda::emitCoords(raw_ostream &os, ArrayRef<int64_t> shape,
                      StringRef index, StringRef prefix, StringRef indent) {
  // Unsigned division: the index is never negative, and a signed 64-bit
  // division, even by a power of two, keeps the host compiler from
  // vectorizing a loop on CPUs without 64-bit arithmetic vector shifts.
  Shape strides = stridesOf(shape);
  auto division = divisionType(shape);
  std::string operand = ("(" + index + ")").str();
  for (size_t d = 0; d < shape.size(); ++d)
    os << indent << "const long long " << prefix << d << " = "
       << coordinate(division, operand, strides[d],
                     d ? std::optional<int64_t>(shape[d]) : std::nullopt)
       << ";\n";
}

void cuda::emitThreadLoopCoords(raw_ostream &os, ArrayRef<int64_t> shape,
                                StringRef index, StringRef prefix,
                                int64_t block) {
  if (shape.empty() || shape.back() % block != 0)
    return emitCoords(os, shape, index, prefix);
  Shape strides = stridesOf(shape);
  auto division = divisionType(shape);
  std::string first = "((long long)blockIdx.x * blockDim.x)";
  auto sizeAt = [&](size_t d) {
    return d ? std::optional<int64_t>(shape[d]) : std::nullopt;
  };
  size_t last = shape.size() - 1;
  for (size_t d = 0; d < last; ++d)
    os << "  const long long " << prefix << d << " = "
       << coordinate(division, first, strides[d], sizeAt(d)) << ";\n";
  os << "  const long long " << prefix << last << " = "
     << coordinate(division, first, std::nullopt, sizeAt(last)) << " + ("
     << index << " - " << first << ");\n";
}

std::string cuda::offsetAt(StringRef prefix, ArrayRef<int64_t> strides) {
  std::string offset;
  for (auto [d, stride] : llvm::enumerate(strides))
    offset +=
        llvm::formatv("{0}{1}{2} * {3}LL", d ? " + " : "", prefix, d, stride)
            .str();
  return offset.empty() ? "0" : offset;
}

Shape cuda::broadcastStrides(ArrayRef<int64_t> in, size_t outRank) {
  Shape own = stridesOf(in), strides(outRank, 0);
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1)
      strides[outRank - in.size() + d] = own[d];
  return strides;
}

std::string cuda::broadcastOffset(ArrayRef<int64_t> in, size_t outRank,
                                  StringRef prefix) {
  Shape strides = broadcastStrides(in, outRank);
  std::string expr;
  size_t lead = outRank - in.size();
  for (size_t d = lead; d < outRank; ++d) {
    if (in[d - lead] == 1)
      continue;
    if (!expr.empty())
      expr += " + ";
    expr += llvm::formatv("{0}{1} * {2}LL", prefix, d, strides[d]).str();
  }
  return expr.empty() ? "0" : expr;
}

std::string cuda::offsetAlong(ArrayRef<int64_t> strides, int64_t axis,
                              StringRef along) {
  std::string offset;
  for (size_t d = 0; d < strides.size(); ++d)
    offset +=
        llvm::formatv("{0}{1} * {2}LL", d ? " + " : "",
                      static_cast<int64_t>(d) == axis ? along.str()
                                                      : "c" + std::to_string(d),
                      strides[d])
            .str();
  return offset.empty() ? "0" : offset;
}

std::string cuda::shiftedOffset(ArrayRef<int64_t> shape, int64_t axis,
                                int64_t begin) {
  return offsetAlong(stridesOf(shape), axis,
                     llvm::formatv("(c{0} - {1}LL)", axis, begin).str());
}

//===----------------------------------------------------------------------===//
// The elements of a row
//===----------------------------------------------------------------------===//

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
  std::string base;
  if (indexing.trailing) {
    base = llvm::formatv("row * {0}LL", getNumElements(indexing.redShape));
  } else {
    emitCoords(os, keptShape, "row", "k");
    base = offsetAt("k", keptStrides);
  }
  os << "  const long long base = " << base << ";\n";
  return indexing;
}

std::string KernelWriter::writeRowOffset(const RowIndexing &indexing,
                                         StringRef indent) {
  if (indexing.trailing)
    return "j";
  emitCoords(os, indexing.redShape, "j", "r", indent);
  return offsetAt("r", indexing.redStrides);
}

//===----------------------------------------------------------------------===//
// KernelWriter: index checks
//===----------------------------------------------------------------------===//

void KernelWriter::checkIndex(Operation *op, StringRef variable,
                              int64_t extent, StringRef what,
                              StringRef indent) {
  std::vector<std::string> nodes;
  collectNodeNames(op->getLoc(), nodes);
  std::string message =
      nodes.empty() ? "" : "ONNX node '" + llvm::join(nodes, "', '") + "' ";
  message += llvm::formatv("({0}): {1} must be within [{2}, {3}]",
                           op->getName(), what, -extent, extent - 1)
                 .str();
  // The word's code: this kernel's index in the executable and the check's
  // number (from 1: 0 is "no error").
  uint64_t code = (static_cast<uint64_t>(index) << 32) |
                  (info.indexChecks.size() + 1);
  info.indexChecks.push_back(std::move(message));
  os << indent
     << llvm::formatv("if ({0} < {1}LL || {0} >= {2}LL) "
                      "memfit_index_error(memfit_err, {3:x}ull, {0});\n",
                      variable, -extent, extent, code);
}
