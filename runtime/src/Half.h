//===- Half.h - f16 and bf16 conversions (internal) -------------*- C++ -*-===//
//
// IEEE binary16 and bfloat16 to and from float, rounding to nearest even,
// bit for bit as CUDA's conversions (__float2half_rn, __half2float,
// __float2bfloat16_rn, __bfloat162float in cuda_fp16.h / cuda_bf16.h):
// infinities keep their sign, a NaN becomes the canonical NaN (0x7fff in
// f16 and bf16, 0x7fffffff from f16), a bf16 NaN widens as it is.
// unittests/Half/HalfCheck.cpp compares them with CUDA's headers.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_HALF_H
#define MEMFIT_RUNTIME_SRC_HALF_H

#include <cstdint>
#include <cstring>

namespace memfit::rt {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) // inf, or NaN: canonical
    return bitsFloat(mantissa ? 0x7fffffffu : sign | 0x7f800000u);
  if (exponent == 0) {
    if (mantissa == 0)
      return bitsFloat(sign);
    // Subnormal: mantissa * 2^-24.
    float value = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -value : value;
  }
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline uint16_t floatToHalf(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  uint32_t absBits = u & 0x7fffffffu;
  if (absBits > 0x7f800000u) // NaN: canonical
    return 0x7fff;
  if (absBits == 0x7f800000u)
    return sign | 0x7c00;
  if (absBits >= 0x477ff000u) // rounds to beyond 65504
    return sign | 0x7c00;
  if (absBits < 0x38800000u) {
    // Result is subnormal or zero: round abs * 2^24 to an integer.
    float scaled = bitsFloat(absBits) * 16777216.0f;
    uint32_t integer = static_cast<uint32_t>(scaled);
    float rest = scaled - static_cast<float>(integer);
    if (rest > 0.5f || (rest == 0.5f && (integer & 1)))
      ++integer;
    return sign | static_cast<uint16_t>(integer);
  }
  uint32_t rounded = absBits + 0xfffu + ((absBits >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

inline float bf16ToFloat(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: canonical
    return 0x7fff;
  u += 0x7fffu + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_HALF_H
