//===- HostKernelsTest.cpp - the host backend's per-kernel cache and block
// reductions
//
// Sources laid out as memfit's emitter writes them (a prelude, then each
// kernel after its comment line): kernels shared between executables are
// compiled once and found again under another name and index; the host's
// one-barrier block reductions give the CUDA butterflies' results to the
// bit; large contractions spread over the workers give the naive product.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "Backend.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <initializer_list>
#include <limits>
#include <memory>

namespace memfit::rt::test {

namespace {

// The prelude: the CUDA code of memfit_block_sum/max (as Prelude.cuh has
// it), which the emulation runs with shuffles and barriers.
const char *kPrelude = R"cuda(// Helpers shared by the kernels below.
template <typename T> static __device__ __forceinline__ T op_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> static __device__ __forceinline__ T cuda_block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : (T)0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  return v;
}
template <typename T> static __device__ __forceinline__ T cuda_block_max(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = op_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : scratch[0];
  for (int o = 16; o > 0; o >>= 1) v = op_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  return v;
}
)cuda";

/// A kernel as the emitter writes it: a comment line, the definition.
std::string kernelText(const std::string &name, const std::string &body) {
  return "\n// " + name + ": a test kernel\nextern \"C\" __global__ void " +
         name + body;
}

const char *kScale = R"((float* __restrict__ out, const float* __restrict__ in) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 3.0f * in[i];
}
)";
const char *kShift = R"((float* __restrict__ out, const float* __restrict__ in) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i] - 1.0f;
}
)";
const char *kNegate = R"((float* __restrict__ out, const float* __restrict__ in) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = -in[i];
}
)";

/// Each thread's block_sum and block_max of the float, double and int64
/// inputs, by the host's one-barrier reductions (host = true) or by the
/// CUDA code: out[6 * i + 0..5].
std::string reductionBody(bool host) {
  std::string sum = host ? "memfit_host::blockSum" : "cuda_block_sum";
  std::string max = host ? "memfit_host::blockMax" : "cuda_block_max";
  auto call = [&](const std::string &f, const std::string &v) {
    return f + "(" + v + (host ? "" : ", scratch") + ")";
  };
  return std::string(R"((double* __restrict__ out, const float* __restrict__ f,
    const double* __restrict__ d, const long long* __restrict__ n) {
  __shared__ float scratch[32];
  __shared__ double dscratch[32];
  __shared__ long long nscratch[32];
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
)") + "  out[6 * i + 0] = " + call(sum, "f[i]") + ";\n" +
         "  out[6 * i + 1] = " + call(max, "f[i]") + ";\n" +
         "  out[6 * i + 2] = " +
         (host ? sum + "(d[i])" : sum + "(d[i], dscratch)") + ";\n" +
         "  out[6 * i + 3] = " +
         (host ? max + "(d[i])" : max + "(d[i], dscratch)") + ";\n" +
         "  out[6 * i + 4] = (double)" +
         (host ? sum + "(n[i])" : sum + "(n[i], nscratch)") + ";\n" +
         "  out[6 * i + 5] = (double)" +
         (host ? max + "(n[i])" : max + "(n[i], nscratch)") + ";\n}\n";
}

/// The files of `dir` whose names start with `prefix`.
int countFiles(const std::string &dir, const std::string &prefix) {
  int count = 0;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      count += std::string(e->d_name).rfind(prefix, 0) == 0;
    closedir(d);
  }
  return count;
}

/// Removes the files of `dir` named `prefix`...`suffix`.
void removeFiles(const std::string &dir, const std::string &prefix,
                 const std::string &suffix) {
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0 && name.size() >= suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        std::remove((dir + "/" + name).c_str());
    }
    closedir(d);
  }
}

std::unique_ptr<Backend> prepared(const Manifest &m,
                                  const SessionOptions &options,
                                  SessionTimings &timings) {
  StatusOr<std::unique_ptr<Backend>> backend = createHostBackend(options);
  if (!CHECK_OK(backend.status()) || !CHECK_OK((*backend)->allocate(65536)) ||
      !CHECK_OK((*backend)->prepareKernels(m, options, timings)))
    return nullptr;
  return std::move(*backend);
}

