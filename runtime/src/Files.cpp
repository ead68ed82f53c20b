//===- Files.cpp - whole-file reads and atomic writes ---------------------===//
//
// Durable writes go to a temporary sibling `<target>.tmp-<pid>-<n>` that is
// flushed and renamed over the target, so a process killed at any instant
// leaves the old target or the new one. The temporary of a killed writer
// stays behind; the next durable write of the same target removes those
// whose process is gone.
//
//===----------------------------------------------------------------------===//

#include "Files.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace memfit::rt {

namespace {
std::string systemError() { return std::strerror(errno); }

/// The whole file into `Bytes` (std::string or a vector of bytes), read in
/// place: sized from fstat, grown only for a file that grows while read.
template <typename Bytes> StatusOr<Bytes> readWhole(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string message = path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? notFound(message) : invalidArgument(message);
  }
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return invalidArgument(path + ": is a directory");
  }
  Bytes data;
  data.resize(st.st_size > 0 ? static_cast<size_t>(st.st_size) : 0);
  size_t used = 0;
  while (true) {
    if (used == data.size())
      data.resize(data.size() + (size_t(1) << 16));
    ssize_t n = ::read(fd, &data[used], data.size() - used);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      std::string message = path + ": cannot read: " + systemError();
      ::close(fd);
      return invalidArgument(message);
    }
    if (n == 0)
      break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  data.resize(used);
  return data;
}

} // namespace

StatusOr<std::string> readFile(const std::string &path) {
  return readWhole<std::string>(path);
}

StatusOr<std::vector<uint8_t>> readFileBytes(const std::string &path) {
  return readWhole<std::vector<uint8_t>>(path);
}

Status writeFile(const std::string &path, const void *data, size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return invalidArgument(path + ": cannot create: " + systemError());
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      std::string message = path + ": cannot write: " + systemError();
      ::close(fd);
      ::unlink(path.c_str());
      return invalidArgument(message);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    std::string message = path + ": cannot write: " + systemError();
    ::unlink(path.c_str());
    return invalidArgument(message);
  }
  return Status::ok();
}

std::string temporarySibling(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

Status writeFileAtomic(const std::string &path, const void *data, size_t size) {
  std::string temporary = temporarySibling(path);
  MEMFIT_RT_RETURN_IF_ERROR(writeFile(temporary, data, size));
  Status renamed = renameFile(temporary, path);
  if (!renamed)
    ::unlink(temporary.c_str());
  return renamed;
}

Status renameFile(const std::string &from, const std::string &to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    return invalidArgument(to + ": cannot rename " + from +
                           " into place: " + systemError());
  return Status::ok();
}

DurableFileWriter::DurableFileWriter(std::string path)
    : path_(std::move(path)) {}

DurableFileWriter::~DurableFileWriter() { abandon(); }

void DurableFileWriter::abandon() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  if (!temporary_.empty())
    ::unlink(temporary_.c_str());
  temporary_.clear();
}

void removeStaleTemporaries(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  std::string prefix =
      (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp-";
  DIR *dir = ::opendir(directory.c_str());
  if (!dir)
    return;
  std::vector<std::string> stale;
  while (struct dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    // "<pid>-<counter>", both decimal.
    std::string rest = name.substr(prefix.size());
    size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || dash > 9 ||
        dash + 1 == rest.size() ||
        rest.find_first_not_of("0123456789", 0) != dash ||
        rest.find_first_not_of("0123456789", dash + 1) != std::string::npos)
      continue;
    pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH))
      stale.push_back(directory + "/" + name);
  }
  ::closedir(dir);
  for (const std::string &file : stale)
    if (::unlink(file.c_str()) != 0 && errno == EISDIR)
      removeDirectoryAndFiles(file); // a temporary directory of files
}

Status DurableFileWriter::open() {
  abandon();
  removeStaleTemporaries(path_);
  std::string temporary = temporarySibling(path_);
  fd_ = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
               0644);
  if (fd_ < 0)
    return invalidArgument(path_ + ": cannot create " + temporary + ": " +
                           systemError());
  temporary_ = temporary;
  return Status::ok();
}

Status DurableFileWriter::append(const void *data, size_t size) {
  if (fd_ < 0)
    return internalError(path_ + ": append to a file that is not open");
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      Status status = invalidArgument(path_ + ": cannot write " + temporary_ +
                                      ": " + systemError());
      abandon();
      return status;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status DurableFileWriter::commit() {
  if (fd_ < 0)
    return internalError(path_ + ": commit of a file that is not open");
  auto failed = [&](const char *what) {
    Status status = invalidArgument(path_ + ": cannot " + what + " " +
                                    temporary_ + ": " + systemError());
    abandon();
    return status;
  };
  if (::fsync(fd_) != 0)
    return failed("flush");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0)
    return failed("close");
  if (::rename(temporary_.c_str(), path_.c_str()) != 0)
    return failed("rename into place");
  temporary_.clear();
  // The rename is durable once the directory is.
  size_t slash = path_.rfind('/');
  std::string directory = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path_.substr(0, slash);
  int dirFd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0 || ::fsync(dirFd) != 0) {
    std::string message =
        path_ + ": written, but cannot flush its directory: " + systemError();
    if (dirFd >= 0)
      ::close(dirFd);
    return invalidArgument(message);
  }
  ::close(dirFd);
  return Status::ok();
}

Status makeDirectories(const std::string &path) {
  if (path.empty())
    return invalidArgument("empty directory name");
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (prefix.empty() || prefix == "/")
      continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return invalidArgument(prefix +
                             ": cannot create directory: " + systemError());
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return invalidArgument(path + ": not a directory");
  return Status::ok();
}

StatusOr<std::string> makeTemporaryDirectory(const std::string &prefix) {
  const char *tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string pattern = base + "/" + prefix + "XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data()))
    return invalidArgument(
        pattern + ": cannot create a temporary directory: " + systemError());
  return std::string(buffer.data());
}

void removeDirectoryAndFiles(const std::string &path) {
  if (DIR *dir = ::opendir(path.c_str())) {
    while (struct dirent *entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        ::unlink((path + "/" + name).c_str());
    }
    ::closedir(dir);
  }
  ::rmdir(path.c_str());
}

bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace memfit::rt
