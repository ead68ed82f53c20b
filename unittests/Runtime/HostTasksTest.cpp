//===- HostTasksTest.cpp - host tasks beside the device's steps -----------===//
//
// The pieces of --offload=optimizer's runtime: HostTaskQueue runs tasks in
// order beside the caller and reports the first failure once;
// PendingHostTasks says which task a range of bytes waits for; SideQueues
// orders a side queue's task after another queue's in its queue and makes
// the device's steps wait; and a
// hand-written executable whose update is a host kernel (Kernel::onHost)
// that writes an fp32 master and its bf16 working copy in the host region,
// copied to the device by the next host task (Kernel::toDevice) and read
// by the next run's first step, is run through Session
// with the overlap on and off: every read sees the update, the working copy
// starts as (and is refreshed to) the master's rounding, and checkpoints
// leave it out. The manifest's rules for host kernels and working copies
// are checked for their messages.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "../../runtime/src/Half.h"
#include "../../runtime/src/Backend.h"
#include "../../runtime/src/HostTasks.h"
#include "../../runtime/src/HostWorkers.h"

#include "memfit/runtime/Checkpoint.h"
#include "memfit/runtime/Communicator.h"
#include "memfit/runtime/Session.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace memfit::rt::test {

namespace {

void testQueue() {
  HostTaskQueue queue;
  std::mutex mutex;
  std::vector<int> order;
  for (int i = 0; i < 3; ++i)
    queue.push([&, i] {
      // The first sleeps: the others still run after it.
      if (i == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(i);
      return Status::ok();
    });
  CHECK_OK(queue.waitFor(3));
  CHECK(order == (std::vector<int>{0, 1, 2}));
  CHECK(queue.finished() == 3);
  bool ranAfterFailure = false;
  queue.push([] { return invalidArgument("the update failed"); });
  queue.push([&] {
    ranAfterFailure = true;
    return Status::ok();
  });
  CHECK_ERROR(queue.waitFor(5), "the update failed");
  CHECK(!ranAfterFailure);
  CHECK(queue.finished() == 5);
  // Reported once.
  CHECK_OK(queue.waitFor(5));
}

void testPending() {
  PendingHostTasks pending;
  CHECK(pending.empty());
  pending.add(1, {{32, 48}, {0, 16}});
  pending.add(2, {{16, 32}, {20, 24}});
  CHECK(pending.mustFinish(40, 44) == 1);
  CHECK(pending.mustFinish(20, 24) == 2);
  CHECK(pending.mustFinish(10, 40) == 2);
  CHECK(pending.mustFinish(48, 64) == 0);
  CHECK(pending.mustFinish(15, 16) == 1);
  pending.dropFinished(1);
  CHECK(pending.mustFinish(40, 44) == 0);
  CHECK(pending.mustFinish(16, 17) == 2);
  pending.dropFinished(2);
  CHECK(pending.empty());
}

/// A backend that only records the side queues' waits and orderings.
class RecordingBackend final : public Backend {
public:
  std::string description() const override { return "recording"; }
  Status allocate(uint64_t) override { return Status::ok(); }
  uint64_t allocatedBytes() const override { return 0; }
  Status upload(uint64_t, const void *, uint64_t) override {
    return Status::ok();
  }
  Status download(uint64_t, void *, uint64_t) override { return Status::ok(); }
  Status prepareKernels(const Manifest &, const SessionOptions &,
                        SessionTimings &) override {
    return Status::ok();
  }
  Status launchKernel(uint32_t, const std::vector<uint64_t> &) override {
    return Status::ok();
  }
  Status runContraction(const Contraction &, uint64_t, uint64_t,
                        uint64_t) override {
    return Status::ok();
  }
  Status runCollective(const Collective &, uint64_t, uint64_t,
                       Communicator &) override {
    return Status::ok();
  }
  Status synchronize() override { return Status::ok(); }
  Status waitQueue(SideQueue queue, uint64_t count) override {
    calls.push_back("wait " + std::to_string(queue) + " " +
                    std::to_string(count));
    return Status::ok();
  }
  Status orderQueues(SideQueue waiter, SideQueue queue,
                     uint64_t count) override {
    calls.push_back("order " + std::to_string(waiter) + " after " +
                    std::to_string(queue) + " " + std::to_string(count));
    return Status::ok();
  }
  uint64_t queueFinished(SideQueue) const override { return 0; }

  std::vector<std::string> calls;
};

/// A step started on a side queue is ordered after the other queues'
/// tasks that touch its bytes, in its queue, and the steps' own waits for
/// those tasks are still owed; a step of the device's waits.
void testOrder() {
  RecordingBackend backend;
  SideQueues side;
  side.started(Copies, {{0, 16}});     // a gradient's copy to the host
  side.started(HostTasks, {{0, 16}, {64, 80}}); // the update that reads it
  // The next copy rewrites the copy's bytes: after the update, in its
  // queue (not after itself).
  CHECK_OK(side.waitTouching(backend, 8, 4, Copies, Copies));
  // A host task reading the copy: after it, in the host tasks' queue.
  CHECK_OK(side.waitTouching(backend, 0, 16, HostTasks, HostTasks));
  // The device's step reusing those bytes waits for both.
  CHECK_OK(side.waitTouching(backend, 0, 16));
  CHECK(backend.calls == (std::vector<std::string>{
                             "order 2 after 0 1", "order 0 after 2 1",
                             "wait 0 1", "wait 2 1"}));
}

/// A device backend's host task threads: the CPUs but one, shared by the
/// ranks on the machine unless bound apart; at least 1 always.
void testHostTaskCpus() {
  unsigned cpus = usableCpus();
  bool bound = cpus < std::thread::hardware_concurrency();
  ::unsetenv("LOCAL_WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  unsigned alone = hostTaskCpus();
  CHECK(alone == std::max(1u, cpus - 1));
  std::string many = std::to_string(cpus * 2);
  ::setenv("LOCAL_WORLD_SIZE", many.c_str(), 1);
  CHECK(hostTaskCpus() == (bound ? alone : 1u));
  ::setenv("LOCAL_WORLD_SIZE", "two", 1); // not a count: ignored
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", many.c_str(), 1);
  CHECK(hostTaskCpus() == (bound ? alone : 1u));
  ::unsetenv("LOCAL_WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

const char *kSource = R"cuda(
#ifndef MEMFIT_CUDA_HOST_H
#include <cuda_bf16.h>
#endif
extern "C" __global__ void device_read(const __nv_bfloat16* __restrict__ w,
                                       const float* __restrict__ x,
                                       float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 8) y[i] = __bfloat162float(w[i]) + x[i];
}
extern "C" __global__ void host_update(const float* master, float* updated,
                                       __nv_bfloat16* working) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 8) {
    float v = master[i] * 1.5f + 0.01f;
    updated[i] = v;
    working[i] = __float2bfloat16_rn(v);
  }
}
extern "C" __global__ void copy_up(const __nv_bfloat16* __restrict__ staged,
                                   __nv_bfloat16* __restrict__ working) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 8) working[i] = staged[i];
}
)cuda";

