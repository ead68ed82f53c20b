//===- Session.h - running an executable on a device ------------*- C++ -*-===//

#ifndef MEMFIT_RUNTIME_SESSION_H
#define MEMFIT_RUNTIME_SESSION_H

#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Tensor.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace memfit::rt {

struct CheckpointFile; // Checkpoint.h

enum class DeviceKind { Host, Cuda };

const char *deviceKindName(DeviceKind kind);

class Communicator;

struct SessionOptions {
  /// Where compiled kernels are cached; empty means $MEMFIT_CACHE_DIR, else
  /// $XDG_CACHE_HOME/memfit, else $HOME/.cache/memfit.
  std::string cacheDir;
  /// Skip the on-disk cache (always compile).
  bool disableCache = false;
  /// CUDA device ordinal.
  int cudaDevice = 0;
  /// cudaDevice is a launch's local rank: the device is that rank modulo
  /// the devices this process sees (each rank its own GPU of a node, or,
  /// where the launcher shows each rank one device, that one).
  bool cudaDeviceByRank = false;
  /// Host backend: the C++ compiler; empty means $MEMFIT_HOST_CXX, else the
  /// compiler memfit was built with.
  std::string hostCompiler;
  /// Host backend: worker threads for blocks and contractions (0:
  /// $MEMFIT_HOST_THREADS, else one per CPU the process may run on).
  unsigned hostThreads = 0;
  /// Threads for the host tasks (Kernel::onHost, the updates of
  /// --offload=optimizer), which run beside the device (0:
  /// $MEMFIT_HOST_TASK_THREADS, else on the host backend 1, beside the
  /// workers above, and on a GPU this rank's share of the CPUs but one,
  /// hostTaskCpus in HostWorkers.h). With `overlapHostTasks` false
  /// each runs in order, in the step (to measure what the overlap hides),
  /// and so does each collective, which otherwise runs on a thread of its
  /// own where the communicator allows (MPI serialized).
  unsigned hostTaskThreads = 0;
  bool overlapHostTasks = true;
  /// Time every step of a run (Session::stepProfile): on the host by
  /// waiting for each, on a GPU with CUDA events around each (a profiled
  /// entry is not replayed as a CUDA graph).
  bool profileSteps = false;
  /// CUDA backend: capture each entry as a CUDA graph at its second run and
  /// replay the graph from then on (one launch instead of one per step).
  /// Entries with collectives, and profiled sessions, launch step by step;
  /// so does an entry whose capture fails, and `warn` is told why.
  bool graphs = true;
  /// CUDA backend: f32 contractions may round their inputs to TF32 and run
  /// on tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32), as PyTorch's
  /// torch.backends.cuda.matmul.allow_tf32; off by default, as there.
  bool tf32 = false;
  /// Told about problems the session works around rather than fails on (a
  /// kernel cache it cannot create or write: kernels are compiled without
  /// it); null: they go unreported.
  std::function<void(const std::string &)> warn;
  /// Told how a long preparation goes (the host backend's compile, once it
  /// took two seconds: a line at each translation unit done); null: nothing.
  std::function<void(const std::string &)> progress;
  /// The collectives' communicator (memfit/runtime/Communicator.h): needed
  /// when the executable was compiled for more than one rank; null: one
  /// rank.
  std::shared_ptr<Communicator> communicator;
};

/// Whether a CUDA device can be used, and if not, why (no libcuda.so.1, no
/// device, driver too old, ...). Never aborts.
bool cudaUsable(std::string *whyNot);

/// Timings of the last prepare/run, for reports and benchmarks.
struct SessionTimings {
  double compileSeconds = 0; // NVRTC or host compiler (0 on a cache hit)
  bool cacheHit = false;
  double runSeconds = 0;     // last run(), synchronized
  bool graphReplayed = false; // the last run() replayed a CUDA graph
  /// Host kernels (Kernel::onHost) started over the session, and the
  /// seconds the steps after them (and reads and writes) waited for the
  /// host tasks' queue (those kernels and the copies of their results to
  /// the device): with SessionOptions::overlapHostTasks off, the seconds
  /// they took.
  uint64_t hostTasks = 0;
  double hostWaitSeconds = 0;
  /// The seconds steps and the end of each run waited for the collectives
  /// of several ranks that ran beside them (the host backend with MPI), or
  /// that the collectives took in the step.
  double collectiveWaitSeconds = 0;
  /// Copies of offloaded activations (Kernel::copyQueue) over the session,
  /// and the seconds the steps waited for them (with overlapHostTasks off,
  /// the seconds they took).
  uint64_t copies = 0;
  double copyWaitSeconds = 0;
  /// The steps wait for what runs beside them on the device (a GPU's
  /// streams wait for one another's events), not on the host: the wait
  /// seconds above are only the launching thread's.
  bool waitsOnDevice = false;
};

