//===- HostWorkers.h - running compiled kernels on host threads -*- C++ -*-===//
//
// What runs a kernel compiled for the host (HostKernels.h) over the host's
// cores: a pool of worker threads that the blocks of each launch are
// shared among, and the thread counts that the options and the
// environment give. The host backend runs every kernel so; the CUDA
// backend runs the host's kernels (Kernel::onHost) so, beside the device.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_HOSTWORKERS_H
#define MEMFIT_RUNTIME_SRC_HOSTWORKERS_H

#include "memfit/runtime/Session.h"
#include "memfit/runtime/Status.h"

#define MEMFIT_HOST_ABI_ONLY
#include "host/memfit_cuda_host.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <string>
#include <vector>

namespace memfit::rt {

/// Threads that run the blocks of a launch. Every block of a kernel runs on
/// one of them (never on the caller), so the compiled library's per-thread
/// state lives on threads the pool owns and releases.
class WorkerPool {
public:
  WorkerPool() = default;
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;
  /// Stops the workers, each calling the exit hooks first.
  ~WorkerPool();

  /// With `batch`, the workers run at batch priority (host tasks).
  Status start(unsigned count, bool batch = false);
  unsigned size() const { return static_cast<unsigned>(threads_.size()); }
  /// Called by each worker before it exits (set before the first run).
  void setExitHooks(std::vector<void (*)()> hooks);
  /// Runs task(i) for every i in [0, count) on the workers and waits; from
  /// one thread at a time.
  void run(size_t count, const std::function<void(size_t)> &task);

private:
  static void *entry(void *self);
  void loop();

  std::vector<pthread_t> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)> *task_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> next_{0};
  size_t active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false, batch_ = false;
  std::vector<void (*)()> exitHooks_;
};

/// Runs a compiled kernel's blocks (a grid of `grid` blocks of `block`
/// threads) on `pool`, on the buffers at `pointers`; the first failure a
/// block reports (an index out of range, a trap), as the kernel said it.
Status runHostKernel(WorkerPool &pool, memfit_host_launcher launcher,
                     const std::array<uint32_t, 3> &grid,
                     const std::array<uint32_t, 3> &block,
                     const std::vector<void *> &pointers);

/// A thread count: `given` (an option; 0: unset), else $`variable`, else
/// 0; each from 1 to 1024.
StatusOr<unsigned> threadCount(unsigned given, const char *what,
                               const char *variable);

/// The CPUs this process may run on (taskset, a container's cpuset), not
/// every CPU of the machine; at least 1.
unsigned usableCpus();

/// The threads for the host tasks: SessionOptions::hostTaskThreads, else
/// $MEMFIT_HOST_TASK_THREADS, else `byDefault`.
StatusOr<unsigned> hostTaskThreads(const SessionOptions &options,
                                   unsigned byDefault);

/// The threads a device backend's host tasks get by default: this
/// process's share of the CPUs but one (which launches the device's
/// steps). Ranks on one machine ($LOCAL_WORLD_SIZE from torchrun,
/// $OMPI_COMM_WORLD_LOCAL_SIZE from mpirun) share its CPUs, unless each is
/// bound to CPUs of its own already (mpirun's binding); at least 1.
unsigned hostTaskCpus();

/// The host C++ compiler's command: SessionOptions::hostCompiler, else
/// $MEMFIT_HOST_CXX, else the compiler memfit was built with.
std::string hostCompilerCommand(const SessionOptions &options);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_HOSTWORKERS_H
