//===- SessionTest.cpp - whole sessions and CUDA graphs on the fake driver ===//
//
// A Session on the FAKE driver (MockCuda.h): the manifest's steps run
// through the CUDA backend, the kernel "twice" emulated on the host so that
// data flows through its parameters as on a GPU. Then CUDA graphs: an entry
// runs step by step once, is captured at its second run and replayed from
// then on; the fake records captured work and does it only at each
// cuGraphLaunch, so the outputs show that the graph ran, and ran with the
// inputs set since. Where capture fails the steps run one by one and the
// session's warn callback says why.
//
//===----------------------------------------------------------------------===//

#include "CudaMockTest.h"

#include "memfit/runtime/Session.h"

#include <cmath>
#include <cstring>

/// `text` (a std::string) contains `needle`; a failure shows both.
#define CHECK_CONTAINS(text, needle)                                           \
  ::memfit::rt::test::check(                                                   \
      (text).find(needle) != std::string::npos, __FILE__, __LINE__,            \
      "'" + (text) + "' contains '" + std::string(needle) + "'")

namespace memfit::rt::test {

Executable sessionExecutable() {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "hand-written";
  m.source = kTestKernels;
  m.buffers = {
      Buffer{"w", Region::Weights, 0, 48, DType::f32, {3, 4}},
      Buffer{"count", Region::Weights, 256, 8, DType::i64, {1}},
      Buffer{"x", Region::Arena, 0, 24, DType::f32, {2, 3}},
      Buffer{"h", Region::Arena, 256, 32, DType::f32, {2, 4}},
      Buffer{"y", Region::Arena, 512, 32, DType::f32, {2, 4}},
  };
  m.weightsBytes = 264;
  m.arenaBytes = 768;
  m.kernels = {testKernel("twice", 1, 32, 0)};
  Contraction xw;
  xw.name = "x_w";
  xw.m = 2;
  xw.n = 4;
  xw.k = 3;
  xw.setPackedLayout();
  m.contractions = {xw};
  m.entries = {{"main",
                {{StepKind::Contraction, 0, {2, 0, 3}},
                 {StepKind::Kernel, 0, {4, 3, 1}}},
                {{"x", 2}},
                {{"y", 4}}}};
  m.memory = {{"weights", m.weightsBytes}, {"arena", m.arenaBytes}};
  e.weights.assign(m.weightsBytes, 0);
  for (int i = 0; i < 12; ++i) {
    float value = 0.5f * float(i) - 2.0f;
    std::memcpy(&e.weights[i * 4], &value, 4);
  }
  int64_t count = 8;
  std::memcpy(&e.weights[256], &count, 8);
  return e;
}

namespace {

/// y of sessionExecutable for input x: 2 (x @ w).
bool outputMatches(Session &s, const float xs[6], const float *bias = nullptr,
                   double tolerance = 1e-5) {
  StatusOr<Tensor> y = s.getOutput("y");
  if (!CHECK_OK(y.status()))
    return false;
  bool ok = y->shape == std::vector<int64_t>({2, 4});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double sum = bias ? bias[j] : 0.0;
      for (int k = 0; k < 3; ++k)
        sum += double(xs[i * 3 + k]) * (0.5 * (k * 4 + j) - 2.0);
      ok &= std::fabs(y->as<float>()[i * 4 + j] - 2 * sum) < tolerance;
    }
  return ok;
}

/// Sets x to `scale` times a fixed pattern, runs, and checks y.
bool runWith(Session &s, float scale, const float *bias = nullptr,
             double tolerance = 1e-5) {
  float xs[6] = {1, -2, 0.5f, 3, 0.25f, -1};
  for (float &x : xs)
    x *= scale;
  Tensor x = Tensor::zeros(DType::f32, {2, 3});
  std::memcpy(x.data.data(), xs, sizeof xs);
  if (!CHECK_OK(s.setInput("x", x)) || !CHECK_OK(s.run()))
    return false;
  return outputMatches(s, xs, bias, tolerance);
}

/// A session on the fake device, "twice" emulated (expectClean resets it).
std::unique_ptr<Session> openSession(const Executable &executable,
                                     const SessionOptions &options) {
  emulateTwice();
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(executable, DeviceKind::Cuda, options);
  if (!CHECK_OK(session.status()))
    return nullptr;
  return std::move(*session);
}

/// Runs the session `runs` times, each with another input; checks every
/// output and returns the warnings.
std::vector<std::string> runSeveral(const Executable &executable,
                                    SessionOptions options, int runs,
                                    std::vector<bool> *replayed = nullptr) {
  std::vector<std::string> warnings;
  options.warn = [&](const std::string &w) { warnings.push_back(w); };
  std::unique_ptr<Session> s = openSession(executable, options);
  if (!s)
    return warnings;
  for (int run = 0; run < runs; ++run) {
    CHECK(runWith(*s, 1.0f + float(run)));
    if (replayed)
      replayed->push_back(s->timings().graphReplayed);
  }
  return warnings;
}

} // namespace

