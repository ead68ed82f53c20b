//===- HostBackend.cpp - running the CUDA C++ source on the CPU -----------===//
//
// The host backend compiles Manifest::source with the host C++ compiler
// against the emulation header (host/memfit_cuda_host.h) into shared
// objects, cached kernel by kernel (HostKernels.cpp), and runs the kernels'
// blocks on a pool of worker threads. Contractions go to OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Half.h"
#include "HostCompiler.h"
#include "HostKernels.h"
#include "HostTasks.h"
#include "HostWorkers.h"

#define MEMFIT_HOST_ABI_ONLY
#include "host/memfit_cuda_host.h"

#include <cblas.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <type_traits>
#include <unistd.h>

namespace memfit::rt {

namespace {

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// Calls gemm(a, b, out) for every batch index with the three matrices'
/// element offsets in their buffers.
template <typename Gemm> void forEachBatch(const Contraction &c, Gemm gemm) {
  size_t rank = c.batchShape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t batches = 1;
  for (int64_t d : c.batchShape)
    batches *= d;
  std::array<int64_t, 3> at = c.offsets;
  for (int64_t i = 0; i < batches; ++i) {
    gemm(at[0], at[1], at[2]);
    // Odometer increment of the batch index, updating the offsets.
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      for (int o = 0; o < 3; ++o)
        at[o] += c.batchStrides(Contraction::Operand(o))[d];
      if (index[d] < c.batchShape[d])
        break;
      for (int o = 0; o < 3; ++o)
        at[o] -= c.batchStrides(Contraction::Operand(o))[d] * index[d];
      index[d] = 0;
    }
  }
}

/// The contraction as single-threaded BLAS calls on the worker threads
/// (OpenBLAS's own threads are off, so that they do not spin beside the
/// workers): one task per matrix of the batch, or per panel of the output
/// when the batch has fewer matrices than workers: panels of columns when
/// the output is wider than tall (each task then reads its part of B once,
/// where panels of rows would each read all of it: the LM head's 154 MB in
/// GPT-2 small), of rows otherwise. An element of the output is computed
/// by one call over all of K, whatever the split.
template <typename T>
void gemmBatched(const Contraction &c, const T *a, const T *b, T *out,
                 WorkerPool &pool) {
  CBLAS_TRANSPOSE ta = c.transA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = c.transB ? CblasTrans : CblasNoTrans;
  blasint k = blasint(c.k);
  blasint lda = blasint(c.ld[0]), ldb = blasint(c.ld[1]),
          ldc = blasint(c.ld[2]);
  std::vector<std::array<int64_t, 3>> matrices;
  forEachBatch(c, [&](int64_t offA, int64_t offB, int64_t offOut) {
    matrices.push_back({offA, offB, offOut});
  });
  // Below a million multiply-adds, waking the workers costs more than the
  // products: the calling thread does them, a call per matrix (which gives
  // what one OpenBLAS thread gives). Above, the matrices go to the workers;
  // a batch of fewer matrices than workers is split into panels only when
  // each matrix is large (kSplitWork), where OpenBLAS would have split it
  // among its threads too (a split changes which of its kernels small
  // products take, so the last bits of a result).
  constexpr int64_t kParallelWork = int64_t(1) << 20;
  constexpr int64_t kSplitWork = int64_t(1) << 24;
  constexpr int64_t kMinRows = 16, kMinColumns = 64;
  int64_t work = c.m * c.n * c.k, count = int64_t(matrices.size());
  bool parallelWorth = pool.size() > 1 && count * work >= kParallelWork;
  bool byColumns = c.n > c.m;
  int64_t extent = byColumns ? c.n : c.m;
  int64_t wanted = int64_t(pool.size()) * 2, panels = 1;
  if (parallelWorth && work >= kSplitWork && count < wanted)
    panels = std::max<int64_t>(
        1, std::min<int64_t>((wanted + count - 1) / count,
                             extent / (byColumns ? kMinColumns : kMinRows)));
  int64_t perPanel = (extent + panels - 1) / panels;
  if (byColumns && panels > 1)
    perPanel = (perPanel + 15) / 16 * 16; // whole vector registers
  auto task = [&](size_t t) {
    const std::array<int64_t, 3> &at = matrices[t / size_t(panels)];
    int64_t first = int64_t(t % size_t(panels)) * perPanel;
    int64_t size = std::min(perPanel, extent - first);
    if (size <= 0)
      return;
    const T *pa = a + at[0], *pb = b + at[1];
    T *pc = out + at[2];
    blasint rows = blasint(c.m), columns = blasint(c.n);
    if (byColumns) {
      // Columns of op(B): columns of B, or rows of B when it is transposed.
      pb += c.transB ? first * c.ld[1] : first;
      pc += first;
      columns = blasint(size);
    } else {
      // Rows of op(A): rows of A, or columns of A when it is transposed.
      pa += c.transA ? first : first * c.ld[0];
      pc += first * c.ld[2];
      rows = blasint(size);
    }
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, rows, columns, k, c.alpha, pa, lda,
                  pb, ldb, c.beta, pc, ldc);
    else
      cblas_dgemm(CblasRowMajor, ta, tb, rows, columns, k, c.alpha, pa, lda,
                  pb, ldb, c.beta, pc, ldc);
  };
  size_t tasks = matrices.size() * size_t(panels);
  if (!parallelWorth || tasks == 1)
    for (size_t t = 0; t < tasks; ++t)
      task(t);
  else
    pool.run(tasks, task);
}

