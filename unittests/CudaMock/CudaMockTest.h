//===- CudaMockTest.h - the CUDA backend against fake libraries -*- C++ -*-===//
//
// Shared helpers of memfit-cuda-mock-test, which drives the CUDA backend
// (runtime/src/CudaBackend.cpp) against the FAKE libcuda.so.1 and
// libcublasLt.so.13 of this directory (see MockCuda.h for what they do and
// do not prove). The checks use the runtime tests' CHECK macros.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_TEST_CUDA_MOCK_CUDAMOCKTEST_H
#define MEMFIT_RUNTIME_TEST_CUDA_MOCK_CUDAMOCKTEST_H

#include "Backend.h"
#include "MockCuda.h"
#include "TestUtil.h"

#include <memory>
#include <string>

namespace memfit::rt::test {

/// createCudaBackend, with a failed check (and nullptr) on error.
std::unique_ptr<Backend> openBackend(const SessionOptions &options);

/// Checks that the fakes saw no breach of their rules since the last call.
void expectNoViolations(const char *where);
/// Checks that no CUDA or cuBLASLt object is left alive (after a backend is
/// destroyed) and that there were no violations; resets both fakes.
void expectClean(const char *where);

/// Whether `events` (mockcuda::takeEvents) has one starting with `prefix`.
bool hasEvent(const std::vector<std::string> &events,
              const std::string &prefix);

/// CUDA source with the kernels "twice" (y[i] = 2 x[i] for i < n[0]),
/// "reverse", "noop" and "cxx_linkage"; see KernelTest.cpp.
extern const char *const kTestKernels;
/// A manifest kernel of one dimension.
Kernel testKernel(const char *name, uint32_t grid, uint32_t block,
                  uint32_t sharedBytes);
/// Registers the host emulation of "twice", through the fake's memory.
void emulateTwice();
/// Weights w [3, 4] f32 at 0 and count [1] i64 (8) at 256; arena x [2, 3]
/// (input) at 0, h [2, 4] at 256, y [2, 4] (output) at 512.
///   h = x @ w;  y = twice(h)
Executable sessionExecutable();

void runDeviceTests();
void runMemoryTests();
void runKernelTests();
void runContractionTests();
void runCudaSessionTests();
void runCudaGraphTests();
void runCudaHostTaskTests();
void runCudaEpilogueTests();

} // namespace memfit::rt::test

#endif // MEMFIT_RUNTIME_TEST_CUDA_MOCK_CUDAMOCKTEST_H
