//===- HostCompiler.cpp - running the host C++ compiler --------------------===//

#include "HostCompiler.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace memfit::rt {

std::vector<std::string> splitWords(const std::string &command) {
  std::vector<std::string> words;
  std::string word;
  for (char c : command) {
    if (c == ' ' || c == '\t' || c == '\n') {
      if (!word.empty())
        words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty())
    words.push_back(word);
  return words;
}

std::string joinWords(const std::vector<std::string> &words) {
  std::string s;
  for (const std::string &w : words)
    s += (s.empty() ? "" : " ") + w;
  return s;
}

/// Runs `argv` with stdin from /dev/null and stdout and stderr captured.
StatusOr<ProcessResult> runProcess(const std::vector<std::string> &argv) {
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0)
    return internalError(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 2);

  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int spawned =
      posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipeFds[1]);
  if (spawned != 0) {
    ::close(pipeFds[0]);
    return unavailable("cannot run '" + argv[0] +
                       "': " + std::strerror(spawned));
  }
  ProcessResult result;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(pipeFds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    result.output.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipeFds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exitCode =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (result.exitCode == 127)
    return unavailable("cannot run '" + argv[0] + "': " + result.output);
  return result;
}

/// The first line of `<compiler> --version`, remembered per command.
StatusOr<std::string>
compilerVersion(const std::vector<std::string> &compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::string key = joinWords(compiler);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = versions.find(key);
    if (it != versions.end())
      return it->second;
  }
  std::vector<std::string> argv = compiler;
  argv.push_back("--version");
  StatusOr<ProcessResult> result = runProcess(argv);
  if (!result)
    return result.status();
  if (result->exitCode != 0)
    return unavailable("'" + key + " --version' failed: " + result->output);
  std::string version = result->output.substr(0, result->output.find('\n'));
  std::lock_guard<std::mutex> lock(mutex);
  versions[key] = version;
  return version;
}

std::string firstLines(const std::string &text, size_t count) {
  size_t pos = 0;
  for (size_t line = 0; line < count && pos != std::string::npos; ++line) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos)
      ++pos;
  }
  if (pos == std::string::npos || pos >= text.size())
    return text;
  return text.substr(0, pos) + "[...]\n";
}

} // namespace memfit::rt
