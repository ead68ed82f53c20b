//===- TestMain.cpp - memfit-runtime-test's main
//---------------------------===//
//
// Usage: memfit-runtime-test [scratch-directory]
// Prints "memfit-runtime-test: N checks passed" and exits 0, or lists the
// failed checks and exits 1.
//
//===----------------------------------------------------------------------===//

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

static int removeEntry(const char *path, const struct stat *, int,
                       struct FTW *) {
  return std::remove(path);
}
const std::string &scratchDirectory() { return scratch; }

} // namespace memfit::rt::test

int main(int argc, char **argv) {
  using namespace memfit::rt;
  bool temporary = argc < 2;
  if (temporary) {
    StatusOr<std::string> dir = makeTemporaryDirectory("memfit-runtime-test-");
    if (!dir) {
      std::fprintf(stderr, "memfit-runtime-test: %s\n",
                   dir.status().message().c_str());
      return 1;
    }
    test::scratch = *dir;
  } else {
    test::scratch = argv[1];
    Status made = makeDirectories(test::scratch);
    if (!made) {
      std::fprintf(stderr, "memfit-runtime-test: %s\n", made.message().c_str());
      return 1;
    }
  }

  // Temporaries of the host backend (such as the source it keeps when the
  // compiler fails) go to the scratch directory too.
  setenv("TMPDIR", test::scratch.c_str(), 1);

  test::runJsonTests();
  test::runManifestTests();
  test::runTensorTests();
  test::runHostBackendTests();
  test::runSessionTests();

  const test::Counters &c = test::counters();
  if (c.failures) {
    std::printf(
        "memfit-runtime-test: %d of %d checks failed (scratch files in %s)\n",
        c.failures, c.checks, test::scratch.c_str());
    return 1;
  }
  if (temporary)
    nftw(test::scratch.c_str(), test::removeEntry, 16, FTW_DEPTH | FTW_PHYS);
  std::printf("memfit-runtime-test: %d checks passed\n", c.checks);
  return 0;
}