/// `m` prepared on two workers with the kernel cache in `cache` (a
/// directory of the scratch directory).
std::unique_ptr<Backend> preparedOnTwo(const Manifest &m,
                                       const std::string &cache) {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/" + cache;
  options.hostThreads = 2;
  SessionTimings timings;
  return prepared(m, options, timings);
}

/// The prelude and element-wise kernels (name, body), each one block of 256
/// threads.
Manifest elementwise(
    std::initializer_list<std::pair<const char *, const char *>> kernels) {
  Manifest m;
  m.source = kPrelude;
  for (auto [name, body] : kernels) {
    m.source += kernelText(name, body);
    m.kernels.push_back(kernel(name, 1, 256, false));
  }
  return m;
}

/// Runs kernels[index] of 256 threads on in = 0..255 and returns out.
std::vector<float> runElementwise(Backend &b, uint32_t index) {
  std::vector<float> in(256);
  for (int i = 0; i < 256; ++i)
    in[i] = float(i) * 0.5f;
  CHECK_OK(b.upload(4096, in.data(), in.size() * 4));
  CHECK_OK(b.launchKernel(index, {0, 4096}));
  std::vector<float> out(256);
  CHECK_OK(b.download(0, out.data(), out.size() * 4));
  return out;
}

void testKernelCache() {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-per-kernel";
  options.hostThreads = 2;

  // Two kernels, and the first again under another name.
  Manifest first = elementwise(
      {{"k0_scale", kScale}, {"k1_shift", kShift}, {"k2_scale", kScale}});
  SessionTimings timings;
  std::unique_ptr<Backend> b = prepared(first, options, timings);
  if (!b)
    return;
  CHECK(!timings.cacheHit && timings.compileSeconds > 0);
  CHECK(countFiles(options.cacheDir, "host-kernel-") == 2);
  CHECK(countFiles(options.cacheDir, "host-batch-") == 1);
  std::vector<float> scaled = runElementwise(*b, 0);
  CHECK(scaled[10] == 15.0f && runElementwise(*b, 2) == scaled);
  CHECK(runElementwise(*b, 1)[10] == 4.0f);

  // The same kernels at other indices and names, and one new: only the
  // new one is compiled.
  Manifest second = elementwise(
      {{"k0_negate", kNegate}, {"k1_scale", kScale}, {"k7_shift", kShift}});
  b = prepared(second, options, timings);
  if (!b)
    return;
  CHECK(!timings.cacheHit);
  CHECK(countFiles(options.cacheDir, "host-kernel-") == 3);
  CHECK(countFiles(options.cacheDir, "host-batch-") == 2);
  CHECK(runElementwise(*b, 0)[10] == -5.0f);
  CHECK(runElementwise(*b, 1) == scaled);
  CHECK(runElementwise(*b, 2)[10] == 4.0f);

  // Everything is found now.
  b = prepared(second, options, timings);
  CHECK(b && timings.cacheHit && timings.compileSeconds == 0);

  // Another prelude is another context: compiled again. Without the
  // precompiled header (removed) the compiler reads the header's file, and
  // the precompiled form is made again.
  CHECK(countFiles(options.cacheDir, "host-header-") == 2);
  removeFiles(options.cacheDir, "host-header-", ".gch");
  CHECK(countFiles(options.cacheDir, "host-header-") == 1);
  Manifest other = second;
  other.source = "// another prelude\n" + second.source;
  b = prepared(other, options, timings);
  CHECK(b && !timings.cacheHit);
  CHECK(countFiles(options.cacheDir, "host-batch-") == 3);
  CHECK(countFiles(options.cacheDir, "host-header-") == 2);
  CHECK(b && runElementwise(*b, 0)[10] == -5.0f);

  // A helper between two kernels belongs to neither: the source is one
  // unit, and runs.
  Manifest helper;
  helper.source = std::string(kPrelude) + kernelText("k0_scale", kScale) +
                  "static __device__ float twice(float x) { return 2 * x; }\n" +
                  kernelText("k1_twice", R"((float* __restrict__ out, const float* __restrict__ in) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = twice(in[i]);
}
)");
  helper.kernels = {kernel("k0_scale", 1, 256, false),
                    kernel("k1_twice", 1, 256, false)};
  b = prepared(helper, options, timings);
  if (!b)
    return;
  // The three batches, the whole unit, and the emulation header with its
  // precompiled form (one pair for every unit of this compiler and flags).
  CHECK(countFiles(options.cacheDir, "host-header-") == 2);
  CHECK(countFiles(options.cacheDir, "host-") ==
        countFiles(options.cacheDir, "host-kernel-") + 6);
  CHECK(runElementwise(*b, 1)[10] == 10.0f);

  // Without the cache, the same kernels run.
  options.disableCache = true;
  b = prepared(second, options, timings);
  CHECK(b && !timings.cacheHit && runElementwise(*b, 1) == scaled);
}