/// f16 and bf16: converted to f32, multiplied with f32 accumulation (as
/// cuBLAS does with a 32-bit compute type), rounded back. Only the output's
/// own elements are written back: a strided output leaves the elements
/// between its rows and matrices as they were.
void gemmHalf(const Contraction &c, const uint16_t *a, const uint16_t *b,
              uint16_t *out, WorkerPool &pool) {
  bool bf16 = c.dtype == DType::bf16;
  auto widen = [&](const uint16_t *p, int64_t count) {
    std::vector<float> v(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      v[i] = bf16 ? bf16ToFloat(p[i]) : halfToFloat(p[i]);
    return v;
  };
  std::vector<float> fa = widen(a, operandSpan(c, Contraction::A));
  std::vector<float> fb = widen(b, operandSpan(c, Contraction::B));
  std::vector<float> fo = widen(out, operandSpan(c, Contraction::Out));
  gemmBatched<float>(c, fa.data(), fb.data(), fo.data(), pool);
  forEachBatch(c, [&](int64_t, int64_t, int64_t offOut) {
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        int64_t e = offOut + i * c.ld[2] + j;
        out[e] = bf16 ? floatToBf16(fo[e]) : floatToHalf(fo[e]);
      }
  });
}

//===----------------------------------------------------------------------===//
// HostBackend
//===----------------------------------------------------------------------===//

class HostBackend final : public Backend {
public:
  explicit HostBackend(std::vector<std::string> compiler)
      : compiler_(std::move(compiler)) {}

  ~HostBackend() override {
    // Each queue runs what it holds, then its workers release their state.
    for (Side &side : side_) {
      side.queue.reset();
      side.pool.reset();
    }
    pool_.reset(); // workers release their state in the libraries first
    kernelLibraries_.reset();
    release();
  }

  Status startWorkers(unsigned count, unsigned taskCount, bool overlap) {
    pool_ = std::make_unique<WorkerPool>();
    MEMFIT_RT_RETURN_IF_ERROR(pool_->start(count));
    taskThreads_ = taskCount;
    overlap_ = overlap;
    return Status::ok();
  }

  /// Host tasks run on workers of their own, in order, beside the steps
  /// after them: started at the first one.
  Status startHostKernel(uint32_t kernel,
                         const std::vector<uint64_t> &offsets) override {
    MEMFIT_RT_RETURN_IF_ERROR(
        queueKernel(side_[HostTasks], taskThreads_, kernel, offsets));
    return overlap_ ? Status::ok()
                    : side_[HostTasks].queue->waitFor(
                          side_[HostTasks].queue->pushed());
  }
  /// The copies of offloaded activations, likewise on a worker of their
  /// own (the host's copy stream).
  StatusOr<bool> startCopyKernel(uint32_t kernel,
                                 const std::vector<uint64_t> &offsets) override {
    if (!overlap_) {
      MEMFIT_RT_RETURN_IF_ERROR(launchKernel(kernel, offsets));
      return false;
    }
    MEMFIT_RT_RETURN_IF_ERROR(queueKernel(side_[Copies], 1, kernel, offsets));
    return true;
  }
  Status waitQueue(SideQueue queue, uint64_t count) override {
    const Side &side = side_[queue];
    return side.queue ? side.queue->waitFor(count) : Status::ok();
  }
  /// The waiter's next task waits for `queue`'s first `count` on its own
  /// thread before it runs; where that task would run in the step (a copy
  /// without the overlap), the step waits.
  Status orderQueues(SideQueue waiter, SideQueue queue,
                     uint64_t count) override {
    if (waiter == Collectives || (waiter == Copies && !overlap_))
      return waitQueue(queue, count);
    uint64_t &after = side_[waiter].after[queue];
    after = std::max(after, count);
    return Status::ok();
  }
  uint64_t queueFinished(SideQueue queue) const override {
    const Side &side = side_[queue];
    return side.queue ? side.queue->finished() : 0;
  }

