//===- CudaBackend.h - the CUDA backend's class (internal) ------*- C++ -*-===//
//
// The CUDA backend drives one device through the driver API, loaded with
// dlopen (CudaSymbols.h):
//
//  - the device's primary context (shared with any other CUDA user in the
//    process, as the CUDA runtime and cuBLASLt expect) and one stream, on
//    which every kernel and contraction is ordered;
//  - one cuMemAlloc of the plan's total size, checked against the free
//    memory first so that a plan that does not fit fails before anything
//    runs;
//  - the manifest's source compiled by NVRTC to CUBIN for the device's
//    architecture, through the on-disk KernelCache;
//  - contractions through cuBLASLt (CudaContraction.cpp), their workspace
//    at the end of the session's one allocation, which stays the only one
//    of any size (cuBLASLt's handle and descriptors are small host
//    objects);
//  - each entry's steps captured from the stream as a CUDA graph and
//    replayed as one launch (Backend::beginGraph);
//  - collectives through NCCL, and the copies of offloaded activations, on
//    streams of their own beside the step's (CudaSideStreams.cpp);
//  - the host's kernels (Kernel::onHost, --offload=optimizer's updates)
//    compiled by the host C++ compiler and run over the host's cores, on
//    the pinned host region, from a host-task stream (CudaHostTasks.cpp).
//
// Every entry point makes the context current on the calling thread first,
// so a session may be used from any one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_CUDABACKEND_H
#define MEMFIT_RUNTIME_SRC_CUDABACKEND_H

#include "Backend.h"
#include "CudaSymbols.h"
#include "HostKernels.h"
#include "HostWorkers.h"
#include "NcclSymbols.h"

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace memfit::rt::cuda {

/// How cuBLASLt sees a dtype: the matrices' type, the compute type and the
/// type of alpha and beta. Half types accumulate in fp32.
struct ElementType {
  cudaDataType data;
  cublasComputeType_t compute;
  cudaDataType scale;
  uint64_t bytes;
};

/// The element type of a contraction, or why cuBLASLt cannot run it; f32
/// computes in TF32 with `tf32`.
StatusOr<ElementType> elementType(const Contraction &contraction,
                                  bool tf32 = false);

/// The cuBLASLt workspace of `manifest` on a device of compute capability
/// `major`: what split-K and stream-K kernels keep of the largest
/// contraction's output in fp32 partial sums, capped at cuBLAS's
/// recommendation (32 MiB from Hopper on, 4 MiB before); 0 without
/// contractions.
uint64_t blasWorkspaceBytes(const Manifest &manifest, int major);

/// How the batch of a contraction is issued. cuBLASLt's strided batch takes
/// one stride per operand, so the trailing batch dimensions over which both
/// A's and B's strides are expressible as a single stride form one strided
/// batch of `innerCount` matrices, and the leading `outerRank` dimensions
/// are looped over with one cublasLtMatmul per index. The output is
/// contiguous, so it is expressible over any dimensions. In the common cases
/// (no batch, a contiguous batch, one operand broadcast over the whole
/// batch) there is no loop.
struct BatchPlan {
  size_t outerRank = 0;
  int64_t outerCount = 1;
  int64_t innerCount = 1;
  std::array<int64_t, 3> strides{0, 0, 0}; // A, B, out: between inner matrices
};

/// The cuBLASLt objects of one contraction shape, created once and reused
/// by every run.
struct MatmulPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  // cuBLASLt is column-major; see CudaBackend::createPlan for the operands.
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspace = 0; // what the algorithm needs of the workspace
  /// False where the heuristic had no algorithm for the contraction's
  /// epilogue: the session runs its fallback kernel instead, every time.
  bool usable = true;
};

/// A plan's algorithm as the heuristic chose it, kept on disk between
/// sessions (CudaAlgoCache.cpp).
struct CachedAlgo {
  bool usable = true;
  uint64_t workspace = 0;
  cublasLtMatmulAlgo_t algo{};
};

