//===- HostBackendTest.cpp - CUDA C++ kernels and contractions on the CPU
//
// Hand-written kernels in the subset of runtime/KERNELS.md, run through the
// Backend interface and checked against loops in this file.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "Backend.h"
#include "Half.h"

#include <cmath>
#include <cstring>
#include <memory>

namespace memfit::rt::test {

namespace {

const char *kKernels = R"cuda(
// kernels[0]: no barriers, a bounds check, 1000 elements over 4 x 256.
extern "C" __global__ void scale_add(float* __restrict__ out,
                                     const float* __restrict__ a,
                                     const float* __restrict__ b) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1000)
    out[i] = 2.0f * a[i] + b[i];
}

// kernels[1]: a tree reduction in shared memory, one sum per block.
extern "C" __global__ void block_sum(float* __restrict__ out,
                                     const float* __restrict__ in) {
  __shared__ float partial[256];
  unsigned t = threadIdx.x;
  partial[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned s = 128; s > 0; s >>= 1) {
    if (t < s)
      partial[t] += partial[t + s];
    __syncthreads();
  }
  if (t == 0)
    out[blockIdx.x] = partial[0];
}

static __device__ __forceinline__ float warp_sum_xor(float v) {
  for (int mask = 16; mask > 0; mask >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, mask);
  return v;
}

// kernels[2]: warp reductions with both shuffles and four value types;
// out has 4 values per warp.
extern "C" __global__ void warp_sums(double* __restrict__ out,
                                     const float* __restrict__ in) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float f = warp_sum_xor(in[i]);
  double d = (double)in[i];
  int n = (int)(in[i] * 8.0f);
  long long l = (long long)n * 1000000000LL;
  for (int delta = 16; delta > 0; delta >>= 1) {
    d += __shfl_down_sync(0xffffffffu, d, delta);
    n += __shfl_down_sync(0xffffffffu, n, delta);
    l += __shfl_xor_sync(0xffffffffu, l, delta);
  }
  if ((threadIdx.x & 31) == 0) {
    unsigned w = i / 32;
    out[4 * w] = f;
    out[4 * w + 1] = d;
    out[4 * w + 2] = n;
    out[4 * w + 3] = (double)l;
  }
}

// kernels[3]: a block of 1024 threads: reverse through shared memory, then
// a two-level (warp shuffle + shared) sum of the block.
extern "C" __global__ void reverse_and_sum(float* __restrict__ reversed,
                                           float* __restrict__ total,
                                           const float* __restrict__ in) {
  __shared__ float buffer[1024];
  __shared__ float warps[32];
  unsigned t = threadIdx.x;
  buffer[t] = in[t];
  __syncthreads();
  reversed[t] = buffer[blockDim.x - 1 - t];
  float v = warp_sum_xor(in[t]);
  if ((t & 31) == 0)
    warps[t / 32] = v;
  __syncthreads();
  if (t < 32) {
    v = warp_sum_xor(warps[t]);
  } else {
    v = warp_sum_xor(0.0f); // every lane of every warp shuffles
  }
  if (t == 0)
    total[0] = v;
}

// kernels[4]: the math of KERNELS.md, one result per slot.
extern "C" __global__ void math(float* __restrict__ f, double* __restrict__ d,
                                long long* __restrict__ n,
                                const float* __restrict__ x) {
  float a = x[0], b = x[1];
  f[0] = expf(a); f[1] = logf(b); f[2] = sqrtf(b); f[3] = rsqrtf(b);
  f[4] = erff(a); f[5] = tanhf(a); f[6] = powf(b, a); f[7] = sinf(a);
  f[8] = cosf(a); f[9] = fabsf(a); f[10] = fmaxf(a, b); f[11] = fminf(a, b);
  f[12] = floorf(a);
  f[13] = __int_as_float(__float_as_int(b) + 1);
  double p = a, q = b;
  d[0] = exp(p); d[1] = log(q); d[2] = sqrt(q); d[3] = rsqrt(q);
  d[4] = erf(p); d[5] = tanh(p); d[6] = pow(q, p); d[7] = sin(p);
  d[8] = cos(p); d[9] = fabs(p); d[10] = fmax(p, q); d[11] = fmin(p, q);
  d[12] = floor(p);
  d[13] = __longlong_as_double(__double_as_longlong(q) + 1);
  int i = -7;
  unsigned u = 3u;
  long long big = 1LL << 40;
  n[0] = min(i, 5); n[1] = max(i, 5); n[2] = min(big, 7LL); n[3] = max(u, 9u);
  n[4] = warpSize;
  n[5] = (signed char)-3 + (unsigned char)250 + (int)(bool)2;
  n[6] = gridDim.x * 100 + blockDim.x;
}

