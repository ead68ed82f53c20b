//===- Hash.h - non-cryptographic hashes of bytes (internal) ----*- C++ -*-===//
//
// Two 64-bit hashes: FNV-1a a byte at a time (the format of checkpoints and
// of executables saved before weights.sum moved to hash64), and hash64,
// four lanes of 64-bit words, for what is large (weights, model files):
// FNV-1a runs at one multiply's latency per byte, about 0.3 GB/s, hash64
// at memory speed. Neither resists an adversary; both catch corruption,
// truncation and a changed file.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_HASH_H
#define MEMFIT_RUNTIME_SRC_HASH_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace memfit::rt {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

/// 64-bit FNV-1a of `size` bytes, continuing from `seed`.
uint64_t fnv1a64(const void *data, size_t size, uint64_t seed = kFnvOffset);

/// Four lanes over 8-byte little-endian words, each a multiply-rotate
/// round, merged with the length and avalanched: every bit of the input
/// reaches every bit of the result.
uint64_t hash64(const void *data, size_t size, uint64_t seed = 0);

/// 16 lower-case hex digits.
std::string hex64(uint64_t value);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_HASH_H
