//===- CudaBackend.cpp - running executables on an NVIDIA GPU -------------===//
//
// The device, its memory, its kernels and graphs; see CudaBackend.h.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "KernelCache.h"

#include "memfit/runtime/Bytes.h"
#include "memfit/runtime/Nvrtc.h"

#include <array>
#include <cstring>
#include <limits>
#include <chrono>
#include <optional>
#include <unordered_map>

namespace memfit::rt {
namespace cuda {
namespace {

/// Loads the driver, initializes it and counts the devices; errors say why
/// CUDA cannot be used ("no CUDA driver (libcuda.so.1 not found): ...",
/// "no CUDA device", ...).
StatusOr<const DriverSymbols *> initDriver(int &deviceCount) {
  StatusOr<const DriverSymbols *> loaded = loadDriver();
  if (!loaded)
    return loaded.status();
  const DriverSymbols &cu = **loaded;
  CUresult result = cu.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE)
    return unavailable("no CUDA device (" +
                       cu.check(result, "cuInit").message() + ")");
  if (result != CUDA_SUCCESS) // whatever the cause, CUDA is not usable
    return unavailable("CUDA driver " + cu.path + ": " +
                       cu.check(result, "cuInit").message());
  deviceCount = 0;
  MEMFIT_CU_RETURN_IF_ERROR(cu, cuDeviceGetCount, &deviceCount);
  if (deviceCount <= 0)
    return unavailable("no CUDA device");
  return loaded;
}

} // namespace

Status CudaBackend::init(int ordinal, int deviceCount) {
  if (ordinal < 0 || ordinal >= deviceCount)
    return invalidArgument("CUDA device " + std::to_string(ordinal) +
                           " is out of range: the system has " +
                           std::to_string(deviceCount) + " CUDA device" +
                           (deviceCount == 1 ? "" : "s"));
  ordinal_ = ordinal;
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDeviceGet, &device_, ordinal);
  char name[256] = {};
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDeviceGetName, name, sizeof name - 1,
                            device_);
  name_ = name;
  int major = 0, minor = 0;
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDeviceGetAttribute, &major,
                            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                            device_);
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDeviceGetAttribute, &minor,
                            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                            device_);
  arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
  major_ = major;
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDriverGetVersion, &driverVersion_);

  MEMFIT_RT_RETURN_IF_ERROR(
      cu_.check(cu_.cuDevicePrimaryCtxRetain(&context_, device_),
                "cuDevicePrimaryCtxRetain")
          .withContext(deviceName()));
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  // A blocking stream (flags 0): it is also ordered with the synchronous
  // copies, which run on the legacy default stream.
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamCreate, &stream_, 0u);
  return Status::ok();
}

CudaBackend::~CudaBackend() {
  // Errors are ignored: a destructor cannot report them, and after a sticky
  // error (an illegal address) every call fails.
  if (!context_)
    return;
  (void)cu_.cuCtxSetCurrent(context_);
  if (stream_)
    (void)cu_.cuStreamSynchronize(stream_);
  flushAlgoCache();
  destroyGraphs();
  destroyEvents();
  destroySideStreams();
  destroyNccl();
  destroyPlans();
  if (lt_ && blasLt_)
    (void)lt_->cublasLtDestroy(blasLt_);
  if (base_)
    (void)cu_.cuMemFree(base_);
  if (host_)
    (void)cu_.cuMemFreeHost(host_);
  if (module_)
    (void)cu_.cuModuleUnload(module_);
  if (stream_)
    (void)cu_.cuStreamDestroy(stream_);
  (void)cu_.cuDevicePrimaryCtxRelease(device_);
}

std::string CudaBackend::description() const {
  return name_ + " (" + arch_ + ", driver " +
         formatCudaVersion(driverVersion_) + ")";
}

uint64_t CudaBackend::workspaceBytes(const Manifest &manifest) {
  workspaceSize_ = blasWorkspaceBytes(manifest, major_);
  if (!workspaceSize_)
    return 0;
  // Past the plan, 256-byte aligned as cuBLASLt's workspace wants.
  workspaceOffset_ = (manifest.totalBytes() + 255) / 256 * 256;
  return workspaceOffset_ - manifest.totalBytes() + workspaceSize_;
}

Status CudaBackend::placeHostRegion(uint64_t offset, uint64_t bytes) {
  if (allocated_)
    return internalError("the host region is placed before the allocation");
  hostOffset_ = offset;
  hostBytes_ = bytes;
  return Status::ok();
}

/// The host region: pinned host memory, mapped into the device's address
/// space so that kernels read and write it where they run (over the bus).
Status CudaBackend::allocateHostRegion() {
  if (!hostBytes_)
    return Status::ok();
  MEMFIT_CU_RETURN_IF_ERROR(
      cu_, cuMemHostAlloc, &host_, hostBytes_,
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  std::memset(host_, 0, hostBytes_);
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemHostGetDevicePointer, &hostDevice_,
                            host_, 0);
  return Status::ok();
}

