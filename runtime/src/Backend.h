//===- Backend.h - what a device backend provides (internal) ----*- C++ -*-===//

#ifndef MEMFIT_RUNTIME_SRC_BACKEND_H
#define MEMFIT_RUNTIME_SRC_BACKEND_H

#include "HostTasks.h"

#include "memfit/runtime/Communicator.h"
#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memfit::rt {

/// A device as Session sees it. Session owns the manifest, validates it,
/// and drives the call sequence; a backend only moves bytes, compiles the
/// source and runs kernels and contractions on device addresses
/// (base + offset of the one allocation).
class Backend {
public:
  virtual ~Backend();
  virtual std::string description() const = 0;
  /// Makes the one allocation, filled with zeros (Session relies on it for
  /// the weights region past the blob); fails with ResourceExhausted when
  /// it does not fit.
  virtual Status allocate(uint64_t bytes) = 0;
  /// Bytes the backend needs past the plan in its one allocation for
  /// `manifest` (the CUDA backend's cuBLASLt workspace); Session adds them
  /// to what it allocates. Called once, before allocate.
  virtual uint64_t workspaceBytes(const Manifest &manifest) { return 0; }
  /// The manifest's host region (--offload=optimizer) at allocation offsets
  /// [offset, offset + bytes), past the device's part; called before
  /// allocate, whose `bytes` then ends with it. A backend whose memory is
  /// the host's keeps it in the one allocation (the default); the CUDA
  /// backend allocates it as pinned host memory mapped for the device.
  virtual Status placeHostRegion(uint64_t offset, uint64_t bytes) {
    return Status::ok();
  }
  virtual uint64_t allocatedBytes() const = 0;
  virtual Status upload(uint64_t offset, const void *data, uint64_t bytes) = 0;
  virtual Status download(uint64_t offset, void *data, uint64_t bytes) = 0;
  /// Compiles manifest.source (or loads it from the cache) and resolves
  /// every kernel by name.
  virtual Status prepareKernels(const Manifest &manifest,
                                const SessionOptions &options,
                                SessionTimings &timings) = 0;
  /// `offsets` are the allocation offsets of the kernel's buffers.
  virtual Status launchKernel(uint32_t kernel,
                              const std::vector<uint64_t> &offsets) = 0;
  virtual Status runContraction(const Contraction &contraction, uint64_t a,
                                uint64_t b, uint64_t out) = 0;
  /// Runs a contraction with its epilogue (Manifest.h) on the step's
  /// buffers at `offsets` ({A, B, out, vector[, gelu]}), where the backend's
  /// library has that epilogue for it; false, with nothing run, where it has
  /// not, and the session runs the contraction's fallback kernels and the
  /// contraction without it.
  virtual StatusOr<bool>
  runContractionEpilogue(const Contraction &contraction,
                         const std::vector<uint64_t> &offsets) {
    return false;
  }
  /// Runs a collective of memfit-shard on the buffers at `in` and `out`
  /// through `comm`, after every earlier step.
  virtual Status runCollective(const Collective &collective, uint64_t in,
                               uint64_t out, Communicator &comm) = 0;
  /// Starts the collective on the backend's communication queue, after the
  /// collectives started before it and beside the steps after it, and
  /// returns true; or runs it now (runCollective) and returns false. The
  /// session makes later steps that touch its bytes wait (waitQueue), and
  /// waits for all at the end of a run.
  virtual StatusOr<bool> startCollective(const Collective &collective,
                                         uint64_t in, uint64_t out,
                                         Communicator &comm) {
    MEMFIT_RT_RETURN_IF_ERROR(runCollective(collective, in, out, comm));
    return false;
  }

  virtual Status synchronize() = 0;

  // Host tasks: the kernels that run on the host's cores (Kernel::onHost,
  // --offload=optimizer's updates). A backend that runs them beside the
  // device's steps numbers them in the order started; Session makes a
  // later step (or a copy in or out) that touches their bytes wait for
  // them. The default runs each in order, at once.

  /// Starts the next host task: kernel `kernel` on the buffers at
  /// `offsets`, after every host task started before it. A Kernel::onHost
  /// kernel runs on the host's cores, on host memory; a Kernel::toDevice
  /// kernel (the copy of a host kernel's result to the device) runs on the
  /// device.
  virtual Status startHostKernel(uint32_t kernel,
                                 const std::vector<uint64_t> &offsets) {
    return launchKernel(kernel, offsets);
  }
  /// Starts a copy kernel (Kernel::copyQueue: an offloaded activation's
  /// copy to host memory or back) on the backend's copy queue, after the
  /// copies started before it and beside the steps after it, and returns
  /// true; or runs it now and returns false.
  virtual StatusOr<bool> startCopyKernel(uint32_t kernel,
                                         const std::vector<uint64_t> &offsets) {
    MEMFIT_RT_RETURN_IF_ERROR(launchKernel(kernel, offsets));
    return false;
  }
  /// Waits until the first `count` tasks queued on `queue` have finished;
  /// the first failure among them (reported once).
  virtual Status waitQueue(SideQueue queue, uint64_t count) {
    return Status::ok();
  }
  /// Makes the next task started on queue `waiter` run after the first
  /// `count` tasks of `queue`, without the steps waiting for them (a host
  /// task that reads what a copy wrote). A backend that would run that
  /// task in the step makes the steps wait instead, as waitQueue does (the
  /// default).
  virtual Status orderQueues(SideQueue waiter, SideQueue queue,
                             uint64_t count) {
    return waitQueue(queue, count);
  }
  /// Whether waitQueue and orderQueues wait on the device (a GPU's streams)
  /// rather than on the calling thread.
  virtual bool waitsOnDevice() const { return false; }
  /// How many tasks of `queue` have finished, without waiting.
  virtual uint64_t queueFinished(SideQueue queue) const {
    return ~uint64_t(0);
  }

  // Graphs: an entry's steps recorded once and replayed as one launch (CUDA
  // graphs). Session records an entry on its second run, after a first run
  // has prepared everything its steps need, and replays it afterwards.

  /// Whether the backend records graphs at all.
  virtual bool recordsGraphs() const { return false; }
  /// From here until endGraph, launchKernel and runContraction are recorded,
  /// not run; anything they cannot record fails.
  virtual Status beginGraph();
  /// Ends the recording and keeps it as entry `entry`'s graph, replacing any
  /// earlier one. On failure nothing is kept and the recording has ended.
  virtual Status endGraph(size_t entry);
  /// Ends the recording, if one is under way, keeping nothing (after a step
  /// failed while recording).
  virtual void abandonGraph() {}
  /// Runs entry `entry`'s graph (after every earlier step).
  virtual Status launchGraph(size_t entry);

  // Profiles (SessionOptions::profileSteps): a backend that times steps on
  // the device (CUDA events) marks the points between them instead of the
  // session waiting for each step.

  /// Whether the backend times steps itself.
  virtual bool timesSteps() const { return false; }
  /// Marks the point before step `i` of a run of `count` steps (`i` =
  /// `count`: after the last).
  virtual Status markStep(size_t i, size_t count);
  /// After a run marked with markStep: the seconds each of its `count`
  /// steps took, once the device has run them.
  virtual StatusOr<std::vector<double>> stepSeconds(size_t count);
};

StatusOr<std::unique_ptr<Backend>> createHostBackend(const SessionOptions &options);
StatusOr<std::unique_ptr<Backend>> createCudaBackend(const SessionOptions &options);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_BACKEND_H