  std::string description() const override {
    std::string s = "host (" + std::to_string(pool_->size()) + " thread" +
                    (pool_->size() == 1 ? "" : "s");
    if (!version_.empty())
      s += ", " + version_;
    return s + ")";
  }

  Status allocate(uint64_t bytes) override {
    release();
    // Whole huge pages: the plan's buffers are touched by every step, and
    // 2 MiB pages take a 512th of the page faults and TLB entries.
    constexpr uint64_t kHugePage = uint64_t(2) << 20;
    uint64_t rounded = (std::max<uint64_t>(bytes, 1) + kHugePage - 1) /
                       kHugePage * kHugePage;
    auto exhausted = [&](const std::string &why) {
      return Status::error(StatusCode::ResourceExhausted,
                           "cannot allocate " + std::to_string(bytes) +
                               " bytes of host memory" + why);
    };
    if (rounded < bytes || rounded > SIZE_MAX)
      return exhausted("");
    // Checked against the machine before allocating: with overcommit, an
    // allocation larger than the memory can succeed and then be killed
    // when it is touched.
    long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && pageSize > 0 &&
        rounded / static_cast<uint64_t>(pageSize) >
            static_cast<uint64_t>(pages))
      return exhausted(": the machine has " +
                       std::to_string(static_cast<uint64_t>(pages) *
                                      static_cast<uint64_t>(pageSize)) +
                       " bytes");
    // Anonymous memory starts zeroed, as Backend::allocate promises.
    void *memory = ::mmap(nullptr, static_cast<size_t>(rounded),
                          PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    if (memory == MAP_FAILED)
      return exhausted(std::string(": ") + std::strerror(errno));
    memory_ = static_cast<uint8_t *>(memory);
    mapped_ = static_cast<size_t>(rounded);
    // Huge pages where the kernel has them (advice only), then every page
    // faulted in now: a machine short of memory fails here, with a status,
    // rather than killing the process in a step. Kernels before 5.14 lack
    // MADV_POPULATE_WRITE; the pages are then touched one by one.
    ::madvise(memory_, mapped_, MADV_HUGEPAGE);
    if (::madvise(memory_, mapped_, MADV_POPULATE_WRITE) != 0) {
      int error = errno;
      if (error != EINVAL) {
        release();
        return exhausted(std::string(": ") + std::strerror(error));
      }
      for (size_t at = 0; at < mapped_; at += static_cast<size_t>(pageSize))
        memory_[at] = 0;
    }
    allocated_ = bytes;
    return Status::ok();
  }

  void release() {
    if (memory_)
      ::munmap(memory_, mapped_);
    memory_ = nullptr;
    mapped_ = 0;
    allocated_ = 0;
  }

  uint64_t allocatedBytes() const override { return allocated_; }

  Status upload(uint64_t offset, const void *data, uint64_t bytes) override {
    MEMFIT_RT_RETURN_IF_ERROR(checkRange("upload", offset, bytes));
    if (bytes)
      std::memcpy(memory_ + offset, data, static_cast<size_t>(bytes));
    return Status::ok();
  }

  Status download(uint64_t offset, void *data, uint64_t bytes) override {
    MEMFIT_RT_RETURN_IF_ERROR(checkRange("download", offset, bytes));
    if (bytes)
      std::memcpy(data, memory_ + offset, static_cast<size_t>(bytes));
    return Status::ok();
  }

  Status prepareKernels(const Manifest &manifest, const SessionOptions &options,
                        SessionTimings &timings) override;