void testBlockReductions() {
  Manifest m;
  m.source = std::string(kPrelude) + kernelText("k0_host", reductionBody(true)) +
             kernelText("k1_cuda", reductionBody(false));
  // Blocks of 32, 96 and 256 threads: one warp, a partial last stage, many.
  for (uint32_t block : {32u, 96u, 256u}) {
    m.kernels = {kernel("k0_host", 2, block, true),
                 kernel("k1_cuda", 2, block, true)};
    std::unique_ptr<Backend> b = preparedOnTwo(m, "cache-reductions");
    if (!b)
      return;
    size_t n = 2 * block;
    std::vector<float> f(n);
    std::vector<double> d(n);
    std::vector<long long> ints(n);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 0; i < n; ++i) {
      // Magnitudes far apart (the order of the sum shows), signed zeros
      // (max is not symmetric for them), a NaN in the second block.
      f[i] = (i % 7 == 0 ? 1e8f : 1.0f) * std::sin(float(i) * 0.7f);
      if (i % 11 == 3)
        f[i] = (i % 2) ? -0.0f : 0.0f;
      // Block 0's first warp all zeros of both signs: which zero the max
      // keeps depends on the order of every comparison.
      if (i < 32)
        f[i] = (i % 3) ? -0.0f : 0.0f;
      if (i == n - 5)
        f[i] = nan;
      d[i] = double(f[i]) * 1e-3 + double(i);
      ints[i] = (long long)(i * 2654435761u % 1000) - 500;
    }
    CHECK_OK(b->upload(8192, f.data(), n * 4));
    CHECK_OK(b->upload(16384, d.data(), n * 8));
    CHECK_OK(b->upload(32768, ints.data(), n * 8));
    std::vector<double> host(6 * n), cuda(6 * n);
    // out @40960 (6 doubles a thread), f @8192, d @16384, n @32768.
    CHECK_OK(b->launchKernel(0, {40960, 8192, 16384, 32768}));
    CHECK_OK(b->download(40960, host.data(), host.size() * 8));
    CHECK_OK(b->launchKernel(1, {40960, 8192, 16384, 32768}));
    CHECK_OK(b->download(40960, cuda.data(), cuda.size() * 8));
    CHECK(std::memcmp(host.data(), cuda.data(), host.size() * 8) == 0);
    // Block 0's float sum is a number, block 1's holds the NaN.
    CHECK(std::isfinite(host[0]) && std::isnan(host[6 * (n - 1)]));
  }
}

/// Kernels compiled in units side by side: ten new kernels and two workers
/// make two units (two shared objects), each kernel found and right; one
/// kernel changed compiles alone.
void testParallelUnits() {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-units";
  options.hostThreads = 2;
  auto body = [](int k) {
    return "(float* __restrict__ out, const float* __restrict__ in) {\n"
           "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  out[i] = in[i] * " +
           std::to_string(k) + ".0f + 1.0f;\n}\n";
  };
  auto manifest = [&](int changed) {
    Manifest m;
    m.source = kPrelude;
    for (int k = 0; k < 10; ++k) {
      std::string name = "k" + std::to_string(k) + "_affine";
      m.source += kernelText(name, body(k == changed ? 100 : k));
      m.kernels.push_back(kernel(name, 1, 256, false));
    }
    return m;
  };
  SessionTimings timings;
  std::unique_ptr<Backend> b = prepared(manifest(-1), options, timings);
  if (!b)
    return;
  CHECK(countFiles(options.cacheDir, "host-batch-") == 2);
  CHECK(countFiles(options.cacheDir, "host-kernel-") == 10);
  bool ok = true;
  for (uint32_t k = 0; k < 10; ++k)
    ok = ok && runElementwise(*b, k)[10] == 5.0f * float(k) + 1.0f;
  CHECK(ok);
  b = prepared(manifest(3), options, timings);
  if (!b)
    return;
  CHECK(!timings.cacheHit);
  CHECK(countFiles(options.cacheDir, "host-batch-") == 3);
  CHECK(runElementwise(*b, 3)[10] == 501.0f && runElementwise(*b, 4)[10] == 21.0f);
}

