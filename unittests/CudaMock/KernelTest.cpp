//===- KernelTest.cpp - kernels and sessions on the fake driver -----------===//
//
// The CUDA backend's kernel path against the FAKE driver (MockCuda.h): the
// real NVRTC compiles the source for the fake device's architecture, the
// on-disk cache is hit, and a corrupt or foreign entry is compiled again;
// kernels are resolved by name in the CUBIN; launches carry the manifest's
// dimensions and shared memory and base + offset for each buffer; errors
// name the kernel; teardown happens in order. Then a whole Session on the
// fake device. The kernel "twice" is emulated on the host, so data flows
// through its parameters as on a GPU; the other kernels are only recorded.
//
//===----------------------------------------------------------------------===//

#include "CudaMockTest.h"

#include "Files.h"

#include "memfit/runtime/Nvrtc.h"
#include "memfit/runtime/Session.h"

#include <dirent.h>

#include <cmath>
#include <cstdio>
#include <cstring>

namespace memfit::rt::test {

const char *const kTestKernels = R"cuda(
// y[i] = 2 * x[i] for i < n[0].
extern "C" __global__ void twice(float* y, const float* x,
                                 const long long* n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n[0])
    y[i] = 2.0f * x[i];
}

// Reverses blockDim.x floats through dynamic shared memory.
extern "C" __global__ void reverse(float* y) {
  extern __shared__ float tile[];
  tile[threadIdx.x] = y[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

extern "C" __global__ void noop() {}

// C++ linkage: the CUBIN has its mangled name only.
__global__ void cxx_linkage(float* y) { y[0] = 1.0f; }
)cuda";

Kernel testKernel(const char *name, uint32_t grid, uint32_t block,
                  uint32_t sharedBytes) {
  Kernel k;
  k.name = name;
  k.grid = {grid, 1, 1};
  k.block = {block, 1, 1};
  k.sharedBytes = sharedBytes;
  return k;
}

void emulateTwice() {
  mockcuda::emulateKernel("twice", [](const mockcuda::Launch &launch) {
    if (launch.params.size() != 3)
      return;
    auto *n = static_cast<int64_t *>(
        mockcuda::hostRange(launch.params[2], 8, "twice: n"));
    if (!n)
      return;
    uint64_t bytes = uint64_t(*n) * 4;
    auto *y = static_cast<float *>(
        mockcuda::hostRange(launch.params[0], bytes, "twice: y"));
    auto *x = static_cast<float *>(
        mockcuda::hostRange(launch.params[1], bytes, "twice: x"));
    if (!y || !x)
      return;
    uint64_t threads = uint64_t(launch.grid[0]) * launch.block[0];
    for (int64_t i = 0; i < *n && uint64_t(i) < threads; ++i)
      y[i] = 2.0f * x[i];
  });
}

namespace {

/// The files of `directory`, without "." and "..".
std::vector<std::string> listFiles(const std::string &directory) {
  std::vector<std::string> names;
  if (DIR *dir = opendir(directory.c_str())) {
    while (struct dirent *entry = readdir(dir))
      if (entry->d_name[0] != '.')
        names.push_back(entry->d_name);
    closedir(dir);
  }
  return names;
}

bool isElf(const std::string &path) {
  StatusOr<std::string> bytes = readFile(path);
  return bytes && bytes->compare(0, 4, "\177ELF") == 0;
}

/// Prepares `manifest` and checks whether it came from the cache.
void prepare(Backend &backend, const Manifest &manifest,
             const SessionOptions &options, bool expectHit) {
  SessionTimings timings;
  if (!CHECK_OK(backend.prepareKernels(manifest, options, timings)))
    return;
  CHECK(timings.cacheHit == expectHit);
  CHECK(expectHit ? timings.compileSeconds == 0 : timings.compileSeconds > 0);
}

Status prepareError(Backend &backend, const Manifest &manifest,
                    const SessionOptions &options) {
  SessionTimings timings;
  Status status = backend.prepareKernels(manifest, options, timings);
  CHECK(!status.isOk());
  return status;
}

void testLaunches(Backend &backend, uint64_t base, uint64_t total) {
  emulateTwice();
  // x at 4096, n at 8192, y at 12288.
  std::vector<float> x(10), y(10, -1.0f);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.25f * float(i) - 1.0f;
  int64_t n = int64_t(x.size());
  CHECK_OK(backend.upload(4096, x.data(), x.size() * 4));
  CHECK_OK(backend.upload(8192, &n, 8));
  size_t before = mockcuda::launches().size();
  CHECK_OK(backend.launchKernel(0, {12288, 4096, 8192}));
  if (!CHECK(mockcuda::launches().size() == before + 1))
    return;
  const mockcuda::Launch &launch = mockcuda::launches().back();
  CHECK(launch.kernel == "twice");
  CHECK(launch.grid[0] == 2 && launch.grid[1] == 1 && launch.grid[2] == 1);
  CHECK(launch.block[0] == 128 && launch.block[1] == 1 && launch.block[2] == 1);
  CHECK(launch.sharedBytes == 0 && launch.stream != nullptr);
  CHECK(launch.params ==
        std::vector<uint64_t>({base + 12288, base + 4096, base + 8192}));
  CHECK_OK(backend.synchronize());
  CHECK_OK(backend.download(12288, y.data(), y.size() * 4));
  bool doubled = true;
  for (size_t i = 0; i < x.size(); ++i)
    doubled &= y[i] == 2.0f * x[i];
  CHECK(doubled);

  // 64 KiB of dynamic shared memory, opted into at prepare time.
  CHECK_OK(backend.launchKernel(1, {0}));
  CHECK(mockcuda::launches().back().kernel == "reverse" &&
        mockcuda::launches().back().sharedBytes == 64 * 1024 &&
        mockcuda::launches().back().params == std::vector<uint64_t>({base}));
  // No parameters: kernelParams may be null.
  CHECK_OK(backend.launchKernel(2, {}));
  CHECK(mockcuda::launches().back().kernel == "noop" &&
        mockcuda::launches().back().sharedBytes == 40 * 1024 &&
        mockcuda::launches().back().params.empty());
  // A buffer may start at the end (it is empty); past it is an error.
  CHECK_OK(backend.launchKernel(1, {total}));
  CHECK(mockcuda::launches().back().params ==
        std::vector<uint64_t>({base + total}));
  before = mockcuda::launches().size();
  CHECK_ERROR(backend.launchKernel(1, {total + 1}),
              "kernel 'reverse': a kernel argument of 0 bytes at offset " +
                  std::to_string(total + 1) + " is outside the allocation of " +
                  std::to_string(total) + " bytes");
  CHECK_ERROR(backend.launchKernel(3, {}),
              "kernel 3 is out of range: 3 kernels are loaded");
  CHECK(mockcuda::launches().size() == before);

  // A launch the driver refuses, and a fault found at the next sync.
  mockcuda::failNext("cuLaunchKernel", 701);
  CHECK_ERROR(backend.launchKernel(0, {12288, 4096, 8192}),
              "launching kernel 'twice' (grid 2x1x1, block 128x1x1, 0 bytes "
              "of dynamic shared memory): cuLaunchKernel failed: "
              "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)");
  mockcuda::failNext("cuStreamSynchronize", 700);
  CHECK_ERROR(backend.synchronize(), "run with CUDA_LAUNCH_BLOCKING=1");
  expectNoViolations("launches");
}

/// "12.8" for 12080, as the backend prints driver versions.
std::string formatVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

/// NVRTC's version as the driver's CUDA version number (13.0 -> 13000).
int nvrtcAsDriverVersion() {
  StatusOr<std::string> version = nvrtcVersion();
  int major = 0, minor = 0;
  if (!version || std::sscanf(version->c_str(), "%d.%d", &major, &minor) != 2)
    return 0;
  return major * 1000 + minor * 10;
}

} // namespace

void runKernelTests() {
  const std::string cacheDir = scratchDirectory() + "/kernel-cache";
  SessionOptions options;
  options.cacheDir = cacheDir;
  std::unique_ptr<Backend> backend = openBackend(options);
  if (!backend)
    return;
  const uint64_t total = 1 << 20;
  if (!CHECK_OK(backend->allocate(total)))
    return;
  const uint64_t base = mockcuda::lastAllocation();

  Manifest manifest;
  manifest.source = kTestKernels;
  manifest.kernels = {testKernel("twice", 2, 128, 0),
                      testKernel("reverse", 1, 256, 64 * 1024),
                      testKernel("noop", 1, 32, 40 * 1024)};

  // Compiled by NVRTC for sm_80, stored in the cache, loaded.
  prepare(*backend, manifest, options, false);
  std::vector<std::string> files = listFiles(cacheDir);
  CHECK(files.size() == 1);
  const std::string entry = files.empty() ? "" : cacheDir + "/" + files[0];
  CHECK(isElf(entry));
  CHECK(mockcuda::live().modules == 1);
  // Only the kernel over 48 KiB of dynamic shared memory opts in.
  CHECK(mockcuda::maxDynamicSharedSet("reverse") == 64 * 1024);
  CHECK(mockcuda::maxDynamicSharedSet("noop") == -1);
  CHECK(mockcuda::maxDynamicSharedSet("twice") == -1);

  testLaunches(*backend, base, total);

  // From the cache; the old module is replaced.
  int unloads = mockcuda::calls("cuModuleUnload");
  prepare(*backend, manifest, options, true);
  CHECK(mockcuda::calls("cuModuleUnload") == unloads + 1 &&
        mockcuda::live().modules == 1);
  // A corrupt entry: the driver rejects it, the source is compiled again
  // and the entry replaced.
  CHECK_OK(writeFile(entry, "garbage", 7));
  int loads = mockcuda::calls("cuModuleLoadData");
  prepare(*backend, manifest, options, false);
  CHECK(mockcuda::calls("cuModuleLoadData") == loads + 2);
  CHECK(isElf(entry));
  prepare(*backend, manifest, options, true);
  // The kernels work after a recompile.
  CHECK_OK(backend->launchKernel(0, {12288, 4096, 8192}));
  // Without the cache: compiled, nothing stored.
  {
    SessionOptions uncached = options;
    uncached.cacheDir = scratchDirectory() + "/no-cache";
    uncached.disableCache = true;
    prepare(*backend, manifest, uncached, false);
    CHECK(!fileExists(uncached.cacheDir));
  }

  // Kernels are resolved by their names in the CUBIN.
  {
    Manifest missing = manifest;
    missing.kernels.push_back(testKernel("missing", 1, 1, 0));
    Status status = prepareError(*backend, missing, options);
    CHECK(status.code() == StatusCode::NotFound);
    CHECK_ERROR(status, "kernel 'missing' of the manifest is not in the "
                        "compiled source: cuModuleGetFunction failed: "
                        "CUDA_ERROR_NOT_FOUND (500): named symbol not found");
    Manifest mangled = manifest;
    mangled.kernels = {testKernel("cxx_linkage", 1, 1, 0)};
    CHECK(prepareError(*backend, mangled, options).code() ==
          StatusCode::NotFound);
  }
  // More dynamic shared memory than the device has (sm_80: 163 KiB).
  {
    Manifest huge = manifest;
    huge.kernels[1].sharedBytes = 300 * 1024;
    CHECK_ERROR(prepareError(*backend, huge, options),
                "kernel 'reverse' asks for 307200 bytes of dynamic shared "
                "memory: cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE");
  }
  // A compile error carries NVRTC's log.
  {
    Manifest broken = manifest;
    broken.source += "\nthis is not CUDA;\n";
    Status status = prepareError(*backend, broken, options);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK_ERROR(status, "compiling the kernels for Mock GPU A (sm_80): NVRTC ");
    CHECK_ERROR(status, "nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION");
    CHECK_ERROR(status, "error");
    CHECK(listFiles(cacheDir).size() == 1);
  }

  // Teardown after kernels and a contraction: pending work is waited for
  // first, cuBLASLt's objects go before its handle, everything before the
  // context is released, and nothing is left.
  {
    prepare(*backend, manifest, options, true);
    Contraction c;
    c.name = "square";
    c.m = c.n = c.k = 4;
    c.setPackedLayout();
    CHECK_OK(backend->runContraction(c, 0, 64, 128));
    mockcuda::takeEvents();
    backend.reset();
    std::vector<std::string> events = mockcuda::takeEvents();
    CHECK(!events.empty() && events.front() == "cuStreamSynchronize");
    CHECK(!events.empty() && events.back() == "cuDevicePrimaryCtxRelease_v2 0");
    size_t handle = events.size(), lastDescriptor = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i] == "cublasLtDestroy")
        handle = i;
      if (events[i] == "cublasLtMatrixLayoutDestroy" ||
          events[i] == "cublasLtMatmulDescDestroy")
        lastDescriptor = i;
    }
    CHECK(handle < events.size() && lastDescriptor < handle);
    CHECK(hasEvent(events, "cuMemFree_v2") &&
          hasEvent(events, "cuModuleUnload") &&
          hasEvent(events, "cuStreamDestroy_v2"));
    expectClean("teardown after kernels");
  }

  // Device 1 (sm_90) has its own cache entry.
  options.cudaDevice = 1;
  backend = openBackend(options);
  if (!backend)
    return;
  prepare(*backend, manifest, options, false);
  prepare(*backend, manifest, options, true);
  std::vector<std::string> both = listFiles(cacheDir);
  CHECK(both.size() == 2);
  std::string sm90Entry;
  for (const std::string &name : both)
    if (cacheDir + "/" + name != entry)
      sm90Entry = cacheDir + "/" + name;
  backend.reset();
  expectClean("device 1");

  // An entry for another architecture where sm_80's should be (a copied
  // cache, a hash collision): the driver has no binary for the GPU, so the
  // source is compiled again.
  options.cudaDevice = 0;
  backend = openBackend(options);
  if (!backend)
    return;
  if (StatusOr<std::string> sm90 = readFile(sm90Entry)) {
    CHECK_OK(writeFile(entry, sm90->data(), sm90->size()));
    int reloads = mockcuda::calls("cuModuleLoadData");
    prepare(*backend, manifest, options, false);
    CHECK(mockcuda::calls("cuModuleLoadData") == reloads + 2);
    prepare(*backend, manifest, options, true);
  } else {
    CHECK_OK(sm90.status());
  }
  backend.reset();
  expectClean("foreign cache entry");

  // CUBIN from an NVRTC newer than the driver: the load fails with a hint.
  int nvrtc = nvrtcAsDriverVersion();
  CHECK(nvrtc >= 12000);
  mockcuda::setDriverVersion(nvrtc - 1000 + 80);
  backend = openBackend(options);
  if (!backend)
    return;
  mockcuda::failNext("cuModuleLoadData", 222, 2); // the cached entry, then
                                                  // the fresh compile
  std::string driver = formatVersion(nvrtc - 1000 + 80);
  CHECK_ERROR(prepareError(*backend, manifest, options),
              "cuModuleLoadData failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION "
              "(222): the provided PTX was compiled with an unsupported "
              "toolchain. (the kernels were compiled by NVRTC " +
                  formatVersion(nvrtc) + " but the driver supports CUDA " +
                  driver +
                  " at most: update the driver, or put the libnvrtc "
                  "of CUDA " +
                  driver + " on LD_LIBRARY_PATH)");
  CHECK(mockcuda::live().modules == 0);
  backend.reset();
  expectClean("driver older than NVRTC");
}

} // namespace memfit::rt::test
