//===- memfit_half.h - f16 and bf16 conversions, bit for bit as CUDA's
//
// IEEE binary16 and bfloat16 to and from float, rounding to nearest even,
// with the results of CUDA's __float2half_rn, __half2float,
// __float2bfloat16_rn and __bfloat162float (cuda_fp16.h, cuda_bf16.h):
// infinities keep their sign, a NaN becomes the canonical NaN (0x7fff in
// f16 and bf16, 0x7fffffff from f16), a bf16 NaN widens as it is.
//
// One text for two users: the runtime (Half.h wraps these functions for
// tensors, checkpoints and the host contractions) and the host backend's
// emulation header, which is embedded with this file in front of it, so
// that generated kernels convert exactly as the runtime does.
// unittests/Half/HalfCheck.cpp compares them with CUDA's headers.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_HALF_H
#define MEMFIT_HALF_H

#include <string.h>

static inline unsigned memfit_float_bits(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static inline float memfit_bits_float(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static inline float memfit_f16_to_float(unsigned short h) {
  unsigned sign = (unsigned)(h & 0x8000u) << 16;
  unsigned exponent = (h >> 10) & 0x1fu;
  unsigned mantissa = h & 0x3ffu;
  if (exponent == 0x1f) // inf, or NaN: canonical
    return memfit_bits_float(mantissa ? 0x7fffffffu : sign | 0x7f800000u);
  if (exponent == 0) {
    if (mantissa == 0)
      return memfit_bits_float(sign);
    // Subnormal: mantissa * 2^-24.
    float value = (float)mantissa * (1.0f / 16777216.0f);
    return sign ? -value : value;
  }
  return memfit_bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

static inline unsigned short memfit_float_to_f16(float f) {
  unsigned u = memfit_float_bits(f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  unsigned absBits = u & 0x7fffffffu;
  if (absBits > 0x7f800000u) // NaN: canonical
    return 0x7fff;
  if (absBits == 0x7f800000u)
    return sign | 0x7c00;
  if (absBits >= 0x477ff000u) // rounds to beyond 65504
    return sign | 0x7c00;
  if (absBits < 0x38800000u) {
    // Result is subnormal or zero: round abs * 2^24 to an integer.
    float scaled = memfit_bits_float(absBits) * 16777216.0f;
    unsigned integer = (unsigned)scaled;
    float rest = scaled - (float)integer;
    if (rest > 0.5f || (rest == 0.5f && (integer & 1)))
      ++integer;
    return sign | (unsigned short)integer;
  }
  unsigned rounded = absBits + 0xfffu + ((absBits >> 13) & 1);
  return sign | (unsigned short)((rounded - 0x38000000u) >> 13);
}

static inline float memfit_bf16_to_float(unsigned short b) {
  return memfit_bits_float((unsigned)b << 16);
}

static inline unsigned short memfit_float_to_bf16(float f) {
  unsigned u = memfit_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: canonical
    return 0x7fff;
  u += 0x7fffu + ((u >> 16) & 1);
  return (unsigned short)(u >> 16);
}

#endif // MEMFIT_HALF_H