/// A row kernel in thread loops (host = true: run once per block, partials
/// in arrays) or in CUDA's form (fibers): each block strides over its row
/// of `row` elements and writes thread 0's block_sum and block_max of the
/// float, double and int64 inputs to out[6 * block + 0..5].
std::string rowReductionBody(bool host, int row) {
  std::string r = std::to_string(row) + "LL";
  std::string s = R"((double* __restrict__ out, const float* __restrict__ f,
    const double* __restrict__ d, const long long* __restrict__ n) {
  __shared__ float scratch[32];
  __shared__ double dscratch[32];
  __shared__ long long nscratch[32];
  const long long base = (long long)blockIdx.x * )" + r + ";\n";
  const char *names[] = {"sf", "mf", "sd", "md", "sn", "mn"};
  const char *types[] = {"float", "float", "double", "double", "long long",
                         "long long"};
  const char *inits[] = {"0", "-INFINITY", "0", "-INFINITY", "0",
                         "(-9223372036854775807LL - 1)"};
  const char *inputs[] = {"f", "f", "d", "d", "n", "n"};
  const char *scratch[] = {"scratch", "scratch", "dscratch", "dscratch",
                           "nscratch", "nscratch"};
  for (int k = 0; k < 6; ++k)
    s += host ? std::string("  MEMFIT_PARTIAL(") + types[k] + ", " + names[k] +
                    ", " + inits[k] + ");\n"
              : std::string("  ") + types[k] + " " + names[k] + " = " +
                    inits[k] + ";\n";
  s += host ? "  MEMFIT_BLOCK_STRIDE(j, 0LL, " + r + ") {\n"
            : "  for (long long j = threadIdx.x; j < " + r +
                  "; j += blockDim.x) {\n";
  for (int k = 0; k < 6; ++k) {
    std::string lane =
        host ? std::string("MEMFIT_LANE(") + names[k] + ", j)" : names[k];
    std::string x = std::string(inputs[k]) + "[base + j]";
    s += "    " + lane + " = " +
         (k % 2 ? "op_max(" + lane + ", " + x + ")" : lane + " + " + x) +
         ";\n";
  }
  s += "  }\n";
  // Every thread reduces (the CUDA form meets at barriers); thread 0 writes.
  for (int k = 0; k < 6; ++k)
    s += "  const double r" + std::to_string(k) + " = (double)" +
         (host ? std::string(k % 2 ? "memfit_host::laneMax("
                                   : "memfit_host::laneSum(") +
                     names[k] + ")"
               : std::string(k % 2 ? "cuda_block_max(" : "cuda_block_sum(") +
                     names[k] + ", " + scratch[k] + ")") +
         ";\n";
  s += "  if (threadIdx.x == 0) {\n";
  for (int k = 0; k < 6; ++k)
    s += "    out[6 * blockIdx.x + " + std::to_string(k) + "] = r" +
         std::to_string(k) + ";\n";
  return s + "  }\n}\n";
}

