//===- ContractionTest.cpp - contractions on the fake cuBLASLt ------------===//
//
// The CUDA backend maps each row-major contraction (Manifest.h: out[b] =
// alpha * op(A[b]) x op(B[b]) + beta * out[b]) onto column-major
// cublasLtMatmul calls: operands swapped, one strided batch over the
// dimensions whose strides allow it and a loop over the rest, alignments
// promised to the heuristic, plans reused. Here the FAKE cuBLASLt
// (FakeCublasLt.cpp) computes exactly what cuBLASLt documents for those
// calls, and every result is compared with a row-major loop written from
// the manifest's definition, for f32, f64, f16 and bf16, transposes,
// broadcast and irregular batch strides, alpha and beta, k = 0 and empty
// batches. Error paths check their messages and that a failed plan leaves
// no cuBLASLt object behind.
//
//===----------------------------------------------------------------------===//

#include "CudaMockTest.h"

#include "Half.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <limits>
#include <random>

namespace memfit::rt::test {
namespace {

constexpr uint64_t kAllocation = 1 << 20;
constexpr uint64_t kA = 0, kB = 256 << 10, kOut = 512 << 10;

void encode(DType dtype, double value, uint8_t *p) {
  switch (dtype) {
  case DType::f32: {
    float v = float(value);
    std::memcpy(p, &v, 4);
    return;
  }
  case DType::f64:
    std::memcpy(p, &value, 8);
    return;
  case DType::f16:
  case DType::bf16: {
    uint16_t v = dtype == DType::f16 ? floatToHalf(float(value))
                                     : floatToBf16(float(value));
    std::memcpy(p, &v, 2);
    return;
  }
  default:
    return;
  }
}

double decode(DType dtype, const uint8_t *p) {
  switch (dtype) {
  case DType::f32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::f64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::f16:
  case DType::bf16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return dtype == DType::f16 ? halfToFloat(v) : bf16ToFloat(v);
  }
  default:
    return 0;
  }
}

/// How far a result may be from the double-precision reference: the
/// output's rounding (and f32 accumulation) relative to its magnitude.
double tolerance(DType dtype) {
  switch (dtype) {
  case DType::f64:
    return 1e-12;
  case DType::f16:
    return 2e-3;
  case DType::bf16:
    return 1e-2;
  default:
    return 1e-5;
  }
}

struct Case {
  Contraction c;
  uint64_t a = kA, b = kB, out = kOut; // offsets in the allocation
  int matmuls = 1;                     // cublasLtMatmul calls it takes
  int batchCount = 1;                  // the batch count of each
};

Case makeCase(const char *name, int64_t m, int64_t n, int64_t k, bool transA,
              bool transB, std::vector<int64_t> shape,
              std::vector<int64_t> stridesA, std::vector<int64_t> stridesB,
              int matmuls, int batchCount) {
  Case test;
  Contraction &c = test.c;
  c.name = name;
  c.m = m;
  c.n = n;
  c.k = k;
  c.transA = transA;
  c.transB = transB;
  c.batchShape = std::move(shape);
  c.batchStridesA = std::move(stridesA);
  c.batchStridesB = std::move(stridesB);
  c.setPackedLayout();
  test.matmuls = matmuls;
  test.batchCount = batchCount;
  return test;
}

/// Random operands (values the dtype holds exactly), NaN in the output when
/// beta is 0 (cuBLASLt must not read it), then the contraction, checked
/// against a row-major loop and for the number and size of its matmuls.
void runCase(Backend &backend, const Case &test, std::mt19937 &rng) {
  const Contraction &c = test.c;
  const size_t e = dtypeSize(c.dtype);
  int64_t count = 1, lastA = 0, lastB = 0;
  for (size_t i = 0; i < c.batchShape.size(); ++i) {
    count *= c.batchShape[i];
    if (c.batchShape[i] > 0) {
      lastA += (c.batchShape[i] - 1) * c.batchStridesA[i];
      lastB += (c.batchShape[i] - 1) * c.batchStridesB[i];
    }
  }
  // The elements each operand spans (packed when there is nothing to
  // compute, where a span is not defined).
  auto span = [&](Contraction::Operand o, int64_t packed) {
    bool empty = c.m == 0 || c.n == 0 || c.k == 0 || count == 0;
    return empty ? size_t(packed) : size_t(operandSpan(c, o));
  };
  auto fill = [&](size_t elements, bool nan) {
    std::vector<uint8_t> bytes(elements * e);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (size_t i = 0; i < elements; ++i)
      encode(c.dtype,
             nan ? std::numeric_limits<double>::quiet_NaN() : uniform(rng),
             &bytes[i * e]);
    return bytes;
  };
  std::vector<uint8_t> a = fill(span(Contraction::A, lastA + c.m * c.k), false);
  std::vector<uint8_t> b = fill(span(Contraction::B, lastB + c.k * c.n), false);
  std::vector<uint8_t> out =
      fill(span(Contraction::Out, count * c.m * c.n), c.beta == 0.0f);
  CHECK_OK(backend.upload(test.a, a.data(), a.size()));
  CHECK_OK(backend.upload(test.b, b.data(), b.size()));
  CHECK_OK(backend.upload(test.out, out.data(), out.size()));

  const size_t matmulsBefore = mockcublaslt::matmuls().size();
  if (!CHECK_OK(backend.runContraction(c, test.a, test.b, test.out)))
    return;
  std::vector<uint8_t> result(out.size());
  CHECK_OK(backend.download(test.out, result.data(), result.size()));

  auto at = [&](const std::vector<uint8_t> &bytes, int64_t index) {
    return decode(c.dtype, &bytes[size_t(index) * e]);
  };
  double worst = 0;
  std::vector<bool> written(out.size() / e, false);
  std::vector<int64_t> index(c.batchShape.size(), 0);
  for (int64_t batch = 0; batch < count; ++batch) {
    int64_t offsetA = c.offsets[0], offsetB = c.offsets[1],
            offsetOut = c.offsets[2];
    for (size_t d = 0; d < index.size(); ++d) {
      offsetA += index[d] * c.batchStridesA[d];
      offsetB += index[d] * c.batchStridesB[d];
      offsetOut += index[d] * c.batchStridesOut[d];
    }
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          // A is [m, k] ([k, m] if transA), B [k, n] ([n, k] if transB),
          // their rows ld apart.
          double av = at(a, offsetA + (c.transA ? p * c.ld[0] + i
                                                : i * c.ld[0] + p));
          double bv = at(b, offsetB + (c.transB ? j * c.ld[1] + p
                                                : p * c.ld[1] + j));
          sum += av * bv;
        }
        int64_t o = offsetOut + i * c.ld[2] + j;
        written[size_t(o)] = true;
        double expected = c.alpha * sum;
        if (c.beta != 0.0f)
          expected += double(c.beta) * at(out, o);
        double error =
            std::fabs(at(result, o) - expected) / (1.0 + std::fabs(expected));
        worst = std::isnan(error) ? INFINITY : std::max(worst, error);
      }
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < c.batchShape[d])
        break;
      index[d] = 0;
    }
  }
  // What the output's rows and matrices leave out keeps its bytes.
  bool kept = true;
  if (c.k > 0)
    for (size_t i = 0; i < written.size(); ++i)
      kept = kept && (written[i] ||
                      std::memcmp(&out[i * e], &result[i * e], e) == 0);
  check(kept, __FILE__, __LINE__,
        "contraction '" + c.name + "' wrote outside its output's matrices");
  check(worst <= tolerance(c.dtype), __FILE__, __LINE__,
        "contraction '" + c.name + "' (" + dtypeName(c.dtype) +
            "): relative error " + std::to_string(worst));

  const std::vector<mockcublaslt::Matmul> &matmuls = mockcublaslt::matmuls();
  check(matmuls.size() - matmulsBefore == size_t(test.matmuls), __FILE__,
        __LINE__,
        "contraction '" + c.name +
            "': " + std::to_string(matmuls.size() - matmulsBefore) +
            " cublasLtMatmul calls, expected " + std::to_string(test.matmuls));
  for (size_t i = matmulsBefore; i < matmuls.size(); ++i)
    check(matmuls[i].batchCount == test.batchCount, __FILE__, __LINE__,
          "contraction '" + c.name + "': batch count " +
              std::to_string(matmuls[i].batchCount) + ", expected " +
              std::to_string(test.batchCount));
}

