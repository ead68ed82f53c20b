//===- ExecutableCache.h - compiled executables kept on disk ----*- C++ -*-===//
//
// A compile that ran before with the same model and options is not run
// again: its executable is loaded from the cache directory the kernels use
// (SessionOptions::cacheDir: $MEMFIT_CACHE_DIR, $XDG_CACHE_HOME/memfit or
// ~/.cache/memfit). memfit::compileModelFile looks here first.
//
//   <dir>/executable-<16 hex>/   manifest.json, kernels.cu, weights.bin,
//                                weights.sum (saveExecutable's files) and
//                                inputs: the other files the compile read
//                                (an ONNX model's external data), each with
//                                its size and hash64, checked on every hit.
//
// The key hashes the configuration (every option that changes the output,
// and the compiler's build) with the model file's bytes. An entry is
// written to a temporary directory and renamed into place, so a reader
// never sees half of one; entries past the size limit go, least recently
// used first.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_EXECUTABLECACHE_H
#define MEMFIT_RUNTIME_EXECUTABLECACHE_H

#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memfit::rt {

class ExecutableCache {
public:
  /// Entries past this many bytes in all are removed, oldest use first.
  static constexpr uint64_t kDefaultMaxBytes = uint64_t(2) << 30;

  /// `directory` empty: the kernel cache's default. Disabled (or a
  /// directory that cannot be created): every lookup misses and nothing is
  /// stored.
  ExecutableCache(const std::string &directory, bool disabled,
                  uint64_t maxBytes = kDefaultMaxBytes);

  bool enabled() const { return !directory_.empty(); }

  /// The entry's name for `configuration` compiled from the file at
  /// `modelPath` (its bytes hashed), or an error reading the file.
  StatusOr<std::string> key(const std::string &configuration,
                            const std::string &modelPath) const;

  /// The executable stored under `key` if its input files are unchanged;
  /// nullopt on a miss. An entry that cannot be read is removed.
  std::optional<Executable> load(const std::string &key) const;

  /// Stores the executable under `key` with the files the compile read
  /// besides the model (hashed now), then trims the cache. Executables
  /// larger than the limit, or compiled to plan only, are not stored.
  Status store(const std::string &key, const std::vector<std::string> &inputs,
               const Executable &executable) const;

  const std::string &directory() const { return directory_; }

private:
  std::string directory_;
  uint64_t maxBytes_;
};

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_EXECUTABLECACHE_H
