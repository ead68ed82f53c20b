//===- KernelCache.h - on-disk cache of compiled kernels (internal) -*- C++ -*-===//

#ifndef MEMFIT_RUNTIME_SRC_KERNELCACHE_H
#define MEMFIT_RUNTIME_SRC_KERNELCACHE_H

#include "Hash.h"

#include "memfit/runtime/Session.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memfit::rt {


/// Compiled artifacts keyed by (source hash, target, compiler version):
/// files `<dir>/<kind>-<16 hex digits>.<ext>`, written to a temporary and
/// renamed so that concurrent sessions never see a partial file.
class KernelCache {
public:
  /// Resolves the directory from the options (see SessionOptions::cacheDir);
  /// a cache that cannot be created is disabled, not an error, and reported
  /// through SessionOptions::warn.
  explicit KernelCache(const SessionOptions &options);
  bool enabled() const { return !directory_.empty(); }
  const std::string &directory() const { return directory_; }

  /// The file path for a key (whether or not it exists).
  std::string path(const std::string &kind, const std::string &source,
                   const std::string &target, const std::string &compilerVersion,
                   const std::string &extension) const;
  std::optional<std::vector<char>> load(const std::string &path) const;
  /// Best effort; a failure leaves the cache without the entry and is
  /// reported through SessionOptions::warn (once per cache).
  void store(const std::string &path, const std::vector<char> &bytes) const;

private:
  std::string directory_;
  std::function<void(const std::string &)> warn_;
  mutable bool warnedStore_ = false;
};

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_KERNELCACHE_H
