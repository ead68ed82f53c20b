//===- IndexEmitters.cpp - scatter_nd and topk_indices kernels -------------===//
//
// The KernelEmitterOpInterface models of the index ops whose work would grow
// as a product of two sizes if each result element were computed alone
// (as the pointwise mappings of PointwiseEmitters.cpp compute gathers):
//  - scatter_nd: one thread per element of a slice (the data's trailing
//    axes that a tuple does not address), which copies that column of the
//    data and then applies every tuple's update to it in order: the work is
//    the data plus the updates, deterministic and without atomics (updates
//    to one entry are applied by one thread, last wins);
//  - topk_indices: one block per row along the axis, which finds the k-th
//    entry's key by a radix select (4 bits per pass over the row, each
//    thread counting its own digits, no atomics), writes the k selected
//    positions, then sorts those k by a heap sort: O(n + k log k) per row
//    instead of ranking every entry against every other.
// Also the helpers the index emitters share (KernelWriter.h).
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

std::string cuda::indexIntoAxis(int64_t axis, ArrayRef<int64_t> shape) {
  return llvm::formatv("an index into axis {0} of the data ({1})", axis,
                       shapeToString(shape))
      .str();
}

std::string cuda::scatterCombine(StringRef reduction, StringRef v,
                                 StringRef u) {
  if (reduction == "add")
    return llvm::formatv("{0} + {1}", v, u).str();
  if (reduction == "mul")
    return llvm::formatv("{0} * {1}", v, u).str();
  if (reduction == "max")
    return llvm::formatv("({1} > {0} ? {1} : {0})", v, u).str();
  if (reduction == "min")
    return llvm::formatv("({1} < {0} ? {1} : {0})", v, u).str();
  return u.str();
}