/// The cuBLASLt objects alive, as one comparable value.
std::vector<int> liveLt() {
  mockcublaslt::Live live = mockcublaslt::live();
  return {live.handles, live.descs, live.layouts, live.preferences};
}

void testErrors(Backend &backend) {
  auto plain = [](const char *name) {
    return makeCase(name, 3, 4, 5, false, false, {}, {}, {}, 1, 1).c;
  };
  Contraction c = plain("int");
  c.dtype = DType::i64;
  Status status = backend.runContraction(c, kA, kB, kOut);
  CHECK(status.code() == StatusCode::InvalidArgument);
  CHECK_ERROR(status, "contraction 'int': dtype i64 is not supported on CUDA "
                      "(cuBLASLt contractions take f32, f16, bf16 or f64)");

  c = plain("too_big");
  c.m = c.n = c.k = 4096;
  c.setPackedLayout();
  CHECK_ERROR(backend.runContraction(c, kA, kB, kOut),
              "contraction 'too_big': operand A of 67108864 bytes at offset "
              "0 is outside the allocation of 1048576 bytes");
  c = plain("late_out");
  CHECK_ERROR(backend.runContraction(c, kA, kB, kAllocation - 16),
              "contraction 'late_out': the output of 48 bytes at offset");
  c = plain("rank");
  c.batchShape = {2, 3};
  c.batchStridesA = {15};
  c.batchStridesB = {20, 0};
  c.batchStridesOut = {12, 0};
  CHECK_ERROR(backend.runContraction(c, kA, kB, kOut),
              "contraction 'rank': batch strides do not match the batch "
              "rank 2");
  c = plain("negative");
  c.k = -1;
  CHECK_ERROR(backend.runContraction(c, kA, kB, kOut),
              "contraction 'negative': negative dimension");
  c = plain("negative_stride");
  c.batchShape = {2};
  c.batchStridesA = {-15};
  c.batchStridesB = {20};
  c.batchStridesOut = {12};
  CHECK_ERROR(backend.runContraction(c, kA, kB, kOut),
              "negative batch size or stride");
  c = plain("k0");
  c.k = 0;
  c.beta = 0.5f;
  CHECK_ERROR(backend.runContraction(c, kA, kB, kOut),
              "contraction 'k0': k = 0 with beta other than 0 or 1");

  // cuBLASLt failures: each leaves no half-made plan behind.
  std::vector<int> before = liveLt();
  mockcublaslt::setNoAlgorithm(true);
  c = makeCase("nothing", 3, 4, 5, false, true, {2, 3}, {45, 15}, {60, 20}, 1,
               6)
          .c;
  status = backend.runContraction(c, kA, kB, kOut);
  CHECK(status.code() == StatusCode::Internal);
  CHECK_ERROR(status, "contraction 'nothing': cuBLASLt has no algorithm for "
                      "f32 m=3 n=4 k=5 transB batch=6 without workspace");
  mockcublaslt::setNoAlgorithm(false);
  CHECK(liveLt() == before);
  mockcublaslt::failNext("cublasLtMatmulPreferenceSetAttribute", 7);
  CHECK_ERROR(backend.runContraction(c, kA, kB, kOut),
              "contraction 'nothing': cublasLtMatmulPreferenceSetAttribute "
              "failed: CUBLAS_STATUS_INVALID_VALUE (7)");
  CHECK(liveLt() == before);
  mockcublaslt::failNext("cublasLtMatrixLayoutSetAttribute", 7);
  CHECK_ERROR(backend.runContraction(c, kA, kB, kOut),
              "cublasLtMatrixLayoutSetAttribute failed");
  CHECK(liveLt() == before);
  mockcublaslt::failNext("cublasLtMatmulAlgoGetHeuristic", 15);
  CHECK_ERROR(backend.runContraction(c, kA, kB, kOut),
              "cublasLtMatmulAlgoGetHeuristic failed: "
              "CUBLAS_STATUS_NOT_SUPPORTED (15)");
  CHECK(liveLt() == before);
  // The plan is made once it can be.
  CHECK_OK(backend.runContraction(c, kA, kB, kOut));
  CHECK(liveLt() != before);

  // A failing matmul on a plan that exists.
  c = plain("fails");
  CHECK_OK(backend.runContraction(c, kA, kB, kOut));
  mockcublaslt::failNext("cublasLtMatmul", 13);
  status = backend.runContraction(c, kA, kB, kOut);
  CHECK(status.code() == StatusCode::Internal);
  CHECK_ERROR(status, "contraction 'fails': cublasLtMatmul failed: "
                      "CUBLAS_STATUS_EXECUTION_FAILED (13): an error (fake "
                      "cuBLASLt)");
  expectNoViolations("contraction errors");
}

