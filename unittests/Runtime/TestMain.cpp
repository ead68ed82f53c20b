//===- TestMain.cpp - memfit-runtime-test's main --------------------------===//
//
// Usage: memfit-runtime-test [scratch-directory]
// Prints "memfit-runtime-test: N checks passed" and exits 0, or lists the
// failed checks and exits 1.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

int main(int argc, char **argv) {
  namespace test = memfit::rt::test;
  return test::runTestProgram("memfit-runtime-test", argc, argv, nullptr, [] {
    test::runBytesTests();
    test::runJsonTests();
    test::runManifestTests();
    test::runRooflineTests();
    test::runReshardTests();
    test::runTensorTests();
    test::runHostBackendTests();
    test::runHostKernelsTests();
    test::runSessionTests();
    test::runEpilogueTests();
    test::runHostTasksTests();
    test::runIndexErrorTests();
    test::runTrainingTests();
    test::runTrainingDataTests();
    test::runCommunicatorTests();
  });
}
