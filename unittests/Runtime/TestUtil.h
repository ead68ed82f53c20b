//===- TestUtil.h - a tiny check framework for the runtime tests

#ifndef MEMFIT_RUNTIME_TEST_TESTUTIL_H
#define MEMFIT_RUNTIME_TEST_TESTUTIL_H

#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Status.h"

#include <cstdio>
#include <memory>
#include <string>

namespace memfit::rt {
struct Executable;
class Session;
} // namespace memfit::rt

namespace memfit::rt::test {

/// Counts checks and failures; a failure prints its location and goes on.
struct Counters {
  int checks = 0;
  int failures = 0;
};
Counters &counters();

inline bool check(bool ok, const char *file, int line,
                  const std::string &what) {
  ++counters().checks;
  if (!ok) {
    ++counters().failures;
    std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what.c_str());
  }
  return ok;
}

inline bool checkOk(const Status &status, const char *file, int line,
                    const char *expr) {
  return check(status.isOk(), file, line,
               std::string(expr) + " returned: " + status.message());
}

inline bool checkError(const Status &status, const std::string &needle,
                       const char *file, int line, const char *expr) {
  if (status.isOk())
    return check(false, file, line,
                 std::string(expr) +
                     " succeeded, expected an error containing '" + needle +
                     "'");
  return check(status.message().find(needle) != std::string::npos, file, line,
               std::string(expr) + ": error '" + status.message() +
                   "' does not contain '" + needle + "'");
}

/// An f32 buffer of `shape` at `offset` of `region`.
inline Buffer f32(const char *name, Region region, uint64_t offset,
                  std::vector<int64_t> shape) {
  uint64_t elements = 1;
  for (int64_t d : shape)
    elements *= uint64_t(d);
  return Buffer{name, region, offset, elements * 4, DType::f32, shape};
}

/// A kernel of a 1-D grid of 1-D blocks.
inline Kernel kernel(const std::string &name, uint32_t grid, uint32_t block,
                     bool barriers) {
  Kernel k;
  k.name = name;
  k.grid = {grid, 1, 1};
  k.block = {block, 1, 1};
  k.usesBarriers = barriers;
  return k;
}

/// A directory the tests may write into (created by main).
const std::string &scratchDirectory();

/// The main() of a test program (TestDriver.cpp): makes the scratch
/// directory (argv[1], or a temporary one removed after a clean run), runs
/// `setUp` (when given; false ends the program) and `tests`, and prints
/// "<tool>: N checks passed" (exit 0) or the number that failed (exit 1).
int runTestProgram(const char *tool, int argc, char **argv, bool (*setUp)(),
                   void (*tests)());

void runBytesTests();
void runJsonTests();
void runManifestTests();
void runTensorTests();
void runHostBackendTests();
void runEpilogueTests();
void runHostTasksTests();
void runHostKernelsTests();
void runSessionTests();
void runIndexErrorTests();
void runTrainingTests();
void runTrainingDataTests();
void runCommunicatorTests();
void runRooflineTests();
void runReshardTests();

/// A hand-written training executable (TrainingTest.cpp): parameter w [4]
/// starting at {1, 2, 3, 4}, input x [4], loss 0.5 * |w - x|^2, momentum
/// SGD; "train_step", or "accumulate" + "apply" for k = 2.
Executable trainingExecutable(bool accumulateApply);
/// A host session of `e` (one thread, the scratch kernel cache), or null
/// after a failed check.
std::unique_ptr<Session> openTrainingSession(const Executable &e);

} // namespace memfit::rt::test

#define CHECK(cond) ::memfit::rt::test::check((cond), __FILE__, __LINE__, #cond)
#define CHECK_OK(expr)                                                         \
  ::memfit::rt::test::checkOk((expr), __FILE__, __LINE__, #expr)
/// `expr` is a Status (or status()) whose message contains `needle`.
#define CHECK_ERROR(expr, needle)                                              \
  ::memfit::rt::test::checkError((expr), (needle), __FILE__, __LINE__, #expr)

#endif // MEMFIT_RUNTIME_TEST_TESTUTIL_H
