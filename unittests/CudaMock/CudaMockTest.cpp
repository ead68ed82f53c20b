//===- CudaMockTest.cpp - the CUDA backend against fake libraries ---------===//
//
// Usage: memfit-cuda-mock-test [scratch-directory]
//
// Runs the CUDA backend's logic on a machine without a GPU, against the
// FAKE libcuda.so.1 and libcublasLt.so.13 built next to it (MockCuda.h says
// what they check and what they cannot prove). The executable links both
// fakes and finds them through its build RUNPATH, so the backend's
// dlopen("libcuda.so.1") and dlopen("libcublasLt.so.13") return them; no
// other program sees them. NVRTC is the real one: kernels are compiled for
// the fake devices' architectures and loaded (but not run) by the fake
// driver.
//
// This file: main, the shared helpers, device selection and memory. Prints
// "memfit-cuda-mock-test: N checks passed" and exits 0, or lists the failed
// checks and exits 1.
//
//===----------------------------------------------------------------------===//

#include "CudaMockTest.h"

#include "Files.h"

#include "memfit/runtime/Nvrtc.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace memfit::rt::test {

std::unique_ptr<Backend> openBackend(const SessionOptions &options) {
  StatusOr<std::unique_ptr<Backend>> backend = createCudaBackend(options);
  if (!CHECK_OK(backend.status()))
    return nullptr;
  return std::move(*backend);
}

void expectNoViolations(const char *where) {
  for (const std::string &violation : mockcuda::takeViolations())
    check(false, __FILE__, __LINE__,
          std::string(where) + ": the fakes saw: " + violation);
}

void expectClean(const char *where) {
  expectNoViolations(where);
  mockcuda::Live cuda = mockcuda::live();
  mockcublaslt::Live lt = mockcublaslt::live();
  check(cuda.contextRefs == 0 && cuda.allocations == 0 && cuda.modules == 0 &&
            cuda.streams == 0 && cuda.graphs == 0 && cuda.graphExecs == 0 &&
            cuda.events == 0,
        __FILE__, __LINE__,
        std::string(where) +
            ": driver objects left alive: " + std::to_string(cuda.contextRefs) +
            " context retains, " + std::to_string(cuda.allocations) +
            " allocations, " + std::to_string(cuda.modules) + " modules, " +
            std::to_string(cuda.streams) + " streams, " +
            std::to_string(cuda.graphs) + " graphs, " +
            std::to_string(cuda.graphExecs) + " executable graphs, " +
            std::to_string(cuda.events) + " events");
  check(lt.handles == 0 && lt.descs == 0 && lt.layouts == 0 &&
            lt.preferences == 0,
        __FILE__, __LINE__,
        std::string(where) +
            ": cuBLASLt objects left alive: " + std::to_string(lt.handles) +
            " handles, " + std::to_string(lt.descs) + " matmul descriptors, " +
            std::to_string(lt.layouts) + " layouts, " +
            std::to_string(lt.preferences) + " preferences");
  check(mocknccl::liveComms() == 0, __FILE__, __LINE__,
        std::string(where) + ": NCCL communicators left alive: " +
            std::to_string(mocknccl::liveComms()));
  mockcuda::reset();
  mockcublaslt::reset();
  mocknccl::reset();
}

