//===- SessionTest.cpp - sessions on the host backend ---------------------===//
//
// A hand-written executable of kernel steps and batched contractions (with
// broadcast batch strides, transposes and beta), run through Session and
// checked against loops; inputs and outputs by name; the kernel cache.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Session.h"
#include "memfit/runtime/Summary.h"

#include <cmath>
#include <cstring>
#include <unistd.h>

namespace memfit::rt::test {

namespace {

const char *kSource = R"cuda(
// y = relu(y + bias[i % 6]) over 144 elements.
extern "C" __global__ void bias_relu(float* __restrict__ y,
                                     const float* __restrict__ bias) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 144)
    y[i] = fmaxf(y[i] + bias[i % 6], 0.0f);
}

// z = 1 everywhere (180 elements), for the beta of the next contraction.
extern "C" __global__ void fill_ones(float* __restrict__ z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 180)
    z[i] = 1.0f;
}

// s[row] = sum of the 5 values of z's row; one warp per row.
extern "C" __global__ void row_sum(float* __restrict__ s,
                                   const float* __restrict__ z) {
  unsigned lane = threadIdx.x;
  float v = lane < 5 ? z[blockIdx.x * 5 + lane] : 0.0f;
  for (int mask = 16; mask > 0; mask >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, mask);
  if (lane == 0)
    s[blockIdx.x] = v;
}
)cuda";

/// Buffers: weights w [6, 8] (used transposed), bias [6], v [3, 4, 5];
/// arena x [2, 3, 4, 8] (input), y [2, 3, 4, 6], z [2, 3, 6, 5] and
/// s [2, 3, 6] (outputs).
///   y = 0.5 * x @ w^T            batch [2, 3], w broadcast
///   y = relu(y + bias)
///   z = 1
///   z = 2 * y^T @ v + 0.25 * z   batch [2, 3], v broadcast over dim 0
///   s = rowsum(z)
Executable sampleExecutable() {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "hand-written";
  m.source = kSource;
  auto f32 = [](const char *name, Region region, uint64_t offset,
                std::vector<int64_t> shape) {
    uint64_t elements = 1;
    for (int64_t d : shape)
      elements *= uint64_t(d);
    return Buffer{name, region, offset, elements * 4, DType::f32, shape};
  };
  m.buffers = {
      f32("w", Region::Weights, 0, {6, 8}),
      f32("bias", Region::Weights, 256, {6}),
      f32("v", Region::Weights, 512, {3, 4, 5}),
      f32("x", Region::Arena, 0, {2, 3, 4, 8}),
      f32("y", Region::Arena, 768, {2, 3, 4, 6}),
      f32("z", Region::Arena, 1536, {2, 3, 6, 5}),
      f32("s", Region::Arena, 2304, {2, 3, 6}),
  };
  m.weightsBytes = 512 + 240;
  m.arenaBytes = 2304 + 256;

  m.kernels = {kernel("bias_relu", 3, 64, false),
               kernel("fill_ones", 2, 128, false),
               kernel("row_sum", 36, 32, true)};

  Contraction xw;
  xw.name = "x_wT";
  xw.m = 4;
  xw.n = 6;
  xw.k = 8;
  xw.transB = true;
  xw.alpha = 0.5f;
  xw.batchShape = {2, 3};
  xw.batchStridesA = {96, 32};
  xw.batchStridesB = {0, 0};
  Contraction yv;
  yv.name = "yT_v";
  yv.m = 6;
  yv.n = 5;
  yv.k = 4;
  yv.transA = true;
  yv.alpha = 2.0f;
  yv.beta = 0.25f;
  yv.batchShape = {2, 3};
  yv.batchStridesA = {72, 24};
  yv.batchStridesB = {0, 20};
  xw.setPackedLayout();
  yv.setPackedLayout();
  m.contractions = {xw, yv};

  m.entries = {{"main",
                {{StepKind::Contraction, 0, {3, 0, 4}},
                 {StepKind::Kernel, 0, {4, 1}},
                 {StepKind::Kernel, 1, {5}},
                 {StepKind::Contraction, 1, {4, 2, 5}},
                 {StepKind::Kernel, 2, {6, 5}}},
                {{"x", 3}},
                {{"z", 5}, {"s", 6}}}};
  m.memory = {{"weights", m.weightsBytes}, {"arena", m.arenaBytes}};

  e.weights.assign(m.weightsBytes, 0);
  auto fill = [&](uint64_t offset, size_t n, float scale) {
    for (size_t i = 0; i < n; ++i) {
      float value = std::sin(float(i) * scale);
      std::memcpy(&e.weights[offset + i * 4], &value, 4);
    }
  };
  fill(0, 48, 0.7f);
  fill(256, 6, 1.3f);
  fill(512, 60, 0.4f);
  return e;
}

