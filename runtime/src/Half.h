//===- Half.h - f16 and bf16 conversions (internal) -------------*- C++ -*-===//
//
// The runtime's names for the conversions of host/memfit_half.h, which
// round to nearest even bit for bit as CUDA's (__float2half_rn,
// __half2float, __float2bfloat16_rn, __bfloat162float). The host backend's
// kernels convert with the same code (the emulation header embeds it).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_HALF_H
#define MEMFIT_RUNTIME_SRC_HALF_H

#include "host/memfit_half.h"

#include <cstdint>

namespace memfit::rt {

inline uint32_t floatBits(float f) { return memfit_float_bits(f); }
inline float bitsFloat(uint32_t u) { return memfit_bits_float(u); }
inline float halfToFloat(uint16_t h) { return memfit_f16_to_float(h); }
inline uint16_t floatToHalf(float f) { return memfit_float_to_f16(f); }
inline float bf16ToFloat(uint16_t b) { return memfit_bf16_to_float(b); }
inline uint16_t floatToBf16(float f) { return memfit_float_to_bf16(f); }

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_HALF_H