  Status launchKernel(uint32_t kernel,
                      const std::vector<uint64_t> &offsets) override {
    return runKernel(*pool_, kernel, offsets);
  }

  Status runCollective(const Collective &c, uint64_t in, uint64_t out,
                       Communicator &comm) override {
    // Steps run one after another here: every earlier one is done.
    return comm.run(c, memory_ + in, memory_ + out);
  }

  /// Collectives of several ranks run on a thread of their own where the
  /// communicator allows it (MPI serialized), beside the later steps.
  StatusOr<bool> startCollective(const Collective &c, uint64_t in,
                                 uint64_t out, Communicator &comm) override {
    if (!overlap_ || comm.size() == 1 || !comm.runsOnAnyThread()) {
      MEMFIT_RT_RETURN_IF_ERROR(runCollective(c, in, out, comm));
      return false;
    }
    Side &side = side_[Collectives];
    MEMFIT_RT_RETURN_IF_ERROR(startSide(side, 0));
    side.queue->push([this, c, in, out, &comm] {
      return comm.run(c, memory_ + in, memory_ + out)
          .withContext("collective '" + c.name + "'");
    });
    return true;
  }

  Status runContraction(const Contraction &c, uint64_t a, uint64_t b,
                        uint64_t out) override {
    switch (c.dtype) {
    case DType::f32:
      gemmBatched(c, reinterpret_cast<const float *>(memory_ + a),
                  reinterpret_cast<const float *>(memory_ + b),
                  reinterpret_cast<float *>(memory_ + out), *pool_);
      return Status::ok();
    case DType::f64:
      gemmBatched(c, reinterpret_cast<const double *>(memory_ + a),
                  reinterpret_cast<const double *>(memory_ + b),
                  reinterpret_cast<double *>(memory_ + out), *pool_);
      return Status::ok();
    case DType::f16:
    case DType::bf16:
      gemmHalf(c, reinterpret_cast<const uint16_t *>(memory_ + a),
               reinterpret_cast<const uint16_t *>(memory_ + b),
               reinterpret_cast<uint16_t *>(memory_ + out), *pool_);
      return Status::ok();
    default:
      // Session names the step and the contraction.
      return invalidArgument(std::string("dtype ") + dtypeName(c.dtype) +
                             " is not supported by the host backend (f32, f64, "
                             "f16, bf16)");
    }
  }

  Status synchronize() override { return Status::ok(); }

private:
  Status checkRange(const char *what, uint64_t offset, uint64_t bytes) const {
    if (offset > allocated_ || bytes > allocated_ - offset)
      return internalError(std::string(what) + " of " + std::to_string(bytes) +
                           " bytes at offset " + std::to_string(offset) +
                           " exceeds the allocation of " +
                           std::to_string(allocated_) + " bytes");
    return Status::ok();
  }

  struct KernelEntry {
    std::string name;
    std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  };

  std::vector<std::string> compiler_;
  std::string version_;
  /// Runs the kernel's blocks on `pool`'s workers.
  Status runKernel(WorkerPool &pool, uint32_t kernel,
                   const std::vector<uint64_t> &offsets);

  /// A side queue (Backend.h), and the workers that run its kernels' blocks
  /// (none for collectives).
  struct Side {
    std::unique_ptr<WorkerPool> pool;
    std::unique_ptr<HostTaskQueue> queue;
    /// How many tasks of each queue its next task waits for first
    /// (orderQueues).
    uint64_t after[kSideQueues] = {0, 0, 0};
  };
  /// Queues kernel `kernel` on `side`, whose workers (`threads` of them,
  /// started with its first task) run its blocks, after the other queues'
  /// tasks it was ordered after.
  Status queueKernel(Side &side, unsigned threads, uint32_t kernel,
                     const std::vector<uint64_t> &offsets) {
    MEMFIT_RT_RETURN_IF_ERROR(startSide(side, threads));
    std::vector<std::pair<HostTaskQueue *, uint64_t>> first;
    for (int q = 0; q < kSideQueues; ++q) {
      if (side.after[q] && side_[q].queue)
        first.push_back({side_[q].queue.get(), side.after[q]});
      side.after[q] = 0;
    }
    side.queue->push([this, &side, kernel, offsets, first] {
      // Each was started before this task: no cycle.
      for (auto [queue, count] : first)
        MEMFIT_RT_RETURN_IF_ERROR(queue->waitFor(count));
      return runKernel(*side.pool, kernel, offsets);
    });
    return Status::ok();
  }
  /// Starts `side`'s queue and `threads` workers, at its first task.
  Status startSide(Side &side, unsigned threads) {
    if (side.queue)
      return Status::ok();
    if (threads) {
      side.pool = std::make_unique<WorkerPool>();
      MEMFIT_RT_RETURN_IF_ERROR(side.pool->start(threads, /*batch=*/true));
      side.pool->setExitHooks(kernelLibraries_->releases);
    }
    side.queue = std::make_unique<HostTaskQueue>();
    return Status::ok();
  }

