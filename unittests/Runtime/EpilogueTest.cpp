//===- EpilogueTest.cpp - contraction epilogues through their fallbacks ---===//
//
// A contraction with an epilogue (Manifest.h: Epilogue) runs on a backend
// without one, the host's, as its fallback kernel and the contraction
// without it. A hand-written executable of a linear layer's forward with
// its bias (Bias) and its weight gradients with the bias gradient beside
// them (BiasGradB for x^T g, BiasGradA for g^T x), and the forward with
// its GELU (GeluAuxBias: the biased product and its GELU), is run through
// Session and checked against loops; the manifest's rules for epilogues
// are checked for their messages.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Session.h"

#include <cmath>
#include <cstring>

namespace memfit::rt::test {

namespace {

const char *kSource = R"cuda(
// out[r, :] = bias for the 4 rows of a [4, 6] output.
extern "C" __global__ void bias_rows(const float* __restrict__ bias,
                                     float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 24)
    out[i] = bias[i % 6];
}

// out = gelu(pre), the tanh approximation, over 24 elements.
extern "C" __global__ void gelu_tanh(const float* __restrict__ pre,
                                     float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 24) {
    float x = pre[i];
    out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
  }
}

// sums[c] = the sum of the 4 rows of g [4, 6] in column c.
extern "C" __global__ void column_sums(const float* __restrict__ g,
                                       float* __restrict__ sums) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < 6) {
    float s = 0.0f;
    for (int r = 0; r < 4; ++r)
      s += g[r * 6 + c];
    sums[c] = s;
  }
}
)cuda";

constexpr int64_t kRows = 4, kIn = 8, kOut = 6;

/// A packed contraction of `m`, `n`, `k` with an epilogue and its fallback.
Contraction linear(const char *name, int64_t m, int64_t n, int64_t k,
                   bool transA, Epilogue epilogue, uint32_t fallback) {
  Contraction c;
  c.name = name;
  c.m = m;
  c.n = n;
  c.k = k;
  c.transA = transA;
  c.epilogue = epilogue;
  c.fallbackKernel = fallback;
  c.setPackedLayout();
  return c;
}

/// Buffers: weights w [8, 6], bias [6]; arena x [4, 8] and g [4, 6]
/// (inputs), y [4, 6], dw [8, 6], db [6], dwT [6, 8], dbT [6] (outputs).
///   y = x w + bias                  Bias
///   dw = x^T g,  db = colsum(g)     BiasGradB
///   dwT = g^T x, dbT = colsum(g)    BiasGradA (the sums of op(A) = g^T)
Executable epilogueExecutable() {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "hand-written epilogues";
  m.source = kSource;
  m.buffers = {f32("w", Region::Weights, 0, {kIn, kOut}),
               f32("bias", Region::Weights, 256, {kOut}),
               f32("x", Region::Arena, 0, {kRows, kIn}),
               f32("g", Region::Arena, 256, {kRows, kOut}),
               f32("y", Region::Arena, 512, {kRows, kOut}),
               f32("dw", Region::Arena, 768, {kIn, kOut}),
               f32("db", Region::Arena, 1024, {kOut}),
               f32("dwT", Region::Arena, 1280, {kOut, kIn}),
               f32("dbT", Region::Arena, 1536, {kOut}),
               f32("pre", Region::Arena, 1792, {kRows, kOut}),
               f32("act", Region::Arena, 2048, {kRows, kOut})};
  m.weightsBytes = 512;
  m.arenaBytes = 2304;
  m.kernels = {kernel("bias_rows", 1, 32, false),
               kernel("column_sums", 1, 32, false),
               kernel("gelu_tanh", 1, 32, false)};

  Contraction forward =
      linear("x_w_bias", kRows, kOut, kIn, false, Epilogue::Bias, 0);
  Contraction weights =
      linear("xT_g", kIn, kOut, kRows, true, Epilogue::BiasGradB, 1);
  Contraction transposed =
      linear("gT_x", kOut, kIn, kRows, true, Epilogue::BiasGradA, 1);
  Contraction activated = forward;
  activated.name = "x_w_bias_gelu";
  activated.epilogue = Epilogue::GeluAuxBias;
  activated.activationKernel = 2;
  m.contractions = {forward, weights, transposed, activated};
  m.entries = {{"main",
                {{StepKind::Contraction, 0, {2, 0, 4, 1}},
                 {StepKind::Contraction, 1, {2, 3, 5, 6}},
                 {StepKind::Contraction, 2, {3, 2, 7, 8}},
                 {StepKind::Contraction, 3, {2, 0, 9, 1, 10}}},
                {{"x", 2}, {"g", 3}},
                {{"y", 4},
                 {"dw", 5},
                 {"db", 6},
                 {"dwT", 7},
                 {"dbT", 8},
                 {"pre", 9},
                 {"act", 10}}}};
  m.memory = {{"weights", m.weightsBytes}, {"arena", m.arenaBytes}};
  e.weights.assign(m.weightsBytes, 0);
  for (int i = 0; i < kIn * kOut + kOut; ++i) {
    float value = std::sin(float(i) * 0.7f);
    std::memcpy(&e.weights[(i < kIn * kOut ? 0 : 256 - kIn * kOut * 4) +
                           size_t(i) * 4],
                &value, 4);
  }
  return e;
}

float at(const Tensor &t, int64_t i) {
  float v;
  std::memcpy(&v, t.data.data() + i * 4, 4);
  return v;
}

Tensor sample(std::vector<int64_t> shape, float scale) {
  Tensor t = Tensor::zeros(DType::f32, shape);
  for (size_t i = 0; i < t.data.size() / 4; ++i) {
    float v = std::cos(float(i) * scale);
    std::memcpy(t.data.data() + i * 4, &v, 4);
  }
  return t;
}