namespace {

//===----------------------------------------------------------------------===//
// scatter_nd
//===----------------------------------------------------------------------===//

LogicalResult emitIndexOp(ScatterNDOp op, KernelWriter &w) {
  Shape dataShape(shapeOf(op.getData()));
  Shape indexShape(shapeOf(op.getIndices()));
  int64_t k = indexShape.back();
  ArrayRef<int64_t> addressed = ArrayRef<int64_t>(dataShape).take_front(k);
  int64_t tuples = getNumElements(ArrayRef<int64_t>(indexShape).drop_back());
  int64_t slices = getNumElements(addressed);
  int64_t slice = getNumElements(ArrayRef<int64_t>(dataShape).drop_front(k));
  Type elt = eltOf(op.getResult());
  FailureOr<std::string> t = regType(elt);
  if (failed(t) || failed(cType(elt)))
    return w.error(op) << "unsupported element type " << elt, failure();
  raw_ostream &os = w.body();
  // Thread s owns the entries s of every slice: it copies them from the
  // data, then applies the tuples' updates to them in order.
  w.threadLoop("s", slice);
  FailureOr<std::string> data =
      w.load(op.getData(), llvm::formatv("p * {0}LL + s", slice).str(), op);
  if (failed(data))
    return failure();
  os << "  for (long long p = 0; p < " << slices << "LL; ++p) out0[p * "
     << slice << "LL + s] = " << narrow(elt, *data) << ";\n";
  os << "  for (long long m = 0; m < " << tuples << "LL; ++m) {\n";
  // The tuple's slice: its k indices (negative ones from the back), each
  // checked against its axis.
  Shape sliceStrides = stridesOf(addressed);
  std::string at, inRange;
  for (int64_t i = 0; i < k; ++i) {
    FailureOr<std::string> index = w.load(
        op.getIndices(), llvm::formatv("m * {0}LL + {1}LL", k, i).str(), op);
    if (failed(index))
      return failure();
    std::string g = "g" + std::to_string(i);
    os << "    long long " << g << " = (long long)" << *index << ";\n";
    w.checkIndex(op, g, dataShape[i], indexIntoAxis(i, dataShape), "    ");
    os << "    if (" << g << " < 0) " << g << " += " << dataShape[i]
       << "LL;\n";
    inRange += llvm::formatv("{0}{1} >= 0 && {1} < {2}LL", i ? " && " : "",
                             g, dataShape[i])
                   .str();
    at += llvm::formatv("{0}{1} * {2}LL", i ? " + " : "", g, sliceStrides[i])
              .str();
  }
  FailureOr<std::string> update =
      w.load(op.getUpdates(), llvm::formatv("m * {0}LL + s", slice).str(), op);
  if (failed(update))
    return failure();
  os << "    if (" << (inRange.empty() ? "true" : inRange) << ") {\n";
  os << "      const long long e = (" << (at.empty() ? "0" : at) << ") * "
     << slice << "LL + s;\n";
  os << "      const " << *t << " v = " << widen(elt, "out0[e]") << ";\n";
  os << "      out0[e] = "
     << narrow(elt, "(" + *t + ")(" +
                        scatterCombine(op.getReduction(), "v", *update) + ")")
     << ";\n";
  os << "    }\n  }\n";
  w.setPointwiseLaunch(slice);
  return success();
}

//===----------------------------------------------------------------------===//
// topk_indices
//===----------------------------------------------------------------------===//

/// How an entry of a top-k row becomes an unsigned 64-bit key whose order
/// is the selection's (the first selected has the largest key): the text
/// around the entry's value (prefix, value, suffix), and the bits
/// [low, high) where keys can differ, which the radix select visits.
struct KeyForm {
  std::string prefix, suffix; // around the value
  int low = 0, high = 64;
};

/// Keys that order values as TopK does: floats by value with -0 equal to
/// 0 and NaN above every number (the prelude's memfit_order_key); integers
/// offset to unsigned. `largest` false reverses the order, NaN still last.
KeyForm keyFormOf(Type elt, bool largest) {
  KeyForm f;
  auto integer = dyn_cast<IntegerType>(elt);
  bool isSigned = integer && !integer.isUnsigned() && integer.getWidth() > 1;
  if (!integer) {
    f.prefix = "memfit_order_key((double)(";
    f.suffix = "))";
    // A float (f32 and the narrower formats, held in float registers) is
    // exact in a double whose low 29 bits are zero.
    f.low = elt.isF64() ? 0 : 28;
  } else if (integer.getWidth() <= 32) {
    f.prefix = isSigned ? "(unsigned long long)((long long)("
                        : "((unsigned long long)(";
    f.suffix = isSigned ? ") + 2147483648LL)" : "))";
    f.high = 32;
  } else {
    f.prefix = isSigned ? "((unsigned long long)(long long)("
                        : "((unsigned long long)(";
    f.suffix = isSigned ? ") ^ 0x8000000000000000ull)" : "))";
  }
  // Reversed for the smallest; the bits outside [low, high) cleared, so
  // that keys equal in those bits are equal (NaN's key has them all set).
  uint64_t mask = (f.high == 64 ? ~0ull : (1ull << f.high) - 1) &
                  ~((1ull << f.low) - 1);
  if (!largest || mask != ~0ull) {
    f.prefix = (largest ? "(" : "(~") + f.prefix;
    f.suffix += llvm::formatv(" & {0:x}ull)", mask).str();
  }
  return f;
}

LogicalResult emitIndexOp(TopKIndicesOp op, KernelWriter &w) {
  Shape shape(shapeOf(op.getInput()));
  FailureOr<int64_t> axisOr =
      normalizeAxis(op.getAxis(), shape.size(), op.getLoc());
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr, n = shape[axis], k = op.getK();
  int64_t inner = getNumElements(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t rows = getNumElements(shape) / std::max<int64_t>(n, 1);
  if (n > std::numeric_limits<int32_t>::max())
    return w.error(op) << "an axis of " << n << " entries is too long",
           failure();
  Type elt = eltOf(op.getInput());
  KeyForm form = keyFormOf(elt, op.getLargest());
  // The key of the entry at position `j` (an expression) of the row.
  auto key = [&](StringRef j) -> FailureOr<std::string> {
    FailureOr<std::string> x = w.load(
        op.getInput(), llvm::formatv("base + ({0}) * {1}LL", j, inner).str(),
        op);
    if (failed(x))
      return failure();
    return form.prefix + *x + form.suffix;
  };
  FailureOr<std::string> keyJ = key("j"), keyA = key("a"), keyB = key("b");
  if (failed(keyJ) || failed(keyA) || failed(keyB))
    return failure();
  int64_t block = rowBlockSize(n);
  raw_ostream &os = w.body();
  // The result's entry at position `p` of the row.
  auto at = [&](StringRef p) {
    return llvm::formatv("out0[obase + ({0}) * {1}LL]", p, inner).str();
  };
  os << "  __shared__ unsigned int hist[" << 16 * block << "];\n";
  os << "  __shared__ unsigned long long total[16];\n";
  os << "  const long long row = blockIdx.x, t = threadIdx.x;\n";
  os << llvm::formatv("  const long long base = (row / {0}LL) * {1}LL + row % "
                      "{0}LL;\n",
                      inner, n * inner);
  os << llvm::formatv("  const long long obase = (row / {0}LL) * {1}LL + row "
                      "% {0}LL;\n",
                      inner, k * inner);
  // The radix select: the digits of the k-th key from the top, 4 bits a
  // pass; `want` is its rank among the keys that share the digits found.
  os << "  unsigned long long prefix = 0, mask = 0;\n";
  os << "  long long want = " << k << "LL;\n";
  os << "  for (int shift = " << form.high - 4 << "; shift >= " << form.low
     << "; shift -= 4) {\n";
  // Each thread counts its entries' digits in registers, then publishes
  // its counts (no atomics; the host's shared arrays are thread-locals,
  // slower to update one entry at a time).
  os << "    unsigned int count[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
        "0, 0, 0};\n";
  os << "    for (long long j = t; j < " << n << "LL; j += " << block
     << ") {\n";
  os << "      const unsigned long long key = " << *keyJ << ";\n";
  os << "      if ((key & mask) == prefix) ++count[(key >> shift) & 15];\n";
  os << "    }\n";
  os << "    for (int d = 0; d < 16; ++d) hist[d * " << block
     << " + t] = count[d];\n";
  os << "    __syncthreads();\n";
  os << "    if (t < 16) {\n";
  os << "      unsigned long long c = 0;\n";
  os << "      for (int u = 0; u < " << block << "; ++u) c += hist[t * "
     << block << " + u];\n";
  os << "      total[t] = c;\n";
  os << "    }\n";
  os << "    __syncthreads();\n";
  os << "    for (int d = 15; d >= 0; --d) {\n";
  os << "      if (want <= (long long)total[d]) { prefix |= (unsigned long "
        "long)d << shift; break; }\n";
  os << "      want -= (long long)total[d];\n";
  os << "    }\n";
  os << "    mask |= 15ull << shift;\n";
  os << "    __syncthreads();\n";
  os << "  }\n";
  // The k-th key is `prefix`: the keys above it and the first `want` equal
  // to it (the lower positions first) are selected. Each thread takes a run
  // of positions, so that a scan of the counts orders the equal keys.
  int64_t chunk = (n + block - 1) / block;
  os << "  const long long from = t * " << chunk << "LL < " << n << "LL ? t * "
     << chunk << "LL : " << n << "LL;\n";
  os << "  const long long to = from + " << chunk << "LL < " << n
     << "LL ? from + " << chunk << "LL : " << n << "LL;\n";
  os << "  unsigned int above = 0, equal = 0;\n";
  os << "  for (long long j = from; j < to; ++j) {\n";
  os << "    const unsigned long long key = " << *keyJ << ";\n";
  os << "    above += key > prefix;\n";
  os << "    equal += key == prefix;\n";
  os << "  }\n";
  os << "  hist[t] = above;\n";
  os << "  hist[" << block << " + t] = equal;\n";
  os << "  __syncthreads();\n";
  os << "  if (t == 0) {\n";
  os << "    unsigned int a = 0, e = 0;\n";
  os << "    for (int u = 0; u < " << block << "; ++u) {\n";
  os << "      const unsigned int x = hist[u], y = hist[" << block << " + u];\n";
  os << "      hist[u] = a; hist[" << block << " + u] = e;\n";
  os << "      a += x; e += y;\n";
  os << "    }\n";
  os << "  }\n";
  os << "  __syncthreads();\n";
  os << "  long long pa = hist[t], pe = hist[" << block << " + t];\n";
  os << "  for (long long j = from; j < to; ++j) {\n";
  os << "    const unsigned long long key = " << *keyJ << ";\n";
  os << "    if (key > prefix) " << at("pa++") << " = j;\n";
  os << "    else if (key == prefix) {\n";
  os << "      if (pe < want) " << at(llvm::formatv("{0}LL - want + pe", k).str())
     << " = j;\n";
  os << "      ++pe;\n";
  os << "    }\n";
  os << "  }\n";
  os << "  __syncthreads();\n";
  // A heap sort of the k positions by thread 0, the last in order at the
  // root, so that they end first to last: position a comes before b when
  // its key is larger, or equal and a < b.
  std::string before = "(ka > kb || (ka == kb && a < b))";
  os << "  if (t != 0) return;\n";
  os << "  long long end = " << k << "LL, start = " << k / 2 << "LL;\n";
  os << "  while (true) {\n";
  os << "    long long root;\n";
  os << "    if (start > 0) {\n";
  os << "      root = --start;\n";
  os << "    } else {\n";
  os << "      if (end <= 1) break;\n";
  os << "      --end;\n";
  os << "      const long long top = " << at("0") << ";\n";
  os << "      " << at("0") << " = " << at("end") << ";\n";
  os << "      " << at("end") << " = top;\n";
  os << "      root = 0;\n";
  os << "    }\n";
  os << "    while (true) {\n";
  os << "      long long child = 2 * root + 1;\n";
  os << "      if (child >= end) break;\n";
  os << "      if (child + 1 < end) {\n";
  os << "        const long long a = " << at("child") << ", b = "
     << at("child + 1") << ";\n";
  os << "        const unsigned long long ka = " << *keyA << ", kb = " << *keyB
     << ";\n";
  os << "        if " << before << " ++child;\n";
  os << "      }\n";
  os << "      const long long a = " << at("root") << ", b = " << at("child")
     << ";\n";
  os << "      const unsigned long long ka = " << *keyA << ", kb = " << *keyB
     << ";\n";
  os << "      if (!" << before << ") break;\n";
  os << "      " << at("root") << " = b;\n";
  os << "      " << at("child") << " = a;\n";
  os << "      root = child;\n";
  os << "    }\n";
  os << "  }\n";
  // Threads own histogram columns across barriers: fibers on the host.
  w.setRowLaunch(n, rows, /*threadLoops=*/false);
  return success();
}

} // namespace

void cuda::attachIndexEmitters(MLIRContext *context) {
  ScatterNDOp::attachInterface<TemplateModel<ScatterNDOp, emitIndexOp>>(
      *context);
  TopKIndicesOp::attachInterface<TemplateModel<TopKIndicesOp, emitIndexOp>>(
      *context);
}