// kernels[5]: some threads return before the barrier (undefined in CUDA).
extern "C" __global__ void early_return(float* __restrict__ out) {
  if (threadIdx.x == 3)
    return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

// kernels[6]: a barrier in a kernel the manifest says has none.
extern "C" __global__ void undeclared_barrier(float* __restrict__ out) {
  out[threadIdx.x] = 1.0f;
  __syncthreads();
}
)cuda";

Manifest kernelManifest() {
  Manifest m;
  m.source = kKernels;
  m.kernels = {kernel("scale_add", 4, 256, false),
               kernel("block_sum", 8, 256, true),
               kernel("warp_sums", 3, 128, true),
               kernel("reverse_and_sum", 1, 1024, true),
               kernel("math", 2, 3, false),
               kernel("early_return", 2, 64, true),
               kernel("undeclared_barrier", 1, 32, false)};
  return m;
}

/// A backend with `bytes` of memory and the test kernels ready.
std::unique_ptr<Backend> makeBackend(const Manifest &manifest,
                                     const SessionOptions &options,
                                     uint64_t bytes) {
  StatusOr<std::unique_ptr<Backend>> backend = createHostBackend(options);
  if (!CHECK_OK(backend.status()))
    return nullptr;
  SessionTimings timings;
  if (!CHECK_OK((*backend)->allocate(bytes)) ||
      !CHECK_OK((*backend)->prepareKernels(manifest, options, timings)))
    return nullptr;
  CHECK(timings.cacheHit || timings.compileSeconds > 0);
  return std::move(*backend);
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::fmod(float(i) * 0.37f, 3.0f) * scale - 1.0f;
  return v;
}

template <typename T>
std::vector<T> download(Backend &b, uint64_t offset, size_t n) {
  std::vector<T> v(n);
  CHECK_OK(b.download(offset, v.data(), n * sizeof(T)));
  return v;
}