bool hasEvent(const std::vector<std::string> &events,
              const std::string &prefix) {
  for (const std::string &event : events)
    if (event.compare(0, prefix.size(), prefix) == 0)
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Device selection
//===----------------------------------------------------------------------===//

/// createCudaBackend's error, checked to be of `code`.
static Status createError(const SessionOptions &options, StatusCode code) {
  StatusOr<std::unique_ptr<Backend>> backend = createCudaBackend(options);
  CHECK(!backend.isOk());
  CHECK(backend.status().code() == code);
  return backend.status();
}

void runDeviceTests() {
  SessionOptions options;
  options.disableCache = true;

  // The default fake: two devices; device 0 unless asked.
  {
    std::unique_ptr<Backend> backend = openBackend(options);
    if (backend)
      CHECK(backend->description() == "Mock GPU A (sm_80, driver 13.0)");
    CHECK(mockcuda::live().contextRefs == 1 && mockcuda::live().streams == 1);
    std::vector<std::string> events = mockcuda::takeEvents();
    CHECK(hasEvent(events, "cuDevicePrimaryCtxRetain 0"));
  }
  expectClean("default device");

  options.cudaDevice = 1;
  mockcuda::setDriverVersion(12080);
  if (std::unique_ptr<Backend> backend = openBackend(options))
    CHECK(backend->description() == "Mock GPU B (sm_90, driver 12.8)");
  CHECK(hasEvent(mockcuda::takeEvents(), "cuDevicePrimaryCtxRetain 1"));
  expectClean("device 1");

  // Ordinals outside the system's devices.
  options.cudaDevice = 2;
  CHECK_ERROR(createError(options, StatusCode::InvalidArgument),
              "CUDA device 2 is out of range: the system has 2 CUDA devices");
  options.cudaDevice = -1;
  CHECK_ERROR(createError(options, StatusCode::InvalidArgument),
              "CUDA device -1 is out of range");
  mockcuda::setDevices({{"Only GPU", 8, 6}});
  options.cudaDevice = 1;
  CHECK_ERROR(createError(options, StatusCode::InvalidArgument),
              "the system has 1 CUDA device");
  options.cudaDevice = 0;
  if (std::unique_ptr<Backend> backend = openBackend(options))
    CHECK(backend->description() == "Only GPU (sm_86, driver 13.0)");
  // A launch's local rank 3 where the launcher shows each rank one
  // device: that one.
  options.cudaDevice = 3;
  options.cudaDeviceByRank = true;
  if (std::unique_ptr<Backend> backend = openBackend(options))
    CHECK(backend->description() == "Only GPU (sm_86, driver 13.0)");
  options.cudaDeviceByRank = false;
  options.cudaDevice = 0;
  expectClean("ordinals");

  // No device: cuInit says so, or there are none to count.
  std::string why;
  mockcuda::failNext("cuInit", 100);
  CHECK(!cudaUsable(&why));
  CHECK(why == "no CUDA device (cuInit failed: CUDA_ERROR_NO_DEVICE (100): no "
               "CUDA-capable device is detected)");
  mockcuda::failNext("cuInit", 100);
  CHECK_ERROR(createError(options, StatusCode::Unavailable),
              "no CUDA device (cuInit failed: CUDA_ERROR_NO_DEVICE (100)");
  mockcuda::setDevices({});
  CHECK(!cudaUsable(&why) && why == "no CUDA device");
  CHECK(createError(options, StatusCode::Unavailable).message() ==
        "no CUDA device");
  expectClean("no device");

  // A driver that does not initialize: the message names the driver file.
  mockcuda::failNext("cuInit", 999);
  Status status = createError(options, StatusCode::Unavailable);
  CHECK_ERROR(status, "CUDA driver ");
  CHECK_ERROR(status, "libcuda.so.1: cuInit failed: CUDA_ERROR_UNKNOWN (999): "
                      "unknown error");
  // The toolkit's stub answers nothing, not even cuGetErrorName.
  mockcuda::failNext("cuInit", 34);
  mockcuda::failNext("cuGetErrorName", 34, -1);
  mockcuda::failNext("cuGetErrorString", 34, -1);
  CHECK_ERROR(createError(options, StatusCode::Unavailable),
              "cuInit failed: CUDA_ERROR_STUB_LIBRARY (34): the CUDA driver "
              "library is the toolkit's stub, not a driver");
  expectClean("driver errors");
  // A code the driver has no name for.
  mockcuda::failNext("cuInit", 12345);
  CHECK_ERROR(createError(options, StatusCode::Unavailable),
              "cuInit failed: CUDA_ERROR_UNKNOWN (12345): unknown error");
  expectClean("unnamed error");

  // Failures while opening the device release what was taken.
  mockcuda::failNext("cuDevicePrimaryCtxRetain", 46);
  CHECK_ERROR(createError(options, StatusCode::Unavailable),
              "Mock GPU A (device 0): cuDevicePrimaryCtxRetain failed: "
              "CUDA_ERROR_DEVICE_UNAVAILABLE (46)");
  expectClean("context retain fails");
  mockcuda::failNext("cuStreamCreate", 2);
  CHECK_ERROR(createError(options, StatusCode::ResourceExhausted),
              "cuStreamCreate failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
  std::vector<std::string> events = mockcuda::takeEvents();
  CHECK(!events.empty() && events.back() == "cuDevicePrimaryCtxRelease_v2 0");
  expectClean("stream creation fails");
  mockcuda::failNext("cuDeviceGetAttribute", 1);
  CHECK_ERROR(createError(options, StatusCode::Internal),
              "cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_VALUE (1)");
  expectClean("attribute query fails");
}

//===----------------------------------------------------------------------===//
// The allocation and copies
//===----------------------------------------------------------------------===//

void runMemoryTests() {
  SessionOptions options;
  options.disableCache = true;
  std::unique_ptr<Backend> backend = openBackend(options);
  if (!backend)
    return;

  // A plan larger than the free memory fails before cuMemAlloc.
  Status status = backend->allocate(3ull << 30);
  CHECK(status.code() == StatusCode::ResourceExhausted);
  CHECK_ERROR(status, "the executable needs 3,221,225,472 bytes (3.00 GiB) "
                      "of device memory but Mock GPU A (device 0) has "
                      "1,073,741,824 bytes (1.00 GiB) free of "
                      "17,179,869,184 bytes (16.00 GiB)");
  CHECK(mockcuda::calls("cuMemAlloc_v2") == 0);
  // cuMemAlloc may still fail (fragmentation, another process); the
  // backend can try again.
  mockcuda::failNext("cuMemAlloc_v2", 2);
  status = backend->allocate(1 << 20);
  CHECK(status.code() == StatusCode::ResourceExhausted);
  CHECK_ERROR(status, "the executable needs 1,048,576 bytes (1.00 MiB) of "
                      "device memory but Mock GPU A (device 0) has");
  CHECK_ERROR(status, ": cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out "
                      "of memory");
  CHECK(backend->allocatedBytes() == 0 && mockcuda::live().allocations == 0);

  const uint64_t total = (4 << 20) + 100;
  if (!CHECK_OK(backend->allocate(total)))
    return;
  CHECK(backend->allocatedBytes() == total);
  CHECK(mockcuda::live().allocations == 1 &&
        mockcuda::live().allocatedBytes == total);
  CHECK_ERROR(backend->allocate(16),
              "the CUDA backend makes one allocation, and it was made");

  // Zeroed (the fake's fresh memory is 0xAB bytes).
  {
    std::vector<uint8_t> all(total, 1);
    CHECK_OK(backend->download(0, all.data(), total));
    bool zero = true;
    for (uint8_t byte : all)
      zero &= byte == 0;
    CHECK(zero);
  }
  // A round trip at odd offsets; each copy waits for the stream first.
  {
    std::vector<uint8_t> data(300);
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = uint8_t(i * 7 + 1);
    int syncs = mockcuda::calls("cuStreamSynchronize");
    CHECK_OK(backend->upload(1001, data.data(), data.size()));
    std::vector<uint8_t> back(302, 0xff);
    CHECK_OK(backend->download(1000, back.data(), back.size()));
    CHECK(mockcuda::calls("cuStreamSynchronize") == syncs + 2);
    CHECK(back.front() == 0 && back.back() == 0 &&
          std::equal(data.begin(), data.end(), back.begin() + 1));
  }
  // The last bytes, and empty copies at the very end.
  {
    uint8_t tail[4] = {1, 2, 3, 4}, got[4] = {};
    CHECK_OK(backend->upload(total - 4, tail, 4));
    CHECK_OK(backend->download(total - 4, got, 4));
    CHECK(std::memcmp(tail, got, 4) == 0);
    CHECK_OK(backend->upload(total, tail, 0));
  }
  // Ranges outside the allocation fail without a driver call.
  {
    int copies =
        mockcuda::calls("cuMemcpyHtoD_v2") + mockcuda::calls("cuMemcpyDtoH_v2");
    uint8_t buffer[100] = {};
    CHECK_ERROR(backend->upload(total - 10, buffer, 11),
                "upload of 11 bytes at offset 4194394 is outside the "
                "allocation of 4194404 bytes");
    CHECK_ERROR(backend->download(total + 1, buffer, 0),
                "download of 0 bytes at offset 4194405 is outside");
    CHECK_ERROR(backend->download(UINT64_MAX - 5, buffer, 100),
                "is outside the allocation");
    CHECK_ERROR(backend->upload(5, buffer, UINT64_MAX - 2),
                "is outside the allocation");
    CHECK(mockcuda::calls("cuMemcpyHtoD_v2") +
              mockcuda::calls("cuMemcpyDtoH_v2") ==
          copies);
  }
  // Driver errors are reported with the call.
  {
    uint8_t buffer[8] = {};
    mockcuda::failNext("cuMemcpyDtoH_v2", 700);
    status = backend->download(0, buffer, 8);
    CHECK(status.code() == StatusCode::Internal);
    CHECK_ERROR(status, "cuMemcpyDtoH failed: CUDA_ERROR_ILLEGAL_ADDRESS "
                        "(700): an illegal memory access was encountered");
    mockcuda::failNext("cuStreamSynchronize", 700);
    CHECK_ERROR(backend->upload(0, buffer, 8),
                "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS "
                "(700): an illegal memory access was encountered (a fault "
                "of an earlier kernel or contraction; run with "
                "CUDA_LAUNCH_BLOCKING=1 to find which)");
  }
  backend.reset();
  CHECK(hasEvent(mockcuda::takeEvents(), "cuMemFree_v2 0x"));
  expectClean("memory");

  // An empty plan makes no allocation, and still only one.
  backend = openBackend(options);
  if (!backend)
    return;
  CHECK_OK(backend->allocate(0));
  CHECK(mockcuda::calls("cuMemAlloc_v2") == 0 &&
        backend->allocatedBytes() == 0);
  CHECK_OK(backend->upload(0, nullptr, 0));
  uint8_t byte = 0;
  CHECK_ERROR(backend->download(0, &byte, 1), "outside the allocation of 0");
  CHECK_ERROR(backend->allocate(1), "it was made");
  backend.reset();
  expectClean("empty plan");
}

} // namespace memfit::rt::test

/// Checks that the backend reaches the fakes (and NVRTC), never a real
/// driver.
bool setUpFakes() {
  using namespace memfit::rt;
  // Where the fakes were loaded from: next to this executable's build, by
  // its RUNPATH, never from the system's library path.
  Dl_info fake{};
  if (!dladdr(reinterpret_cast<void *>(&mockcuda::reset), &fake) ||
      !fake.dli_fname) {
    std::fprintf(stderr, "memfit-cuda-mock-test: cannot locate the fake "
                         "libcuda.so.1\n");
    return false;
  }
  std::printf("fake libcuda: %s\n", fake.dli_fname);
  // The backend must reach the fake driver, never a real one.
  mockcuda::reset();
  std::string why;
  if (!cudaUsable(&why) || mockcuda::calls("cuInit") != 1) {
    std::fprintf(stderr,
                 "memfit-cuda-mock-test: the CUDA backend did not load the "
                 "fake driver (%s)\n",
                 why.c_str());
    return false;
  }
  if (!nvrtcAvailable(&why)) {
    std::fprintf(stderr, "memfit-cuda-mock-test: NVRTC is needed: %s\n",
                 why.c_str());
    return false;
  }
  mockcuda::reset();
  mockcublaslt::reset();
  return true;
}

int main(int argc, char **argv) {
  namespace test = memfit::rt::test;
  return test::runTestProgram("memfit-cuda-mock-test", argc, argv, setUpFakes,
                              [] {
                                test::runDeviceTests();
                                test::runMemoryTests();
                                test::runKernelTests();
                                test::runContractionTests();
                                test::runCudaSessionTests();
                                test::runCudaGraphTests();
                                test::runCudaHostTaskTests();
                                test::runCudaEpilogueTests();
                              });
}