/// The alignments cuBLASLt may assume of a contraction's addresses
/// (cuBLASLt's first and second operands, out), and the epilogue's vector
/// (0 without one).
struct PlanAlignment {
  uint32_t first = 256, second = 256, out = 256;
  CUdeviceptr vector = 0;
  CUdeviceptr aux = 0; // GeluAuxBias: the pre-activation (out)
};

class CudaBackend final : public Backend {
public:
  CudaBackend(const DriverSymbols &cu, bool tf32) : cu_(cu), tf32_(tf32) {}
  ~CudaBackend() override;

  /// Opens device `ordinal` of `deviceCount`.
  Status init(int ordinal, int deviceCount);

  std::string description() const override;
  Status allocate(uint64_t bytes) override;
  uint64_t workspaceBytes(const Manifest &manifest) override;
  Status placeHostRegion(uint64_t offset, uint64_t bytes) override;
  uint64_t allocatedBytes() const override { return bytes_; }
  Status upload(uint64_t offset, const void *data, uint64_t bytes) override;
  Status download(uint64_t offset, void *data, uint64_t bytes) override;
  Status prepareKernels(const Manifest &manifest, const SessionOptions &options,
                        SessionTimings &timings) override;
  Status launchKernel(uint32_t kernel,
                      const std::vector<uint64_t> &offsets) override;
  Status runContraction(const Contraction &contraction, uint64_t a, uint64_t b,
                        uint64_t out) override;
  StatusOr<bool>
  runContractionEpilogue(const Contraction &contraction,
                         const std::vector<uint64_t> &offsets) override;
  Status runCollective(const Collective &c, uint64_t in, uint64_t out,
                       Communicator &comm) override;
  /// Collectives (through NCCL) and the copies of offloaded activations
  /// (Kernel::copyQueue) run on streams of their own, one each, made at the
  /// first: after what the step's stream did before them (an event it
  /// records, which theirs waits for) and beside what it does after; a
  /// later step that touches their bytes makes the step's stream wait for
  /// their end (waitQueue), on the GPU, without the host waiting. In the
  /// step's stream when SessionOptions::overlapHostTasks is off, when
  /// profiling, and while capturing a graph.
  StatusOr<bool> startCollective(const Collective &c, uint64_t in,
                                 uint64_t out, Communicator &comm) override;
  StatusOr<bool> startCopyKernel(uint32_t kernel,
                                 const std::vector<uint64_t> &offsets) override;
  /// A host kernel runs on the host's worker threads, called from the
  /// host-task stream (cuLaunchHostFunc) after the step's stream's work so
  /// far; a Kernel::toDevice copy runs on that stream after it. The step's
  /// stream waits for them where a later step touches their bytes, and the
  /// end of a run does not: the update overlaps the next step's forward
  /// until it reads a working copy. In the step's stream when the others
  /// run there (see startCollective).
  Status startHostKernel(uint32_t kernel,
                         const std::vector<uint64_t> &offsets) override;
  Status waitQueue(SideQueue queue, uint64_t count) override;
  /// The waiter's stream waits for `queue`'s event, on the GPU; where the
  /// waiter's tasks run in the step's stream, that stream waits.
  Status orderQueues(SideQueue waiter, SideQueue queue,
                     uint64_t count) override;
  uint64_t queueFinished(SideQueue queue) const override;
  bool waitsOnDevice() const override { return true; }
  void setSideStreams(bool on) { sideStreams_ = on; }
  Status synchronize() override;

  bool recordsGraphs() const override { return true; }
  bool timesSteps() const override { return true; }
  Status markStep(size_t i, size_t count) override;
  StatusOr<std::vector<double>> stepSeconds(size_t count) override;
  Status beginGraph() override;
  Status endGraph(size_t entry) override;
  void abandonGraph() override;
  Status launchGraph(size_t entry) override;

private:
  struct LoadedKernel {
    std::string name;
    std::array<uint32_t, 3> grid, block;
    uint32_t sharedBytes;
    CUfunction function;
    bool onHost = false;
  };

