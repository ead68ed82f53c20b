//===- ExecutableCache.cpp - compiled executables kept on disk ------------===//

#include "memfit/runtime/ExecutableCache.h"

#include "Files.h"
#include "Hash.h"
#include "KernelCache.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace memfit::rt {

namespace {

constexpr const char *kPrefix = "executable-";

/// hash64 of a file's bytes, read a MiB at a time (model files can be
/// larger than what is worth holding twice).
StatusOr<uint64_t> hashFile(const std::string &path, uint64_t &size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return invalidArgument(path + ": cannot open: " + std::strerror(errno));
  std::vector<unsigned char> chunk(size_t(1) << 20);
  uint64_t h = 0;
  size = 0;
  while (true) {
    ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::string message = path + ": cannot read: " + std::strerror(errno);
      ::close(fd);
      return invalidArgument(message);
    }
    if (n == 0)
      break;
    h = hash64(chunk.data(), static_cast<size_t>(n), h);
    size += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return h;
}

/// One line of `inputs`: "<hash> <bytes> <path>".
std::string inputLine(const std::string &path, uint64_t hash, uint64_t size) {
  return hex64(hash) + " " + std::to_string(size) + " " + path + "\n";
}

/// Whether every file that `inputs` lists still has its size and hash.
bool inputsUnchanged(const std::string &inputs) {
  std::istringstream lines(inputs);
  std::string line;
  while (std::getline(lines, line)) {
    size_t a = line.find(' '), b = line.find(' ', a + 1);
    if (a == std::string::npos || b == std::string::npos)
      return false;
    std::string path = line.substr(b + 1);
    uint64_t size = 0;
    StatusOr<uint64_t> hash = hashFile(path, size);
    if (!hash || inputLine(path, *hash, size) != line + "\n")
      return false;
  }
  return true;
}

/// The bytes of the plain files in a directory.
uint64_t directoryBytes(const std::string &path) {
  uint64_t bytes = 0;
  if (DIR *dir = ::opendir(path.c_str())) {
    while (struct dirent *entry = ::readdir(dir)) {
      struct stat st;
      std::string file = path + "/" + entry->d_name;
      if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        bytes += static_cast<uint64_t>(st.st_size);
    }
    ::closedir(dir);
  }
  return bytes;
}

} // namespace

ExecutableCache::ExecutableCache(const std::string &directory, bool disabled,
                                 uint64_t maxBytes)
    : maxBytes_(maxBytes) {
  SessionOptions options;
  options.cacheDir = directory;
  options.disableCache = disabled;
  KernelCache kernels(options); // resolves and creates the directory
  directory_ = kernels.directory();
}

StatusOr<std::string> ExecutableCache::key(const std::string &configuration,
                                           const std::string &modelPath) const {
  uint64_t size = 0;
  StatusOr<uint64_t> model = hashFile(modelPath, size);
  if (!model)
    return model.status();
  uint64_t h = hash64(configuration.data(), configuration.size(), *model);
  return kPrefix + hex64(h);
}

std::optional<Executable> ExecutableCache::load(const std::string &key) const {
  if (!enabled())
    return std::nullopt;
  std::string entry = directory_ + "/" + key;
  StatusOr<std::string> inputs = readFile(entry + "/inputs");
  if (!inputs)
    return std::nullopt; // absent (or half removed by another trim)
  if (!inputsUnchanged(*inputs))
    return std::nullopt; // stored again after this compile
  StatusOr<Executable> executable = loadExecutable(entry);
  if (!executable) {
    removeDirectoryAndFiles(entry); // corrupt: compiled and stored again
    return std::nullopt;
  }
  ::utimensat(AT_FDCWD, entry.c_str(), nullptr, 0); // its last use
  return std::move(*executable);
}

Status ExecutableCache::store(const std::string &key,
                              const std::vector<std::string> &inputs,
                              const Executable &executable) const {
  if (!enabled() || executable.planOnly)
    return Status::ok();
  uint64_t bytes =
      executable.weights.size() + executable.manifest.source.size();
  if (bytes > maxBytes_)
    return Status::ok();
  std::string lines;
  for (const std::string &path : inputs) {
    uint64_t size = 0;
    StatusOr<uint64_t> hash = hashFile(path, size);
    if (!hash)
      return hash.status();
    lines += inputLine(path, *hash, size);
  }
  std::string entry = directory_ + "/" + key;
  removeStaleTemporaries(entry);
  std::string temporary = temporarySibling(entry);
  Status saved = saveExecutable(executable, temporary);
  if (saved)
    saved = writeFile(temporary + "/inputs", lines.data(), lines.size());
  // An entry already there is one whose inputs changed since (else it
  // would have been loaded), or one another process stored meanwhile: it
  // goes aside first, then this one takes its place.
  if (saved && ::rename(temporary.c_str(), entry.c_str()) != 0) {
    std::string aside = temporarySibling(entry);
    if ((errno != ENOTEMPTY && errno != EEXIST) ||
        ::rename(entry.c_str(), aside.c_str()) != 0 ||
        ::rename(temporary.c_str(), entry.c_str()) != 0)
      saved = invalidArgument(entry + ": cannot rename " + temporary + ": " +
                              std::strerror(errno));
    removeDirectoryAndFiles(aside);
  }
  removeDirectoryAndFiles(temporary); // gone already after a rename
  if (!saved)
    return saved;

  // Least recently used first, until the entries fit.
  struct Entry {
    std::string path;
    int64_t used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  if (DIR *dir = ::opendir(directory_.c_str())) {
    while (struct dirent *e = ::readdir(dir)) {
      std::string name = e->d_name;
      struct stat st;
      std::string path = directory_ + "/" + name;
      if (name.rfind(kPrefix, 0) != 0 ||
          name.find(".tmp-") != std::string::npos ||
          ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        continue;
      Entry found{path,
                  int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                  directoryBytes(path)};
      total += found.bytes;
      entries.push_back(std::move(found));
    }
    ::closedir(dir);
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.used < b.used; });
  for (const Entry &e : entries) {
    if (total <= maxBytes_)
      break;
    if (e.path == entry)
      continue;
    removeDirectoryAndFiles(e.path);
    total -= e.bytes;
  }
  return Status::ok();
}

} // namespace memfit::rt