/// The executable's outputs z and s, computed with loops.
void reference(const Executable &e, const Tensor &x, std::vector<double> &z,
               std::vector<double> &s) {
  auto weight = [&](uint64_t offset, size_t i) {
    float v;
    std::memcpy(&v, &e.weights[offset + i * 4], 4);
    return double(v);
  };
  const float *xv = x.as<float>();
  std::vector<double> y(144);
  for (int b = 0; b < 6; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) {
        double sum = 0;
        for (int k = 0; k < 8; ++k)
          sum += xv[b * 32 + i * 8 + k] * weight(0, j * 8 + k);
        double biased = float(0.5 * sum) + weight(256, j);
        y[b * 24 + i * 6 + j] = biased > 0 ? biased : 0;
      }
  z.assign(180, 0);
  for (int b0 = 0; b0 < 2; ++b0)
    for (int b1 = 0; b1 < 3; ++b1) {
      int b = b0 * 3 + b1;
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 5; ++j) {
          double sum = 0;
          for (int k = 0; k < 4; ++k)
            sum += y[b * 24 + k * 6 + i] * weight(512, b1 * 20 + k * 5 + j);
          z[b * 30 + i * 5 + j] = 2.0 * sum + 0.25;
        }
    }
  s.assign(36, 0);
  for (int r = 0; r < 36; ++r)
    for (int j = 0; j < 5; ++j)
      s[r] += z[r * 5 + j];
}

bool close(const Tensor &t, const std::vector<double> &expected) {
  if (t.numElements() != int64_t(expected.size()))
    return false;
  for (size_t i = 0; i < expected.size(); ++i)
    if (std::fabs(t.as<float>()[i] - expected[i]) >
        1e-4 * (1 + std::fabs(expected[i])))
      return false;
  return true;
}

/// Runs `session` on a random x and checks z and s.
void checkRun(Session &session, const Executable &e, uint64_t seed) {
  Tensor x = Tensor::zeros(DType::f32, {2, 3, 4, 8});
  fillRandom(x, seed, 0);
  if (!CHECK_OK(session.setInput("x", x)) || !CHECK_OK(session.run()))
    return;
  StatusOr<Tensor> z = session.getOutput("z");
  StatusOr<Tensor> s = session.getOutput("s");
  if (!CHECK_OK(z.status()) || !CHECK_OK(s.status()))
    return;
  std::vector<double> zExpected, sExpected;
  reference(e, x, zExpected, sExpected);
  CHECK(z->shape == std::vector<int64_t>({2, 3, 6, 5}) && close(*z, zExpected));
  CHECK(close(*s, sExpected));
  CHECK(session.timings().runSeconds > 0);
}

void testSession() {
  Executable e = sampleExecutable();
  if (!CHECK_OK(e.manifest.validate()))
    return;
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-session";
  options.hostThreads = 2;
  StatusOr<std::unique_ptr<Session>> created =
      Session::create(e, DeviceKind::Host, options);
  if (!CHECK_OK(created.status()))
    return;
  Session &session = **created;
  CHECK(session.device() == DeviceKind::Host);
  CHECK(std::string(deviceKindName(session.device())) == "host");
  CHECK(session.allocatedBytes() == e.manifest.totalBytes());
  CHECK(session.deviceDescription().find("host (2 threads, ") == 0);
  CHECK(!session.timings().cacheHit && session.timings().compileSeconds > 0);
  std::printf(
      "memfit-runtime-test: host compile of a small source took %.2f s\n",
      session.timings().compileSeconds);
  checkRun(session, e, 1);
  checkRun(session, e, 2); // a second run with other inputs

  // Inputs and outputs by name, with shapes checked.
  Tensor wrong = Tensor::zeros(DType::f32, {2, 3, 4, 7});
  CHECK_ERROR(session.setInput("x", wrong),
              "input 'x': expected 2x3x4x8xf32, got 2x3x4x7xf32");
  Tensor wrongType = Tensor::zeros(DType::f64, {2, 3, 4, 8});
  CHECK_ERROR(session.setInput("x", wrongType),
              "input 'x': expected 2x3x4x8xf32, got 2x3x4x8xf64");
  Status unknown = session.setInput("q", wrong);
  CHECK(unknown.code() == StatusCode::NotFound);
  CHECK_ERROR(unknown, "no input named 'q' (inputs: 'x')");
  CHECK_ERROR(session.getOutput("x").status(),
              "no output named 'x' (outputs: 'z', 's')");

  // The same executable again: a cache hit.
  StatusOr<std::unique_ptr<Session>> second =
      Session::create(e, DeviceKind::Host, options);
  if (CHECK_OK(second.status())) {
    CHECK((*second)->timings().cacheHit &&
          (*second)->timings().compileSeconds == 0);
    checkRun(**second, e, 3);
  }

  // Saved and loaded, with the cache off.
  std::string dir = scratchDirectory() + "/session-executable";
  if (CHECK_OK(saveExecutable(e, dir))) {
    StatusOr<Executable> loaded = loadExecutable(dir);
    options.disableCache = true;
    if (CHECK_OK(loaded.status())) {
      StatusOr<std::unique_ptr<Session>> third =
          Session::create(*loaded, DeviceKind::Host, options);
      if (CHECK_OK(third.status())) {
        CHECK(!(*third)->timings().cacheHit);
        checkRun(**third, *loaded, 4);
      }
    }
  }
}