void runCudaSessionTests() {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/kernel-cache";
  const Executable executable = sessionExecutable();
  emulateTwice();
  {
    StatusOr<std::unique_ptr<Session>> session =
        Session::create(executable, DeviceKind::Cuda, options);
    if (CHECK_OK(session.status())) {
      Session &s = **session;
      CHECK(s.deviceDescription() == "Mock GPU A (sm_80, driver 13.0)");
      // The plan, then cuBLASLt's workspace: the largest contraction's
      // output in fp32 partial sums (2 x 4 x 4 bytes), in 256-byte units.
      CHECK(s.allocatedBytes() == 512 + 768 + 256);
      Tensor x = Tensor::zeros(DType::f32, {2, 3});
      const float xs[6] = {1, -2, 0.5f, 3, 0.25f, -1};
      std::memcpy(x.data.data(), xs, sizeof xs);
      CHECK_OK(s.setInput("x", x));
      CHECK_OK(s.run());
      CHECK(outputMatches(s, xs));
      CHECK(mockcublaslt::calls("cublasLtMatmul") == 1);
      CHECK(mockcuda::launches().size() == 1);
      // The fake's algorithm took the workspace it was offered (and wrote
      // over it first: the right output shows nothing else was there),
      // at the end of the allocation; f32 computes in f32 by default.
      if (CHECK(mockcublaslt::matmuls().size() == 1)) {
        const mockcublaslt::Matmul &mm = mockcublaslt::matmuls()[0];
        CHECK(mm.workspaceBytes == 32);
        CHECK(mm.workspace == mockcuda::lastAllocation() + 1280);
        CHECK(mm.computeType == 68); // CUBLAS_COMPUTE_32F
      }
    }
  }
  expectClean("session");

  // --tf32: f32 contractions on tensor cores.
  {
    SessionOptions tf32 = options;
    tf32.tf32 = true;
    StatusOr<std::unique_ptr<Session>> session =
        Session::create(executable, DeviceKind::Cuda, tf32);
    if (CHECK_OK(session.status())) {
      Tensor x = Tensor::zeros(DType::f32, {2, 3});
      CHECK_OK((*session)->setInput("x", x));
      CHECK_OK((*session)->run());
      if (CHECK(mockcublaslt::matmuls().size() == 1))
        CHECK(mockcublaslt::matmuls()[0].computeType ==
              77); // CUBLAS_COMPUTE_32F_FAST_TF32
    }
  }
  expectClean("session with tf32");

  // A plan the device cannot hold fails up front with its breakdown.
  mockcuda::setMemory(1000, 1 << 20);
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(executable, DeviceKind::Cuda, options);
  CHECK(session.status().code() == StatusCode::ResourceExhausted);
  CHECK_ERROR(session.status(), "the executable needs 1,536 bytes (1.50 KiB)");
  CHECK_ERROR(session.status(),
              "of device memory but Mock GPU A (device 0) has 1000 bytes free "
              "of 1,048,576 bytes (1.00 MiB) (memory plan: weights 264 B, "
              "arena 768 B; 1.25 KiB and the cuBLASLt workspace's 256 B in "
              "one allocation)");
  expectClean("session out of memory");
  mockcuda::reset();

  // --offload=optimizer's host region: the count that "twice" reads lives
  // in pinned host memory mapped for the device, outside the device's one
  // allocation; the session reads and writes it as a variable, and frees
  // it with the session.
  // A master m (f32 [4]) there too, initialized by the weights blob's tail,
  // and its bf16 working copy on the device, which the session fills from
  // it through the fake driver.
  Executable hosted = executable;
  hosted.manifest.buffers[1] =
      Buffer{"count", Region::Host, 256, 8, DType::i64, {1}};
  hosted.manifest.buffers.push_back(
      Buffer{"m", Region::Host, 0, 16, DType::f32, {4}});
  hosted.manifest.buffers.push_back(
      Buffer{"m.working", Region::Weights, 256, 8, DType::bf16, {4}});
  hosted.manifest.weightsBytes = 264;
  hosted.manifest.hostBytes = 512;
  hosted.manifest.initializedHostBytes = 16;
  hosted.manifest.variables = {
      {"count", 1, VariableKind::Counter},
      {"m", 5, VariableKind::Parameter},
      {"m.working", 6, VariableKind::WorkingCopy, 0, "m"}};
  hosted.weights.resize(48 + 16);
  const float masters[4] = {1.0f / 3, -2.5f, 1e-3f, 7.0f};
  std::memcpy(hosted.weights.data() + 48, masters, 16);
  {
    std::unique_ptr<Session> s = openSession(hosted, options);
    if (s) {
      Tensor count = Tensor::zeros(DType::i64, {1});
      *count.as<int64_t>() = 8;
      CHECK_OK(s->writeVariable("count", count));
      CHECK(runWith(*s, 1.0f));
      CHECK(runWith(*s, 2.0f)); // the second run is a graph's capture
      CHECK(mockcuda::calls("cuMemHostAlloc") == 1);
      CHECK(s->hostBytes() == 512);
      // The device holds the plan and the workspace, not the host region.
      CHECK(s->allocatedBytes() == 512 + 768 + 256);
      StatusOr<Tensor> back = s->readVariable("count");
      CHECK(back.isOk() && *back->as<int64_t>() == 8);
      StatusOr<Tensor> m = s->readVariable("m");
      CHECK(m.isOk() && std::memcmp(m->data.data(), masters, 16) == 0);
      StatusOr<Tensor> working = s->readVariable("m.working");
      if (CHECK(working.isOk())) {
        const uint16_t *halves = working->as<uint16_t>();
        // 1/3, -2.5, 1e-3 and 7 rounded to bf16 (to nearest, ties even).
        CHECK(halves[0] == 0x3eab && halves[1] == 0xc020 &&
              halves[2] == 0x3a83 && halves[3] == 0x40e0);
      }
    }
  }
  CHECK(mockcuda::calls("cuMemFreeHost") == 1);
  expectClean("session with a host region");
}


