//===- HalfCheck.cpp - memfit's f16/bf16 conversions against CUDA's --------===//
//
// Usage: memfit-half-check [--exhaustive]
//
// Compares the runtime's conversions (runtime/src/Half.h) with the ones
// CUDA's headers define (cuda_fp16.h, cuda_bf16.h, compiled here by the
// host compiler: their host paths are what NVIDIA ships for host code):
// every 16-bit pattern widened to float, and float patterns narrowed to
// f16 and bf16. By default the floats are those that decide rounding
// (every pattern whose low bits are a tie, one off a tie, zero or all
// ones, for every sign, exponent and high mantissa), the specials and a
// stride through all 2^32; --exhaustive takes every float (about 10 s).
// Prints the count of patterns compared and of mismatches (with the first
// few), and exits 1 on any mismatch.
//
//===----------------------------------------------------------------------===//

#include "Half.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace {

using namespace memfit::rt;

uint16_t cudaHalfBits(float f) {
  __half h = __float2half_rn(f);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

uint16_t cudaBf16Bits(float f) {
  __nv_bfloat16 b = __float2bfloat16_rn(f);
  uint16_t bits;
  std::memcpy(&bits, &b, sizeof(bits));
  return bits;
}

uint32_t cudaHalfToFloatBits(uint16_t bits) {
  __half h;
  std::memcpy(&h, &bits, sizeof(bits));
  return floatBits(__half2float(h));
}

uint32_t cudaBf16ToFloatBits(uint16_t bits) {
  __nv_bfloat16 b;
  std::memcpy(&b, &bits, sizeof(bits));
  return floatBits(__bfloat162float(b));
}

struct Tally {
  const char *what;
  uint64_t compared = 0, mismatches = 0;

  void check(uint32_t input, uint32_t ours, uint32_t cuda) {
    ++compared;
    if (ours == cuda)
      return;
    if (++mismatches <= 5)
      std::printf("MISMATCH %s: input 0x%08" PRIx32 ": memfit 0x%08" PRIx32
                  ", CUDA 0x%08" PRIx32 "\n",
                  what, input, ours, cuda);
  }
};

void narrow(uint32_t bits, Tally &half, Tally &bf16) {
  float f = bitsFloat(bits);
  half.check(bits, floatToHalf(f), cudaHalfBits(f));
  bf16.check(bits, floatToBf16(f), cudaBf16Bits(f));
}

} // namespace

int main(int argc, char **argv) {
  bool exhaustive = argc > 1 && std::strcmp(argv[1], "--exhaustive") == 0;
  if (argc > 2 || (argc == 2 && !exhaustive)) {
    std::fprintf(stderr, "usage: memfit-half-check [--exhaustive]\n");
    return 2;
  }
  Tally widenHalf{"f16->f32"}, widenBf16{"bf16->f32"};
  for (uint32_t i = 0; i < 65536; ++i) {
    uint16_t bits = static_cast<uint16_t>(i);
    widenHalf.check(bits, floatBits(halfToFloat(bits)),
                    cudaHalfToFloatBits(bits));
    widenBf16.check(bits, floatBits(bf16ToFloat(bits)),
                    cudaBf16ToFloatBits(bits));
  }

  Tally half{"f32->f16"}, bf16{"f32->bf16"};
  if (exhaustive) {
    for (uint64_t i = 0; i < (uint64_t(1) << 32); ++i)
      narrow(static_cast<uint32_t>(i), half, bf16);
  } else {
    // f16 keeps 10 of float's 23 mantissa bits (13 dropped), bf16 keeps 7
    // (16 dropped): every high part with the dropped bits at the values
    // that decide rounding.
    const uint32_t halfLow[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff};
    const uint32_t bf16Low[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (uint32_t high = 0; high < (uint32_t(1) << 19); ++high)
      for (uint32_t low : halfLow)
        narrow(high << 13 | low, half, bf16);
    for (uint32_t high = 0; high < (uint32_t(1) << 16); ++high)
      for (uint32_t low : bf16Low)
        narrow(high << 16 | low, half, bf16);
    // A stride through everything else.
    for (uint64_t i = 0; i < (uint64_t(1) << 32); i += 251)
      narrow(static_cast<uint32_t>(i), half, bf16);
  }

  uint64_t mismatches = 0;
  for (const Tally *t : {&widenHalf, &widenBf16, &half, &bf16}) {
    std::printf("%-10s %12" PRIu64 " patterns, %" PRIu64 " mismatches\n",
                t->what, t->compared, t->mismatches);
    mismatches += t->mismatches;
  }
  std::printf("memfit-half-check: %s\n",
              mismatches ? "FAIL" : "conversions equal CUDA's");
  return mismatches ? 1 : 0;
}
