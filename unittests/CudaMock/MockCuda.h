//===- MockCuda.h - controls of the fake CUDA libraries ---------*- C++ -*-===//
//
// FAKES FOR TESTING ONLY. FakeCuda.cpp builds a fake libcuda.so.1 and
// FakeCublasLt.cpp a fake libcublasLt.so.13; memfit-cuda-mock-test links
// both (and finds them through its build RUNPATH), so when the CUDA backend
// dlopens "libcuda.so.1" and "libcublasLt.so.13" the loader hands it the
// fakes already loaded under those sonames. No other program loads them.
//
// The fakes let the backend's own logic run without a GPU: device selection
// and its errors, the one allocation and the copies, NVRTC's CUBIN loaded
// and its kernels resolved by name, launch parameters, contractions mapped
// onto cuBLASLt's column-major API, error paths and teardown. They check the
// rules the real libraries impose (a current context, addresses inside live
// allocations, the CUBIN's architecture, shared memory limits, matching
// matmul shapes, the alignment promised to cuBLASLt, ...) and report every
// breach as a violation.
//
// They do NOT prove that the real driver or cuBLASLt behave the same way:
// no GPU code runs (kernels are recorded, and "run" only by host functions
// the test registers), everything is synchronous, only the calls memfit
// makes are implemented, and error codes come from the test's injections.
// Only a run on a real GPU (memfit-run --device=cuda) checks that.
//
// This header is the fakes' test-control API: plain C++ functions exported
// by the fake libraries next to the CUDA entry points.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_TEST_CUDA_MOCK_MOCKCUDA_H
#define MEMFIT_RUNTIME_TEST_CUDA_MOCK_MOCKCUDA_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mockcuda {

/// A device of the fake driver.
struct DeviceSpec {
  std::string name;
  int major = 8, minor = 0; // compute capability
};

/// Back to the default configuration: two devices, "Mock GPU A" (sm_80) and
/// "Mock GPU B" (sm_90), driver 13.0, 1 GiB free of 16 GiB, no injected
/// failures, no kernel emulations; clears calls, events, launches and
/// violations. Live objects (contexts, memory, ...) are kept.
void reset();
void setDevices(const std::vector<DeviceSpec> &devices);
void setDriverVersion(int version); // 1000 * major + 10 * minor
/// What cuMemGetInfo reports (free shrinks by what is allocated).
void setMemory(uint64_t freeBytes, uint64_t totalBytes);

/// The next `times` calls of `entryPoint` (such as "cuInit" or
/// "cuMemAlloc_v2", the exported name) return `result` and do nothing;
/// times < 0: every call until reset().
void failNext(const std::string &entryPoint, int result, int times = 1);
/// Calls of `entryPoint` since reset().
int calls(const std::string &entryPoint);

/// The calls that created, destroyed or ran something, in order, one line
/// each ("cuMemAlloc_v2 1024 -> 0x300000000000", "cublasLtDestroy", ...),
/// from both fakes; returns them and clears the list.
std::vector<std::string> takeEvents();
/// Breaches of the libraries' rules seen so far (a call without a current
/// context, an address outside every allocation, an object leaked when its
/// context went away, ...); returns them and clears the list.
std::vector<std::string> takeViolations();

/// Objects alive now.
struct Live {
  int contextRefs = 0; // primary context retains, over all devices
  int allocations = 0;
  uint64_t allocatedBytes = 0;
  int modules = 0;
  int streams = 0;
  int graphs = 0, graphExecs = 0; // cuStreamEndCapture's, instantiated ones
  int events = 0;
};
Live live();

/// Address of the live allocation made last (0 if none).
uint64_t lastAllocation();
/// Host memory behind [address, address + bytes) when that range lies in
/// one live allocation; otherwise nullptr, and a violation is recorded.
void *hostRange(uint64_t address, uint64_t bytes, const char *who);

/// A recorded cuLaunchKernel.
struct Launch {
  std::string kernel;
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  unsigned sharedBytes = 0;
  void *stream = nullptr;
  /// The parameter values, each zero-extended (the CUBIN gives the sizes).
  std::vector<uint64_t> params;
};
/// Launches since reset().
const std::vector<Launch> &launches();
/// Runs `body` on the host for each later launch of `kernel`, after the
/// checks, as the kernel's effect on device memory (use hostRange).
void emulateKernel(const std::string &kernel,
                   std::function<void(const Launch &)> body);