void runCudaGraphTests() {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/kernel-cache";
  const Executable executable = sessionExecutable();

  // Run 1 step by step, run 2 captured and replayed, runs 3 and 4 replayed:
  // each output is that run's input's, so the graph read the inputs set in
  // place and ran once per run.
  {
    std::vector<bool> replayed;
    std::vector<std::string> warnings =
        runSeveral(executable, options, 4, &replayed);
    CHECK(warnings.empty());
    CHECK(replayed == std::vector<bool>({false, true, true, true}));
    CHECK(mockcuda::calls("cuStreamBeginCapture_v2") == 1);
    CHECK(mockcuda::calls("cuGraphInstantiateWithFlags") == 1);
    CHECK(mockcuda::calls("cuGraphLaunch") == 3);
    CHECK(mockcuda::lastGraphNodes() == 2); // the contraction and the kernel
    // Every run did both steps once: captured ones only when launched.
    CHECK(mockcuda::launches().size() == 4);
    CHECK(mockcublaslt::calls("cublasLtMatmul") == 2); // runs 1 and 2
    CHECK(mockcublaslt::matmuls().size() == 4);
  }
  expectClean("graph replayed");

  // Off by option, and with a profile (which waits for every step).
  for (int way = 0; way < 2; ++way) {
    SessionOptions off = options;
    (way == 0 ? off.graphs : off.profileSteps) = way == 0 ? false : true;
    std::vector<bool> replayed;
    CHECK(runSeveral(executable, off, 3, &replayed).empty());
    CHECK(replayed == std::vector<bool>(3, false));
    CHECK(mockcuda::calls("cuStreamBeginCapture_v2") == 0);
    CHECK(mockcuda::launches().size() == 3);
    expectClean(way == 0 ? "graphs off" : "graphs off with a profile");
  }

  // A profile on the GPU: each step timed by CUDA events around it, without
  // waiting for it (the fake clock moves 2 ms a matmul, 0.5 ms a kernel).
  {
    mockcuda::setDurations(0.5, 2.0);
    SessionOptions profiled = options;
    profiled.profileSteps = true;
    std::unique_ptr<Session> s = openSession(executable, profiled);
    if (s) {
      int syncs = mockcuda::calls("cuStreamSynchronize");
      for (int run = 0; run < 3; ++run)
        CHECK(runWith(*s, 1.0f + float(run)));
      // Each run: 3 marks, and one wait at its end (not one per step), then
      // the outputs' downloads.
      CHECK(mockcuda::calls("cuEventRecord") == 9);
      CHECK(mockcuda::calls("cuEventElapsedTime") == 6);
      CHECK(mockcuda::calls("cuStreamSynchronize") - syncs <= 3 * 3);
      std::vector<StepTime> times = s->stepProfile();
      if (CHECK(times.size() == 2)) {
        CHECK(times[0].contraction && times[0].calls == 3 &&
              std::fabs(times[0].seconds - 6e-3) < 1e-9);
        CHECK(!times[1].contraction && times[1].name == "twice" &&
              std::fabs(times[1].seconds - 1.5e-3) < 1e-9);
      }
      s.reset();
    }
    mockcuda::setDurations(0, 0);
    expectClean("profile with events");
  }

  // A collective on the GPU: NCCL's communicator made at the first one (of
  // one rank here: the fake's), then each run's all-reduce on the stream;
  // an entry with a collective is not captured. y's mean over one rank is
  // y, written to z.
  {
    Executable reduced = executable;
    Manifest &m = reduced.manifest;
    m.buffers.push_back(
        Buffer{"z", Region::Arena, 768, 32, DType::f32, {2, 4}});
    m.arenaBytes = 1024;
    Collective mean;
    mean.name = "all_reduce_y";
    mean.kind = Collective::Kind::AllReduce;
    mean.reduction = Collective::Reduction::Mean;
    mean.count = 8;
    m.collectives = {mean};
    m.entries[0].steps.push_back({StepKind::Collective, 0, {4, 5}});
    m.entries[0].outputs.push_back({"z", 5});
    m.memory = {{"weights", m.weightsBytes}, {"arena", m.arenaBytes}};
    std::unique_ptr<Session> s = openSession(reduced, options);
    if (s) {
      for (int run = 0; run < 2; ++run) {
        CHECK(runWith(*s, 1.0f + float(run)));
        StatusOr<Tensor> y = s->getOutput("y"), z = s->getOutput("z");
        if (CHECK_OK(y.status()) && CHECK_OK(z.status()))
          CHECK(y->data == z->data);
      }
      CHECK(mocknccl::calls("ncclCommInitRank") == 1);
      CHECK(mocknccl::calls("ncclAllReduce") == 2);
      CHECK(mockcuda::calls("cuStreamBeginCapture_v2") == 0);
      // On a stream of its own: made once, each run's all-reduce after an
      // event of the step's stream, and the reader of z (getOutput's copy,
      // the end of the run) after the all-reduce's event.
      CHECK(mockcuda::calls("cuStreamCreate") == 2);
      CHECK(mockcuda::calls("cuStreamWaitEvent") == 4);
      s.reset();
    }
    expectClean("collective through NCCL");

    // Without the overlap: in the step's stream.
    SessionOptions inStep = options;
    inStep.overlapHostTasks = false;
    s = openSession(reduced, inStep);
    if (s) {
      CHECK(runWith(*s, 3.0f));
      StatusOr<Tensor> y = s->getOutput("y"), z = s->getOutput("z");
      if (CHECK_OK(y.status()) && CHECK_OK(z.status()))
        CHECK(y->data == z->data);
      CHECK(mockcuda::calls("cuStreamCreate") == 1);
      CHECK(mockcuda::calls("cuStreamWaitEvent") == 0);
      s.reset();
    }
    expectClean("collective through NCCL in the step's stream");

    // A copy kernel (an offloaded activation's, Kernel::copyQueue) runs on a
    // copy stream of its own after an event of the step's stream (its one
    // wait); its output is read after the run, which synchronized both
    // streams, with no other. The second run is a graph's capture, which
    // keeps the copy in the step's stream.
    Executable copied = executable;
    copied.manifest.kernels[0].copyQueue = true;
    s = openSession(copied, options);
    if (s) {
      for (int run = 0; run < 3; ++run)
        CHECK(runWith(*s, 1.0f + float(run)));
      CHECK(mockcuda::calls("cuStreamCreate") == 2);
      CHECK(mockcuda::calls("cuStreamWaitEvent") == 1);
      s.reset();
    }
    expectClean("a copy on the copy stream");

    // NCCL's failure names the collective, the device and the rank.
    s = openSession(reduced, options);
    if (s) {
      mocknccl::failNext("ncclCommInitRank", 2);
      Tensor x = Tensor::zeros(DType::f32, {2, 3});
      CHECK_OK(s->setInput("x", x));
      Status ran = s->run();
      CHECK_ERROR(ran, "step 2 (collective 'all_reduce_y'): collective "
                       "'all_reduce_y': Mock GPU A (device 0), rank 0 of 1");
      CHECK_ERROR(ran, "ncclCommInitRank failed: unhandled system error");
      s.reset();
    }
    expectClean("NCCL failing");
  }

  // A capture that fails at any of its calls: nothing is kept, the run's
  // steps run one by one (the output is still right), the warning says why
  // once, and no capture is tried again.
  struct Failure {
    const char *entry;
    int result;
    const char *message;
  };
  const Failure failures[] = {
      {"cuStreamBeginCapture_v2", 900,
       "cuStreamBeginCapture failed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
      {"cuStreamEndCapture", 901,
       "cuStreamEndCapture failed: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
      {"cuGraphInstantiateWithFlags", 2,
       "cuGraphInstantiateWithFlags failed: CUDA_ERROR_OUT_OF_MEMORY"},
      {"cuLaunchKernel", 1, "step 1 (kernel 'twice'): launching kernel"},
  };
  for (const Failure &failure : failures) {
    std::vector<std::string> warnings;
    SessionOptions warned = options;
    warned.warn = [&](const std::string &w) { warnings.push_back(w); };
    std::unique_ptr<Session> s = openSession(executable, warned);
    if (!s)
      continue;
    CHECK(runWith(*s, 1.0f));
    // The first run is not captured: the call fails during the second.
    mockcuda::failNext(failure.entry, failure.result);
    CHECK(runWith(*s, 2.0f));
    CHECK(runWith(*s, 3.0f));
    CHECK(!s->timings().graphReplayed);
    CHECK(mockcuda::calls("cuStreamBeginCapture_v2") == 1);
    CHECK(mockcuda::launches().size() == 3);
    if (CHECK(warnings.size() == 1)) {
      CHECK_CONTAINS(warnings[0], "entry 'main' runs its 2 steps one by one, "
                                  "not as a CUDA graph: ");
      CHECK_CONTAINS(warnings[0], failure.message);
    }
    s.reset();
    expectClean(failure.entry);
  }
}

/// A contraction with cuBLASLt's bias epilogue in a session: y = 2 (x @ w
/// + bias), run step by step and then as a CUDA graph. Where the fake
/// cuBLASLt has an algorithm for the epilogue the matmul adds the bias and
/// the fallback kernel never runs; where it has none the session launches
/// the fallback (the bias written into h's rows) and the product with beta
/// 1, captured into the graph as well. Both give the same outputs.
void runCudaEpilogueTests() {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/kernel-cache";
  Executable e = sessionExecutable();
  Manifest &m = e.manifest;
  static const std::string source = std::string(kTestKernels) + R"cuda(
extern "C" __global__ void bias_rows(const float* bias, float* out) {
  int i = threadIdx.x;
  if (i < 8)
    out[i] = bias[i % 4];
}
)cuda";
  m.source = source.c_str();
  m.buffers.push_back(
      Buffer{"bias", Region::Weights, 512, 16, DType::f32, {4}});
  m.weightsBytes = 528;
  m.memory = {{"weights", m.weightsBytes}, {"arena", m.arenaBytes}};
  e.weights.resize(m.weightsBytes, 0);
  const float bias[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  std::memcpy(&e.weights[512], bias, sizeof bias);
  m.kernels.push_back(testKernel("bias_rows", 1, 32, 0));
  m.contractions[0].epilogue = Epilogue::Bias;
  m.contractions[0].fallbackKernel = 1;
  m.entries[0].steps[0].buffers.push_back(5);
  if (!CHECK_OK(m.validate()))
    return;
  auto emulateBiasRows = [] {
    mockcuda::emulateKernel("bias_rows", [](const mockcuda::Launch &launch) {
      auto *b = static_cast<float *>(
          mockcuda::hostRange(launch.params[0], 16, "bias_rows: bias"));
      auto *out = static_cast<float *>(
          mockcuda::hostRange(launch.params[1], 32, "bias_rows: out"));
      if (b && out)
        for (int i = 0; i < 8; ++i)
          out[i] = b[i % 4];
    });
  };
  for (bool library : {true, false}) {
    mockcublaslt::setNoEpilogue(!library);
    // A cache of its own: cuBLASLt's choices are kept there
    // (CudaAlgoCache.cpp), and the other run's would be taken.
    options.cacheDir = scratchDirectory() +
                       (library ? "/epilogue-library" : "/epilogue-fallback");
    std::vector<std::string> warnings;
    options.warn = [&](const std::string &w) { warnings.push_back(w); };
    StatusOr<std::unique_ptr<Session>> created =
        Session::create(e, DeviceKind::Cuda, options);
    if (!CHECK_OK(created.status()))
      continue;
    Session &s = **created;
    emulateTwice(); // expectClean drops the emulations
    emulateBiasRows();
    for (int run = 0; run < 3; ++run)
      check(runWith(s, 1.0f + float(run), bias, 1e-4), __FILE__, __LINE__,
            std::string(library ? "cuBLASLt's" : "the fallback's") +
                " bias, run " + std::to_string(run));
    CHECK(s.timings().graphReplayed);
    // The kernel launches: "twice" each run, and "bias_rows" only without
    // the library's epilogue.
    size_t fallbacks = 0;
    for (const mockcuda::Launch &launch : mockcuda::launches())
      fallbacks += launch.kernel == "bias_rows";
    CHECK(fallbacks == (library ? 0u : 3u));
    // Said once, where the library has no algorithm for it.
    if (CHECK(warnings.size() == (library ? 0u : 1u)) && !library)
      CHECK_CONTAINS(warnings[0], "contraction 'x_w': cuBLASLt has no "
                                  "algorithm for its bias epilogue (f32 m=2 "
                                  "n=4 k=3); its fallback kernel runs");
    const std::vector<mockcublaslt::Matmul> &matmuls = mockcublaslt::matmuls();
    if (CHECK(!matmuls.empty()))
      CHECK(matmuls.back().epilogue == (library ? 4u : 1u) &&
            matmuls.back().beta == (library ? 0.0 : 1.0));
    created->reset();
    expectClean(library ? "bias epilogue" : "bias epilogue's fallback");
  }
}

} // namespace memfit::rt::test