/// Random operands of the epilogue cases (m 5, n 7, k 3) uploaded: A and B
/// of 15 and 21 elements, and a vector of 7 at `vector`.
std::array<std::vector<uint8_t>, 3> uploadOperands(Backend &backend,
                                                   DType dtype,
                                                   std::mt19937 &rng,
                                                   uint64_t vector) {
  const size_t bytes = dtypeSize(dtype);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::array<std::vector<uint8_t>, 3> operands;
  const size_t sizes[3] = {15, 21, 7};
  const uint64_t at[3] = {kA, kB, vector};
  for (int o = 0; o < 3; ++o) {
    operands[o].resize(sizes[o] * bytes);
    for (size_t i = 0; i < sizes[o]; ++i)
      encode(dtype, uniform(rng), &operands[o][i * bytes]);
    CHECK_OK(backend.upload(at[o], operands[o].data(), operands[o].size()));
  }
  return operands;
}

/// Epilogues (Manifest.h): the bias added to every row, and a linear
/// layer's bias gradient as the sums over k of op(A) or op(B), in f32 and
/// bf16 with every transpose, checked against loops; the cuBLASLt epilogue
/// each maps to; false with nothing run where cuBLASLt has no algorithm for
/// it, asked once; the vector's range.
void testEpilogues(Backend &backend, uint64_t base, std::mt19937 &rng) {
  constexpr uint64_t kVector = 768 << 10;
  const Epilogue epilogues[] = {Epilogue::Bias, Epilogue::BiasGradA,
                                Epilogue::BiasGradB};
  const uint32_t expected[] = {4, 512, 256}; // BIAS, BGRADB, BGRADA
  for (DType dtype : {DType::f32, DType::bf16})
    for (int e = 0; e < 3; ++e)
      for (int transA = 0; transA < 2; ++transA)
        for (int transB = 0; transB < 2; ++transB) {
          Case test = makeCase("epilogue", 5, 7, 3, transA, transB, {}, {}, {},
                               1, 1);
          Contraction &c = test.c;
          c.dtype = dtype;
          c.epilogue = epilogues[e];
          c.fallbackKernel = 0;
          const size_t bytes = dtypeSize(dtype);
          const std::array<std::vector<uint8_t>, 3> operands =
              uploadOperands(backend, dtype, rng, kVector);
          const std::vector<uint8_t> &a = operands[0], &b = operands[1],
                                     &v = operands[2];
          const size_t before = mockcublaslt::matmuls().size();
          StatusOr<bool> ran =
              backend.runContractionEpilogue(c, {kA, kB, kOut, kVector});
          if (!CHECK_OK(ran.status()) || !CHECK(*ran))
            continue;
          std::vector<uint8_t> out(35 * bytes), sums(7 * bytes);
          CHECK_OK(backend.download(kOut, out.data(), out.size()));
          CHECK_OK(backend.download(kVector, sums.data(), sums.size()));
          auto opA = [&](int64_t i, int64_t p) {
            return decode(dtype, &a[size_t(transA ? p * 5 + i : i * 3 + p) *
                                    bytes]);
          };
          auto opB = [&](int64_t p, int64_t j) {
            return decode(dtype, &b[size_t(transB ? j * 3 + p : p * 7 + j) *
                                    bytes]);
          };
          double worst = 0;
          auto compare = [&](double got, double want) {
            worst = std::max(worst,
                             std::fabs(got - want) / (1.0 + std::fabs(want)));
          };
          for (int64_t i = 0; i < 5; ++i)
            for (int64_t j = 0; j < 7; ++j) {
              double sum = c.epilogue == Epilogue::Bias
                               ? decode(dtype, &v[size_t(j) * bytes])
                               : 0.0;
              for (int64_t p = 0; p < 3; ++p)
                sum += opA(i, p) * opB(p, j);
              compare(decode(dtype, &out[size_t(i * 7 + j) * bytes]), sum);
            }
          for (int64_t x = 0; x < c.epilogueLength(); ++x) {
            if (c.epilogue == Epilogue::Bias)
              break;
            double sum = 0;
            for (int64_t p = 0; p < 3; ++p)
              sum += c.epilogue == Epilogue::BiasGradA ? opA(x, p) : opB(p, x);
            compare(decode(dtype, &sums[size_t(x) * bytes]), sum);
          }
          check(worst <= tolerance(dtype), __FILE__, __LINE__,
                std::string(epilogueName(c.epilogue)) + " " +
                    dtypeName(dtype) + (transA ? " transA" : "") +
                    (transB ? " transB" : "") + ": relative error " +
                    std::to_string(worst));
          const auto &matmuls = mockcublaslt::matmuls();
          if (CHECK(matmuls.size() == before + 1))
            CHECK(matmuls.back().epilogue == expected[e] &&
                  matmuls.back().biasPointer == base + kVector);
        }
  expectNoViolations("epilogues");

  // GELU_AUX_BIAS: the biased product kept in out (GELU's input, for the
  // backward) and its GELU, the tanh approximation, in the fifth buffer.
  constexpr uint64_t kGelu = 896 << 10;
  for (DType dtype : {DType::f32, DType::bf16}) {
    Case test = makeCase("gelu", 5, 7, 3, false, true, {}, {}, {}, 1, 1);
    Contraction &c = test.c;
    c.dtype = dtype;
    c.epilogue = Epilogue::GeluAuxBias;
    c.fallbackKernel = c.activationKernel = 0;
    const size_t bytes = dtypeSize(dtype);
    const std::array<std::vector<uint8_t>, 3> operands =
        uploadOperands(backend, dtype, rng, kVector);
    const std::vector<uint8_t> &a = operands[0], &b = operands[1],
                               &v = operands[2];
    StatusOr<bool> ran =
        backend.runContractionEpilogue(c, {kA, kB, kOut, kVector, kGelu});
    if (!CHECK_OK(ran.status()) || !CHECK(*ran))
      continue;
    std::vector<uint8_t> pre(35 * bytes), gelu(35 * bytes);
    CHECK_OK(backend.download(kOut, pre.data(), pre.size()));
    CHECK_OK(backend.download(kGelu, gelu.data(), gelu.size()));
    double worst = 0;
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 7; ++j) {
        double sum = decode(dtype, &v[size_t(j) * bytes]);
        for (int64_t p = 0; p < 3; ++p)
          sum += decode(dtype, &a[size_t(i * 3 + p) * bytes]) *
                 decode(dtype, &b[size_t(j * 3 + p) * bytes]);
        double x = decode(dtype, &pre[size_t(i * 7 + j) * bytes]);
        double want = 0.5 * x *
                      (1.0 + std::tanh(0.7978845608028654 *
                                       (x + 0.044715 * x * x * x)));
        worst = std::max({worst, std::fabs(x - sum) / (1.0 + std::fabs(sum)),
                          std::fabs(decode(dtype,
                                           &gelu[size_t(i * 7 + j) * bytes]) -
                                    want) /
                              (1.0 + std::fabs(want))});
      }
    check(worst <= tolerance(dtype), __FILE__, __LINE__,
          std::string("gelu_aux_bias ") + dtypeName(dtype) +
              ": relative error " + std::to_string(worst));
    const mockcublaslt::Matmul &last = mockcublaslt::matmuls().back();
    CHECK(last.epilogue == 164u && last.auxPointer == base + kOut &&
          last.d.address == base + kGelu && last.biasPointer == base + kVector);
  }
  CHECK_ERROR(backend
                  .runContractionEpilogue(
                      makeCase("four", 5, 7, 3, false, true, {}, {}, {}, 1, 1)
                          .c.withoutEpilogue(),
                      {kA, kB, kOut, kVector})
                  .status(),
              "contraction 'four' has no epilogue");
  expectNoViolations("gelu epilogue");

  // Without an algorithm for the epilogue: false, nothing run, and the
  // heuristic is not asked again for the same plan.
  Case test = makeCase("no_epilogue", 4, 6, 5, false, false, {}, {}, {}, 1, 1);
  test.c.epilogue = Epilogue::BiasGradB;
  test.c.fallbackKernel = 0;
  mockcublaslt::setNoEpilogue(true);
  const size_t before = mockcublaslt::matmuls().size();
  StatusOr<bool> ran =
      backend.runContractionEpilogue(test.c, {kA, kB, kOut, kVector});
  CHECK(ran.status().isOk() && !*ran);
  const int heuristics = mockcublaslt::calls("cublasLtMatmulAlgoGetHeuristic");
  ran = backend.runContractionEpilogue(test.c, {kA, kB, kOut, kVector});
  CHECK(ran.status().isOk() && !*ran);
  CHECK(mockcublaslt::calls("cublasLtMatmulAlgoGetHeuristic") == heuristics);
  CHECK(mockcublaslt::matmuls().size() == before);
  // The same shape without its epilogue still runs.
  CHECK_OK(backend.runContraction(test.c.withoutEpilogue(), kA, kB, kOut));
  CHECK(mockcublaslt::matmuls().size() == before + 1);
  mockcublaslt::setNoEpilogue(false);
  // Over a batch: the fallback's, without asking cuBLASLt.
  Case batched =
      makeCase("batched_bias", 3, 4, 5, false, false, {2}, {15}, {20}, 1, 2);
  batched.c.epilogue = Epilogue::Bias;
  ran = backend.runContractionEpilogue(batched.c, {kA, kB, kOut, kVector});
  CHECK(ran.status().isOk() && !*ran);
  CHECK_ERROR(backend
                  .runContractionEpilogue(test.c,
                                          {kA, kB, kOut, kAllocation - 8})
                  .status(),
              "contraction 'no_epilogue': the bias_grad_b vector of 24 bytes "
              "at offset");
  CHECK_ERROR(backend
                  .runContractionEpilogue(batched.c.withoutEpilogue(),
                                          {kA, kB, kOut, kVector})
                  .status(),
              "contraction 'batched_bias' has no epilogue");
  expectNoViolations("epilogue fallbacks");
}