Status CudaBackend::allocate(uint64_t bytes) {
  // The device's part ends where the host region starts.
  const uint64_t space = bytes;
  if (hostBytes_) {
    if (hostOffset_ + hostBytes_ != bytes)
      return internalError("the host region is not the allocation's end");
    bytes = hostOffset_;
  }
  if (allocated_)
    return internalError(
        "the CUDA backend makes one allocation, and it was made");
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  size_t free = 0, total = 0;
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemGetInfo, &free, &total);
  std::string needs = "the executable needs " + formatBytesExact(bytes) +
                      " of device memory but " + deviceName() + " has " +
                      formatBytesExact(free) + " free of " +
                      formatBytesExact(total);
  if (bytes > free)
    return Status::error(StatusCode::ResourceExhausted, needs);
  allocated_ = true;
  space_ = space;
  if (Status host = allocateHostRegion(); !host) {
    allocated_ = false;
    return host.withContext("the host region of " +
                            formatBytesExact(hostBytes_) +
                            " (--offload=optimizer)");
  }
  if (bytes == 0)
    return Status::ok(); // nothing to hold; cuMemAlloc rejects 0 bytes
  CUresult result = cu_.cuMemAlloc(&base_, bytes);
  if (result != CUDA_SUCCESS) {
    base_ = 0;
    allocated_ = false;
    // Free memory can be fragmented or taken by another process since
    // cuMemGetInfo.
    return cu_.check(result, "cuMemAlloc").withContext(needs);
  }
  bytes_ = bytes;
  // Zeroed like the host backend's memory, so that both backends start from
  // the same state.
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemsetD8, base_, 0, bytes);
  return Status::ok();
}

Status CudaBackend::checkRange(const char *what, uint64_t offset,
                               uint64_t bytes) const {
  if (offset <= space_ && bytes <= space_ - offset)
    return Status::ok();
  return invalidArgument(std::string(what) + " of " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) +
                         " is outside the allocation of " +
                         std::to_string(space_) + " bytes");
}

Status CudaBackend::upload(uint64_t offset, const void *data, uint64_t bytes) {
  MEMFIT_RT_RETURN_IF_ERROR(checkRange("upload", offset, bytes));
  MEMFIT_RT_RETURN_IF_ERROR(checkNotCapturing("a copy (upload)"));
  if (bytes == 0)
    return Status::ok();
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  // Kernels of an earlier run may still read what is overwritten.
  MEMFIT_RT_RETURN_IF_ERROR(synchronize());
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemcpyHtoD, address(offset), data, bytes);
  return Status::ok();
}

Status CudaBackend::download(uint64_t offset, void *data, uint64_t bytes) {
  MEMFIT_RT_RETURN_IF_ERROR(checkRange("download", offset, bytes));
  MEMFIT_RT_RETURN_IF_ERROR(checkNotCapturing("a copy (download)"));
  if (bytes == 0)
    return Status::ok();
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  MEMFIT_RT_RETURN_IF_ERROR(synchronize());
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemcpyDtoH, data, address(offset), bytes);
  return Status::ok();
}

Status CudaBackend::loadModule(const std::vector<char> &cubin,
                               const std::string &nvrtcVersion) {
  if (module_) {
    (void)cu_.cuModuleUnload(module_);
    module_ = nullptr;
  }
  CUresult result = cu_.cuModuleLoadData(&module_, cubin.data());
  if (result == CUDA_SUCCESS)
    return Status::ok();
  module_ = nullptr;
  Status status = cu_.check(result, "cuModuleLoadData");
  // CUBIN from a newer toolkit than the driver is the usual cause.
  std::string driver = formatCudaVersion(driverVersion_);
  int major = 0, minor = 0;
  if (std::sscanf(nvrtcVersion.c_str(), "%d.%d", &major, &minor) == 2 &&
      major * 1000 + minor * 10 > driverVersion_)
    return Status::error(
        status.code(),
        status.message() + " (the kernels were compiled by NVRTC " +
            nvrtcVersion + " but the driver supports CUDA " + driver +
            " at most: update the driver, or put the "
            "libnvrtc of CUDA " +
            driver + " on LD_LIBRARY_PATH)");
  return status;
}