/// Buffers: the master w (f32 [8], host region, initialized by the blob's
/// tail), its working copy (bf16 [8], weights region), x and y (arena),
/// the new working copy staged in the host region. Steps: y = working + x
/// (the device), the host's update of the master in place and of the
/// staged copy, then the staged copy's copy to the device.
Executable hostExecutable() {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "hand-written host update";
  m.source = kSource;
  m.buffers = {f32("w", Region::Host, 0, {8}),
               Buffer{"w.working", Region::Weights, 0, 16, DType::bf16, {8}},
               f32("x", Region::Arena, 0, {8}),
               f32("y", Region::Arena, 256, {8}),
               Buffer{"staged", Region::Host, 256, 16, DType::bf16, {8}}};
  m.weightsBytes = 256;
  m.arenaBytes = 512;
  m.hostBytes = 512;
  m.initializedHostBytes = 32;
  m.kernels = {kernel("device_read", 1, 32, false),
               kernel("host_update", 1, 32, false),
               kernel("copy_up", 1, 32, false)};
  m.kernels[1].onHost = true;
  m.kernels[2].toDevice = true;
  m.entries = {{"main",
                {{StepKind::Kernel, 0, {1, 2, 3}},
                 {StepKind::Kernel, 1, {0, 0, 4}},
                 {StepKind::Kernel, 2, {4, 1}}},
                {{"x", 2}},
                {{"y", 3}}}};
  m.variables = {{"w", 0, VariableKind::Parameter},
                 {"w.working", 1, VariableKind::WorkingCopy, 0, "w"}};
  m.memory = {{"weights", m.weightsBytes}, {"arena", m.arenaBytes}};
  // The blob: no device bytes, then the master.
  e.weights.resize(32);
  for (int i = 0; i < 8; ++i) {
    float v = 0.1f + 0.37f * float(i);
    std::memcpy(e.weights.data() + i * 4, &v, 4);
  }
  return e;
}

float f32At(const Tensor &t, int i) {
  float v;
  std::memcpy(&v, t.data.data() + i * 4, 4);
  return v;
}

uint16_t bf16At(const Tensor &t, int i) {
  uint16_t v;
  std::memcpy(&v, t.data.data() + i * 2, 2);
  return v;
}

