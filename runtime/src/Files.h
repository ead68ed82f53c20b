//===- Files.h - whole-file reads and atomic writes (internal) --*- C++ -*-===//

#ifndef MEMFIT_RUNTIME_SRC_FILES_H
#define MEMFIT_RUNTIME_SRC_FILES_H

#include "memfit/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memfit::rt {

/// The bytes of a file; errors name the path and the system's reason.
StatusOr<std::string> readFile(const std::string &path);
/// The same, as bytes (weights: no copy from a string).
StatusOr<std::vector<uint8_t>> readFileBytes(const std::string &path);

/// Writes (truncating) a file in one go.
Status writeFile(const std::string &path, const void *data, size_t size);

/// A sibling of `path` that no other writer uses (pid and counter), for
/// writing a temporary that is then renamed over `path`.
std::string temporarySibling(const std::string &path);

/// Writes `path` through a temporary renamed into place, so readers never
/// see a partial file.
Status writeFileAtomic(const std::string &path, const void *data, size_t size);

Status renameFile(const std::string &from, const std::string &to);

/// Removes the temporary siblings of `path` (temporarySibling's names) that
/// a writer killed before its rename left behind: those whose process has
/// exited (or is this one: a temporary of this process is only ever open
/// through a DurableFileWriter, which is not writing `path` now), files or
/// directories of files. Best effort.
void removeStaleTemporaries(const std::string &path);

/// Writes a file that must survive a crash whole or not at all: data goes to
/// a temporary sibling; commit() flushes it to disk (fsync), renames it over
/// the target and flushes the directory. Destroyed without a successful
/// commit, it removes the temporary and leaves the target untouched; open()
/// first removes the temporaries of the same target that killed writers
/// left (removeStaleTemporaries).
class DurableFileWriter {
public:
  explicit DurableFileWriter(std::string path);
  ~DurableFileWriter();
  DurableFileWriter(const DurableFileWriter &) = delete;
  DurableFileWriter &operator=(const DurableFileWriter &) = delete;

  /// Creates the temporary; errors name the target.
  Status open();
  Status append(const void *data, size_t size);
  Status commit();

private:
  void abandon();

  std::string path_, temporary_;
  int fd_ = -1;
};

/// `mkdir -p`.
Status makeDirectories(const std::string &path);

/// A fresh directory `<$TMPDIR or /tmp>/<prefix>XXXXXX`.
StatusOr<std::string> makeTemporaryDirectory(const std::string &prefix);

/// Removes a directory and the plain files in it (not recursive); best effort.
void removeDirectoryAndFiles(const std::string &path);

/// Whether a regular file exists at `path`.
bool fileExists(const std::string &path);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_FILES_H