Status CudaBackend::prepareKernels(const Manifest &manifest,
                                   const SessionOptions &options,
                                   SessionTimings &timings) {
  timings.compileSeconds = 0;
  timings.cacheHit = false;
  warn_ = options.warn;
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  destroyGraphs(); // they launch the kernels of the module replaced here
  kernels_.clear();

  // Contractions fail here rather than in the middle of a run.
  if (!manifest.contractions.empty()) {
    for (const Contraction &contraction : manifest.contractions) {
      StatusOr<ElementType> type = elementType(contraction, tf32_);
      if (!type)
        return type.status();
    }
    MEMFIT_RT_RETURN_IF_ERROR(initBlasLt());
    openAlgoCache(options);
  }
  if (manifest.kernels.empty())
    return Status::ok();

  std::string context =
      "compiling the kernels for " + name_ + " (" + arch_ + ")";
  StatusOr<std::string> version = nvrtcVersion();
  if (!version)
    return version.status().withContext(context);

  // The cache holds CUBIN per (source, architecture, NVRTC version). An
  // entry the driver rejects (truncated, or from an incompatible build) is
  // compiled again and replaced.
  KernelCache cache(options);
  bool useCache = !options.disableCache && cache.enabled();
  std::string path =
      useCache ? cache.path("cubin", manifest.source, arch_, *version, "cubin")
               : "";
  if (useCache) {
    if (std::optional<std::vector<char>> cubin = cache.load(path))
      timings.cacheHit = loadModule(*cubin, *version).isOk();
  }
  if (!timings.cacheHit) {
    auto start = std::chrono::steady_clock::now();
    StatusOr<NvrtcResult> compiled = compileToCubin(manifest.source, arch_);
    timings.compileSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!compiled)
      return compiled.status().withContext(context);
    MEMFIT_RT_RETURN_IF_ERROR(
        loadModule(compiled->cubin, *version).withContext(context));
    if (useCache)
      cache.store(path, compiled->cubin);
  }

  for (const Kernel &kernel : manifest.kernels) {
    LoadedKernel loaded{kernel.name, kernel.grid, kernel.block,
                        kernel.sharedBytes, nullptr};
    CUresult result =
        cu_.cuModuleGetFunction(&loaded.function, module_, kernel.name.c_str());
    if (result != CUDA_SUCCESS)
      return cu_.check(result, "cuModuleGetFunction")
          .withContext("kernel '" + kernel.name +
                       "' of the manifest is not in the compiled source");
    // Dynamic shared memory beyond the default 48 KiB must be opted into.
    if (kernel.sharedBytes > 48 * 1024)
      MEMFIT_RT_RETURN_IF_ERROR(
          cu_.check(cu_.cuFuncSetAttribute(
                        loaded.function,
                        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        static_cast<int>(kernel.sharedBytes)),
                    "cuFuncSetAttribute")
              .withContext("kernel '" + kernel.name + "' asks for " +
                           std::to_string(kernel.sharedBytes) +
                           " bytes of dynamic shared memory"));
    kernels_.push_back(std::move(loaded));
  }
  return prepareHostKernels(manifest, options, timings);
}

Status CudaBackend::launchKernel(uint32_t kernel,
                                 const std::vector<uint64_t> &offsets) {
  return launchOn(kernel, offsets, stream_);
}

Status CudaBackend::launchOn(uint32_t kernel,
                             const std::vector<uint64_t> &offsets,
                             CUstream stream) {
  if (kernel >= kernels_.size())
    return invalidArgument(
        "kernel " + std::to_string(kernel) + " is out of range: " +
        std::to_string(kernels_.size()) + " kernels are loaded");
  const LoadedKernel &k = kernels_[kernel];
  // Each parameter is a device pointer; kernelParams points at each value.
  std::vector<CUdeviceptr> pointers(offsets.size());
  std::vector<void *> params(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    MEMFIT_RT_RETURN_IF_ERROR(checkRange("a kernel argument", offsets[i], 0)
                                  .withContext("kernel '" + k.name + "'"));
    pointers[i] = address(offsets[i]);
    params[i] = &pointers[i];
  }
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  CUresult result = cu_.cuLaunchKernel(
      k.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
      k.block[2], k.sharedBytes, stream,
      params.empty() ? nullptr : params.data(), nullptr);
  if (result == CUDA_SUCCESS)
    return Status::ok();
  return cu_.check(result, "cuLaunchKernel")
      .withContext(
          "launching kernel '" + k.name + "' (grid " +
          std::to_string(k.grid[0]) + "x" + std::to_string(k.grid[1]) + "x" +
          std::to_string(k.grid[2]) + ", block " + std::to_string(k.block[0]) +
          "x" + std::to_string(k.block[1]) + "x" + std::to_string(k.block[2]) +
          ", " + std::to_string(k.sharedBytes) +
          " bytes of dynamic shared memory)");
}

