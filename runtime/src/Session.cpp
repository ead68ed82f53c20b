//===- Session.cpp - an executable loaded on a device ---------------------===//
//
// A session owns the manifest and drives the call sequence; the backend
// only moves bytes and runs kernels and contractions at offsets of its one
// allocation: weights at 0, the arena at manifest.arenaOffset().
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Session.h"

#include "memfit/runtime/Bytes.h"

#include "Backend.h"
#include "Half.h"
#include "HostTasks.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace memfit::rt {

Backend::~Backend() = default;
Status Backend::beginGraph() {
  return unavailable("this backend does not record graphs");
}
Status Backend::endGraph(size_t) { return beginGraph(); }
Status Backend::launchGraph(size_t) { return beginGraph(); }
Status Backend::markStep(size_t, size_t) {
  return unavailable("this backend does not time steps");
}
StatusOr<std::vector<double>> Backend::stepSeconds(size_t) {
  return unavailable("this backend does not time steps");
}

const char *deviceKindName(DeviceKind kind) {
  return kind == DeviceKind::Host ? "host" : "cuda";
}

struct Session::Impl {
  Manifest manifest;
  DeviceKind device = DeviceKind::Host;
  std::unique_ptr<Backend> backend;
  mutable SessionTimings timings;
  // Entries share the arena. A logical clock orders setInput and run so
  // that run() can tell an input another entry may have overwritten, and
  // getOutput an output that is stale: inputSetAt[entry][input] and
  // lastRunAt[entry] (0: never).
  uint64_t clock = 0;
  std::vector<std::vector<uint64_t>> inputSetAt;
  std::vector<uint64_t> lastRunAt;
  // With SessionOptions::profileSteps: seconds per step of each entry and
  // the entry's runs.
  bool profileSteps = false;
  std::vector<std::vector<double>> stepSeconds;
  std::vector<uint64_t> entryRuns;
  mutable std::vector<uint64_t> offsets; // runStep's, reused
  std::shared_ptr<Communicator> communicator; // the step's collectives
  // Graphs (Backend::beginGraph): each entry runs its steps one by one the
  // first time, is captured the second time and replayed from then on,
  // unless graphs are off for it.
  enum class Graph { FirstRun, Capture, Replay, Off };
  std::vector<Graph> graphs;
  std::function<void(const std::string &)> warn;

  /// Where the host region starts in the allocation's offsets (past the
  /// device's bytes; 0: none).
  uint64_t hostOffset = 0;

  // Host tasks (Backend::startHostKernel), collectives and copies that run
  // beside the steps, and the bytes of those not seen finish.
  mutable SideQueues side;

  /// What the side queues still hold (after a run that failed) ends before
  /// the communicator and the backend they use go.
  ~Impl() {
    if (backend)
      (void)waitForSideQueues();
  }