/// cuBLASLt's choices kept in the cache directory (CudaAlgoCache.cpp): a
/// second session of the same contractions asks the heuristic nothing,
/// takes the algorithm (the fake checks it is one its heuristic returned)
/// and computes the same, and remembers that an epilogue had no algorithm;
/// lines that do not parse are ignored; without a cache directory nothing
/// is kept.
void testAlgoCache(std::mt19937 &rng) {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/algo-cache";
  Case plain = makeCase("cached", 5, 7, 3, false, true, {}, {}, {}, 1, 1);
  Case summed = plain;
  summed.c.name = "cached_sums";
  summed.c.transB = false;
  summed.c.setPackedLayout();
  summed.c.epilogue = Epilogue::BiasGradB;
  summed.c.fallbackKernel = 0;
  Manifest manifest;
  manifest.contractions = {plain.c, summed.c};
  auto session = [&](const SessionOptions &o, bool noEpilogue) {
    int asked = mockcublaslt::calls("cublasLtMatmulAlgoGetHeuristic");
    std::unique_ptr<Backend> backend = openBackend(o);
    SessionTimings timings;
    if (!backend || !CHECK_OK(backend->allocate(kAllocation)) ||
        !CHECK_OK(backend->prepareKernels(manifest, o, timings)))
      return -1;
    runCase(*backend, plain, rng);
    mockcublaslt::setNoEpilogue(noEpilogue);
    StatusOr<bool> ran = backend->runContractionEpilogue(
        summed.c, {kA, kB, kOut, 768 << 10});
    mockcublaslt::setNoEpilogue(false);
    CHECK(ran.status().isOk() && !*ran);
    backend.reset();
    return mockcublaslt::calls("cublasLtMatmulAlgoGetHeuristic") - asked;
  };
  CHECK(session(options, true) == 2);
  // Taken from the file: the epilogue's lack too, though the fake now has
  // an algorithm for it.
  CHECK(session(options, false) == 0);
  std::string file;
  std::error_code error;
  for (const auto &entry :
       std::filesystem::directory_iterator(options.cacheDir, error))
    if (entry.path().filename().string().rfind("cublaslt-", 0) == 0)
      file = entry.path().string();
  if (CHECK(!file.empty())) {
    std::ofstream(file, std::ios::app) << "not a line\nk 2 0 00\n";
    CHECK(session(options, false) == 0);
  }
  SessionOptions none = options;
  none.disableCache = true;
  CHECK(session(none, true) == 2);
  expectNoViolations("algorithm cache");
}

} // namespace

