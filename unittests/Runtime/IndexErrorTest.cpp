//===- IndexErrorTest.cpp - indices out of range fail the run ------------===//
//
// A hand-written gather whose kernel records an index out of range in the
// index-error word (Manifest::indexErrorBuffer), as the generated kernels
// do: the run fails with the kernel's check message and the index, the word
// is cleared so that the next run with good indices succeeds, and the
// manifest's fields survive JSON and are validated.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Session.h"
#include "memfit/runtime/Tensor.h"

#include <cstring>

namespace memfit::rt::test {

namespace {

const char *kSource = R"cuda(
static __device__ __forceinline__ void memfit_index_error(unsigned long long* err, unsigned long long code, long long index) {
  if (atomicCAS(err, 0ull, code) == 0ull) err[1] = (unsigned long long)index;
}
// y[i] = table[ids[i]] over 8 ids into a table of 5; check 1 of kernel 0.
extern "C" __global__ void gather(const float* __restrict__ table,
                                  const long long* __restrict__ ids,
                                  float* __restrict__ y,
                                  unsigned long long* memfit_err) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 8) return;
  long long g = ids[i];
  if (g < -5LL || g >= 5LL) memfit_index_error(memfit_err, 0x1ull, g);
  if (g < 0) g += 5;
  y[i] = (g >= 0 && g < 5) ? table[g] : 0.0f;
}
)cuda";

/// Weights: table [5] and the index-error word; arena: ids [8], y [8].
Executable gatherExecutable() {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "hand-written";
  m.source = kSource;
  m.buffers = {{"table", Region::Weights, 0, 20, DType::f32, {5}},
               {"memfit.index_error", Region::Weights, 256, 16, DType::u64, {2}},
               {"ids", Region::Arena, 0, 64, DType::i64, {8}},
               {"y", Region::Arena, 256, 32, DType::f32, {8}}};
  m.weightsBytes = 272;
  m.arenaBytes = 512;
  Kernel k = kernel("gather", 1, 32, false);
  k.indexChecks = {"ONNX node 'g' (memfit.gather): an index into axis 0 of "
                   "the data (5) must be within [-5, 4]"};
  m.kernels = {k};
  m.indexErrorBuffer = 1;
  m.entries = {{"main", {{StepKind::Kernel, 0, {0, 2, 3, 1}}}, {{"ids", 2}},
                {{"y", 3}}}};
  e.weights.assign(20, 0);
  for (int i = 0; i < 5; ++i) {
    float v = float(10 * i);
    std::memcpy(&e.weights[i * 4], &v, 4);
  }
  return e;
}

Tensor ids(std::initializer_list<long long> values) {
  Tensor t = Tensor::zeros(DType::i64, {8});
  int i = 0;
  for (long long v : values)
    t.as<long long>()[i++] = v;
  return t;
}

void testIndexErrorRun() {
  Executable e = gatherExecutable();
  if (!CHECK_OK(e.manifest.validate()))
    return;
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-index-error";
  options.hostThreads = 2;
  StatusOr<std::unique_ptr<Session>> created =
      Session::create(e, DeviceKind::Host, options);
  if (!CHECK_OK(created.status()))
    return;
  Session &session = **created;
  CHECK_OK(session.setInput("ids", ids({0, 1, 2, 3, 4, -1, -5, 2})));
  CHECK_OK(session.run());
  StatusOr<Tensor> y = session.getOutput("y");
  if (CHECK_OK(y.status()))
    CHECK(y->as<float>()[5] == 40.0f && y->as<float>()[6] == 0.0f);
  // One bad index (several threads find bad ones: the first is kept).
  CHECK_OK(session.setInput("ids", ids({0, 1, 7, 3, 4, 0, 0, 0})));
  Status failed = session.run();
  CHECK(failed.code() == StatusCode::InvalidArgument);
  CHECK_ERROR(failed, "entry 'main': kernel 'gather' found index 7 out of "
                      "range: ONNX node 'g' (memfit.gather): an index into "
                      "axis 0 of the data (5) must be within [-5, 4]");
  // The word was cleared: good indices run again.
  CHECK_OK(session.setInput("ids", ids({4, 3, 2, 1, 0, -2, -3, -4})));
  CHECK_OK(session.run());
  CHECK_OK(session.setInput("ids", ids({-6, 0, 0, 0, 0, 0, 0, 0})));
  CHECK_ERROR(session.run(), "found index -6 out of range");
}

void testIndexErrorManifest() {
  Manifest m = gatherExecutable().manifest;
  StatusOr<Manifest> parsed = manifestFromJson(manifestToJson(m));
  if (CHECK_OK(parsed.status())) {
    CHECK(parsed->indexErrorBuffer == 1);
    CHECK(parsed->kernels[0].indexChecks == m.kernels[0].indexChecks);
  }
  Manifest none = m;
  none.indexErrorBuffer = kNoBuffer;
  CHECK_ERROR(none.validate(),
              "indexErrorBuffer: missing, and kernels check indices");
  Manifest arena = m;
  arena.indexErrorBuffer = 2;
  CHECK_ERROR(arena.validate(), "is not 16 aligned bytes of the weights");
  Manifest far = m;
  far.indexErrorBuffer = 9;
  CHECK_ERROR(far.validate(), "indexErrorBuffer: buffer 9 out of range");
  // Manifests without the fields (written before them) still load.
  none.kernels[0].indexChecks.clear();
  StatusOr<Manifest> old = manifestFromJson(manifestToJson(none));
  if (CHECK_OK(old.status()))
    CHECK(old->indexErrorBuffer == kNoBuffer &&
          old->kernels[0].indexChecks.empty());
}

} // namespace

void runIndexErrorTests() {
  testIndexErrorRun();
  testIndexErrorManifest();
}

} // namespace memfit::rt::test