/// Runs every test kernel on `b` and checks the results.
void checkKernels(Backend &b) {
  // scale_add: out @0, a @4096, b @8192.
  std::vector<float> a = ramp(1000, 1.0f), c = ramp(1000, -0.5f);
  CHECK_OK(b.upload(4096, a.data(), 4000));
  CHECK_OK(b.upload(8192, c.data(), 4000));
  CHECK_OK(b.upload(4000, std::vector<float>(24, 99.0f).data(), 96)); // past n
  CHECK_OK(b.launchKernel(0, {0, 4096, 8192}));
  std::vector<float> out = download<float>(b, 0, 1024);
  bool ok = true;
  for (int i = 0; i < 1000; ++i)
    ok = ok && out[i] == 2.0f * a[i] + c[i];
  for (int i = 1000; i < 1024; ++i)
    ok = ok && out[i] == 99.0f;
  CHECK(ok);

  // block_sum: 8 blocks of 256 @16384, sums @0.
  std::vector<float> in = ramp(2048, 0.25f);
  CHECK_OK(b.upload(16384, in.data(), in.size() * 4));
  CHECK_OK(b.launchKernel(1, {0, 16384}));
  std::vector<float> sums = download<float>(b, 0, 8);
  for (int blk = 0; blk < 8; ++blk) {
    double expected = 0;
    for (int t = 0; t < 256; ++t)
      expected += in[blk * 256 + t];
    CHECK(std::fabs(sums[blk] - expected) < 1e-3);
  }

  // warp_sums: 3 blocks of 128 = 12 warps, from in @16384.
  CHECK_OK(b.launchKernel(2, {0, 16384}));
  std::vector<double> warps = download<double>(b, 0, 48);
  ok = true;
  for (int w = 0; w < 12; ++w) {
    double f = 0, d = 0;
    long long n = 0;
    for (int lane = 0; lane < 32; ++lane) {
      float x = in[w * 32 + lane];
      f += x;
      d += double(x);
      n += (int)(x * 8.0f);
    }
    ok = ok && std::fabs(warps[4 * w] - f) < 1e-4 &&
         std::fabs(warps[4 * w + 1] - d) < 1e-9;
    ok = ok && warps[4 * w + 2] == double(n) &&
         warps[4 * w + 3] == double(n * 1000000000LL);
  }
  CHECK(ok);

  // reverse_and_sum: 1024 threads, reversed @0, total @8192, in @16384.
  CHECK_OK(b.launchKernel(3, {0, 8192, 16384}));
  std::vector<float> reversed = download<float>(b, 0, 1024);
  float total = download<float>(b, 8192, 1)[0];
  ok = true;
  double expected = 0;
  for (int t = 0; t < 1024; ++t) {
    ok = ok && reversed[t] == in[1023 - t];
    expected += in[t];
  }
  CHECK(ok);
  CHECK(std::fabs(total - expected) < 1e-2);

  // math: f @0, d @256, n @512, x @768.
  float x[2] = {0.75f, 2.5f};
  CHECK_OK(b.upload(768, x, sizeof(x)));
  CHECK_OK(b.launchKernel(4, {0, 256, 512, 768}));
  std::vector<float> f = download<float>(b, 0, 14);
  std::vector<double> d = download<double>(b, 256, 14);
  std::vector<long long> n = download<long long>(b, 512, 7);
  float fa = x[0], fb = x[1];
  float fExpected[14] = {std::exp(fa),      std::log(fb),
                         std::sqrt(fb),     1.0f / std::sqrt(fb),
                         std::erf(fa),      std::tanh(fa),
                         std::pow(fb, fa),  std::sin(fa),
                         std::cos(fa),      std::fabs(fa),
                         std::fmax(fa, fb), std::fmin(fa, fb),
                         std::floor(fa),    std::nextafter(fb, 10.0f)};
  double pa = fa, pb = fb;
  double dExpected[14] = {std::exp(pa),      std::log(pb),
                          std::sqrt(pb),     1.0 / std::sqrt(pb),
                          std::erf(pa),      std::tanh(pa),
                          std::pow(pb, pa),  std::sin(pa),
                          std::cos(pa),      std::fabs(pa),
                          std::fmax(pa, pb), std::fmin(pa, pb),
                          std::floor(pa),    std::nextafter(pb, 10.0)};
  ok = true;
  for (int i = 0; i < 14; ++i) {
    ok =
        ok && std::fabs(f[i] - fExpected[i]) <= 1e-6f * std::fabs(fExpected[i]);
    ok =
        ok && std::fabs(d[i] - dExpected[i]) <= 1e-15 * std::fabs(dExpected[i]);
  }
  CHECK(ok);
  CHECK(n[0] == -7 && n[1] == 5 && n[2] == 7 && n[3] == 9 && n[4] == 32 &&
        n[5] == -3 + 250 + 1 && n[6] == 203);

  // Misused barriers are errors, not hangs.
  CHECK_ERROR(b.launchKernel(5, {0}),
              "thread 3 of block (0, 0, 0) returned while thread 0 waits at "
              "barrier 0");
  CHECK_ERROR(
      b.launchKernel(6, {0}),
      "the kernel calls __syncthreads or a warp shuffle but the manifest "
      "says usesBarriers is false");
  CHECK_ERROR(b.launchKernel(0, {0, 4096}),
              "the kernel takes 3 parameters but the step passes 2 buffers");
  // The backend still works after the errors.
  CHECK_OK(b.launchKernel(3, {0, 8192, 16384}));
  CHECK(download<float>(b, 0, 1)[0] == in[1023]);
}

