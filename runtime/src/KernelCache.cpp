//===- KernelCache.cpp - on-disk cache of compiled kernels ----------------===//

#include "KernelCache.h"

#include <unistd.h>

#include "Files.h"

#include <cstdio>
#include <cstdlib>

namespace memfit::rt {

namespace {

std::string defaultCacheDirectory() {
  if (const char *dir = std::getenv("MEMFIT_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/memfit";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/memfit";
  return "";
}

} // namespace

KernelCache::KernelCache(const SessionOptions &options) : warn_(options.warn) {
  if (options.disableCache)
    return;
  std::string directory =
      options.cacheDir.empty() ? defaultCacheDirectory() : options.cacheDir;
  if (directory.empty())
    return;
  if (Status made = makeDirectories(directory); !made) {
    if (warn_)
      warn_("kernel cache not used: " + made.message() +
            "; kernels are compiled without it");
    return;
  }
  // Absolute: the host backend's sources include the cached header by its
  // path, and its compiler runs in another directory.
  if (directory[0] != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd))
      directory = std::string(cwd) + "/" + directory;
  }
  directory_ = directory;
}

std::string KernelCache::path(const std::string &kind,
                              const std::string &source,
                              const std::string &target,
                              const std::string &compilerVersion,
                              const std::string &extension) const {
  // The parts are separated by a NUL so that ("ab", "c") != ("a", "bc").
  // FNV-1a (Hash.h): kernel sources are short, and another hash would move
  // every cached kernel.
  uint64_t h = fnv1a64(source.data(), source.size());
  for (const std::string *part : {&target, &compilerVersion}) {
    h = fnv1a64("", 1, h);
    h = fnv1a64(part->data(), part->size(), h);
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(h));
  return directory_ + "/" + kind + "-" + hex + "." + extension;
}

std::optional<std::vector<char>>
KernelCache::load(const std::string &path) const {
  if (!enabled())
    return std::nullopt;
  StatusOr<std::string> data = readFile(path);
  if (!data)
    return std::nullopt;
  return std::vector<char>(data->begin(), data->end());
}

void KernelCache::store(const std::string &path,
                        const std::vector<char> &bytes) const {
  if (!enabled())
    return;
  Status written = writeFileAtomic(path, bytes.data(), bytes.size());
  if (!written && warn_ && !warnedStore_) {
    warnedStore_ = true;
    warn_("kernel cache not written: " + written.message() +
          "; the kernels are compiled again next time");
  }
}

} // namespace memfit::rt