void runContractionTests() {
  SessionOptions options;
  options.disableCache = true;
  std::unique_ptr<Backend> backend = openBackend(options);
  if (!backend || !CHECK_OK(backend->allocate(kAllocation)))
    return;
  const uint64_t base = mockcuda::lastAllocation();

  // Contractions are checked, and cuBLASLt opened, when kernels are
  // prepared (no NVRTC is needed without kernels); a failing cublasLtCreate
  // can be retried.
  {
    Manifest manifest;
    Contraction c = makeCase("int", 2, 2, 2, false, false, {}, {}, {}, 1, 1).c;
    c.dtype = DType::i64;
    manifest.contractions = {c};
    SessionTimings timings;
    CHECK_ERROR(backend->prepareKernels(manifest, options, timings),
                "dtype i64 is not supported on CUDA");
    CHECK(mockcublaslt::calls("cublasLtCreate") == 0);
    manifest.contractions[0].dtype = DType::bf16;
    mockcublaslt::failNext("cublasLtCreate", 1);
    Status status = backend->prepareKernels(manifest, options, timings);
    CHECK(status.code() == StatusCode::Unavailable);
    CHECK_ERROR(status, "libcublasLt.so.13 on Mock GPU A (device 0), driver "
                        "13.0: cublasLtCreate failed: "
                        "CUBLAS_STATUS_NOT_INITIALIZED (1)");
    CHECK_OK(backend->prepareKernels(manifest, options, timings));
    CHECK(mockcublaslt::calls("cublasLtCreate") == 2 &&
          mockcublaslt::live().handles == 1);
    CHECK(!timings.cacheHit && timings.compileSeconds == 0);
  }

  std::mt19937 rng(42);
  std::vector<Case> cases;
  for (int transA = 0; transA < 2; ++transA)
    for (int transB = 0; transB < 2; ++transB) {
      std::string suffix =
          std::string(transA ? "_tA" : "") + (transB ? "_tB" : "");
      cases.push_back(makeCase(("plain" + suffix).c_str(), 5, 7, 3, transA,
                               transB, {}, {}, {}, 1, 1));
      // A contiguous batch: one strided matmul.
      cases.push_back(makeCase(("batched" + suffix).c_str(), 4, 6, 5, transA,
                               transB, {2, 3}, {60, 20}, {90, 30}, 1, 6));
    }
  Case alphaBeta =
      makeCase("alpha_beta", 3, 4, 5, false, false, {2}, {15}, {20}, 1, 2);
  alphaBeta.c.alpha = 2.0f;
  alphaBeta.c.beta = 0.5f;
  cases.push_back(alphaBeta);
  // B broadcast over the whole batch: still one strided matmul (stride 0).
  cases.push_back(makeCase("bcast_B", 3, 4, 5, false, false, {2, 3}, {45, 15},
                           {0, 0}, 1, 6));
  // A broadcast over one dimension: a loop over the outer dimension.
  cases.push_back(makeCase("bcast_A_outer", 3, 4, 5, false, true, {2, 3},
                           {0, 15}, {60, 20}, 2, 3));
  cases.push_back(makeCase("bcast_A_inner", 3, 4, 5, true, false, {2, 3},
                           {15, 0}, {60, 20}, 2, 3));
  // Strides no single stride expresses, at offsets aligned to 4 bytes only.
  Case odd = makeCase("odd_strides", 3, 4, 5, false, false, {2, 3}, {16, 50},
                      {0, 21}, 2, 3);
  odd.a += 4;
  odd.b += 8;
  odd.out += 12;
  cases.push_back(odd);
  // Dimensions of extent 1 do not matter, whatever their strides.
  cases.push_back(makeCase("unit_dims", 3, 4, 5, false, false, {1, 3, 1},
                           {999, 15, 7}, {0, 20, 3}, 1, 3));
  cases.push_back(
      makeCase("vector", 1, 1, 9, false, false, {4}, {9}, {9}, 1, 4));
  Case f64 = makeCase("f64", 6, 2, 3, true, true, {3}, {18}, {6}, 1, 3);
  f64.c.dtype = DType::f64;
  f64.c.alpha = 1.5f;
  f64.c.beta = 1.0f;
  cases.push_back(f64);
  Case f16 = makeCase("f16", 8, 5, 6, true, false, {2}, {48}, {30}, 1, 2);
  f16.c.dtype = DType::f16;
  f16.c.alpha = 0.5f;
  f16.c.beta = 0.25f;
  cases.push_back(f16);
  Case bf16 = makeCase("bf16", 4, 3, 7, false, true, {3}, {28}, {21}, 1, 3);
  bf16.c.dtype = DType::bf16;
  cases.push_back(bf16);
  // Views (memfit.strided_view): attention heads read from a QKV
  // projection [2, 4, 3 * 15] in place, S = Q K^T with K's rows apart
  // (a loop over the outer batch dimension, whose stride is not the inner
  // one's times its extent).
  Case heads = makeCase("heads_qk", 4, 4, 5, false, true, {2, 3}, {180, 5},
                        {180, 5}, 2, 3);
  heads.c.offsets = {0, 15, 0};
  heads.c.ld = {45, 45, 4};
  cases.push_back(heads);
  // ctx = P V written with the heads merged back (result_perm 0, 2, 1, 3):
  // out [2, 4, 3, 5], rows 15 apart, heads 5 apart.
  // Its output matrices interleave (each head's rows are 15 apart, the
  // heads 5) without sharing an element: the heads are one strided batch,
  // looped over the outer dimension (whose stride, 60, is not 3 x 5).
  Case merge = makeCase("heads_merge", 4, 5, 4, false, false, {2, 3},
                        {48, 16}, {180, 5}, 2, 3);
  merge.c.offsets = {0, 30, 0};
  merge.c.ld = {4, 45, 15};
  merge.c.batchStridesOut = {60, 5};
  cases.push_back(merge);
  // One sequence's heads merged: a single strided batch of 3.
  Case mergeOne = makeCase("heads_merge_one", 4, 5, 4, false, false, {3},
                           {16}, {5}, 1, 3);
  mergeOne.c.ld = {4, 15, 15};
  mergeOne.c.batchStridesOut = {5};
  cases.push_back(mergeOne);
  // An output at an offset with rows apart: the elements between keep
  // their bytes (NaN, as beta is 0).
  Case gapped = makeCase("gapped_out", 3, 4, 5, true, false, {2}, {15}, {20},
                         1, 2);
  gapped.c.offsets = {1, 2, 3};
  gapped.c.ld = {4, 4, 6};
  gapped.c.batchStridesOut = {19};
  cases.push_back(gapped);
  // k = 0: out = beta * out without cuBLASLt (zeroed for beta 0).
  cases.push_back(
      makeCase("k0_beta0", 3, 4, 0, false, false, {2}, {0}, {0}, 0, 1));
  Case k0Beta1 =
      makeCase("k0_beta1", 3, 4, 0, false, false, {2}, {0}, {0}, 0, 1);
  k0Beta1.c.beta = 1.0f;
  cases.push_back(k0Beta1);
  // Nothing to compute.
  cases.push_back(
      makeCase("empty_batch", 3, 4, 5, false, false, {0}, {15}, {20}, 0, 1));
  cases.push_back(makeCase("m0", 0, 4, 5, false, false, {}, {}, {}, 0, 1));

  for (const Case &test : cases)
    runCase(*backend, test, rng);
  expectNoViolations("contractions");

  // How the first case was put to cuBLASLt: B's buffer first, [n, k] column-
  // major; A's second, [k, m]; the output [n, m]; nothing transposed; the
  // 256-byte alignment of the allocation promised for all four.
  const std::vector<mockcublaslt::Matmul> &matmuls = mockcublaslt::matmuls();
  if (CHECK(matmuls.size() >= 3)) {
    const mockcublaslt::Matmul &first = matmuls[0];
    CHECK(first.a.address == base + kB && first.a.rows == 7 &&
          first.a.cols == 3 && first.a.ld == 7);
    CHECK(first.b.address == base + kA && first.b.rows == 3 &&
          first.b.cols == 5 && first.b.ld == 3);
    CHECK(first.d.address == base + kOut &&
          first.c.address == first.d.address && first.d.rows == 7 &&
          first.d.cols == 5 && first.d.ld == 7);
    CHECK(first.transA == 0 && first.transB == 0 && first.alpha == 1.0 &&
          first.beta == 0.0 && first.dataType == 0 && first.computeType == 68 &&
          first.scaleType == 0);
    CHECK(first.alignment[0] == 256 && first.alignment[1] == 256 &&
          first.alignment[2] == 256 && first.alignment[3] == 256);
    // "batched": strides of B's and A's matrices and of the output.
    const mockcublaslt::Matmul &batched = matmuls[1];
    CHECK(batched.batchCount == 6 && batched.a.batchStride == 30 &&
          batched.b.batchStride == 20 && batched.d.batchStride == 24);
    // "plain_tB": B is [n, k] row-major, so [k, n] column-major, op T.
    const mockcublaslt::Matmul &transB = matmuls[2];
    CHECK(transB.transA == 1 && transB.transB == 0 && transB.a.rows == 3 &&
          transB.a.cols == 7 && transB.a.ld == 3);
  }

  // Plans are made once per shape, batch and alignment.
  int heuristics = mockcublaslt::calls("cublasLtMatmulAlgoGetHeuristic");
  runCase(*backend, cases[0], rng);
  runCase(*backend, alphaBeta, rng);
  CHECK(mockcublaslt::calls("cublasLtMatmulAlgoGetHeuristic") == heuristics);
  Case moved = cases[0];
  moved.out += 4; // another alignment of the output: another plan
  runCase(*backend, moved, rng);
  CHECK(mockcublaslt::calls("cublasLtMatmulAlgoGetHeuristic") ==
        heuristics + 1);

  testEpilogues(*backend, base, rng);
  testErrors(*backend);
  backend.reset();
  expectClean("contractions");
  testAlgoCache(rng);
  expectClean("algorithm cache");
}

} // namespace memfit::rt::test