/// A kernel of warp rows (4 warps a block, each a row of `row` elements of
/// the `rows`) in thread loops (host = true: each block's rows one after
/// the other, partials in arrays) or in CUDA's form (fibers): each warp
/// writes its lane 0's warp sum and warp max of the float and double
/// inputs to out[4 * r + 0..3]. In CUDA's form every warp shuffles (the
/// emulation's shuffles are block barriers), the warps past the last row
/// on its data, and only the warps of a row write.
std::string warpRowBody(bool host, int row, int rows, int vector = 1) {
  std::string r = std::to_string(row) + "LL";
  std::string n = std::to_string(rows) + "LL";
  std::string s = R"((double* __restrict__ out, const float* __restrict__ f,
    const double* __restrict__ d) {
)";
  const char *names[] = {"sf", "mf", "sd", "md"};
  const char *types[] = {"float", "float", "double", "double"};
  const char *inits[] = {"0", "-INFINITY", "0", "-INFINITY"};
  const char *inputs[] = {"f", "f", "d", "d"};
  if (host)
    s += "  MEMFIT_WARP_ROWS(row, " + n + ") {\n";
  else
    s += "  const long long warpRow = (long long)blockIdx.x * 4 + "
         "(threadIdx.x >> 5);\n"
         "  const long long row = warpRow < " + n + " ? warpRow : " +
         std::to_string(rows - 1) + "LL;\n  {\n";
  s += "  const long long base = row * " + r + ";\n";
  for (int k = 0; k < 4; ++k)
    s += host ? std::string("  MEMFIT_PARTIAL(") + types[k] + ", " + names[k] +
                    ", " + inits[k] + ");\n"
              : std::string("  ") + types[k] + " " + names[k] + " = " +
                    inits[k] + ";\n";
  // With vectors, each lane takes `vector` adjacent elements at a time
  // (its partial is MEMFIT_LANE(a, j0)).
  std::string v = std::to_string(vector);
  if (vector > 1)
    s += host ? "  MEMFIT_WARP_STRIDE_VEC(j0, 0LL, " + r + ", " + v +
                    ") {\n  for (int k = 0; k < " + v +
                    "; ++k) {\n  const long long j = j0 + k;\n"
              : "  for (long long j0 = (threadIdx.x & 31) * " + v + "; j0 < " +
                    r + "; j0 += 32 * " + v + ") {\n  for (int k = 0; k < " +
                    v + "; ++k) {\n  const long long j = j0 + k;\n";
  else
    s += host ? "  MEMFIT_WARP_STRIDE(j, 0LL, " + r + ") {\n"
              : "  for (long long j = threadIdx.x & 31; j < " + r +
                    "; j += 32) {\n";
  for (int k = 0; k < 4; ++k) {
    std::string lane = host ? std::string("MEMFIT_LANE(") + names[k] +
                                  (vector > 1 ? ", j0)" : ", j)")
                            : names[k];
    std::string x = std::string(inputs[k]) + "[base + j]";
    s += "    " + lane + " = " +
         (k % 2 ? "op_max(" + lane + ", " + x + ")" : lane + " + " + x) +
         ";\n";
  }
  s += vector > 1 ? "  }\n  }\n" : "  }\n";
  for (int k = 0; k < 4; ++k) {
    std::string name = names[k], result = "r" + std::to_string(k);
    if (host) {
      s += "  const double " + result + " = (double)" +
           (k % 2 ? "memfit_host::warpLaneMax(" : "memfit_host::warpLaneSum(") +
           name + ");\n";
      continue;
    }
    std::string shuffled = "__shfl_xor_sync(0xffffffffu, " + name + ", o)";
    s += "  for (int o = 16; o > 0; o >>= 1) " + name + " = " +
         (k % 2 ? "op_max(" + name + ", " + shuffled + ")"
                : name + " + " + shuffled) +
         ";\n  const double " + result + " = (double)" + name + ";\n";
  }
  s += host ? "  if (MEMFIT_LANE0) {\n"
            : "  if ((threadIdx.x & 31) == 0 && warpRow < " + n + ") {\n";
  for (int k = 0; k < 4; ++k)
    s += "    out[4 * row + " + std::to_string(k) + "] = r" +
         std::to_string(k) + ";\n";
  return s + "  }\n  }\n}\n";
}

const char *kThreadLoop = R"((float* __restrict__ out, const float* __restrict__ in) {
  MEMFIT_THREAD_LOOP(i, 300LL) {
    out[i] = 2.0f * in[i] + 1.0f;
  }
}
)";