void testSession(bool overlap) {
  Executable e = hostExecutable();
  if (!CHECK_OK(e.manifest.validate()))
    return;
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-host-tasks";
  options.overlapHostTasks = overlap;
  StatusOr<std::unique_ptr<Session>> created =
      Session::create(e, DeviceKind::Host, options);
  if (!CHECK_OK(created.status()))
    return;
  Session &session = **created;
  std::vector<float> master(8), x(8);
  for (int i = 0; i < 8; ++i) {
    std::memcpy(&master[i], e.weights.data() + i * 4, 4);
    x[i] = float(i) * 0.5f;
  }
  // The working copy starts as the master's rounding.
  StatusOr<Tensor> working = session.readVariable("w.working");
  if (!CHECK_OK(working.status()))
    return;
  bool rounded = true;
  for (int i = 0; i < 8; ++i)
    rounded &= bf16At(*working, i) == floatToBf16(master[i]);
  CHECK(rounded);
  Tensor input = Tensor::zeros(DType::f32, {8});
  std::memcpy(input.data.data(), x.data(), 32);
  CHECK_OK(session.setInput("x", input));
  // Each run reads the working copy the last run's host update wrote.
  bool seen = true;
  for (int run = 0; run < 3; ++run) {
    if (!CHECK_OK(session.run()))
      return;
    StatusOr<Tensor> y = session.getOutput("y");
    if (!CHECK_OK(y.status()))
      return;
    for (int i = 0; i < 8; ++i) {
      seen &= f32At(*y, i) ==
              bf16ToFloat(floatToBf16(master[i])) + x[i];
      master[i] = master[i] * 1.5f + 0.01f;
    }
  }
  CHECK(seen);
  CHECK(session.timings().hostTasks == 3 && !session.timings().waitsOnDevice);
  StatusOr<Tensor> w = session.readVariable("w");
  if (CHECK_OK(w.status())) {
    bool updated = true;
    for (int i = 0; i < 8; ++i)
      updated &= f32At(*w, i) == master[i];
    CHECK(updated);
  }
  // Writing the master refreshes its working copy.
  Tensor fresh = Tensor::zeros(DType::f32, {8});
  for (int i = 0; i < 8; ++i) {
    float v = -1.0f / float(i + 3);
    std::memcpy(fresh.data.data() + i * 4, &v, 4);
  }
  CHECK_OK(session.writeVariable("w", fresh));
  working = session.readVariable("w.working");
  if (CHECK_OK(working.status())) {
    bool refreshed = true;
    for (int i = 0; i < 8; ++i)
      refreshed &= bf16At(*working, i) == floatToBf16(f32At(fresh, i));
    CHECK(refreshed);
  }
  // Checkpoints hold the master, not its working copy.
  std::string path = scratchDirectory() + "/host-tasks-" +
                     (overlap ? "overlap" : "in-step") + ".ckpt";
  CHECK_OK(session.saveCheckpoint(path));
  StatusOr<CheckpointFile> saved = readCheckpoint(path);
  if (CHECK_OK(saved.status()))
    CHECK(saved->variables.size() == 1 && saved->variables[0].name == "w");
  CHECK_OK(session.run());
}

/// A group of 2 that two "ranks" of the same values make: an all-reduce
/// sum doubles its input, slowly, on whatever thread calls it (recorded).
class TwinCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string description() const override { return "twin"; }
  Status run(const Collective &c, const void *in, void *out) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const float *x = static_cast<const float *>(in);
    float *y = static_cast<float *>(out);
    for (uint64_t i = 0; i < c.count; ++i)
      y[i] = 2 * x[i];
    std::lock_guard<std::mutex> lock(mutex);
    threads.push_back(std::this_thread::get_id());
    return Status::ok();
  }
  Status barrier() override { return Status::ok(); }
  bool runsOnAnyThread() const override { return true; }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

  std::mutex mutex;
  std::vector<std::thread::id> threads;
};

const char *kCollectiveSource = R"cuda(
extern "C" __global__ void add_one(const float* __restrict__ x,
                                   float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 8) y[i] = x[i] + 1.0f;
}
)cuda";