  Status makeCurrent() const {
    return cu_.check(cu_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  }
  std::string deviceName() const {
    return name_ + " (device " + std::to_string(ordinal_) + ")";
  }
  /// Fails when [offset, offset + bytes) is not inside the allocation.
  Status checkRange(const char *what, uint64_t offset, uint64_t bytes) const;
  /// Fails while the stream is being captured: `what` would run now rather
  /// than be recorded.
  Status checkNotCapturing(const std::string &what) const;
  /// Loads `cubin` as the module, replacing any earlier one.
  Status loadModule(const std::vector<char> &cubin,
                    const std::string &nvrtcVersion);
  void destroyGraphs();
  void destroyEvents();

  // Collectives (CudaCollective.cpp).
  Status initNccl(Communicator &comm);
  void destroyNccl();

  // Contractions (CudaContraction.cpp).
  Status initBlasLt();
  void destroyPlans();
  /// The contraction, with its epilogue where `vector` is set: false where
  /// cuBLASLt has no algorithm for that epilogue (nothing ran).
  StatusOr<bool> contract(const Contraction &contraction, uint64_t a,
                          uint64_t b, uint64_t out,
                          std::optional<uint64_t> vector,
                          std::optional<uint64_t> activated = std::nullopt);
  StatusOr<MatmulPlan *> getPlan(const Contraction &contraction,
                                 const ElementType &type,
                                 const BatchPlan &batch,
                                 const PlanAlignment &alignment);
  StatusOr<MatmulPlan> createPlan(const Contraction &contraction,
                                  const ElementType &type,
                                  const BatchPlan &batch,
                                  const PlanAlignment &alignment,
                                  const CachedAlgo *cached);
  // cuBLASLt's algorithm choices on disk (CudaAlgoCache.cpp).
  void openAlgoCache(const SessionOptions &options);
  void rememberAlgo(const std::string &key, const MatmulPlan &plan);
  /// Writes the choices made since the last write, if any.
  void flushAlgoCache();

  const DriverSymbols &cu_;
  const bool tf32_;
  int ordinal_ = 0;
  int major_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr; // retained primary context
  CUstream stream_ = nullptr;
  std::string name_, arch_;
  int driverVersion_ = 0;

  Status allocateHostRegion();

  CUdeviceptr base_ = 0;
  uint64_t bytes_ = 0; // the device's
  uint64_t space_ = 0; // the offsets a session uses: the host region's too
  bool allocated_ = false;
  // The host region (placeHostRegion): allocation offsets [hostOffset_,
  // hostOffset_ + hostBytes_) are pinned host memory, mapped for the
  // device at hostDevice_.
  uint64_t hostOffset_ = 0, hostBytes_ = 0;
  void *host_ = nullptr;
  CUdeviceptr hostDevice_ = 0;

  /// The device address of allocation offset `offset`.
  CUdeviceptr address(uint64_t offset) const {
    return hostBytes_ && offset >= hostOffset_
               ? hostDevice_ + (offset - hostOffset_)
               : base_ + offset;
  }

  CUmodule module_ = nullptr;
  std::vector<LoadedKernel> kernels_;

  // The cuBLASLt workspace: the end of the one allocation.
  uint64_t workspaceOffset_ = 0, workspaceSize_ = 0;
  const BlasLtSymbols *lt_ = nullptr;
  cublasLtHandle_t blasLt_ = nullptr;
  std::unordered_map<std::string, MatmulPlan> plans_;
  /// SessionOptions::warn: told once per plan when cuBLASLt has no
  /// algorithm for a contraction's epilogue (its fallback kernel runs).
  std::function<void(const std::string &)> warn_;
  std::string algoCachePath_; // empty: no cache
  std::unordered_map<std::string, CachedAlgo> cachedAlgos_;
  bool algoCacheDirty_ = false;

  bool capturing_ = false;
  std::vector<CUgraphExec> graphs_; // by entry; null: none
  std::vector<CUevent> events_;     // markStep's, created as needed

  const NcclSymbols *nccl_ = nullptr;
  ncclComm_t ncclComm_ = nullptr; // made at the first collective

  /// Enqueues `c` through NCCL on `stream`.
  Status enqueueCollective(const Collective &c, uint64_t in, uint64_t out,
                           Communicator &comm, CUstream stream);
  /// Launches kernel `kernel` on `stream`.
  Status launchOn(uint32_t kernel, const std::vector<uint64_t> &offsets,
                  CUstream stream);

  /// A task started on a side stream: its number in the queue, the event
  /// the step's stream recorded before it and the one its stream recorded
  /// after it (null for a task run in the step's stream).
  struct SideTask {
    uint64_t number;
    CUevent ready, done;
  };
  /// A stream beside the step's, the tasks started on it and not seen
  /// finish (oldest first), and the events of those seen, for reuse.
  struct SideStream {
    CUstream stream = nullptr;
    std::deque<SideTask> inFlight;
    std::vector<CUevent> spare;
    uint64_t started = 0, finished = 0, waited = 0;
  };
  /// Runs `enqueue` on `side`'s stream after the step's stream's work so
  /// far, and records its end.
  Status startOnSide(SideStream &side,
                     const std::function<Status(CUstream)> &enqueue);
  /// The last task among the first `count` of `side` that ran on its
  /// stream and is not known to have finished (null: none).
  const SideTask *lastOnStream(const SideStream &side, uint64_t count) const;
  /// Makes `side`'s stream, if it has none yet.
  Status makeSideStream(SideStream &side);
  /// Counts a task of `queue` run in the step's stream, after the step's
  /// stream waited for those in flight.
  Status runInStep(SideQueue queue,
                   const std::function<Status(CUstream)> &enqueue);
  /// Forgets the tasks of `side` that have finished (all of them when
  /// `synchronized`), keeping their events for reuse.
  Status retireFinished(SideStream &side, bool synchronized);
  Status sideEvent(SideStream &side, CUevent &event);
  Status synchronizeSides();
  void destroySideStreams();
  bool sideStreams_ = true;
  SideStream sides_[kSideQueues];

  // Host tasks (CudaHostTasks.cpp).

  /// A host kernel's launch as the host-task stream's host function sees
  /// it; kept for the backend's life, since a CUDA graph may call it at
  /// every replay.
  struct HostCall {
    CudaBackend *backend;
    uint32_t kernel;
    std::vector<void *> pointers; // in the host region
  };
  static void runHostCall(void *call);
  /// Compiles the manifest's host kernels for the host, if it has any.
  Status prepareHostKernels(const Manifest &manifest,
                            const SessionOptions &options,
                            SessionTimings &timings);
  /// The call for `kernel` on the buffers at `offsets`, made at its first
  /// launch; fails where a buffer is not in the host region.
  StatusOr<HostCall *> hostCall(uint32_t kernel,
                                const std::vector<uint64_t> &offsets);
  /// The first failure of a host kernel, once.
  Status hostFailure();
  std::unique_ptr<HostKernels> hostKernels_;
  std::unique_ptr<WorkerPool> hostWorkers_; // goes before the kernels
  std::map<std::pair<uint32_t, std::vector<uint64_t>>,
           std::unique_ptr<HostCall>>
      hostCalls_;
  std::mutex hostRunMutex_, hostFailureMutex_;
  Status hostFailure_ = Status::ok();
  bool hostFailed_ = false, hostFailureReported_ = false;
};

} // namespace memfit::rt::cuda

#endif // MEMFIT_RUNTIME_SRC_CUDABACKEND_H
