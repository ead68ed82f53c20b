//===- QuantEmitters.cpp - CUDA C++ of quantize and dequantize ------------===//
//
// The code tables of the schemes a module uses are written once, after the
// prelude, as `memfit_qmap_<scheme>` arrays, with an encoder
// `memfit_qenc_<scheme>(x, absmax)` each (Quantization.h in the dialect
// defines the codes; the encoders reproduce quantEncode). Dequantize is an
// index mapping: the code of the kernel's element looked up in its table
// and scaled by its block's absmax, so it fuses into whatever reads the
// values. Quantize is Blockwise: it ends a pointwise kernel, which
// KernelWriter::emitBlockwise (here) runs one thread block per
// quantization block: the element-wise ops before the quantize ops, each
// block's absmax, then the codes from the scheme's encoder.
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/Quantization.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <type_traits>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

namespace {

std::string tableName(QuantScheme scheme) {
  return ("memfit_qmap_" + stringifyQuantScheme(scheme)).str();
}

std::string encoderName(QuantScheme scheme) {
  return ("memfit_qenc_" + stringifyQuantScheme(scheme)).str();
}

/// A float as a hexadecimal literal: exact, whatever the compiler's
/// decimal conversion.
std::string hexFloat(float value) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%af", static_cast<double>(value));
  return buffer;
}

template <typename T>
void writeArray(raw_ostream &os, StringRef type, StringRef name,
                ArrayRef<T> values) {
  os << "static __device__ const " << type << " " << name << "["
     << values.size() << "] = {";
  for (auto [i, v] : llvm::enumerate(values)) {
    os << (i % 4 ? " " : "\n  ");
    if constexpr (std::is_same_v<T, float>)
      os << hexFloat(v);
    else
      os << static_cast<unsigned>(v);
    os << ",";
  }
  os << "\n};\n";
}

/// The tables and the encoder of a scheme; the encoders compute what
/// quantEncode (Quantization.cpp) does, step for step in float.
void writeScheme(raw_ostream &os, QuantScheme scheme) {
  std::string s = stringifyQuantScheme(scheme).str();
  std::string mids = "memfit_qmid_" + s;
  if (scheme != QuantScheme::Linear) {
    writeArray(os, "float", tableName(scheme), quantCodeValues(scheme));
    writeArray(os, "float", mids, quantMidpoints(scheme));
  }
  bool nibbles = quantCodeBits(scheme) == 4;
  if (nibbles)
    writeArray(os, "unsigned char", "memfit_qsorted_" + s,
               quantSortedCodes(scheme));
  os << "static __device__ __forceinline__ unsigned char "
     << encoderName(scheme) << "(float x, float a) {\n";
  if (scheme == QuantScheme::Linear) {
    os << "  if (a == 0.0f) return 0;\n"
          "  return (unsigned char)(signed char)rintf(fminf(fmaxf(x * (1.0f / "
          "a), -1.0f), 1.0f) * 127.0f);\n}\n";
    return;
  }
  int64_t count = quantMidpoints(scheme).size();
  if (nibbles) {
    os << "  const float v = fminf(fmaxf(x * (1.0f / fmaxf(a, 1e-38f)), "
          "-1.0f), 1.0f);\n";
  } else {
    // The bin of v among 65,536 across [-1, 1], then the bin's centre.
    os << "  if (a == 0.0f) return 0;\n"
          "  const float u = fminf(fmaxf(x * (1.0f / a), -1.0f), 1.0f);\n"
          "  const int bin = (int)fmaf((u + 1.0f) * 0.5f, 65535.0f, 0.5f);\n"
          "  const float v = (float)(2 * bin) / 65535.0f - 1.0f;\n";
  }
  // The number of midpoints below v.
  os << "  int lo = 0, hi = " << count << ";\n"
     << "  while (lo < hi) {\n"
     << "    const int mid = (lo + hi) >> 1;\n"
     << "    if (" << mids << "[mid] < v) lo = mid + 1; else hi = mid;\n"
     << "  }\n";
  if (nibbles)
    os << "  return memfit_qsorted_" << s << "[lo];\n}\n";
  else
    os << "  return (unsigned char)lo;\n}\n";
}

/// The code of `value` in a block whose absmax is `absmax` under `scheme`,
/// as a C expression of type unsigned char.
std::string quantEncodeExpr(QuantScheme scheme, StringRef value,
                            StringRef absmax) {
  return (encoderName(scheme) + "(" + value + ", " + absmax + ")").str();
}

using Expr = FailureOr<std::string>;

Expr emitDequantize(DequantizeOp op, KernelWriter &w) {
  QuantScheme scheme = op.getScheme();
  int64_t blockSize = op.getBlockSize();
  Expr absmax =
      w.load(op.getAbsmax(), llvm::formatv("idx / {0}LL", blockSize).str(), op);
  bool nibbles = quantCodeBits(scheme) == 4;
  Expr code = w.load(op.getCodes(), nibbles ? "idx >> 1" : "idx", op);
  if (failed(absmax) || failed(code))
    return failure();
  std::string value;
  if (scheme == QuantScheme::Linear)
    value = "((float)" + *code + " / 127.0f)";
  else if (nibbles)
    value = llvm::formatv("{0}[({1} >> ((~idx & 1) << 2)) & 15]",
                          tableName(scheme), *code)
                .str();
  else
    value = tableName(scheme) + "[" + *code + "]";
  return "(" + value + " * " + *absmax + ")";
}

struct DequantizeModel : EmitterModel<DequantizeModel, DequantizeOp> {
  EmitStyle getEmitStyle(Operation *) const { return EmitStyle::IndexMapping; }
  FailureOr<std::string> emitScalar(Operation *op, KernelWriter &writer,
                                    ArrayRef<std::string>) const {
    return emitDequantize(cast<DequantizeOp>(op), writer);
  }
};

struct QuantizeModel : EmitterModel<QuantizeModel, QuantizeOp> {
  EmitStyle getEmitStyle(Operation *) const { return EmitStyle::Blockwise; }
  LogicalResult emitTemplate(Operation *op, KernelWriter &writer) const {
    return writer.error(op) << "quantize ends a pointwise kernel and has no "
                               "template of its own",
           failure();
  }
};

} // namespace

void cuda::emitQuantTables(raw_ostream &os, ModuleOp module) {
  llvm::SetVector<QuantScheme> schemes;
  module.walk([&](Operation *op) {
    if (auto q = dyn_cast<QuantizeOp>(op))
      schemes.insert(q.getScheme());
    else if (auto d = dyn_cast<DequantizeOp>(op))
      schemes.insert(d.getScheme());
  });
  if (schemes.empty())
    return;
  os << "// The code tables and encoders of the quantization schemes used "
        "below.\n";
  for (QuantScheme scheme : schemes)
    writeScheme(os, scheme);
  os << "\n";
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

  int64_t n = getNumElements(domainShape);
  int64_t threads = rowBlockSize(blockSize);
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
  // Each thread keeps its elements across the block's absmax, and 4-bit
  // codes meet in shared memory: fibers on the host.
  setLaunch(threads, std::max<int64_t>(1, quantBlockCount(n, blockSize)),
            /*barriers=*/true, /*threadLoops=*/false);
  return success();
}

void cuda::attachQuantEmitters(MLIRContext *context) {
  DequantizeOp::attachInterface<DequantizeModel>(*context);
  QuantizeOp::attachInterface<QuantizeModel>(*context);
}
