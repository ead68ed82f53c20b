//===- Quantization.h - codes, code maps and blocks of quantized tensors --===//
//
// What memfit.quantize and memfit.dequantize mean, in one place: the code
// maps of each QuantScheme (the values bitsandbytes uses, checked against
// its own tables by test/Quantization/codes-bnb.test), how many codes and
// blocks a tensor of N values has, and the reference encoder that the
// kernels reproduce (the host backend runs the same CUDA source, so this is
// for constant folding and for tests).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_QUANTIZATION_H
#define MEMFIT_DIALECT_QUANTIZATION_H

#include "memfit/Dialect/MemfitOps.h"

#include <cstdint>

namespace mlir::memfit {

/// Bits per code: 8, or 4 for nf4 and fp4 (two codes per byte, the first
/// element in the high nibble).
unsigned quantCodeBits(QuantScheme scheme);
/// The element type of the codes: i8 for linear, ui8 for the others.
Type quantCodeType(MLIRContext *context, QuantScheme scheme);
/// Bytes of codes for `elements` values.
int64_t quantCodeBytes(QuantScheme scheme, int64_t elements);
/// Blocks of `blockSize` values in `elements` (the last may be shorter).
int64_t quantBlockCount(int64_t elements, int64_t blockSize);
/// The value of each code, indexed by code: 256 entries for the dynamic
/// maps, 16 for nf4 and fp4, none for linear (code / 127).
ArrayRef<float> quantCodeValues(QuantScheme scheme);
/// The thresholds the encoders compare with: for the dynamic maps the 255
/// midpoints of neighbouring codes, for nf4 and fp4 the 15 midpoints of the
/// values in ascending order; each `0.5f * (a + b)` in float.
ArrayRef<float> quantMidpoints(QuantScheme scheme);
/// nf4 and fp4: the codes in ascending order of value (a stable sort, so
/// fp4's +0 comes before its second zero); empty for the other schemes.
ArrayRef<uint8_t> quantSortedCodes(QuantScheme scheme);
/// The code of `x`, a value of a block whose absmax is `absmax`, as the
/// kernels compute it (bitsandbytes' CPU rules, see Quantization.cpp).
uint8_t quantEncode(QuantScheme scheme, float x, float absmax);

/// Checks that `codes` and `absmax` can hold `value` quantized with
/// `scheme` in blocks of `blockSize`.
LogicalResult verifyQuantized(function_ref<InFlightDiagnostic()> emitError,
                              QuantScheme scheme, int64_t blockSize,
                              RankedTensorType value, RankedTensorType codes,
                              RankedTensorType absmax);

} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_QUANTIZATION_H
