//===- Quantization.cpp - codes, maps and blocks of quantized tensors ----===//

#include "memfit/Dialect/Quantization.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::memfit;

#include "QuantTables.inc"

unsigned mlir::memfit::quantCodeBits(QuantScheme scheme) {
  return scheme == QuantScheme::NF4 || scheme == QuantScheme::FP4 ? 4 : 8;
}

Type mlir::memfit::quantCodeType(MLIRContext *context, QuantScheme scheme) {
  return scheme == QuantScheme::Linear
             ? IntegerType::get(context, 8)
             : IntegerType::get(context, 8, IntegerType::Unsigned);
}

int64_t mlir::memfit::quantCodeBytes(QuantScheme scheme, int64_t elements) {
  return quantCodeBits(scheme) == 4 ? (elements + 1) / 2 : elements;
}

int64_t mlir::memfit::quantBlockCount(int64_t elements, int64_t blockSize) {
  return blockSize > 0 ? (elements + blockSize - 1) / blockSize : 0;
}

ArrayRef<float> mlir::memfit::quantCodeValues(QuantScheme scheme) {
  switch (scheme) {
  case QuantScheme::Linear:
    return {};
  case QuantScheme::Dynamic:
    return kDynamicSigned;
  case QuantScheme::DynamicUnsigned:
    return kDynamicUnsigned;
  case QuantScheme::NF4:
    return kNF4;
  case QuantScheme::FP4:
    return kFP4;
  }
  return {};
}

LogicalResult
mlir::memfit::verifyQuantized(function_ref<InFlightDiagnostic()> emitError,
                              QuantScheme scheme, int64_t blockSize,
                              RankedTensorType value, RankedTensorType codes,
                              RankedTensorType absmax) {
  if (blockSize < 1)
    return emitError() << "block_size must be positive, got " << blockSize;
  if (quantCodeBits(scheme) == 4 && blockSize % 2)
    return emitError() << "4-bit codes need an even block_size (a block's "
                          "codes start at a byte), got "
                       << blockSize;
  int64_t n = value.getNumElements();
  Type codeType = quantCodeType(value.getContext(), scheme);
  int64_t bytes = quantCodeBytes(scheme, n);
  if (codes.getRank() != 1 || codes.getElementType() != codeType ||
      codes.getDimSize(0) != bytes)
    return emitError() << "codes of " << n << " values quantized "
                       << stringifyQuantScheme(scheme) << " must be "
                       << RankedTensorType::get({bytes}, codeType) << ", got "
                       << codes;
  int64_t blocks = quantBlockCount(n, blockSize);
  if (absmax.getRank() != 1 || !absmax.getElementType().isF32() ||
      absmax.getDimSize(0) != blocks)
    return emitError() << "absmax of " << n << " values in blocks of "
                       << blockSize << " must be "
                       << RankedTensorType::get(
                              {blocks}, Float32Type::get(value.getContext()))
                       << ", got " << absmax;
  return success();
}

namespace {

struct Thresholds {
  SmallVector<float> midpoints;
  SmallVector<uint8_t> sorted;
};

Thresholds makeThresholds(ArrayRef<float> values) {
  Thresholds t;
  for (unsigned i = 0; i < values.size(); ++i)
    t.sorted.push_back(static_cast<uint8_t>(i));
  std::stable_sort(t.sorted.begin(), t.sorted.end(),
                   [&](uint8_t a, uint8_t b) { return values[a] < values[b]; });
  for (unsigned k = 0; k + 1 < t.sorted.size(); ++k)
    t.midpoints.push_back(0.5f *
                          (values[t.sorted[k]] + values[t.sorted[k + 1]]));
  return t;
}

/// The thresholds of every scheme, made once from its code values.
const Thresholds &thresholds(QuantScheme scheme) {
  static const auto all = [] {
    std::array<Thresholds, getMaxEnumValForQuantScheme() + 1> t;
    for (uint32_t s = 0; s < t.size(); ++s)
      t[s] = makeThresholds(quantCodeValues(static_cast<QuantScheme>(s)));
    return t;
  }();
  return all[static_cast<uint32_t>(scheme)];
}

/// How many of `midpoints` are strictly below `x`.
unsigned countBelow(ArrayRef<float> midpoints, float x) {
  return std::lower_bound(midpoints.begin(), midpoints.end(), x) -
         midpoints.begin();
}

} // namespace

ArrayRef<float> mlir::memfit::quantMidpoints(QuantScheme scheme) {
  return thresholds(scheme).midpoints;
}

ArrayRef<uint8_t> mlir::memfit::quantSortedCodes(QuantScheme scheme) {
  if (quantCodeBits(scheme) != 4)
    return {};
  return thresholds(scheme).sorted;
}

// The rules are bitsandbytes 0.50's on the CPU, so that codes can be
// compared with it code for code:
//  - linear: round-half-even(127 * clamp(x * (1 / absmax))); 0 for a zero
//    block.
//  - dynamic maps (quantize_blockwise's native quantizer): a zero block gets
//    code 0. Otherwise v = clamp(x * (1 / absmax), -1, 1) falls into one of
//    65,536 bins across [-1, 1] (index trunc(fma((v + 1) / 2, 65535, 0.5)),
//    centre 2 * index / 65535 - 1), and the code is the one nearest to the
//    bin's centre: the number of midpoints below it. Within half a bin
//    (1.5e-5 of absmax) of a midpoint the code can be the farther one, and
//    an exact 0 in a nonzero block gets the smallest positive code the bin
//    of 0 reaches.
//  - nf4, fp4 (quantize_4bit): v = clamp(x * (1 / max(absmax, 1e-38)), -1,
//    1); the code at the sorted position given by the number of midpoints
//    below v, so an exact midpoint goes to the lower value. (bitsandbytes
//    divides instead of multiplying in a partial last block, and stores its
//    absmax clamped to 1e-38; memfit treats it as any other block.)
uint8_t mlir::memfit::quantEncode(QuantScheme scheme, float x, float absmax) {
  // A NaN (a NaN value, or an infinite one over an infinite absmax) encodes
  // as 0: converting it to an integer code is undefined.
  auto clamp = [](float v) {
    return std::isnan(v) ? 0.0f : std::min(std::max(v, -1.0f), 1.0f);
  };
  if (scheme == QuantScheme::Linear) {
    if (absmax == 0.0f)
      return 0;
    return static_cast<uint8_t>(static_cast<int8_t>(
        std::nearbyint(clamp(x * (1.0f / absmax)) * 127.0f)));
  }
  const Thresholds &t = thresholds(scheme);
  if (quantCodeBits(scheme) == 4) {
    float v = clamp(x * (1.0f / std::max(absmax, 1e-38f)));
    return t.sorted[countBelow(t.midpoints, v)];
  }
  if (absmax == 0.0f)
    return 0;
  float v = clamp(x * (1.0f / absmax));
  float half = (v + 1.0f) * 0.5f;
  auto bin = static_cast<int>(std::fma(half, 65535.0f, 0.5f));
  float centre = static_cast<float>(2 * bin) / 65535.0f - 1.0f;
  return static_cast<uint8_t>(countBelow(t.midpoints, centre));
}