void testKernels() {
  Manifest m = kernelManifest();
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-kernels";
  for (unsigned threads : {1u, 3u}) {
    options.hostThreads = threads;
    std::unique_ptr<Backend> b = makeBackend(m, options, 32768);
    if (!b)
      return;
    CHECK(b->allocatedBytes() == 32768);
    CHECK(b->description().find("host (" + std::to_string(threads) +
                                " thread") == 0);
    checkKernels(*b);
  }
#if defined(__x86_64__)
  // The portable fiber implementation (ucontext), used off x86-64.
  options.hostCompiler = MEMFIT_HOST_CXX " -DMEMFIT_HOST_FORCE_UCONTEXT";
  options.hostThreads = 2;
  if (std::unique_ptr<Backend> b = makeBackend(m, options, 32768))
    checkKernels(*b);
#endif
}

void testCompileErrors() {
  Manifest m;
  m.source = "extern \"C\" __global__ void broken(float *p) {\n"
             "  p[0] = undefined_thing;\n"
             "}\n";
  m.kernels = {kernel("broken", 1, 1, false)};
  SessionOptions options;
  options.disableCache = true;
  options.hostThreads = 1;
  StatusOr<std::unique_ptr<Backend>> b = createHostBackend(options);
  if (!CHECK_OK(b.status()))
    return;
  SessionTimings timings;
  Status status = (*b)->prepareKernels(m, options, timings);
  CHECK_ERROR(status, "host backend: compiling the kernels failed");
  CHECK_ERROR(status, "kernels.cu:2:");
  CHECK_ERROR(status, "undefined_thing");
  CHECK_ERROR(status, "(the source is kept at ");

  // A kernel the source lacks.
  m.source = "extern \"C\" __global__ void other(float *p) {}\n";
  StatusOr<std::unique_ptr<Backend>> b2 = createHostBackend(options);
  if (CHECK_OK(b2.status()))
    CHECK_ERROR((*b2)->prepareKernels(m, options, timings), "broken");

  // A compiler that does not exist.
  options.hostCompiler = "/nonexistent/c++";
  StatusOr<std::unique_ptr<Backend>> b3 = createHostBackend(options);
  if (CHECK_OK(b3.status())) {
    Status missing = (*b3)->prepareKernels(m, options, timings);
    CHECK(missing.code() == StatusCode::Unavailable);
    CHECK_ERROR(missing, "cannot run '/nonexistent/c++'");
  }
}

/// out[b] = alpha * op(A[b]) op(B[b]) + beta * out[b] with loops, each
/// matrix at its offset and batch strides, its rows ld apart.
std::vector<double> naiveContraction(const Contraction &c,
                                     const std::vector<double> &a,
                                     const std::vector<double> &b,
                                     const std::vector<double> &out) {
  std::vector<double> result = out;
  int64_t batches = 1;
  for (int64_t d : c.batchShape)
    batches *= d;
  for (int64_t batch = 0; batch < batches; ++batch) {
    int64_t offA = c.offsets[0], offB = c.offsets[1], offOut = c.offsets[2],
            rest = batch;
    for (size_t d = c.batchShape.size(); d-- > 0;) {
      offA += (rest % c.batchShape[d]) * c.batchStridesA[d];
      offB += (rest % c.batchShape[d]) * c.batchStridesB[d];
      offOut += (rest % c.batchShape[d]) * c.batchStridesOut[d];
      rest /= c.batchShape[d];
    }
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          double x = c.transA ? a[offA + k * c.ld[0] + i]
                              : a[offA + i * c.ld[0] + k];
          double y = c.transB ? b[offB + j * c.ld[1] + k]
                              : b[offB + k * c.ld[1] + j];
          sum += x * y;
        }
        double &r = result[offOut + i * c.ld[2] + j];
        r = c.alpha * sum + c.beta * r;
      }
  }
  return result;
}