/// The time one step of an entry (a kernel or a contraction) took over the
/// runs of a session with SessionOptions::profileSteps: on the host, each
/// step waited for; on a GPU, timed by CUDA events around it.
struct StepTime {
  size_t entry = 0, step = 0;
  /// The kernel's or the contraction's name in the manifest.
  std::string name;
  bool contraction = false;
  /// A kernel with barriers (block reductions, shuffles).
  bool barriers = false;
  uint64_t calls = 0;
  double seconds = 0;
  /// A kernel in thread loops (Kernel::threadLoops): the host backend runs
  /// its blocks once each; one with barriers and without thread loops runs
  /// its blocks' threads as fibers.
  bool threadLoops = false;
  /// A collective of memfit-shard (data parallel).
  bool collective = false;
};

/// An executable loaded on one device: one allocation of
/// manifest.totalBytes(), weights uploaded, kernels compiled.
class Session {
public:
  virtual ~Session();

  /// Compiles (or loads from the cache) the kernels, allocates the arena
  /// and uploads the weights. On CUDA, fails up front with the plan's
  /// breakdown when the device lacks the memory.
  static StatusOr<std::unique_ptr<Session>>
  create(const Executable &executable, DeviceKind device,
         const SessionOptions &options = {});

  const Manifest &manifest() const;
  DeviceKind device() const;
  /// "host (N threads, g++ 12.2)", "NVIDIA H100 80GB HBM3 (sm_90)", ...
  std::string deviceDescription() const;
  /// Bytes of the one device allocation the session made.
  uint64_t allocatedBytes() const;
  /// The host region's bytes (optimizer states offloaded): host memory the
  /// session holds apart from the device allocation; 0 without one.
  uint64_t hostBytes() const;
  const SessionTimings &timings() const;
  /// Every step of every entry that ran, with its time, when the session
  /// was created with SessionOptions::profileSteps; else empty.
  std::vector<StepTime> stepProfile() const;

  /// Copies a tensor (or a view of one: the Python package's arrays) to the
  /// named input of the first entry that has one; dtype and shape must
  /// match.
  Status setInput(const std::string &name, const TensorView &tensor);
  /// Runs an entry's call sequence once and waits for it. Entries share the
  /// arena, so every input of `entry` must have been set since another
  /// entry last ran (running the same entry again on the same inputs is
  /// fine).
  Status run(const std::string &entry);
  /// Runs the only entry; an error names them when there are several.
  Status run();
  /// Copies back the named output of the first entry that has one; an error
  /// when another entry ran after it (and may have overwritten it).
  StatusOr<Tensor> getOutput(const std::string &name) const;

  /// The persistent tensors of the weights region (manifest().variables).
  const std::vector<Variable> &variables() const;
  StatusOr<Tensor> readVariable(const std::string &name) const;
  /// Overwrites a variable; dtype and shape must match.
  Status writeVariable(const std::string &name, const Tensor &tensor);

  /// Writes every variable except frozen parameters to one file (format in
  /// docs/runtime.md) through a temporary that is flushed to disk and
  /// renamed over `path`: a crash leaves the old file or the new one.
  Status saveCheckpoint(const std::string &path) const;
  /// Reads a checkpoint of saveCheckpoint and writes its variables. The
  /// whole file is checked against the manifest first (names, kinds,
  /// dtypes, shapes, sizes), so on error the session is unchanged.
  Status loadCheckpoint(const std::string &path);
  /// The same for a checkpoint read already (Checkpoint.h: readCheckpoint,
  /// reshardCheckpoint).
  Status loadCheckpoint(const CheckpointFile &checkpoint);

private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SESSION_H
