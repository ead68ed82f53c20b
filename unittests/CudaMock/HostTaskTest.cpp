//===- HostTaskTest.cpp - the host's kernels beside the fake GPU ----------===//
//
// --offload=optimizer's flow on the CUDA backend, on the FAKE driver: a
// device kernel copies a value into the host region (the gradient's
// to_host copy, "twice" emulated, on the copy stream), a host kernel
// (Kernel::onHost), ordered after it on the GPU, updates
// a master there and writes the new working copy there too, compiled by
// the host C++ compiler and run on the host's threads from the host-task
// stream's host function, and a device kernel (Kernel::toDevice) copies it
// to the device's working copy. The numbers show that the host kernel ran,
// once per run, on the pinned memory the device reaches.
//
//===----------------------------------------------------------------------===//

#include "CudaMockTest.h"

#include "memfit/runtime/Session.h"

#include <cstring>

namespace memfit::rt::test {

namespace {

/// "twice" as kTestKernels has it, and the update; kTestKernels itself
/// does not compile for the host (its "reverse" uses dynamic shared
/// memory, which the host's emulation leaves out).
const char *const kHostTaskKernels = R"cuda(
// y[i] = 2 * x[i] for i < n[0].
extern "C" __global__ void twice(float* y, const float* x,
                                 const long long* n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n[0])
    y[i] = 2.0f * x[i];
}

// The update: m -= g; the new working copy w = m.
extern "C" __global__ void update(float* m, float* w, const float* g) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 4) {
    m[i] = m[i] - g[i];
    w[i] = m[i];
  }
}
)cuda";

/// x (input, arena) -> g = 2x (host region, on the copy queue) ->
/// update(m, s, g) on the host -> w = 2s (the device's working copy), and
/// y = 2x on the device.
Executable hostTaskExecutable() {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "hand-written";
  m.source = kHostTaskKernels;
  m.buffers = {
      f32("w", Region::Weights, 0, {4}),
      Buffer{"count", Region::Weights, 256, 8, DType::i64, {1}},
      f32("x", Region::Arena, 0, {4}),
      f32("m", Region::Host, 0, {4}),
      f32("g", Region::Host, 256, {4}),
      f32("s", Region::Host, 512, {4}),
      f32("y", Region::Arena, 256, {4}),
      Buffer{"n", Region::Weights, 512, 8, DType::i64, {1}},
  };
  m.weightsBytes = 520;
  m.arenaBytes = 512;
  m.hostBytes = 768;
  m.initializedHostBytes = 16;
  Kernel toHost = testKernel("twice", 1, 32, 0);
  toHost.copyQueue = true;
  Kernel update = testKernel("update", 1, 32, 0);
  update.onHost = true;
  Kernel toDevice = testKernel("twice", 1, 32, 0);
  toDevice.toDevice = true;
  m.kernels = {toHost, update, toDevice, testKernel("twice", 1, 32, 0)};
  m.entries = {{"main",
                {{StepKind::Kernel, 0, {4, 2, 1}},
                 {StepKind::Kernel, 1, {3, 5, 4}},
                 {StepKind::Kernel, 2, {0, 5, 1}},
                 {StepKind::Kernel, 3, {6, 2, 7}}},
                {{"x", 2}},
                {{"y", 6}}}};
  m.variables = {{"w", 0, VariableKind::Parameter},
                 {"m", 3, VariableKind::Parameter}};
  m.memory = {{"weights", m.weightsBytes}, {"arena", m.arenaBytes}};
  e.weights.assign(m.weightsBytes + 16, 0);
  int64_t count = 4;
  std::memcpy(&e.weights[256], &count, 8);
  std::memcpy(&e.weights[512], &count, 8);
  const float masters[4] = {1, 2, 3, 4};
  std::memcpy(&e.weights[m.weightsBytes], masters, 16);
  return e;
}

/// Runs `runs` times with x = {1, 0.5, 0, -1}; m and w then hold
/// m0 - 2x * runs and 2m.
void checkRuns(Session &s, int runs, const char *where) {
  const float xs[4] = {1, 0.5f, 0, -1}, masters[4] = {1, 2, 3, 4};
  Tensor x = Tensor::zeros(DType::f32, {4});
  std::memcpy(x.data.data(), xs, sizeof xs);
  for (int run = 0; run < runs; ++run)
    if (!CHECK_OK(s.setInput("x", x)) || !CHECK_OK(s.run()))
      return;
  StatusOr<Tensor> m = s.readVariable("m"), w = s.readVariable("w");
  if (!CHECK_OK(m.status()) || !CHECK_OK(w.status()))
    return;
  bool ok = true;
  for (int i = 0; i < 4; ++i) {
    float expected = masters[i] - 2 * xs[i] * float(runs);
    ok &= m->as<float>()[i] == expected && w->as<float>()[i] == 2 * expected;
  }
  check(ok, __FILE__, __LINE__,
        std::string(where) + ": m = m0 - 2x a run, w = 2m after " +
            std::to_string(runs) + " runs");
}

} // namespace