/// Thread-loop kernels run once per block give what their CUDA form gives
/// as fibers, to the bit: rows longer than the block (threads get
/// different numbers of elements), signed zeros and a NaN; a thread loop
/// leaves the elements past its count alone.
void testThreadLoops() {
  for (uint32_t block : {32u, 96u, 256u}) {
    int row = 3 * int(block) + 5;
    Manifest m;
    m.source = std::string(kPrelude) +
               kernelText("k0_loops", rowReductionBody(true, row)) +
               kernelText("k1_fibers", rowReductionBody(false, row)) +
               kernelText("k2_map", kThreadLoop);
    m.kernels = {kernel("k0_loops", 2, block, true),
                 kernel("k1_fibers", 2, block, true),
                 kernel("k2_map", 2, 256, false)};
    m.kernels[0].threadLoops = m.kernels[2].threadLoops = true;
    std::unique_ptr<Backend> b = preparedOnTwo(m, "cache-thread-loops");
    if (!b)
      return;
    size_t n = 2 * size_t(row);
    std::vector<float> f(n);
    std::vector<double> d(n);
    std::vector<long long> ints(n);
    for (size_t i = 0; i < n; ++i) {
      f[i] = (i % 7 == 0 ? 1e8f : 1.0f) * std::sin(float(i) * 0.7f);
      if (i % 11 == 3 || i < 40)
        f[i] = (i % 3) ? -0.0f : 0.0f;
      d[i] = double(f[i]) * 1e-3 + double(i % 97);
      ints[i] = (long long)(i * 2654435761u % 1000) - 500;
    }
    f[n - 5] = std::numeric_limits<float>::quiet_NaN();
    // f @8192, d @16384, n @32768, out @49152.
    CHECK_OK(b->upload(8192, f.data(), n * 4));
    CHECK_OK(b->upload(16384, d.data(), n * 8));
    CHECK_OK(b->upload(32768, ints.data(), n * 8));
    std::vector<double> loops(12), fibers(12);
    CHECK_OK(b->launchKernel(0, {49152, 8192, 16384, 32768}));
    CHECK_OK(b->download(49152, loops.data(), loops.size() * 8));
    CHECK_OK(b->launchKernel(1, {49152, 8192, 16384, 32768}));
    CHECK_OK(b->download(49152, fibers.data(), fibers.size() * 8));
    CHECK(std::memcmp(loops.data(), fibers.data(), loops.size() * 8) == 0);
    CHECK(std::isfinite(loops[0]) && std::isnan(loops[6]));

    std::vector<float> in(512), out(512, -7.0f);
    for (int i = 0; i < 512; ++i)
      in[i] = float(i);
    CHECK_OK(b->upload(4096, in.data(), in.size() * 4));
    CHECK_OK(b->upload(0, out.data(), out.size() * 4));
    CHECK_OK(b->launchKernel(2, {0, 4096}));
    CHECK_OK(b->download(0, out.data(), out.size() * 4));
    bool ok = true;
    for (int i = 0; i < 512; ++i)
      ok = ok && out[i] == (i < 300 ? 2.0f * float(i) + 1.0f : -7.0f);
    CHECK(ok);
  }
}

/// Warp rows run once per block give their CUDA form's results to the bit:
/// rows shorter and longer than a warp, lanes taking vectors, the last
/// block's warps past the last row idle, signed zeros and a NaN.
void testWarpRows() {
  const int rows = 6;
  // Rows of 5, 32 and 77 elements a lane at a time; of 8, 32 and 76 four
  // adjacent elements at a time (vectors).
  for (auto [row, vector] : {std::pair{5, 1}, {32, 1}, {77, 1}, {8, 4},
                             {32, 4}, {76, 4}}) {
    Manifest m;
    m.source =
        std::string(kPrelude) +
        kernelText("k0_warp_loops", warpRowBody(true, row, rows, vector)) +
        kernelText("k1_warp_fibers", warpRowBody(false, row, rows, vector));
    m.kernels = {kernel("k0_warp_loops", 2, 128, true),
                 kernel("k1_warp_fibers", 2, 128, true)};
    m.kernels[0].threadLoops = true;
    std::unique_ptr<Backend> b = preparedOnTwo(m, "cache-warp-rows");
    if (!b)
      return;
    size_t n = size_t(rows) * size_t(row);
    std::vector<float> f(n);
    std::vector<double> d(n);
    for (size_t i = 0; i < n; ++i) {
      f[i] = (i % 7 == 0 ? 1e8f : 1.0f) * std::sin(float(i) * 0.9f);
      if (i % 13 == 4 || i < 6)
        f[i] = (i % 2) ? -0.0f : 0.0f;
      d[i] = double(f[i]) * 1e-3 + double(i % 89);
    }
    f[n - 2] = std::numeric_limits<float>::quiet_NaN();
    // f @8192, d @16384, out @49152.
    CHECK_OK(b->upload(8192, f.data(), n * 4));
    CHECK_OK(b->upload(16384, d.data(), n * 8));
    std::vector<double> loops(4 * rows, -1.0), fibers(4 * rows, -2.0);
    CHECK_OK(b->upload(49152, loops.data(), loops.size() * 8));
    CHECK_OK(b->launchKernel(0, {49152, 8192, 16384}));
    CHECK_OK(b->download(49152, loops.data(), loops.size() * 8));
    CHECK_OK(b->upload(49152, fibers.data(), fibers.size() * 8));
    CHECK_OK(b->launchKernel(1, {49152, 8192, 16384}));
    CHECK_OK(b->download(49152, fibers.data(), fibers.size() * 8));
    CHECK(std::memcmp(loops.data(), fibers.data(), loops.size() * 8) == 0);
    // Every row written; the NaN only in the last row's float results.
    double sum0 = 0;
    for (int i = 0; i < row; ++i)
      sum0 += d[size_t(i)];
    CHECK(std::fabs(loops[2] - sum0) <= 1e-9 * std::fabs(sum0));
    CHECK(std::isfinite(loops[0]) && std::isnan(loops[4 * (rows - 1)]));
  }
}