/// Stores doubles as `type` at `offset` and reads them back the same way.
void store(Backend &b, DType type, uint64_t offset,
           const std::vector<double> &v) {
  std::vector<uint8_t> bytes(v.size() * dtypeSize(type));
  for (size_t i = 0; i < v.size(); ++i) {
    if (type == DType::f32) {
      float x = float(v[i]);
      std::memcpy(&bytes[i * 4], &x, 4);
    } else if (type == DType::f64) {
      std::memcpy(&bytes[i * 8], &v[i], 8);
    } else {
      uint16_t h = type == DType::f16 ? floatToHalf(float(v[i]))
                                      : floatToBf16(float(v[i]));
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  CHECK_OK(b.upload(offset, bytes.data(), bytes.size()));
}

std::vector<double> load(Backend &b, DType type, uint64_t offset, size_t n) {
  std::vector<uint8_t> bytes(n * dtypeSize(type));
  CHECK_OK(b.download(offset, bytes.data(), bytes.size()));
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (type == DType::f32) {
      float x;
      std::memcpy(&x, &bytes[i * 4], 4);
      v[i] = x;
    } else if (type == DType::f64) {
      std::memcpy(&v[i], &bytes[i * 8], 8);
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      v[i] = type == DType::f16 ? halfToFloat(h) : bf16ToFloat(h);
    }
  }
  return v;
}

/// Values exactly representable in every float type (multiples of 1/8).
std::vector<double> eighths(size_t n, int seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = double(int((i * 7 + seed * 3) % 17) - 8) / 8.0;
  return v;
}

void testContractions() {
  SessionOptions options;
  options.hostThreads = 1;
  StatusOr<std::unique_ptr<Backend>> created = createHostBackend(options);
  if (!CHECK_OK(created.status()))
    return;
  Backend &b = **created;
  CHECK_OK(b.allocate(1 << 20));

  for (DType type : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    // Variants 0-3: packed, each pair of transpose flags (3 with beta).
    // 4-7: the same as views: offsets, rows apart, out's batch strided
    // like the heads merged back ([2, 3] batch of 3 x 5 written into rows
    // of 3 * 5 + 2 elements), so the elements between are kept.
    for (int variant = 0; variant < 8; ++variant) {
      Contraction c;
      c.name = "mm";
      c.dtype = type;
      c.m = 3;
      c.n = 5;
      c.k = 4;
      c.transA = variant & 1;
      c.transB = variant & 2;
      c.alpha = 0.5f;
      c.beta = (variant & 3) == 3 ? 0.25f : 0.0f;
      // Batch [2, 3]: A varies over both, B is broadcast over the first.
      c.batchShape = {2, 3};
      c.batchStridesA = {3 * 12, 12};
      c.batchStridesB = {0, 20};
      c.setPackedLayout();
      if (variant >= 4) {
        c.offsets = {2, 1, 3};
        c.ld = {c.storedColumns(Contraction::A) + 3,
                c.storedColumns(Contraction::B) + 1, 3 * 5 + 2};
        c.batchStridesA = {3 * 4 * c.ld[0], 4 * c.ld[0] + 1};
        c.batchStridesB = {0, 5 * c.ld[1]};
        c.batchStridesOut = {3 * c.ld[2], 5};
      }
      size_t spans[3];
      for (int o = 0; o < 3; ++o)
        spans[o] = operandSpan(c, Contraction::Operand(o));
      std::vector<double> a = eighths(spans[0], 1), bm = eighths(spans[1], 2),
                          out = eighths(spans[2], 3);
      store(b, type, 0, a);
      store(b, type, 4096, bm);
      store(b, type, 8192, out);
      if (!CHECK_OK(b.runContraction(c, 0, 4096, 8192)))
        continue;
      std::vector<double> expected = naiveContraction(c, a, bm, out);
      std::vector<double> got = load(b, type, 8192, spans[2]);
      double tolerance =
          type == DType::bf16 ? 2e-2 : (type == DType::f16 ? 2e-3 : 1e-6);
      bool ok = true;
      for (size_t i = 0; i < spans[2]; ++i)
        ok = ok && std::fabs(got[i] - expected[i]) <=
                       tolerance * (1 + std::fabs(expected[i]));
      CHECK(ok);
    }
  }
  Contraction ints;
  ints.name = "imm";
  ints.dtype = DType::i64;
  ints.m = ints.n = ints.k = 2;
  CHECK_ERROR(b.runContraction(ints, 0, 4096, 8192),
              "dtype i64 is not supported by the host backend");
}

} // namespace

void runHostBackendTests() {
  testKernels();
  testCompileErrors();
  testContractions();
}

} // namespace memfit::rt::test
