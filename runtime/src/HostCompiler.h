//===- HostCompiler.h - running the host C++ compiler (internal) -*- C++ -*-===//
//
// What the host backend needs to run the host C++ compiler: a command line
// split into words, a child process with its output captured, and the
// compiler's version (part of every cache key).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_HOSTCOMPILER_H
#define MEMFIT_RUNTIME_SRC_HOSTCOMPILER_H

#include "memfit/runtime/Status.h"

#include <string>
#include <vector>

namespace memfit::rt {

/// `command` split at blanks (no quoting: a compiler command such as
/// "ccache g++" or "clang++ -stdlib=libc++").
std::vector<std::string> splitWords(const std::string &command);
std::string joinWords(const std::vector<std::string> &words);

struct ProcessResult {
  int exitCode = 0;
  std::string output; // stdout and stderr together
};

/// Runs `argv` with stdin from /dev/null and stdout and stderr captured.
StatusOr<ProcessResult> runProcess(const std::vector<std::string> &argv);

/// The first line of `<compiler> --version`, remembered per command.
StatusOr<std::string> compilerVersion(const std::vector<std::string> &compiler);

/// The first `count` lines of `text`, with "[...]" when there are more.
std::string firstLines(const std::string &text, size_t count);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_HOSTCOMPILER_H
