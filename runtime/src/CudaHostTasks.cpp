//===- CudaHostTasks.cpp - the host's kernels beside the GPU --------------===//
//
// --offload=optimizer on a GPU (ZeRO-Offload): the updates are kernels
// marked Kernel::onHost, whose buffers are all in the host region (pinned
// host memory). The CUDA backend compiles them with the host C++ compiler,
// as the host backend does, and runs their blocks over the host's cores on
// worker threads of its own. Each runs as a host function of the
// host-task stream (cuLaunchHostFunc), so that the stream orders it: after
// what the step's stream did before it (the gradient's copy to the host),
// before the copy of its result to the device (Kernel::toDevice, a kernel
// on the same stream), and the step's stream waits for it only where a
// later step reads what it wrote.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "HostCompiler.h"

namespace memfit::rt::cuda {

Status CudaBackend::prepareHostKernels(const Manifest &manifest,
                                       const SessionOptions &options,
                                       SessionTimings &timings) {
  // The calls of the kernels replaced here end first.
  if (sides_[HostTasks].stream)
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamSynchronize,
                              sides_[HostTasks].stream);
  hostWorkers_.reset();
  hostKernels_.reset();
  hostCalls_.clear();
  for (size_t i = 0; i < kernels_.size(); ++i)
    kernels_[i].onHost = manifest.kernels[i].onHost;
  if (std::none_of(manifest.kernels.begin(), manifest.kernels.end(),
                   [](const Kernel &k) { return k.onHost; }))
    return Status::ok();
  std::vector<std::string> compiler =
      splitWords(hostCompilerCommand(options));
  if (compiler.empty())
    return invalidArgument("the host compiler command is empty");
  StatusOr<std::string> version = compilerVersion(compiler);
  if (!version)
    return version.status().withContext(
        "the host's kernels (--offload=optimizer) need a host C++ compiler "
        "(set SessionOptions::hostCompiler or $MEMFIT_HOST_CXX)");
  // By default this rank's share of the CPUs but the one that launches its
  // steps.
  StatusOr<unsigned> threads = hostTaskThreads(options, hostTaskCpus());
  if (!threads)
    return threads.status();
  const unsigned count = *threads;
  auto kernels = std::make_unique<HostKernels>();
  SessionTimings hostTimings;
  MEMFIT_RT_RETURN_IF_ERROR(
      loadHostKernels(manifest, compiler, *version, options, count,
                      hostTimings, *kernels, /*onHostOnly=*/true)
          .withContext("compiling the host's kernels"));
  timings.compileSeconds += hostTimings.compileSeconds;
  timings.cacheHit = timings.cacheHit && hostTimings.cacheHit;
  auto workers = std::make_unique<WorkerPool>();
  MEMFIT_RT_RETURN_IF_ERROR(workers->start(count, /*batch=*/true));
  workers->setExitHooks(kernels->releases);
  hostKernels_ = std::move(kernels);
  hostWorkers_ = std::move(workers);
  return Status::ok();
}

StatusOr<CudaBackend::HostCall *>
CudaBackend::hostCall(uint32_t kernel, const std::vector<uint64_t> &offsets) {
  auto key = std::make_pair(kernel, offsets);
  auto found = hostCalls_.find(key);
  if (found != hostCalls_.end())
    return found->second.get();
  if (!hostKernels_ || !hostKernels_->launchers[kernel])
    return internalError("kernel '" + kernels_[kernel].name +
                         "' runs on the host but was not compiled for it");
  auto call = std::make_unique<HostCall>();
  call->backend = this;
  call->kernel = kernel;
  for (uint64_t offset : offsets) {
    if (!hostBytes_ || offset < hostOffset_ ||
        offset > hostOffset_ + hostBytes_)
      return invalidArgument(
          "kernel '" + kernels_[kernel].name +
          "' runs on the host, but a buffer it reads or writes (at offset " +
          std::to_string(offset) + ") is in device memory");
    call->pointers.push_back(static_cast<uint8_t *>(host_) +
                             (offset - hostOffset_));
  }
  HostCall *made = call.get();
  hostCalls_.emplace(std::move(key), std::move(call));
  return made;
}

void CudaBackend::runHostCall(void *data) {
  // On the driver's thread for host functions: no driver calls here.
  auto *call = static_cast<HostCall *>(data);
  CudaBackend &b = *call->backend;
  {
    std::lock_guard<std::mutex> lock(b.hostFailureMutex_);
    if (b.hostFailed_)
      return; // the later tasks are skipped after a failure
  }
  const LoadedKernel &k = b.kernels_[call->kernel];
  // One launch at a time on the workers, whichever stream called.
  std::lock_guard<std::mutex> running(b.hostRunMutex_);
  Status status =
      runHostKernel(*b.hostWorkers_, b.hostKernels_->launchers[call->kernel],
                    k.grid, k.block, call->pointers);
  if (status.isOk())
    return;
  std::lock_guard<std::mutex> lock(b.hostFailureMutex_);
  b.hostFailed_ = true;
  b.hostFailure_ = status.withContext("host kernel '" + k.name + "'");
}

Status CudaBackend::hostFailure() {
  std::lock_guard<std::mutex> lock(hostFailureMutex_);
  if (!hostFailed_ || hostFailureReported_)
    return Status::ok();
  hostFailureReported_ = true;
  return hostFailure_;
}

Status CudaBackend::startHostKernel(uint32_t kernel,
                                    const std::vector<uint64_t> &offsets) {
  if (kernel >= kernels_.size())
    return invalidArgument("kernel " + std::to_string(kernel) +
                           " is out of range: " +
                           std::to_string(kernels_.size()) +
                           " kernels are loaded");
  std::function<Status(CUstream)> enqueue;
  if (kernels_[kernel].onHost) {
    StatusOr<HostCall *> call = hostCall(kernel, offsets);
    if (!call)
      return call.status();
    enqueue = [this, call = *call](CUstream stream) {
      return cu_.check(cu_.cuLaunchHostFunc(stream, &runHostCall, call),
                       "cuLaunchHostFunc");
    };
  } else {
    // Kernel::toDevice: the device copies what the host wrote.
    enqueue = [&](CUstream stream) {
      return launchOn(kernel, offsets, stream);
    };
  }
  if (!sideStreams_ || capturing_)
    return runInStep(HostTasks, enqueue);
  return startOnSide(sides_[HostTasks], enqueue);
}

} // namespace memfit::rt::cuda
