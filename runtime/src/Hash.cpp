//===- Hash.cpp - non-cryptographic hashes of bytes -----------------------===//

#include "Hash.h"

#include <cstdio>
#include <cstring>

namespace memfit::rt {

uint64_t fnv1a64(const void *data, size_t size, uint64_t seed) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

// Odd 64-bit constants with bits spread evenly (the golden ratio's and two
// of its neighbours).
constexpr uint64_t kMulA = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kMulB = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kMulC = 0x165667b19e3779f9ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/// One word into a lane: add, multiply, rotate (so that high bits reach low
/// ones in the next round), multiply.
inline uint64_t mix(uint64_t lane, uint64_t word) {
  return rotl(lane + word * kMulB, 31) * kMulA;
}

inline uint64_t load64(const unsigned char *p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w)); // the hosts memfit runs on are little-endian
  return w;
}

/// Every input bit flips about half of the output bits (a multiply-xorshift
/// finalizer).
inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kMulB;
  h ^= h >> 29;
  h *= kMulC;
  h ^= h >> 32;
  return h;
}

} // namespace

uint64_t hash64(const void *data, size_t size, uint64_t seed) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t lanes[4] = {seed + kMulA + kMulB, seed + kMulB, seed, seed - kMulA};
  size_t i = 0;
  for (; i + 32 <= size; i += 32)
    for (int l = 0; l < 4; ++l)
      lanes[l] = mix(lanes[l], load64(p + i + 8 * l));
  uint64_t h = rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) +
               rotl(lanes[3], 18);
  for (int l = 0; l < 4; ++l)
    h = (h ^ mix(0, lanes[l])) * kMulA + kMulC;
  h += static_cast<uint64_t>(size);
  for (; i + 8 <= size; i += 8)
    h = rotl(h ^ mix(0, load64(p + i)), 27) * kMulA + kMulC;
  for (; i < size; ++i)
    h = rotl(h ^ (p[i] * kMulC), 11) * kMulA;
  return avalanche(h);
}

std::string hex64(uint64_t value) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(value));
  return hex;
}

} // namespace memfit::rt