  /// Waits for the side queues' tasks that touch [offset, offset + bytes).
  Status waitForSideQueues(uint64_t offset, uint64_t bytes) const {
    return side.waitTouching(*backend, offset, bytes);
  }
  /// Waits for the side queues' tasks that touch the buffers of a step at
  /// `offsets`, but for those of its own queue `except`; with `waiter`, a
  /// step started on that queue, which the backend orders after them.
  Status waitForSideQueues(const Step &step, int except,
                           int waiter = -1) const {
    for (size_t i = 0; i < step.buffers.size(); ++i)
      MEMFIT_RT_RETURN_IF_ERROR(side.waitTouching(
          *backend, offsets[i], manifest.buffers[step.buffers[i]].bytes,
          except, waiter));
    return Status::ok();
  }
  Status waitForSideQueues() {
    MEMFIT_RT_RETURN_IF_ERROR(side.waitAll(*backend, HostTasks));
    MEMFIT_RT_RETURN_IF_ERROR(side.waitAll(*backend, Copies));
    return side.waitAll(*backend, Collectives);
  }
  /// Starts a step that `queue` runs beside the later ones, after the
  /// other queues' tasks that touch its bytes: `start` queues it (true) or
  /// runs it now (false). The call's time counts as the steps' wait for
  /// `queue`: all of a step run now, the enqueueing of one queued.
  Status startBeside(const Step &step, SideQueue queue,
                     const std::string &label,
                     const std::function<StatusOr<bool>()> &start) {
    // A host task or a copy waits in its queue, not in the steps; a
    // collective (which may run in the step) in the steps.
    MEMFIT_RT_RETURN_IF_ERROR(
        waitForSideQueues(step, queue, queue == Collectives ? -1 : queue)
            .withContext(label));
    auto begin = std::chrono::steady_clock::now();
    StatusOr<bool> queued = start();
    if (!queued)
      return queued.status().withContext(label);
    side.waitSeconds[queue] += std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() - begin)
                                   .count();
    if (*queued)
      side.started(queue, stepRanges(step));
    return Status::ok();
  }
  /// The step's buffers' bytes at `offsets`.
  std::vector<PendingHostTasks::Range> stepRanges(const Step &step) const {
    std::vector<PendingHostTasks::Range> ranges;
    for (size_t b = 0; b < offsets.size(); ++b)
      ranges.push_back(
          {offsets[b], offsets[b] + manifest.buffers[step.buffers[b]].bytes});
    return ranges;
  }
  /// Fills every working copy from its master (Variable::workingCopyOf),
  /// as the session starts.
  Status refreshWorkingCopies();
  /// Writes working copy `copy` from its master's values, converted as the
  /// update's cast converts.
  Status writeWorkingCopy(const Variable &copy, const float *master);

  /// Offset of a buffer in the one allocation.
  uint64_t offsetOf(uint32_t id) const {
    const Buffer &b = manifest.buffers[id];
    uint64_t start = b.region == Region::Weights ? 0
                     : b.region == Region::Host  ? hostOffset
                                                 : manifest.arenaOffset();
    return start + b.offset;
  }

  /// The first entry with a binding named `name` in `bindings` (inputs or
  /// outputs), and that binding's index; false when there is none.
  bool findBinding(std::vector<Binding> Entry::*bindings,
                   const std::string &name, size_t &entry,
                   size_t &binding) const {
    for (entry = 0; entry < manifest.entries.size(); ++entry) {
      const std::vector<Binding> &list = manifest.entries[entry].*bindings;
      for (binding = 0; binding < list.size(); ++binding)
        if (list[binding].name == name)
          return true;
    }
    return false;
  }

  /// "'x', 'mask'" over every entry, or "none".
  std::string bindingNames(std::vector<Binding> Entry::*bindings) const {
    std::string s;
    for (const Entry &e : manifest.entries)
      for (const Binding &b : e.*bindings)
        s += (s.empty() ? "'" : ", '") + b.name + "'";
    return s.empty() ? "none" : s;
  }

  std::string entryNames() const {
    std::string s;
    for (const Entry &e : manifest.entries)
      s += (s.empty() ? "'" : ", '") + e.name + "'";
    return s;
  }

  /// The entry other than `entry` that ran last, or -1.
  int lastOtherEntry(size_t entry) const {
    int last = -1;
    for (size_t f = 0; f < lastRunAt.size(); ++f)
      if (f != entry && lastRunAt[f] != 0 &&
          (last < 0 || lastRunAt[f] > lastRunAt[last]))
        last = static_cast<int>(f);
    return last;
  }

  StatusOr<const Variable *> variable(const std::string &name) const {
    if (const Variable *v = manifest.findVariable(name))
      return v;
    std::string names;
    for (size_t i = 0; i < manifest.variables.size() && i < 8; ++i)
      names += (i ? ", '" : "'") + manifest.variables[i].name + "'";
    if (manifest.variables.size() > 8)
      names += ", ... (" + std::to_string(manifest.variables.size()) + ")";
    return notFound("no variable named '" + name + "' (variables: " +
                    (names.empty() ? "none" : names) + ")");
  }

  Status runEntry(size_t index);
  /// Runs the entry's steps one by one, timing each with profileSteps.
  Status runSteps(size_t index, const std::string &where);
  /// Records the entry's steps as a graph and replays it; on failure the
  /// entry's graph is off, the reason is told to `warn` and the steps run
  /// one by one.
  Status captureAndReplay(size_t index, const std::string &where);
  Status runStep(const Entry &entry, size_t i, const std::string &where);
  Status runEpilogue(const Contraction &c, const std::string &context);
  Status checkIndexError(const std::string &where);
};