/// SessionOptions::profileSteps: every step timed over the runs, the same
/// results, and the summary by kind and by op; without it, no profile.
void testStepProfile() {
  Executable e = sampleExecutable();
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-session";
  options.hostThreads = 2;
  StatusOr<std::unique_ptr<Session>> plain =
      Session::create(e, DeviceKind::Host, options);
  if (!CHECK_OK(plain.status()))
    return;
  checkRun(**plain, e, 5);
  CHECK((*plain)->stepProfile().empty());

  options.profileSteps = true;
  StatusOr<std::unique_ptr<Session>> created =
      Session::create(e, DeviceKind::Host, options);
  if (!CHECK_OK(created.status()))
    return;
  checkRun(**created, e, 6);
  checkRun(**created, e, 7);
  std::vector<StepTime> times = (*created)->stepProfile();
  if (!CHECK(times.size() == 5))
    return;
  const char *names[] = {"x_wT", "bias_relu", "fill_ones", "yT_v", "row_sum"};
  for (size_t i = 0; i < times.size(); ++i) {
    CHECK(times[i].entry == 0 && times[i].step == i);
    CHECK(times[i].name == names[i]);
    CHECK(times[i].calls == 2 && times[i].seconds > 0);
  }
  CHECK(times[0].contraction && times[3].contraction);
  CHECK(!times[1].contraction && !times[1].barriers && times[4].barriers);

  // Made-up times, so that the text is known: kernels "k<n>_<op>" are
  // grouped by op.
  Manifest m = e.manifest;
  m.kernels[0].name = "k3_add";
  m.kernels[1].name = "k7_add";
  m.kernels[2].name = "k9_layer_norm";
  std::vector<StepTime> made = {
      {0, 0, "x_wT", true, false, 4, 0.004},
      {0, 1, "k3_add", false, false, 4, 0.002},
      {0, 2, "k7_add", false, false, 4, 0.002},
      {0, 3, "yT_v", true, false, 4, 0.004},
      {0, 4, "k9_layer_norm", false, true, 4, 0.008, true}};
  std::string text = formatStepProfile(m, made, 2);
  CHECK(text.find("profile of entry 'main': 4 runs, 5.00 ms a run") == 0);
  CHECK(text.find("    contractions                       2 steps       "
                  "2.00 ms   40.0%") != std::string::npos);
  CHECK(text.find("    row kernels                        1 steps       "
                  "2.00 ms   40.0%") != std::string::npos);
  CHECK(text.find("    element-wise kernels               2 steps       "
                  "1.00 ms   20.0%") != std::string::npos);
  CHECK(text.find("fibers") == std::string::npos);
  CHECK(text.find("by op (the 2 largest of 3):") != std::string::npos);
  CHECK(text.find("    add                                2 steps       "
                  "1.00 ms   20.0%") == std::string::npos);
  CHECK(text.find("    contraction ") != std::string::npos);
  CHECK(text.find("    layer_norm ") != std::string::npos);
}

void testSessionErrors() {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-session";
  options.hostThreads = 1;
  Executable e = sampleExecutable();
  e.weights.push_back(0);
  CHECK_ERROR(Session::create(e, DeviceKind::Host, options).status(),
              "executable: weights has 753 bytes, more than the manifest's "
              "weightsBytes 752");
  e = sampleExecutable();
  e.manifest.entries[0].steps[0].buffers = {3, 0};
  CHECK_ERROR(Session::create(e, DeviceKind::Host, options).status(),
              "manifest: entries[0].steps[0] (contraction 'x_wT'): expected 3 "
              "buffers");

  // An executable compiled to plan only has no weights: it does not run
  // and is not saved.
  e = sampleExecutable();
  e.weights.clear();
  e.planOnly = true;
  CHECK_ERROR(Session::create(e, DeviceKind::Host, options).status(),
              "was compiled to plan only, without its weights");
  CHECK_ERROR(saveExecutable(e, scratchDirectory() + "/plan-only"),
              "the executable was compiled to plan only");
  CHECK(::access((scratchDirectory() + "/plan-only").c_str(), F_OK) != 0);

  // A plan that does not fit fails up front, with the plan's breakdown.
  e = sampleExecutable();
  e.manifest.arenaBytes = 1ull << 52;
  e.manifest.memory = {{"weights", 752}, {"activations", 1ull << 52}};
  Status tooBig = Session::create(e, DeviceKind::Host, options).status();
  CHECK(tooBig.code() == StatusCode::ResourceExhausted);
  CHECK_ERROR(tooBig, "(memory plan: weights 752 B, activations 4096.00 TiB; "
                      "4096.00 TiB in one allocation)");

  // Errors while running name the step.
  e = sampleExecutable();
  e.manifest.entries[0].steps[1].buffers = {4};
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(e, DeviceKind::Host, options);
  if (CHECK_OK(session.status()))
    CHECK_ERROR(
        (*session)->run(),
        "entry 'main': step 1 (kernel 'bias_relu'): the kernel takes 2 "
        "parameters but "
        "the step passes 1 buffers");
}

} // namespace

void runSessionTests() {
  testSession();
  testStepProfile();
  testSessionErrors();
}

} // namespace memfit::rt::test