/// Why the last cuModuleLoadData failed ("" after a success).
std::string lastLoadError();
/// The dynamic shared memory limit set on `kernel` of the loaded modules
/// with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (-1: never set).
int maxDynamicSharedSet(const std::string &kernel);

/// Nodes of the graph cuGraphLaunch ran last (kernels and matmuls).
int lastGraphNodes();

/// How far each kernel and each cuBLASLt matmul advances the fake clock
/// that events record (0 ms each until set; reset() leaves them).
void setDurations(double kernelMs, double matmulMs);

// For the other fakes (FakeCublasLt.cpp, FakeCudaGraph.cpp).
bool contextCurrent();          // a retained context is current
bool streamValid(void *stream); // a live stream of the current context
void recordEvent(const std::string &event);
void recordViolation(const std::string &violation);
/// Counts a call of the driver's `entry` and returns the failure injected
/// for it (0: none).
int enterDriver(const char *entry);
/// Pinned host memory (FakeCudaHost.cpp): an allocation that the fake's
/// device addresses reach, not counted as device memory. mapPinned returns
/// its device address and sets its host bytes; pinnedAddress finds it by
/// those (0: none); unmapPinned frees it (false: not pinned memory).
uint64_t mapPinned(uint64_t bytes, unsigned char **host);
uint64_t pinnedAddress(void *host);
bool unmapPinned(void *host);
/// Does `work` (what a kernel or matmul does to memory, and its records)
/// now, or, while `stream` is capturing, adds it to the graph being
/// captured: cuGraphLaunch does it then, at each launch.
void submit(void *stream, std::function<void()> work);
/// Whether `stream` is capturing; `capturingAny`: whether any stream is.
bool capturing(void *stream);
bool capturingAny();
/// Ends every capture in error, as an operation the capture forbids does.
void invalidateCaptures();
/// Drops `stream`'s capture and what it recorded.
void endCapture(void *stream);
/// Adds the graphs alive to `live`.
void countGraphs(Live &live);
/// Adds the events alive to `live`.
void countEvents(Live &live);
/// Advances the fake clock by a kernel's (or a matmul's) duration: called
/// where the work is done.
void workDone(bool matmul);

} // namespace mockcuda

namespace mockcublaslt {

/// Clears injected failures, calls and the no-algorithm switch.
void reset();
/// As mockcuda::failNext, for cuBLASLt entry points; result is a
/// cublasStatus_t.
void failNext(const std::string &entryPoint, int result, int times = 1);
int calls(const std::string &entryPoint);
/// cublasLtMatmulAlgoGetHeuristic succeeds but finds no algorithm.
void setNoAlgorithm(bool none);
/// ... and finds none for a descriptor with an epilogue.
void setNoEpilogue(bool none);

struct Live {
  int handles = 0, descs = 0, layouts = 0, preferences = 0;
};
Live live();

/// The operands of a recorded cublasLtMatmul, as cuBLASLt sees them.
struct Operand {
  uint64_t address = 0;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, batchStride = 0;
};
struct Matmul {
  int dataType = 0, computeType = 0, scaleType = 0;
  int transA = 0, transB = 0;
  int batchCount = 1;
  double alpha = 0, beta = 0;
  Operand a, b, c, d;
  uint32_t alignment[4] = {0, 0, 0, 0}; // promised for A, B, C, D
  uint64_t workspace = 0, workspaceBytes = 0; // what the algorithm used
  uint32_t epilogue = 1;                      // CUBLASLT_EPILOGUE_DEFAULT
  uint64_t biasPointer = 0, auxPointer = 0;
};
/// Matmuls since reset().
const std::vector<Matmul> &matmuls();

} // namespace mockcublaslt

namespace mocknccl {

/// Clears injected failures and calls (live communicators are kept).
void reset();
/// As mockcuda::failNext, for NCCL's entry points; result is an
/// ncclResult_t.
void failNext(const std::string &entry, int result, int times = 1);
int calls(const std::string &entry);
int liveComms();

} // namespace mocknccl

#endif // MEMFIT_RUNTIME_TEST_CUDA_MOCK_MOCKCUDA_H