void runCudaHostTaskTests() {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/kernel-cache";
  options.hostTaskThreads = 2;
  const Executable executable = hostTaskExecutable();

  // Beside the steps: the copy to the host on the copy stream, one host
  // function a run on the host-task stream, after an event of the step's
  // stream and the copy's, and its copy to the device after it there; no
  // graph (it would wait for the update).
  {
    emulateTwice();
    StatusOr<std::unique_ptr<Session>> s =
        Session::create(executable, DeviceKind::Cuda, options);
    if (CHECK_OK(s.status())) {
      checkRuns(**s, 3, "beside the steps");
      // Counted as host tasks; the GPU's streams did the waiting.
      CHECK((*s)->timings().hostTasks == 3 && (*s)->timings().waitsOnDevice);
      CHECK(mockcuda::calls("cuLaunchHostFunc") == 3);
      CHECK(mockcuda::calls("cuStreamCreate") == 3);
      CHECK(mockcuda::calls("cuStreamBeginCapture_v2") == 0);
      // The host-task stream waits for the step's twice a run (the update
      // and its copy); the step's stream waits for the host task only at
      // runs 2 and 3's first step, which rewrites the g the update read,
      // and where m is read: not at the end of a run.
      // A run: the copy and the host-task stream's two tasks each wait for
      // the step's stream (3), the update for the copy (1, on the GPU),
      // and the last step, which reads the x the copy read, for the copy
      // (1); from the second run the copy, which rewrites the g the last
      // update read, for the host-task stream (1). The step's stream waits
      // for the host tasks only where m is read, not at a run's end.
      CHECK(mockcuda::calls("cuStreamWaitEvent") == 5 + 6 + 6 + 1);
      s->reset();
    }
    expectClean("host kernels beside the steps");
  }

  // In the step's stream: the second run is a graph's capture, the host
  // function a node of the graph that the third run replays.
  {
    SessionOptions inStep = options;
    inStep.overlapHostTasks = false;
    emulateTwice();
    StatusOr<std::unique_ptr<Session>> s =
        Session::create(executable, DeviceKind::Cuda, inStep);
    if (CHECK_OK(s.status())) {
      checkRuns(**s, 3, "in the step's stream");
      CHECK(mockcuda::calls("cuLaunchHostFunc") == 2);
      CHECK(mockcuda::calls("cuStreamBeginCapture_v2") == 1);
      CHECK(mockcuda::calls("cuGraphLaunch") == 2);
      CHECK(mockcuda::calls("cuStreamCreate") == 1);
      s->reset();
    }
    expectClean("host kernels in the step's stream");
  }

  // A host kernel that fails fails the run, named; the tasks after it are
  // skipped.
  {
    Executable wrong = executable;
    wrong.manifest.entries[0].steps[1].buffers = {3, 5};
    emulateTwice();
    StatusOr<std::unique_ptr<Session>> s =
        Session::create(wrong, DeviceKind::Cuda, options);
    if (CHECK_OK(s.status())) {
      Tensor x = Tensor::zeros(DType::f32, {4});
      CHECK_OK((*s)->setInput("x", x));
      Status ran = (*s)->run();
      CHECK_ERROR(ran, "host kernel 'update': the kernel takes 3 parameters "
                       "but the step passes 2 buffers");
      s->reset();
    }
    expectClean("a host kernel failing");
  }

  // A host kernel whose buffer is in device memory is refused.
  {
    Executable onDevice = executable;
    onDevice.manifest.buffers[5].region = Region::Weights;
    onDevice.manifest.buffers[5].offset = 0;
    StatusOr<std::unique_ptr<Session>> s =
        Session::create(onDevice, DeviceKind::Cuda, options);
    CHECK_ERROR(s.status(), "kernel 'update' runs on the host but reads or "
                            "writes");
    expectClean("a host kernel on device memory");
  }
}

} // namespace memfit::rt::test