Status CudaBackend::synchronize() {
  MEMFIT_RT_RETURN_IF_ERROR(checkNotCapturing("waiting for the stream"));
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  CUresult result = cu_.cuStreamSynchronize(stream_);
  if (result == CUDA_SUCCESS) {
    MEMFIT_RT_RETURN_IF_ERROR(synchronizeSides());
    flushAlgoCache(); // the choices of the plans this run made
    return Status::ok();
  }
  // Kernels report faults asynchronously, at the next synchronization.
  Status status = cu_.check(result, "cuStreamSynchronize");
  return Status::error(status.code(),
                       status.message() +
                           " (a fault of an earlier kernel or contraction; "
                           "run with CUDA_LAUNCH_BLOCKING=1 to find which)");
}

Status CudaBackend::checkNotCapturing(const std::string &what) const {
  if (!capturing_)
    return Status::ok();
  return unavailable(what + " cannot be recorded in a CUDA graph");
}

Status CudaBackend::beginGraph() {
  if (capturing_)
    return internalError("a CUDA graph is being captured already");
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  // Thread-local mode: only this thread's unsafe calls (a synchronous copy,
  // an allocation) end the capture, not those of other CUDA users.
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamBeginCapture, stream_,
                            CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  capturing_ = true;
  return Status::ok();
}

Status CudaBackend::endGraph(size_t entry) {
  if (!capturing_)
    return internalError("no CUDA graph is being captured");
  capturing_ = false;
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  CUgraph graph = nullptr;
  // Ends the capture even when it was invalidated (and then fails).
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamEndCapture, stream_, &graph);
  CUgraphExec exec = nullptr;
  CUresult result = cu_.cuGraphInstantiate(&exec, graph, 0);
  (void)cu_.cuGraphDestroy(graph); // the executable graph is independent
  MEMFIT_RT_RETURN_IF_ERROR(cu_.check(result, "cuGraphInstantiateWithFlags"));
  if (graphs_.size() <= entry)
    graphs_.resize(entry + 1, nullptr);
  if (graphs_[entry])
    (void)cu_.cuGraphExecDestroy(graphs_[entry]);
  graphs_[entry] = exec;
  return Status::ok();
}

Status CudaBackend::launchGraph(size_t entry) {
  if (entry >= graphs_.size() || !graphs_[entry])
    return internalError("entry " + std::to_string(entry) +
                         " has no CUDA graph");
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuGraphLaunch, graphs_[entry], stream_);
  return Status::ok();
}

void CudaBackend::abandonGraph() {
  if (!capturing_)
    return;
  capturing_ = false;
  CUgraph graph = nullptr;
  if (cu_.cuStreamEndCapture(stream_, &graph) == CUDA_SUCCESS && graph)
    (void)cu_.cuGraphDestroy(graph);
}

void CudaBackend::destroyGraphs() {
  abandonGraph();
  for (CUgraphExec exec : graphs_)
    if (exec)
      (void)cu_.cuGraphExecDestroy(exec);
  graphs_.clear();
}

Status CudaBackend::markStep(size_t i, size_t count) {
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  while (events_.size() <= count) {
    CUevent event = nullptr;
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventCreate, &event, 0u); // timed
    events_.push_back(event);
  }
  if (i > count)
    return internalError("markStep " + std::to_string(i) + " of " +
                         std::to_string(count));
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventRecord, events_[i], stream_);
  return Status::ok();
}

StatusOr<std::vector<double>> CudaBackend::stepSeconds(size_t count) {
  if (events_.size() <= count)
    return internalError("stepSeconds without markStep");
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventSynchronize, events_[count]);
  std::vector<double> seconds(count);
  for (size_t i = 0; i < count; ++i) {
    float ms = 0;
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventElapsedTime, &ms, events_[i],
                              events_[i + 1]);
    seconds[i] = double(ms) * 1e-3;
  }
  return seconds;
}

void CudaBackend::destroyEvents() {
  for (CUevent event : events_)
    (void)cu_.cuEventDestroy(event);
  events_.clear();
}

} // namespace cuda

using namespace cuda;

StatusOr<std::unique_ptr<Backend>>
createCudaBackend(const SessionOptions &options) {
  int deviceCount = 0;
  StatusOr<const DriverSymbols *> cu = initDriver(deviceCount);
  if (!cu)
    return cu.status();
  auto backend = std::make_unique<CudaBackend>(**cu, options.tf32);
  backend->setSideStreams(options.overlapHostTasks && !options.profileSteps);
  int ordinal = options.cudaDevice;
  if (options.cudaDeviceByRank && deviceCount > 0 && ordinal >= 0)
    ordinal %= deviceCount;
  MEMFIT_RT_RETURN_IF_ERROR(backend->init(ordinal, deviceCount));
  return std::unique_ptr<Backend>(std::move(backend));
}

bool cudaUsable(std::string *whyNot) {
  int deviceCount = 0;
  StatusOr<const DriverSymbols *> cu = initDriver(deviceCount);
  if (!cu && whyNot)
    *whyNot = cu.status().message();
  return cu.isOk();
}

} // namespace memfit::rt