namespace {

/// "memory plan: weights 1.00 MiB, activations 3.50 MiB; 4.51 MiB in one
/// allocation", for a device that lacks the memory.
std::string planBreakdown(const Manifest &m, uint64_t workspace) {
  std::string s = "memory plan: ";
  if (m.memory.empty())
    s += "weights " + formatBytes(m.weightsBytes) + ", arena " +
         formatBytes(m.arenaBytes);
  for (size_t i = 0; i < m.memory.size(); ++i)
    s += (i ? ", " : "") + m.memory[i].name + " " +
         formatBytes(m.memory[i].bytes);
  if (workspace)
    return s + "; " + formatBytes(m.totalBytes()) +
           " and the cuBLASLt workspace's " + formatBytes(workspace) +
           " in one allocation";
  return s + "; " + formatBytes(m.totalBytes()) + " in one allocation";
}

} // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

namespace {

/// Refuses an integer input with a value outside what it indexes (a token id
/// past the vocabulary, a label past the classes): a kernel would read
/// outside its table.
Status checkInputRanges(const Manifest &m, const std::string &name,
                        const TensorView &tensor) {
  if (tensor.dtype != DType::i64 && tensor.dtype != DType::i32)
    return Status::ok();
  size_t count = tensor.bytes / dtypeSize(tensor.dtype);
  for (const InputRange &range : m.inputRanges) {
    if (range.name != name)
      continue;
    for (size_t i = 0; i < count; ++i) {
      int64_t v;
      if (tensor.dtype == DType::i64) {
        std::memcpy(&v, tensor.data + i * 8, 8);
      } else {
        int32_t v32;
        std::memcpy(&v32, tensor.data + i * 4, 4);
        v = v32;
      }
      if ((v >= range.low && v <= range.high) ||
          std::find(range.also.begin(), range.also.end(), v) !=
              range.also.end())
        continue;
      std::string allowed =
          std::to_string(range.low) + " to " + std::to_string(range.high);
      for (int64_t a : range.also)
        allowed += " or " + std::to_string(a);
      return invalidArgument("input '" + name + "': element " +
                             std::to_string(i) + " is " + std::to_string(v) +
                             ", outside " + range.what + ": valid values are " +
                             allowed);
    }
  }
  return Status::ok();
}

} // namespace