/// Products large enough to go to the workers (batches of matrices, and
/// one matrix split into panels of rows), against a naive product.
void testParallelContractions() {
  SessionOptions options;
  options.hostThreads = 3;
  StatusOr<std::unique_ptr<Backend>> made = createHostBackend(options);
  if (!CHECK_OK(made.status()))
    return;
  Backend &b = **made;
  struct Shape {
    int64_t batch, m, n, k;
    bool transA;
  };
  for (Shape s : {Shape{4, 128, 96, 40, false}, Shape{1, 520, 256, 160, true},
                  Shape{1, 520, 256, 160, false}}) {
    Contraction c;
    c.name = "parallel";
    c.dtype = DType::f32;
    c.m = s.m;
    c.n = s.n;
    c.k = s.k;
    c.transA = s.transA;
    c.batchShape = {s.batch};
    c.alpha = 1.0f;
    c.beta = 0.0f;
    c.ld = {s.transA ? s.m : s.k, s.n, s.n};
    c.batchStridesA = {s.m * s.k};
    c.batchStridesB = {s.k * s.n};
    c.batchStridesOut = {s.m * s.n};
    int64_t sizeA = s.batch * s.m * s.k, sizeB = s.batch * s.k * s.n,
            sizeOut = s.batch * s.m * s.n;
    std::vector<float> a(sizeA), bm(sizeB);
    for (int64_t i = 0; i < sizeA; ++i)
      a[i] = float((i * 37) % 17) * 0.125f - 1.0f;
    for (int64_t i = 0; i < sizeB; ++i)
      bm[i] = float((i * 11) % 13) * 0.25f - 1.5f;
    uint64_t offA = 0, offB = sizeA * 4, offOut = offB + sizeB * 4;
    if (!CHECK_OK(b.allocate(offOut + sizeOut * 4)))
      return;
    CHECK_OK(b.upload(offA, a.data(), sizeA * 4));
    CHECK_OK(b.upload(offB, bm.data(), sizeB * 4));
    CHECK_OK(b.runContraction(c, offA, offB, offOut));
    std::vector<float> out(sizeOut);
    CHECK_OK(b.download(offOut, out.data(), sizeOut * 4));
    bool ok = true;
    for (int64_t p = 0; p < s.batch; ++p)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double sum = 0;
          for (int64_t q = 0; q < s.k; ++q) {
            float x = s.transA ? a[p * s.m * s.k + q * s.m + i]
                               : a[p * s.m * s.k + i * s.k + q];
            sum += double(x) * bm[p * s.k * s.n + q * s.n + j];
          }
          ok = ok && std::fabs(out[p * s.m * s.n + i * s.n + j] - sum) <=
                         1e-4 * (1 + std::fabs(sum));
        }
    CHECK(ok);
  }
}

} // namespace

void runHostKernelsTests() {
  testKernelCache();
  testBlockReductions();
  testThreadLoops();
  testWarpRows();
  testParallelUnits();
  testParallelContractions();
}

} // namespace memfit::rt::test
