//===- TestDriver.cpp - the main() shared by the runtime test programs ----===//

#include "TestUtil.h"

#include "Files.h"

#include <cstdio>
#include <cstdlib>
#include <ftw.h>

namespace memfit::rt::test {

Counters &counters() {
  static Counters c;
  return c;
}

static std::string scratch;
const std::string &scratchDirectory() { return scratch; }

static int removeEntry(const char *path, const struct stat *, int,
                       struct FTW *) {
  return std::remove(path);
}

int runTestProgram(const char *tool, int argc, char **argv, bool (*setUp)(),
                   void (*tests)()) {
  bool temporary = argc < 2;
  if (temporary) {
    std::string prefix = std::string(tool) + "-";
    StatusOr<std::string> dir = makeTemporaryDirectory(prefix);
    if (!dir) {
      std::fprintf(stderr, "%s: %s\n", tool, dir.status().message().c_str());
      return 1;
    }
    scratch = *dir;
  } else {
    scratch = argv[1];
    Status made = makeDirectories(scratch);
    if (!made) {
      std::fprintf(stderr, "%s: %s\n", tool, made.message().c_str());
      return 1;
    }
  }
  // Temporaries of the backends (such as the source the host backend keeps
  // when the compiler fails) go to the scratch directory too.
  setenv("TMPDIR", scratch.c_str(), 1);

  if (setUp && !setUp())
    return 1;
  tests();

  const Counters &c = counters();
  if (c.failures) {
    std::printf("%s: %d of %d checks failed (scratch files in %s)\n", tool,
                c.failures, c.checks, scratch.c_str());
    return 1;
  }
  if (temporary)
    nftw(scratch.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
  std::printf("%s: %d checks passed\n", tool, c.checks);
  return 0;
}

} // namespace memfit::rt::test