/// x -> g = x + 1 -> all-reduce sum (the twin: 2 g) -> y = 2 g + 1, with an
/// unrelated kernel h = x + 1 between the collective and its reader.
Executable collectiveExecutable() {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "hand-written collective";
  m.source = kCollectiveSource;
  auto arena = [](const char *name, uint64_t offset) {
    return f32(name, Region::Arena, offset, {8});
  };
  m.buffers = {arena("x", 0), arena("g", 256), arena("r", 512),
               arena("h", 768), arena("y", 1024)};
  m.weightsBytes = 0;
  m.arenaBytes = 1280;
  m.worldSize = 2;
  m.kernels = {kernel("add_one", 1, 32, false)};
  Collective sum;
  sum.name = "g_sum";
  sum.count = 8;
  sum.groupSize = 2;
  m.collectives = {sum};
  m.entries = {{"main",
                {{StepKind::Kernel, 0, {0, 1}},
                 {StepKind::Collective, 0, {1, 2}},
                 {StepKind::Kernel, 0, {0, 3}},
                 {StepKind::Kernel, 0, {2, 4}}},
                {{"x", 0}},
                {{"y", 4}, {"h", 3}}}};
  m.memory = {{"arena", m.arenaBytes}};
  return e;
}

void testCollectivesBeside(bool overlap) {
  Executable e = collectiveExecutable();
  if (!CHECK_OK(e.manifest.validate()))
    return;
  auto twin = std::make_shared<TwinCommunicator>();
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-host-tasks";
  options.communicator = twin;
  options.overlapHostTasks = overlap;
  StatusOr<std::unique_ptr<Session>> created =
      Session::create(e, DeviceKind::Host, options);
  if (!CHECK_OK(created.status()))
    return;
  Session &session = **created;
  Tensor x = Tensor::zeros(DType::f32, {8});
  for (int i = 0; i < 8; ++i) {
    float v = float(i) - 2.5f;
    std::memcpy(x.data.data() + i * 4, &v, 4);
  }
  CHECK_OK(session.setInput("x", x));
  for (int run = 0; run < 2; ++run)
    CHECK_OK(session.run());
  StatusOr<Tensor> y = session.getOutput("y");
  if (CHECK_OK(y.status())) {
    bool right = true;
    for (int i = 0; i < 8; ++i)
      right &= f32At(*y, i) == 2 * (f32At(x, i) + 1) + 1;
    CHECK(right);
  }
  // Beside the steps: on a thread of their own; in the step: on the
  // caller's. The reader waited for the sum either way.
  CHECK(twin->threads.size() == 2);
  bool caller = !twin->threads.empty() &&
                twin->threads[0] == std::this_thread::get_id();
  CHECK(caller == !overlap);
  // In the step, the steps' wait is what the collectives took (2 runs of
  // at least 30 ms).
  if (!overlap)
    CHECK(session.timings().collectiveWaitSeconds >= 0.06);
}

void testRules() {
  {
    Executable e = hostExecutable();
    // The device's step made a host kernel: it would read the arena late.
    e.manifest.kernels[0].onHost = true;
    CHECK_ERROR(e.manifest.validate(),
                "kernel 'device_read' runs on the host but reads or writes "
                "buffer 1 ('w.working') of the weights region, in device "
                "memory");
  }
  {
    Executable e = hostExecutable();
    e.manifest.variables[1].workingCopyOf = "v";
    CHECK_ERROR(e.manifest.validate(),
                "workingCopyOf 'v' is not a trainable parameter");
  }
  {
    Executable e = hostExecutable();
    e.manifest.variables[0].workingCopyOf = "w.working";
    CHECK_ERROR(e.manifest.validate(),
                "workingCopyOf, but it is a parameter, not a working_copy");
  }
  {
    Executable e = hostExecutable();
    e.manifest.buffers[1].shape = {2, 4};
    CHECK_ERROR(e.manifest.validate(), "with its f32 master's shape");
  }
  {
    Executable e = hostExecutable();
    e.manifest.initializedHostBytes = 1024;
    CHECK_ERROR(e.manifest.validate(),
                "initializedHostBytes 1024 exceeds hostBytes 512");
  }
  {
    // The host cannot write the device's working copy itself.
    Executable e = hostExecutable();
    e.manifest.entries[0].steps[1].buffers = {0, 0, 1};
    CHECK_ERROR(e.manifest.validate(),
                "kernel 'host_update' runs on the host but reads or writes "
                "buffer 1 ('w.working') of the weights region, in device "
                "memory");
  }
  {
    Executable e = hostExecutable();
    e.manifest.kernels[2].onHost = true;
    CHECK_ERROR(e.manifest.validate(),
                "('copy_up') is more than one of a host kernel, a copy "
                "queue's copy and a copy to the device");
  }
}

} // namespace

void runHostTasksTests() {
  testQueue();
  testPending();
  testOrder();
  testHostTaskCpus();
  testSession(/*overlap=*/true);
  testSession(/*overlap=*/false);
  testCollectivesBeside(/*overlap=*/true);
  testCollectivesBeside(/*overlap=*/false);
  testRules();
}

} // namespace memfit::rt::test