  std::unique_ptr<WorkerPool> pool_;
  Side side_[kSideQueues];
  unsigned taskThreads_ = 1;
  bool overlap_ = true;
  std::unique_ptr<HostKernels> kernelLibraries_;
  std::vector<KernelEntry> kernels_;
  uint8_t *memory_ = nullptr;
  size_t mapped_ = 0;
  uint64_t allocated_ = 0;
};

Status HostBackend::prepareKernels(const Manifest &manifest,
                                   const SessionOptions &options,
                                   SessionTimings &timings) {
  if (kernelLibraries_)
    return internalError("host backend: kernels are already prepared");
  for (size_t i = 0; i < manifest.kernels.size(); ++i)
    if (manifest.kernels[i].sharedBytes != 0)
      return invalidArgument("host backend: kernels[" + std::to_string(i) +
                             "] ('" + manifest.kernels[i].name +
                             "') asks for dynamic shared memory, which the "
                             "kernel subset (runtime/KERNELS.md) does not use");
  StatusOr<std::string> version = compilerVersion(compiler_);
  if (!version)
    return version.status().withContext(
        "host backend: no host C++ compiler (set SessionOptions::hostCompiler "
        "or $MEMFIT_HOST_CXX)");
  version_ = *version;

  kernelLibraries_ = std::make_unique<HostKernels>();
  MEMFIT_RT_RETURN_IF_ERROR(loadHostKernels(manifest, compiler_, version_,
                                            options, pool_->size(), timings,
                                            *kernelLibraries_));
  pool_->setExitHooks(kernelLibraries_->releases);
  for (size_t i = 0; i < manifest.kernels.size(); ++i) {
    const Kernel &k = manifest.kernels[i];
    KernelEntry entry;
    entry.name = k.name;
    entry.grid = k.grid;
    entry.block = k.block;
    kernels_.push_back(entry);
  }
  return Status::ok();
}

Status HostBackend::runKernel(WorkerPool &pool, uint32_t kernel,
                              const std::vector<uint64_t> &offsets) {
  if (kernel >= kernels_.size())
    return internalError("host backend: no kernel " + std::to_string(kernel));
  const KernelEntry &k = kernels_[kernel];
  std::vector<void *> pointers(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    MEMFIT_RT_RETURN_IF_ERROR(checkRange("kernel argument", offsets[i], 0));
    pointers[i] = memory_ + offsets[i];
  }
  return runHostKernel(pool, kernelLibraries_->launchers[kernel], k.grid,
                       k.block, pointers);
}

} // namespace

StatusOr<std::unique_ptr<Backend>>
createHostBackend(const SessionOptions &options) {
  std::vector<std::string> compiler = splitWords(hostCompilerCommand(options));
  if (compiler.empty())
    return invalidArgument("host backend: the host compiler command is empty");
  StatusOr<unsigned> threads =
      threadCount(options.hostThreads, "threads", "MEMFIT_HOST_THREADS");
  if (!threads)
    return threads.status();
  if (*threads == 0)
    *threads = usableCpus();
  // The workers run the contractions, one single-threaded BLAS call each
  // (gemmBatched): OpenBLAS's own threads would spin beside them.
  static std::once_flag blasThreads;
  std::call_once(blasThreads, [] { openblas_set_num_threads(1); });
  auto backend = std::make_unique<HostBackend>(std::move(compiler));
  StatusOr<unsigned> taskThreads = hostTaskThreads(options, 1);
  if (!taskThreads)
    return taskThreads.status();
  MEMFIT_RT_RETURN_IF_ERROR(backend->startWorkers(*threads, *taskThreads,
                                                  options.overlapHostTasks));
  return std::unique_ptr<Backend>(std::move(backend));
}

} // namespace memfit::rt