StatusOr<std::unique_ptr<Session>>
Session::create(const Executable &executable, DeviceKind device,
                const SessionOptions &options) {
  const Manifest &manifest = executable.manifest;
  MEMFIT_RT_RETURN_IF_ERROR(manifest.validate());
  if (executable.planOnly)
    return invalidArgument("executable of " + manifest.model +
                           " was compiled to plan only, without its weights; "
                           "compile it without planOnly to run it");
  if (executable.weights.size() >
          manifest.weightsBytes + manifest.initializedHostBytes ||
      executable.weights.size() < manifest.initializedHostBytes)
    return invalidArgument("executable: weights has " +
                           std::to_string(executable.weights.size()) +
                           " bytes, more than the manifest's weightsBytes " +
                           std::to_string(manifest.weightsBytes) +
                           " (or fewer than its initializedHostBytes " +
                           std::to_string(manifest.initializedHostBytes) +
                           ")");
  std::shared_ptr<Communicator> communicator = options.communicator;
  if (!communicator && manifest.worldSize == 1) {
    StatusOr<std::shared_ptr<Communicator>> self =
        createCommunicator(LaunchInfo{});
    if (!self)
      return self.status();
    communicator = std::move(*self);
  }
  if (!communicator || communicator->size() != manifest.worldSize)
    return invalidArgument(
        "executable of " + manifest.model + " was compiled for " +
        std::to_string(manifest.worldSize) +
        " ranks (data parallel, memfit-shard) but runs on " +
        (communicator ? std::to_string(communicator->size())
                      : std::string("one process without a communicator")) +
        ": launch it with mpirun -np " + std::to_string(manifest.worldSize));
  auto impl = std::make_unique<Impl>();
  impl->manifest = manifest;
  impl->communicator = std::move(communicator);
  impl->device = device;
  for (const Entry &e : manifest.entries)
    impl->inputSetAt.emplace_back(e.inputs.size(), 0);
  impl->lastRunAt.assign(manifest.entries.size(), 0);
  impl->profileSteps = options.profileSteps;
  if (options.profileSteps)
    for (const Entry &e : manifest.entries)
      impl->stepSeconds.emplace_back(e.steps.size(), 0.0);
  impl->entryRuns.assign(manifest.entries.size(), 0);
  StatusOr<std::unique_ptr<Backend>> backend = device == DeviceKind::Host
                                                   ? createHostBackend(options)
                                                   : createCudaBackend(options);
  if (!backend)
    return backend.status();
  impl->backend = std::move(*backend);
  Backend &b = *impl->backend;
  impl->warn = options.warn;
  impl->timings.waitsOnDevice = b.waitsOnDevice();
  // A profile waits for every step, and collectives run on the host between
  // steps: neither can be captured. Nor can the host's updates overlap the
  // steps after them in a graph, whose end waits for all it holds: they
  // run in a graph only where they run in the step anyway.
  for (const Entry &e : manifest.entries) {
    bool uncaptured =
        std::any_of(e.steps.begin(), e.steps.end(), [&](const Step &step) {
          return step.kind == StepKind::Collective ||
                 (step.kind == StepKind::Kernel &&
                  manifest.kernels[step.index].onHost &&
                  options.overlapHostTasks);
        });
    impl->graphs.push_back(options.graphs && b.recordsGraphs() &&
                                   !options.profileSteps && !uncaptured
                               ? Impl::Graph::FirstRun
                               : Impl::Graph::Off);
  }
  uint64_t workspace = b.workspaceBytes(manifest);
  uint64_t bytes = manifest.totalBytes() + workspace;
  if (manifest.hostBytes) {
    impl->hostOffset = (bytes + kBufferAlignment - 1) / kBufferAlignment *
                       kBufferAlignment;
    MEMFIT_RT_RETURN_IF_ERROR(
        b.placeHostRegion(impl->hostOffset, manifest.hostBytes));
    bytes = impl->hostOffset + manifest.hostBytes;
  }
  Status allocated = b.allocate(bytes);
  if (allocated.code() == StatusCode::ResourceExhausted)
    return Status::error(allocated.code(), allocated.message() + " (" +
                                               planBreakdown(manifest, workspace) + ")");
  MEMFIT_RT_RETURN_IF_ERROR(allocated);
  // The allocation starts zeroed (Backend::allocate), so the weights region
  // past the blob (optimizer states, accumulators, the step counter) starts
  // at zero.
  // The blob: the weights region's initialized prefix, then the host
  // region's (the masters of --offload=optimizer).
  const uint64_t hostPart = manifest.initializedHostBytes;
  const uint64_t devicePart = executable.weights.size() - hostPart;
  MEMFIT_RT_RETURN_IF_ERROR(b.upload(0, executable.weights.data(), devicePart));
  if (hostPart)
    MEMFIT_RT_RETURN_IF_ERROR(b.upload(
        impl->hostOffset, executable.weights.data() + devicePart, hostPart));
  MEMFIT_RT_RETURN_IF_ERROR(impl->refreshWorkingCopies());
  MEMFIT_RT_RETURN_IF_ERROR(
      b.prepareKernels(impl->manifest, options, impl->timings));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const Manifest &Session::manifest() const { return impl_->manifest; }
DeviceKind Session::device() const { return impl_->device; }
std::string Session::deviceDescription() const {
  return impl_->backend->description();
}
uint64_t Session::allocatedBytes() const {
  // The device's bytes: the host region is apart (hostBytes()).
  uint64_t bytes = impl_->backend->allocatedBytes();
  return impl_->hostOffset ? std::min(bytes, impl_->hostOffset) : bytes;
}
uint64_t Session::hostBytes() const { return impl_->manifest.hostBytes; }
const SessionTimings &Session::timings() const {
  impl_->timings.hostWaitSeconds =
      impl_->side.waitSeconds[HostTasks];
  impl_->timings.collectiveWaitSeconds =
      impl_->side.waitSeconds[Collectives];
  impl_->timings.copyWaitSeconds = impl_->side.waitSeconds[Copies];
  return impl_->timings;
}

Status Session::setInput(const std::string &name, const TensorView &tensor) {
  const Manifest &m = impl_->manifest;
  size_t entry, index;
  if (!impl_->findBinding(&Entry::inputs, name, entry, index))
    return notFound("no input named '" + name +
                    "' (inputs: " + impl_->bindingNames(&Entry::inputs) + ")");
  uint32_t id = m.entries[entry].inputs[index].buffer;
  const Buffer &buffer = m.buffers[id];
  if (tensor.dtype != buffer.dtype || tensor.shape != buffer.shape)
    return invalidArgument("input '" + name + "': expected " +
                           describe(buffer.dtype, buffer.shape) + ", got " +
                           describe(tensor.dtype, tensor.shape));
  if (tensor.bytes != buffer.bytes)
    return invalidArgument(
        "input '" + name + "': tensor " + describe(tensor.dtype, tensor.shape) +
        " has " + std::to_string(tensor.bytes) +
        " bytes of data, expected " + std::to_string(buffer.bytes));
  MEMFIT_RT_RETURN_IF_ERROR(checkInputRanges(m, name, tensor));
  MEMFIT_RT_RETURN_IF_ERROR(
      impl_->waitForSideQueues(impl_->offsetOf(id), buffer.bytes));
  MEMFIT_RT_RETURN_IF_ERROR(
      impl_->backend
          ->upload(impl_->offsetOf(id), tensor.data, buffer.bytes)
          .withContext("input '" + name + "'"));
  impl_->inputSetAt[entry][index] = ++impl_->clock;
  return Status::ok();
}

Status Session::run(const std::string &entry) {
  const Manifest &m = impl_->manifest;
  for (size_t i = 0; i < m.entries.size(); ++i)
    if (m.entries[i].name == entry)
      return impl_->runEntry(i);
  return notFound("no entry named '" + entry +
                  "' (entries: " + impl_->entryNames() + ")");
}

Status Session::run() {
  if (impl_->manifest.entries.size() != 1)
    return invalidArgument("the executable has several entries (" +
                           impl_->entryNames() + "): name the one to run");
  return impl_->runEntry(0);
}

Status Session::Impl::runEntry(size_t index) {
  const Entry &entry = manifest.entries[index];
  std::string where = "entry '" + entry.name + "'";
  int other = lastOtherEntry(index);
  for (size_t i = 0; other >= 0 && i < entry.inputs.size(); ++i) {
    const Binding &input = entry.inputs[i];
    if (manifest.buffers[input.buffer].region == Region::Arena &&
        inputSetAt[index][i] < lastRunAt[other])
      return invalidArgument(
          where + ": input '" + input.name + "' was not set since entry '" +
          manifest.entries[other].name +
          "' ran (entries share the arena: set every input of '" +
          entry.name + "' again)");
  }
  lastRunAt[index] = ++clock;
  auto start = std::chrono::steady_clock::now();
  timings.graphReplayed = false;
  switch (graphs[index]) {
  case Graph::Replay:
    MEMFIT_RT_RETURN_IF_ERROR(
        backend->launchGraph(index).withContext(where + ": its CUDA graph"));
    timings.graphReplayed = true;
    break;
  case Graph::Capture:
    MEMFIT_RT_RETURN_IF_ERROR(captureAndReplay(index, where));
    break;
  case Graph::FirstRun:
    MEMFIT_RT_RETURN_IF_ERROR(runSteps(index, where));
    graphs[index] = Graph::Capture;
    break;
  case Graph::Off:
    MEMFIT_RT_RETURN_IF_ERROR(runSteps(index, where));
    break;
  }
  // A run's collectives end with it: what the caller does with the
  // communicator next (the ranks agreeing to stop) comes after them.
  MEMFIT_RT_RETURN_IF_ERROR(
      side.waitAll(*backend, Collectives).withContext(where));
  MEMFIT_RT_RETURN_IF_ERROR(backend->synchronize());
  MEMFIT_RT_RETURN_IF_ERROR(checkIndexError(where));
  timings.runSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return Status::ok();
}

Status Session::Impl::runSteps(size_t index, const std::string &where) {
  const Entry &entry = manifest.entries[index];
  if (profileSteps && backend->timesSteps()) {
    // Timed on the device between marks: the steps still overlap their
    // launches.
    size_t n = entry.steps.size();
    for (size_t i = 0; i < n; ++i) {
      MEMFIT_RT_RETURN_IF_ERROR(backend->markStep(i, n));
      MEMFIT_RT_RETURN_IF_ERROR(runStep(entry, i, where));
    }
    MEMFIT_RT_RETURN_IF_ERROR(backend->markStep(n, n));
    StatusOr<std::vector<double>> seconds = backend->stepSeconds(n);
    if (!seconds)
      return seconds.status().withContext(where + ": its profile");
    for (size_t i = 0; i < n; ++i)
      stepSeconds[index][i] += (*seconds)[i];
    ++entryRuns[index];
    return Status::ok();
  }
  for (size_t i = 0; i < entry.steps.size(); ++i) {
    if (!profileSteps) {
      MEMFIT_RT_RETURN_IF_ERROR(runStep(entry, i, where));
      continue;
    }
    auto begin = std::chrono::steady_clock::now();
    MEMFIT_RT_RETURN_IF_ERROR(runStep(entry, i, where));
    MEMFIT_RT_RETURN_IF_ERROR(backend->synchronize());
    MEMFIT_RT_RETURN_IF_ERROR(waitForSideQueues());
    stepSeconds[index][i] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
            .count();
  }
  if (profileSteps)
    ++entryRuns[index];
  return Status::ok();
}

Status Session::Impl::captureAndReplay(size_t index, const std::string &where) {
  const Entry &entry = manifest.entries[index];
  Status captured = backend->beginGraph();
  for (size_t i = 0; captured.isOk() && i < entry.steps.size(); ++i) {
    captured = runStep(entry, i, where);
    if (!captured.isOk())
      backend->abandonGraph();
  }
  if (captured.isOk())
    captured = backend->endGraph(index);
  if (captured.isOk()) {
    graphs[index] = Graph::Replay;
    MEMFIT_RT_RETURN_IF_ERROR(
        backend->launchGraph(index).withContext(where + ": its CUDA graph"));
    timings.graphReplayed = true;
    return Status::ok();
  }
  // Nothing ran while capturing: the steps run now, one by one.
  graphs[index] = Graph::Off;
  if (warn)
    warn(where + " runs its " + std::to_string(entry.steps.size()) +
         " steps one by one, not as a CUDA graph: " + captured.message());
  return runSteps(index, where);
}

Status Session::Impl::runStep(const Entry &entry, size_t i,
                              const std::string &where) {
  const Step &step = entry.steps[i];
  offsets.clear();
  for (uint32_t id : step.buffers)
    offsets.push_back(offsetOf(id));
  const std::string label =
      where + ": step " + std::to_string(i) +
      (step.kind == StepKind::Kernel       ? " (kernel '" +
                                                 manifest.kernels[step.index].name
                 : step.kind == StepKind::Collective
                     ? " (collective '" + manifest.collectives[step.index].name
                     : " (contraction '" +
                           manifest.contractions[step.index].name) +
      "')";
  if (step.kind == StepKind::Kernel &&
      (manifest.kernels[step.index].onHost ||
       manifest.kernels[step.index].toDevice)) {
    timings.hostTasks += manifest.kernels[step.index].onHost;
    return startBeside(step, HostTasks, label, [&]() -> StatusOr<bool> {
      // A backend without the overlap runs it here.
      MEMFIT_RT_RETURN_IF_ERROR(backend->startHostKernel(step.index, offsets));
      return true;
    });
  }
  if (step.kind == StepKind::Collective)
    return startBeside(step, Collectives, label, [&] {
      return backend->startCollective(manifest.collectives[step.index],
                                      offsets[0], offsets[1], *communicator);
    });
  if (step.kind == StepKind::Kernel && manifest.kernels[step.index].copyQueue) {
    // An offloaded activation's copy to host memory or back.
    ++timings.copies;
    return startBeside(step, Copies, label, [&] {
      return backend->startCopyKernel(step.index, offsets);
    });
  }
  MEMFIT_RT_RETURN_IF_ERROR(waitForSideQueues(step, -1).withContext(label));
  if (step.kind == StepKind::Kernel)
    return backend->launchKernel(step.index, offsets).withContext(label);
  const Contraction &c = manifest.contractions[step.index];
  if (c.epilogue == Epilogue::None)
    return backend->runContraction(c, offsets[0], offsets[1], offsets[2])
        .withContext(label);
  return runEpilogue(c, label);
}

/// A contraction with an epilogue: the backend's, else the fallback kernel
/// and the contraction without it (Manifest.h, Epilogue).
Status Session::Impl::runEpilogue(const Contraction &c,
                                  const std::string &context) {
  StatusOr<bool> fused = backend->runContractionEpilogue(c, offsets);
  if (!fused)
    return fused.status().withContext(context);
  if (*fused)
    return Status::ok();
  const bool biased =
      c.epilogue == Epilogue::Bias || c.epilogue == Epilogue::GeluAuxBias;
  const uint64_t summed = c.epilogue == Epilogue::BiasGradA ? offsets[0]
                                                            : offsets[1];
  const std::vector<uint64_t> kernelOffsets =
      biased ? std::vector<uint64_t>{offsets[3], offsets[2]}
             : std::vector<uint64_t>{summed, offsets[3]};
  MEMFIT_RT_RETURN_IF_ERROR(
      backend->launchKernel(c.fallbackKernel, kernelOffsets)
          .withContext(context + ": its epilogue's kernel '" +
                       manifest.kernels[c.fallbackKernel].name + "'"));
  MEMFIT_RT_RETURN_IF_ERROR(
      backend
          ->runContraction(c.withoutEpilogue(), offsets[0], offsets[1],
                           offsets[2])
          .withContext(context));
  if (c.epilogue != Epilogue::GeluAuxBias)
    return Status::ok();
  return backend->launchKernel(c.activationKernel, {offsets[2], offsets[4]})
      .withContext(context + ": its epilogue's kernel '" +
                   manifest.kernels[c.activationKernel].name + "'");
}

/// Fails the run, after clearing the word, when a kernel recorded an index
/// out of range in the index-error word (Manifest::indexErrorBuffer).
Status Session::Impl::checkIndexError(const std::string &where) {
  if (manifest.indexErrorBuffer == kNoBuffer)
    return Status::ok();
  uint64_t at = offsetOf(manifest.indexErrorBuffer);
  MEMFIT_RT_RETURN_IF_ERROR(waitForSideQueues(at, sizeof(IndexError)));
  IndexError error;
  MEMFIT_RT_RETURN_IF_ERROR(backend->download(at, &error, sizeof(error))
                                .withContext(where + ": index-error word"));
  if (error.code == 0)
    return Status::ok();
  const IndexError cleared;
  MEMFIT_RT_RETURN_IF_ERROR(backend->upload(at, &cleared, sizeof(cleared))
                                .withContext(where + ": index-error word"));
  uint64_t kernel = error.code >> 32, check = (error.code & 0xffffffffu) - 1;
  if (kernel >= manifest.kernels.size() ||
      check >= manifest.kernels[kernel].indexChecks.size())
    return Status::error(StatusCode::Internal,
                         where + ": the index-error word holds code " +
                             std::to_string(error.code) +
                             ", which names no kernel's index check");
  const Kernel &k = manifest.kernels[kernel];
  return invalidArgument(where + ": kernel '" + k.name + "' found index " +
                         std::to_string(error.value) + " out of range: " +
                         k.indexChecks[check]);
}

std::vector<StepTime> Session::stepProfile() const {
  const Manifest &m = impl_->manifest;
  std::vector<StepTime> times;
  for (size_t e = 0; e < m.entries.size(); ++e) {
    if (impl_->entryRuns[e] == 0)
      continue;
    const std::vector<double> &seconds = impl_->stepSeconds[e];
    for (size_t i = 0; i < seconds.size(); ++i) {
      const Step &step = m.entries[e].steps[i];
      StepTime t;
      t.entry = e;
      t.step = i;
      bool kernel = step.kind == StepKind::Kernel;
      t.contraction = step.kind == StepKind::Contraction;
      t.collective = step.kind == StepKind::Collective;
      t.name = kernel          ? m.kernels[step.index].name
               : t.contraction ? m.contractions[step.index].name
                               : m.collectives[step.index].name;
      t.barriers = kernel && m.kernels[step.index].usesBarriers;
      t.threadLoops = kernel && m.kernels[step.index].threadLoops;
      t.calls = impl_->entryRuns[e];
      t.seconds = seconds[i];
      times.push_back(std::move(t));
    }
  }
  return times;
}

StatusOr<Tensor> Session::getOutput(const std::string &name) const {
  const Manifest &m = impl_->manifest;
  size_t entry, index;
  if (!impl_->findBinding(&Entry::outputs, name, entry, index))
    return notFound("no output named '" + name + "' (outputs: " +
                    impl_->bindingNames(&Entry::outputs) + ")");
  uint32_t id = m.entries[entry].outputs[index].buffer;
  const Buffer &buffer = m.buffers[id];
  int other = impl_->lastOtherEntry(entry);
  if (other >= 0 && buffer.region == Region::Arena &&
      impl_->lastRunAt[other] > impl_->lastRunAt[entry])
    return invalidArgument("output '" + name + "' of entry '" +
                           m.entries[entry].name + "': entry '" +
                           m.entries[other].name +
                           "' ran after it and may have overwritten it");
  Tensor tensor = Tensor::zeros(buffer.dtype, buffer.shape);
  MEMFIT_RT_RETURN_IF_ERROR(
      impl_->waitForSideQueues(impl_->offsetOf(id), buffer.bytes));
  MEMFIT_RT_RETURN_IF_ERROR(impl_->backend
                                ->download(impl_->offsetOf(id),
                                           tensor.data.data(), buffer.bytes)
                                .withContext("output '" + name + "'"));
  return tensor;
}

const std::vector<Variable> &Session::variables() const {
  return impl_->manifest.variables;
}

StatusOr<Tensor> Session::readVariable(const std::string &name) const {
  StatusOr<const Variable *> v = impl_->variable(name);
  if (!v)
    return v.status();
  const Buffer &buffer = impl_->manifest.buffers[(*v)->buffer];
  Tensor tensor = Tensor::zeros(buffer.dtype, buffer.shape);
  MEMFIT_RT_RETURN_IF_ERROR(impl_->waitForSideQueues(
      impl_->offsetOf((*v)->buffer), buffer.bytes));
  MEMFIT_RT_RETURN_IF_ERROR(impl_->backend
                                ->download(impl_->offsetOf((*v)->buffer),
                                           tensor.data.data(), buffer.bytes)
                                .withContext("variable '" + name + "'"));
  return tensor;
}

Status Session::writeVariable(const std::string &name, const Tensor &tensor) {
  StatusOr<const Variable *> v = impl_->variable(name);
  if (!v)
    return v.status();
  const Buffer &buffer = impl_->manifest.buffers[(*v)->buffer];
  if (tensor.dtype != buffer.dtype || tensor.shape != buffer.shape ||
      tensor.data.size() != buffer.bytes)
    return invalidArgument("variable '" + name + "': expected " +
                           describe(buffer.dtype, buffer.shape) + ", got " +
                           describe(tensor.dtype, tensor.shape) + " (" +
                           std::to_string(tensor.data.size()) + " bytes)");
  MEMFIT_RT_RETURN_IF_ERROR(
      impl_->waitForSideQueues(impl_->offsetOf((*v)->buffer), buffer.bytes));
  MEMFIT_RT_RETURN_IF_ERROR(
      impl_->backend
          ->upload(impl_->offsetOf((*v)->buffer), tensor.data.data(),
                   buffer.bytes)
          .withContext("variable '" + name + "'"));
  // Its working copies, from the values written.
  for (const Variable &copy : impl_->manifest.variables)
    if (copy.kind == VariableKind::WorkingCopy && copy.workingCopyOf == name)
      MEMFIT_RT_RETURN_IF_ERROR(
          impl_->writeWorkingCopy(copy, tensor.as<float>()));
  return Status::ok();
}

Status Session::Impl::refreshWorkingCopies() {
  for (const Variable &copy : manifest.variables) {
    if (copy.kind != VariableKind::WorkingCopy)
      continue;
    const Variable *from = manifest.findVariable(copy.workingCopyOf);
    const Buffer &in = manifest.buffers[from->buffer];
    std::vector<float> values(in.bytes / sizeof(float));
    MEMFIT_RT_RETURN_IF_ERROR(
        backend->download(offsetOf(from->buffer), values.data(), in.bytes)
            .withContext("working copy '" + copy.name + "'"));
    MEMFIT_RT_RETURN_IF_ERROR(writeWorkingCopy(copy, values.data()));
  }
  return Status::ok();
}

Status Session::Impl::writeWorkingCopy(const Variable &copy,
                                       const float *master) {
  const Buffer &out = manifest.buffers[copy.buffer];
  const size_t count = out.bytes / dtypeSize(out.dtype);
  std::vector<uint16_t> halves;
  const void *bytes = master;
  if (out.dtype != DType::f32) {
    halves.resize(count);
    for (size_t i = 0; i < count; ++i)
      halves[i] = out.dtype == DType::bf16 ? floatToBf16(master[i])
                                           : floatToHalf(master[i]);
    bytes = halves.data();
  }
  MEMFIT_RT_RETURN_IF_ERROR(waitForSideQueues(offsetOf(copy.buffer), out.bytes));
  return backend->upload(offsetOf(copy.buffer), bytes, out.bytes)
      .withContext("working copy '" + copy.name + "'");
}

} // namespace memfit::rt