void testFallbacks() {
  Executable e = epilogueExecutable();
  if (!CHECK_OK(e.manifest.validate()))
    return;
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-epilogue";
  StatusOr<std::unique_ptr<Session>> created =
      Session::create(e, DeviceKind::Host, options);
  if (!CHECK_OK(created.status()))
    return;
  Session &session = **created;
  Tensor x = sample({kRows, kIn}, 0.9f), g = sample({kRows, kOut}, 1.7f);
  CHECK_OK(session.setInput("x", x));
  CHECK_OK(session.setInput("g", g));
  // Twice: the bias is written again before the product accumulates.
  for (int run = 0; run < 2; ++run)
    CHECK_OK(session.run());
  Tensor w = Tensor::zeros(DType::f32, {kIn, kOut});
  std::memcpy(w.data.data(), e.weights.data(), w.data.size());
  auto bias = [&](int64_t j) {
    float v;
    std::memcpy(&v, e.weights.data() + 256 + j * 4, 4);
    return v;
  };
  StatusOr<Tensor> y = session.getOutput("y"), dw = session.getOutput("dw"),
                   db = session.getOutput("db"), dwT = session.getOutput("dwT"),
                   dbT = session.getOutput("dbT"), pre = session.getOutput("pre"),
                   act = session.getOutput("act");
  if (!CHECK_OK(y.status()) || !CHECK_OK(dw.status()) ||
      !CHECK_OK(db.status()) || !CHECK_OK(dwT.status()) ||
      !CHECK_OK(dbT.status()) || !CHECK_OK(pre.status()) ||
      !CHECK_OK(act.status()))
    return;
  double worst = 0;
  auto compare = [&](double got, double expected) {
    worst = std::max(worst, std::fabs(got - expected));
  };
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t j = 0; j < kOut; ++j) {
      double sum = bias(j);
      for (int64_t p = 0; p < kIn; ++p)
        sum += double(at(x, r * kIn + p)) * at(w, p * kOut + j);
      compare(at(*y, r * kOut + j), sum);
      // The same product kept as GELU's input, and its GELU.
      compare(at(*pre, r * kOut + j), sum);
      double x = at(*pre, r * kOut + j);
      compare(at(*act, r * kOut + j),
              0.5 * x *
                  (1.0 + std::tanh(0.7978845608028654 *
                                   (x + 0.044715 * x * x * x))));
    }
  for (int64_t i = 0; i < kIn; ++i)
    for (int64_t j = 0; j < kOut; ++j) {
      double sum = 0;
      for (int64_t r = 0; r < kRows; ++r)
        sum += double(at(x, r * kIn + i)) * at(g, r * kOut + j);
      compare(at(*dw, i * kOut + j), sum);
      compare(at(*dwT, j * kIn + i), sum);
    }
  for (int64_t j = 0; j < kOut; ++j) {
    double sum = 0;
    for (int64_t r = 0; r < kRows; ++r)
      sum += at(g, r * kOut + j);
    compare(at(*db, j), sum);
    compare(at(*dbT, j), sum);
  }
  CHECK(worst < 1e-5);
}

void testRules() {
  Executable good = epilogueExecutable();
  auto broken = [&](auto edit) {
    Executable e = good;
    edit(e.manifest);
    return e.manifest.validate();
  };
  CHECK_ERROR(broken([](Manifest &m) { m.contractions[0].beta = 1.0f; }),
              "contractions[0] ('x_w_bias'): epilogue bias with beta 1");
  CHECK_ERROR(
      broken([](Manifest &m) { m.contractions[1].fallbackKernel = kNoKernel; }),
      "contractions[1] ('xT_g'): epilogue bias_grad_b: fallback kernel "
      "missing");
  CHECK_ERROR(broken([](Manifest &m) { m.contractions[2].fallbackKernel = 5; }),
              "epilogue bias_grad_a: fallback kernel 5 out of range (3 "
              "kernels)");
  CHECK_ERROR(broken([](Manifest &m) { m.contractions[1].offsets[1] = 6; }),
              "epilogue bias_grad_b: the operand it sums is not packed at its "
              "buffer's start");
  CHECK_ERROR(broken([](Manifest &m) {
                Contraction &c = m.contractions[0];
                c.batchShape = {2};
                c.batchStridesA = {0};
                c.batchStridesB = {0};
                c.batchStridesOut = {24};
              }),
              "epilogue bias over a batch [2]");
  CHECK_ERROR(broken([](Manifest &m) { m.contractions[3].activationKernel = kNoKernel; }),
              "contractions[3] ('x_w_bias_gelu'): epilogue gelu_aux_bias: "
              "activation kernel missing");
  CHECK_ERROR(broken([](Manifest &m) { m.entries[0].steps[3].buffers.pop_back(); }),
              "expected 5 buffers {A, B, out, gelu_aux_bias, gelu}, got 4");
  CHECK_ERROR(broken([](Manifest &m) { m.entries[0].steps[0].buffers.pop_back(); }),
              "steps[0] (contraction 'x_w_bias'): expected 4 buffers {A, B, "
              "out, bias}, got 3");
  CHECK_ERROR(broken([](Manifest &m) {
                m.buffers[6].shape = {3};
                m.buffers[6].bytes = 12;
              }),
              "the bias_grad_b vector is buffer 6 ('db') of 3 f32 elements; "
              "the contraction needs 6 f32");
}

} // namespace

void runEpilogueTests() {
  testFallbacks();
  testRules();
}

} // namespace memfit::rt::test
