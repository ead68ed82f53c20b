//===- CudaBackend.cpp - running executables on an NVIDIA GPU -------------===//
//
// The CUDA backend drives one device through the driver API, loaded with
// dlopen (CudaSymbols.h):
//
//  - the device's primary context (shared with any other CUDA user in the
//    process, as the CUDA runtime and cuBLASLt expect) and one stream, on
//    which every kernel and contraction is ordered;
//  - one cuMemAlloc of the plan's total size, checked against the free
//    memory first so that a plan that does not fit fails before anything
//    runs;
//  - the manifest's source compiled by NVRTC to CUBIN for the device's
//    architecture, through the on-disk KernelCache;
//  - contractions through cuBLASLt, with no workspace, so that the session's
//    one allocation stays the only one of any size (cuBLASLt's handle and
//    descriptors are small host objects).
//
// Every entry point makes the context current on the calling thread first,
// so a session may be used from any one thread at a time.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "CudaSymbols.h"
#include "KernelCache.h"

#include "memfit/runtime/Bytes.h"
#include "memfit/runtime/Nvrtc.h"

#include <array>
#include <limits>
#include <chrono>
#include <optional>
#include <unordered_map>

namespace memfit::rt {
namespace {

using namespace cuda;

/// Loads the driver, initializes it and counts the devices; errors say why
/// CUDA cannot be used ("no CUDA driver (libcuda.so.1 not found): ...",
/// "no CUDA device", ...).
StatusOr<const DriverSymbols *> initDriver(int &deviceCount) {
  StatusOr<const DriverSymbols *> loaded = loadDriver();
  if (!loaded)
    return loaded.status();
  const DriverSymbols &cu = **loaded;
  CUresult result = cu.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE)
    return unavailable("no CUDA device (" +
                       cu.check(result, "cuInit").message() + ")");
  if (result != CUDA_SUCCESS) // whatever the cause, CUDA is not usable
    return unavailable("CUDA driver " + cu.path + ": " +
                       cu.check(result, "cuInit").message());
  deviceCount = 0;
  MEMFIT_CU_RETURN_IF_ERROR(cu, cuDeviceGetCount, &deviceCount);
  if (deviceCount <= 0)
    return unavailable("no CUDA device");
  return loaded;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// How cuBLASLt sees a dtype: the matrices' type, the compute type and the
/// type of alpha and beta. Half types accumulate in fp32.
struct ElementType {
  cudaDataType data;
  cublasComputeType_t compute;
  cudaDataType scale;
  uint64_t bytes;
};

StatusOr<ElementType> elementType(const Contraction &contraction) {
  switch (contraction.dtype) {
  case DType::f32:
    return ElementType{CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 4};
  case DType::f16:
    return ElementType{CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2};
  case DType::bf16:
    return ElementType{CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2};
  case DType::f64:
    return ElementType{CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, 8};
  default:
    return invalidArgument("contraction '" + contraction.name + "': dtype " +
                           dtypeName(contraction.dtype) +
                           " is not supported on CUDA (cuBLASLt contractions "
                           "take f32, f16, bf16 or f64)");
  }
}

/// How the batch of a contraction is issued. cuBLASLt's strided batch takes
/// one stride per operand, so the trailing batch dimensions over which both
/// A's and B's strides are expressible as a single stride form one strided
/// batch of `innerCount` matrices, and the leading `outerRank` dimensions
/// are looped over with one cublasLtMatmul per index. The output is
/// contiguous, so it is expressible over any dimensions. In the common cases
/// (no batch, a contiguous batch, one operand broadcast over the whole
/// batch) there is no loop.
struct BatchPlan {
  size_t outerRank = 0;
  int64_t outerCount = 1;
  int64_t innerCount = 1;
  std::array<int64_t, 3> strides{0, 0, 0}; // A, B, out: between inner matrices
};

/// The single stride of an operand over batch dimensions [first, rank):
/// dimensions of extent 1 do not matter, and every other dimension i must
/// have stride s * product(shape[i+1:]) for the s of the innermost one.
std::optional<int64_t> flatStride(const std::vector<int64_t> &shape,
                                  const std::vector<int64_t> &strides,
                                  size_t first) {
  std::optional<int64_t> stride;
  int64_t extent = 1;
  for (size_t i = shape.size(); i-- > first;) {
    if (shape[i] == 1)
      continue;
    if (!stride)
      stride = strides[i]; // extent is 1: every inner dimension has extent 1
    else if (strides[i] != *stride * extent)
      return std::nullopt;
    extent *= shape[i];
  }
  return stride.value_or(0);
}

BatchPlan planBatch(const Contraction &contraction) {
  const std::vector<int64_t> &shape = contraction.batchShape;
  BatchPlan plan;
  for (size_t first = 0; first <= shape.size(); ++first) {
    int64_t inner = 1;
    for (size_t i = first; i < shape.size(); ++i)
      inner *= shape[i];
    if (inner > INT32_MAX) // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT is int32_t
      continue;
    std::optional<int64_t> strides[3];
    for (int o = 0; o < 3; ++o)
      strides[o] = flatStride(
          shape, contraction.batchStrides(Contraction::Operand(o)), first);
    if (!strides[0] || !strides[1] || !strides[2])
      continue;
    // cuBLASLt's strided batch is for output matrices that do not overlap
    // (each [m rows of ld] after the previous): matrices that interleave
    // (attention heads written merged) are looped over instead.
    if (inner > 1 && *strides[2] < contraction.ld[2] * contraction.m)
      continue;
    plan.outerRank = first;
    plan.innerCount = inner;
    for (int o = 0; o < 3; ++o)
      plan.strides[o] = inner > 1 ? *strides[o] : 0;
    break;
  }
  for (size_t i = 0; i < plan.outerRank; ++i)
    plan.outerCount *= shape[i];
  return plan;
}

/// The largest power of two, at most 256, that divides every value:
/// the alignment cuBLASLt may assume of a matrix's addresses.
uint32_t commonAlignment(const std::vector<uint64_t> &values) {
  uint64_t bits = 256;
  for (uint64_t value : values)
    bits |= value;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

/// The cuBLASLt objects of one contraction shape, created once and reused
/// by every run.
struct MatmulPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  // cuBLASLt is column-major; see CudaBackend::createPlan for the operands.
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

void destroyPlan(const BlasLtSymbols &lt, MatmulPlan &plan) {
  if (plan.first)
    (void)lt.cublasLtMatrixLayoutDestroy(plan.first);
  if (plan.second)
    (void)lt.cublasLtMatrixLayoutDestroy(plan.second);
  if (plan.out)
    (void)lt.cublasLtMatrixLayoutDestroy(plan.out);
  if (plan.desc)
    (void)lt.cublasLtMatmulDescDestroy(plan.desc);
  plan = MatmulPlan();
}

//===----------------------------------------------------------------------===//
// CudaBackend
//===----------------------------------------------------------------------===//

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(const DriverSymbols &cu) : cu_(cu) {}
  ~CudaBackend() override;

  /// Opens device `ordinal` of `deviceCount`.
  Status init(int ordinal, int deviceCount);

  std::string description() const override;
  Status allocate(uint64_t bytes) override;
  uint64_t allocatedBytes() const override { return bytes_; }
  Status upload(uint64_t offset, const void *data, uint64_t bytes) override;
  Status download(uint64_t offset, void *data, uint64_t bytes) override;
  Status prepareKernels(const Manifest &manifest, const SessionOptions &options,
                        SessionTimings &timings) override;
  Status launchKernel(uint32_t kernel,
                      const std::vector<uint64_t> &offsets) override;
  Status runContraction(const Contraction &contraction, uint64_t a, uint64_t b,
                        uint64_t out) override;
  Status runCollective(const Collective &c, uint64_t, uint64_t,
                       Communicator &) override {
    return unavailable("collective '" + c.name +
                       "': the cuda backend runs collectives through NCCL, "
                       "which it does not load yet; train data parallel on "
                       "--device=host");
  }
  Status synchronize() override;

private:
  struct LoadedKernel {
    std::string name;
    std::array<uint32_t, 3> grid, block;
    uint32_t sharedBytes;
    CUfunction function;
  };

  Status makeCurrent() const {
    return cu_.check(cu_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  }
  std::string deviceName() const {
    return name_ + " (device " + std::to_string(ordinal_) + ")";
  }
  /// Fails when [offset, offset + bytes) is not inside the allocation.
  Status checkRange(const char *what, uint64_t offset, uint64_t bytes) const;
  /// Loads `cubin` as the module, replacing any earlier one.
  Status loadModule(const std::vector<char> &cubin,
                    const std::string &nvrtcVersion);
  Status initBlasLt();
  StatusOr<MatmulPlan *> getPlan(const Contraction &contraction,
                                 const ElementType &type,
                                 const BatchPlan &batch, uint32_t alignFirst,
                                 uint32_t alignSecond, uint32_t alignOut);
  StatusOr<MatmulPlan> createPlan(const Contraction &contraction,
                                  const ElementType &type,
                                  const BatchPlan &batch, uint32_t alignFirst,
                                  uint32_t alignSecond, uint32_t alignOut);

  const DriverSymbols &cu_;
  int ordinal_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr; // retained primary context
  CUstream stream_ = nullptr;
  std::string name_, arch_;
  int driverVersion_ = 0;

  CUdeviceptr base_ = 0;
  uint64_t bytes_ = 0;
  bool allocated_ = false;

  CUmodule module_ = nullptr;
  std::vector<LoadedKernel> kernels_;

  const BlasLtSymbols *lt_ = nullptr;
  cublasLtHandle_t blasLt_ = nullptr;
  std::unordered_map<std::string, MatmulPlan> plans_;
};

Status CudaBackend::init(int ordinal, int deviceCount) {
  if (ordinal < 0 || ordinal >= deviceCount)
    return invalidArgument("CUDA device " + std::to_string(ordinal) +
                           " is out of range: the system has " +
                           std::to_string(deviceCount) + " CUDA device" +
                           (deviceCount == 1 ? "" : "s"));
  ordinal_ = ordinal;
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDeviceGet, &device_, ordinal);
  char name[256] = {};
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDeviceGetName, name, sizeof name - 1,
                            device_);
  name_ = name;
  int major = 0, minor = 0;
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDeviceGetAttribute, &major,
                            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                            device_);
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDeviceGetAttribute, &minor,
                            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                            device_);
  arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuDriverGetVersion, &driverVersion_);

  MEMFIT_RT_RETURN_IF_ERROR(
      cu_.check(cu_.cuDevicePrimaryCtxRetain(&context_, device_),
                "cuDevicePrimaryCtxRetain")
          .withContext(deviceName()));
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  // A blocking stream (flags 0): it is also ordered with the synchronous
  // copies, which run on the legacy default stream.
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamCreate, &stream_, 0u);
  return Status::ok();
}

CudaBackend::~CudaBackend() {
  // Errors are ignored: a destructor cannot report them, and after a sticky
  // error (an illegal address) every call fails.
  if (!context_)
    return;
  (void)cu_.cuCtxSetCurrent(context_);
  if (stream_)
    (void)cu_.cuStreamSynchronize(stream_);
  if (lt_) {
    for (auto &entry : plans_)
      destroyPlan(*lt_, entry.second);
    if (blasLt_)
      (void)lt_->cublasLtDestroy(blasLt_);
  }
  if (base_)
    (void)cu_.cuMemFree(base_);
  if (module_)
    (void)cu_.cuModuleUnload(module_);
  if (stream_)
    (void)cu_.cuStreamDestroy(stream_);
  (void)cu_.cuDevicePrimaryCtxRelease(device_);
}

std::string CudaBackend::description() const {
  return name_ + " (" + arch_ + ", driver " +
         formatCudaVersion(driverVersion_) + ")";
}

Status CudaBackend::allocate(uint64_t bytes) {
  if (allocated_)
    return internalError(
        "the CUDA backend makes one allocation, and it was made");
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  size_t free = 0, total = 0;
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemGetInfo, &free, &total);
  std::string needs = "the executable needs " + formatBytesExact(bytes) +
                      " of device memory but " + deviceName() + " has " +
                      formatBytesExact(free) + " free of " +
                      formatBytesExact(total);
  if (bytes > free)
    return Status::error(StatusCode::ResourceExhausted, needs);
  allocated_ = true;
  if (bytes == 0)
    return Status::ok(); // nothing to hold; cuMemAlloc rejects 0 bytes
  CUresult result = cu_.cuMemAlloc(&base_, bytes);
  if (result != CUDA_SUCCESS) {
    base_ = 0;
    allocated_ = false;
    // Free memory can be fragmented or taken by another process since
    // cuMemGetInfo.
    return cu_.check(result, "cuMemAlloc").withContext(needs);
  }
  bytes_ = bytes;
  // Zeroed like the host backend's memory, so that both backends start from
  // the same state.
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemsetD8, base_, 0, bytes);
  return Status::ok();
}

Status CudaBackend::checkRange(const char *what, uint64_t offset,
                               uint64_t bytes) const {
  if (offset <= bytes_ && bytes <= bytes_ - offset)
    return Status::ok();
  return invalidArgument(std::string(what) + " of " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) +
                         " is outside the allocation of " +
                         std::to_string(bytes_) + " bytes");
}

Status CudaBackend::upload(uint64_t offset, const void *data, uint64_t bytes) {
  MEMFIT_RT_RETURN_IF_ERROR(checkRange("upload", offset, bytes));
  if (bytes == 0)
    return Status::ok();
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  // Kernels of an earlier run may still read what is overwritten.
  MEMFIT_RT_RETURN_IF_ERROR(synchronize());
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemcpyHtoD, base_ + offset, data, bytes);
  return Status::ok();
}

Status CudaBackend::download(uint64_t offset, void *data, uint64_t bytes) {
  MEMFIT_RT_RETURN_IF_ERROR(checkRange("download", offset, bytes));
  if (bytes == 0)
    return Status::ok();
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  MEMFIT_RT_RETURN_IF_ERROR(synchronize());
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemcpyDtoH, data, base_ + offset, bytes);
  return Status::ok();
}

Status CudaBackend::loadModule(const std::vector<char> &cubin,
                               const std::string &nvrtcVersion) {
  if (module_) {
    (void)cu_.cuModuleUnload(module_);
    module_ = nullptr;
  }
  CUresult result = cu_.cuModuleLoadData(&module_, cubin.data());
  if (result == CUDA_SUCCESS)
    return Status::ok();
  module_ = nullptr;
  Status status = cu_.check(result, "cuModuleLoadData");
  // CUBIN from a newer toolkit than the driver is the usual cause.
  std::string driver = formatCudaVersion(driverVersion_);
  int major = 0, minor = 0;
  if (std::sscanf(nvrtcVersion.c_str(), "%d.%d", &major, &minor) == 2 &&
      major * 1000 + minor * 10 > driverVersion_)
    return Status::error(
        status.code(),
        status.message() + " (the kernels were compiled by NVRTC " +
            nvrtcVersion + " but the driver supports CUDA " + driver +
            " at most: update the driver, or put the "
            "libnvrtc of CUDA " +
            driver + " on LD_LIBRARY_PATH)");
  return status;
}

Status CudaBackend::prepareKernels(const Manifest &manifest,
                                   const SessionOptions &options,
                                   SessionTimings &timings) {
  timings.compileSeconds = 0;
  timings.cacheHit = false;
  kernels_.clear();
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());

  // Contractions fail here rather than in the middle of a run.
  if (!manifest.contractions.empty()) {
    for (const Contraction &contraction : manifest.contractions) {
      StatusOr<ElementType> type = elementType(contraction);
      if (!type)
        return type.status();
    }
    MEMFIT_RT_RETURN_IF_ERROR(initBlasLt());
  }
  if (manifest.kernels.empty())
    return Status::ok();

  std::string context =
      "compiling the kernels for " + name_ + " (" + arch_ + ")";
  StatusOr<std::string> version = nvrtcVersion();
  if (!version)
    return version.status().withContext(context);

  // The cache holds CUBIN per (source, architecture, NVRTC version). An
  // entry the driver rejects (truncated, or from an incompatible build) is
  // compiled again and replaced.
  KernelCache cache(options);
  bool useCache = !options.disableCache && cache.enabled();
  std::string path =
      useCache ? cache.path("cubin", manifest.source, arch_, *version, "cubin")
               : "";
  if (useCache) {
    if (std::optional<std::vector<char>> cubin = cache.load(path))
      timings.cacheHit = loadModule(*cubin, *version).isOk();
  }
  if (!timings.cacheHit) {
    auto start = std::chrono::steady_clock::now();
    StatusOr<NvrtcResult> compiled = compileToCubin(manifest.source, arch_);
    timings.compileSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!compiled)
      return compiled.status().withContext(context);
    MEMFIT_RT_RETURN_IF_ERROR(
        loadModule(compiled->cubin, *version).withContext(context));
    if (useCache)
      cache.store(path, compiled->cubin);
  }

  for (const Kernel &kernel : manifest.kernels) {
    LoadedKernel loaded{kernel.name, kernel.grid, kernel.block,
                        kernel.sharedBytes, nullptr};
    CUresult result =
        cu_.cuModuleGetFunction(&loaded.function, module_, kernel.name.c_str());
    if (result != CUDA_SUCCESS)
      return cu_.check(result, "cuModuleGetFunction")
          .withContext("kernel '" + kernel.name +
                       "' of the manifest is not in the compiled source");
    // Dynamic shared memory beyond the default 48 KiB must be opted into.
    if (kernel.sharedBytes > 48 * 1024)
      MEMFIT_RT_RETURN_IF_ERROR(
          cu_.check(cu_.cuFuncSetAttribute(
                        loaded.function,
                        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        static_cast<int>(kernel.sharedBytes)),
                    "cuFuncSetAttribute")
              .withContext("kernel '" + kernel.name + "' asks for " +
                           std::to_string(kernel.sharedBytes) +
                           " bytes of dynamic shared memory"));
    kernels_.push_back(std::move(loaded));
  }
  return Status::ok();
}

Status CudaBackend::launchKernel(uint32_t kernel,
                                 const std::vector<uint64_t> &offsets) {
  if (kernel >= kernels_.size())
    return invalidArgument(
        "kernel " + std::to_string(kernel) + " is out of range: " +
        std::to_string(kernels_.size()) + " kernels are loaded");
  const LoadedKernel &k = kernels_[kernel];
  // Each parameter is a device pointer; kernelParams points at each value.
  std::vector<CUdeviceptr> pointers(offsets.size());
  std::vector<void *> params(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    MEMFIT_RT_RETURN_IF_ERROR(checkRange("a kernel argument", offsets[i], 0)
                                  .withContext("kernel '" + k.name + "'"));
    pointers[i] = base_ + offsets[i];
    params[i] = &pointers[i];
  }
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  CUresult result = cu_.cuLaunchKernel(
      k.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
      k.block[2], k.sharedBytes, stream_,
      params.empty() ? nullptr : params.data(), nullptr);
  if (result == CUDA_SUCCESS)
    return Status::ok();
  return cu_.check(result, "cuLaunchKernel")
      .withContext(
          "launching kernel '" + k.name + "' (grid " +
          std::to_string(k.grid[0]) + "x" + std::to_string(k.grid[1]) + "x" +
          std::to_string(k.grid[2]) + ", block " + std::to_string(k.block[0]) +
          "x" + std::to_string(k.block[1]) + "x" + std::to_string(k.block[2]) +
          ", " + std::to_string(k.sharedBytes) +
          " bytes of dynamic shared memory)");
}

Status CudaBackend::synchronize() {
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  CUresult result = cu_.cuStreamSynchronize(stream_);
  if (result == CUDA_SUCCESS)
    return Status::ok();
  // Kernels report faults asynchronously, at the next synchronization.
  Status status = cu_.check(result, "cuStreamSynchronize");
  return Status::error(status.code(),
                       status.message() +
                           " (a fault of an earlier kernel or contraction; "
                           "run with CUDA_LAUNCH_BLOCKING=1 to find which)");
}

Status CudaBackend::initBlasLt() {
  if (blasLt_)
    return Status::ok();
  StatusOr<const BlasLtSymbols *> lt = loadBlasLt();
  if (!lt)
    return lt.status().withContext("contractions need cuBLASLt");
  lt_ = *lt;
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  return lt_->check(lt_->cublasLtCreate(&blasLt_), "cublasLtCreate")
      .withContext("cuBLASLt " + lt_->path + " on " + deviceName() +
                   ", driver " + formatCudaVersion(driverVersion_));
}

// cuBLASLt is column-major and memfit's matrices are row-major. A row-major
// [r, c] matrix is the column-major [c, r] matrix with the same bytes, its
// transpose, so out = op(A) x op(B) is computed as
//
//   out^T = op(B)^T x op(A)^T        (column-major, n x m, ld n)
//
// with cuBLASLt's first operand on B's buffer and its second on A's:
//   first:  B is [k, n] (row-major) -> column-major [n, k], ld n, op N
//           B is [n, k] (transB)    -> column-major [k, n], ld k, op T
//   second: A is [m, k]             -> column-major [k, m], ld k, op N
//           A is [k, m] (transA)    -> column-major [m, k], ld m, op T
// Row-major layouts (CUBLASLT_ORDER_ROW) would say the same, but fewer
// cuBLASLt kernels support them.
StatusOr<MatmulPlan>
CudaBackend::createPlan(const Contraction &contraction, const ElementType &type,
                        const BatchPlan &batch, uint32_t alignFirst,
                        uint32_t alignSecond, uint32_t alignOut) {
  const BlasLtSymbols &lt = *lt_;
  const int64_t m = contraction.m, n = contraction.n, k = contraction.k;
  MatmulPlan plan;
  cublasLtMatmulPreference_t preference = nullptr;
  // Frees what was created when a step fails.
  auto fail = [&](Status status) -> StatusOr<MatmulPlan> {
    destroyPlan(lt, plan);
    if (preference)
      (void)lt.cublasLtMatmulPreferenceDestroy(preference);
    return status.withContext("contraction '" + contraction.name + "'");
  };
#define MEMFIT_PLAN_CHECK(fn, ...)                                             \
  do {                                                                         \
    Status status_ = lt.check(lt.fn(__VA_ARGS__), #fn);                        \
    if (!status_.isOk())                                                       \
      return fail(status_);                                                    \
  } while (false)

  const int32_t opFirst = contraction.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t opSecond = contraction.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  MEMFIT_PLAN_CHECK(cublasLtMatmulDescCreate, &plan.desc, type.compute,
                    type.scale);
  MEMFIT_PLAN_CHECK(cublasLtMatmulDescSetAttribute, plan.desc,
                    CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof opFirst);
  MEMFIT_PLAN_CHECK(cublasLtMatmulDescSetAttribute, plan.desc,
                    CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof opSecond);

  // A row-major matrix's rows are ld apart: its column-major transpose's
  // columns are.
  const int64_t ldA = contraction.ld[0], ldB = contraction.ld[1],
                ldOut = contraction.ld[2];
  if (contraction.transB)
    MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutCreate, &plan.first, type.data, k, n,
                      ldB);
  else
    MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutCreate, &plan.first, type.data, n, k,
                      ldB);
  if (contraction.transA)
    MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutCreate, &plan.second, type.data, m, k,
                      ldA);
  else
    MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutCreate, &plan.second, type.data, k, m,
                      ldA);
  MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutCreate, &plan.out, type.data, n, m,
                    ldOut);

  if (batch.innerCount > 1) {
    const int32_t count = static_cast<int32_t>(batch.innerCount);
    const int64_t strides[3] = {batch.strides[1], batch.strides[0],
                                batch.strides[2]};
    cublasLtMatrixLayout_t layouts[3] = {plan.first, plan.second, plan.out};
    for (int i = 0; i < 3; ++i) {
      MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutSetAttribute, layouts[i],
                        CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                        sizeof count);
      MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutSetAttribute, layouts[i],
                        CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                        &strides[i], sizeof strides[i]);
    }
  }

  // No workspace: the session's memory is the one allocation of the plan,
  // and a workspace would be a second one outside it. Some cuBLASLt kernels
  // (split-K in particular) are thereby excluded; the heuristic picks among
  // the rest. The alignments let it exclude kernels that need more than the
  // operands' addresses have (the default assumes 256 bytes).
  const uint64_t workspace = 0;
  MEMFIT_PLAN_CHECK(cublasLtMatmulPreferenceCreate, &preference);
  MEMFIT_PLAN_CHECK(cublasLtMatmulPreferenceSetAttribute, preference,
                    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                    sizeof workspace);
  const std::pair<int, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignFirst},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignSecond},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignOut},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignOut}};
  for (const auto &[attribute, bytes] : alignments)
    MEMFIT_PLAN_CHECK(cublasLtMatmulPreferenceSetAttribute, preference,
                      attribute, &bytes, sizeof bytes);

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  MEMFIT_PLAN_CHECK(cublasLtMatmulAlgoGetHeuristic, blasLt_, plan.desc,
                    plan.first, plan.second, plan.out, plan.out, preference, 1,
                    &result, &found);
#undef MEMFIT_PLAN_CHECK
  (void)lt.cublasLtMatmulPreferenceDestroy(preference);
  preference = nullptr;
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return fail(internalError(
        std::string("cuBLASLt has no algorithm for ") +
        dtypeName(contraction.dtype) + " m=" + std::to_string(m) +
        " n=" + std::to_string(n) + " k=" + std::to_string(k) +
        (contraction.transA ? " transA" : "") +
        (contraction.transB ? " transB" : "") +
        " batch=" + std::to_string(batch.innerCount) + " without workspace"));
  plan.algo = result.algo;
  return plan;
}

StatusOr<MatmulPlan *>
CudaBackend::getPlan(const Contraction &contraction, const ElementType &type,
                     const BatchPlan &batch, uint32_t alignFirst,
                     uint32_t alignSecond, uint32_t alignOut) {
  std::string key;
  for (int64_t value :
       {int64_t(contraction.dtype), contraction.m, contraction.n, contraction.k,
        int64_t(contraction.transA), int64_t(contraction.transB),
        contraction.ld[0], contraction.ld[1], contraction.ld[2],
        batch.innerCount, batch.strides[0], batch.strides[1], batch.strides[2],
        int64_t(alignFirst),
        int64_t(alignSecond), int64_t(alignOut)})
    key += std::to_string(value) + ",";
  auto it = plans_.find(key);
  if (it != plans_.end())
    return &it->second;
  StatusOr<MatmulPlan> plan =
      createPlan(contraction, type, batch, alignFirst, alignSecond, alignOut);
  if (!plan)
    return plan.status();
  return &plans_.emplace(key, *plan).first->second;
}

Status CudaBackend::runContraction(const Contraction &contraction, uint64_t a,
                                   uint64_t b, uint64_t out) {
  const std::string context = "contraction '" + contraction.name + "'";
  StatusOr<ElementType> typeOr = elementType(contraction);
  if (!typeOr)
    return typeOr.status();
  const ElementType type = *typeOr;
  const std::vector<int64_t> &shape = contraction.batchShape;
  if (contraction.batchStridesA.size() != shape.size() ||
      contraction.batchStridesB.size() != shape.size() ||
      contraction.batchStridesOut.size() != shape.size())
    return invalidArgument(context +
                           ": batch strides do not match the batch rank " +
                           std::to_string(shape.size()));
  const int64_t m = contraction.m, n = contraction.n, k = contraction.k;
  if (m < 0 || n < 0 || k < 0)
    return invalidArgument(context + ": negative dimension");
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || contraction.batchStridesA[i] < 0 ||
        contraction.batchStridesB[i] < 0 || contraction.batchStridesOut[i] < 0)
      return invalidArgument(context + ": negative batch size or stride");
    count *= shape[i];
  }
  for (int o = 0; o < 3; ++o)
    if (contraction.offsets[o] < 0 || contraction.ld[o] < 0)
      return invalidArgument(context + ": negative offset or leading "
                                        "dimension");
  if (count == 0 || m == 0 || n == 0)
    return Status::ok();
  const uint64_t e = type.bytes;
  if (k == 0) {
    // An empty sum: out = beta * out, on a packed output.
    Contraction packed = contraction;
    packed.setPackedLayout();
    if (packed.ld[2] != contraction.ld[2] || contraction.offsets[2] != 0 ||
        packed.batchStridesOut != contraction.batchStridesOut)
      return invalidArgument(context + ": k = 0 with a strided output");
    if (contraction.beta == 1.0f)
      return Status::ok();
    if (contraction.beta != 0.0f)
      return invalidArgument(context + ": k = 0 with beta other than 0 or 1");
    MEMFIT_RT_RETURN_IF_ERROR(
        checkRange("the output", out, uint64_t(count * m * n) * e)
            .withContext(context));
    MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
    MEMFIT_RT_RETURN_IF_ERROR(synchronize()); // cuMemsetD8 is not on stream_
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemsetD8, base_ + out, 0,
                              uint64_t(count * m * n) * e);
    return Status::ok();
  }
  for (int o = 0; o < 3; ++o)
    if (contraction.ld[o] <
        std::max<int64_t>(1, contraction.storedColumns(Contraction::Operand(o))))
      return invalidArgument(context + ": rows closer than their length");

  // The extent of each operand, so that no matrix reaches outside the
  // allocation whatever the manifest says.
  const char *roles[3] = {"operand A", "operand B", "the output"};
  const uint64_t starts[3] = {a, b, out};
  for (int o = 0; o < 3; ++o) {
    uint64_t span = operandSpan(contraction, Contraction::Operand(o)), bytes;
    if (__builtin_mul_overflow(span, e, &bytes))
      bytes = std::numeric_limits<uint64_t>::max();
    MEMFIT_RT_RETURN_IF_ERROR(
        checkRange(roles[o], starts[o], bytes).withContext(context));
  }
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  if (!blasLt_) // prepareKernels creates it when the manifest has contractions
    MEMFIT_RT_RETURN_IF_ERROR(initBlasLt());

  const BatchPlan batch = planBatch(contraction);
  // Every address cuBLASLt will see: the matrices' first elements, the
  // strides within the strided batch and the offsets of the looped
  // dimensions.
  std::vector<uint64_t> addresses[3];
  for (int o = 0; o < 3; ++o) {
    addresses[o].push_back(base_ + starts[o] +
                           uint64_t(contraction.offsets[o]) * e);
    if (batch.innerCount > 1)
      addresses[o].push_back(uint64_t(batch.strides[o]) * e);
    for (size_t i = 0; i < batch.outerRank; ++i)
      addresses[o].push_back(
          uint64_t(contraction.batchStrides(Contraction::Operand(o))[i]) * e);
  }
  StatusOr<MatmulPlan *> planOr =
      getPlan(contraction, type, batch, commonAlignment(addresses[1]),
              commonAlignment(addresses[0]), commonAlignment(addresses[2]));
  if (!planOr)
    return planOr.status();
  const MatmulPlan &plan = **planOr;

  const float alpha32 = contraction.alpha, beta32 = contraction.beta;
  const double alpha64 = contraction.alpha, beta64 = contraction.beta;
  const bool doubleScale = type.scale == CUDA_R_64F;
  const void *alpha =
      doubleScale ? static_cast<const void *>(&alpha64) : &alpha32;
  const void *beta = doubleScale ? static_cast<const void *>(&beta64) : &beta32;

  std::vector<int64_t> index(batch.outerRank, 0);
  for (int64_t outer = 0; outer < batch.outerCount; ++outer) {
    // The offsets of this outer index; the inner batch is strided.
    CUdeviceptr pointers[3];
    for (int o = 0; o < 3; ++o) {
      uint64_t offset = uint64_t(contraction.offsets[o]);
      for (size_t i = 0; i < batch.outerRank; ++i)
        offset += uint64_t(index[i] *
                           contraction.batchStrides(Contraction::Operand(o))[i]);
      pointers[o] = base_ + starts[o] + offset * e;
    }
    const CUdeviceptr pointerA = pointers[0], pointerB = pointers[1],
                      pointerOut = pointers[2];
    MEMFIT_RT_RETURN_IF_ERROR(
        lt_->check(lt_->cublasLtMatmul(
                       blasLt_, plan.desc, alpha,
                       reinterpret_cast<void *>(pointerB), plan.first,
                       reinterpret_cast<void *>(pointerA), plan.second, beta,
                       reinterpret_cast<void *>(pointerOut), plan.out,
                       reinterpret_cast<void *>(pointerOut), plan.out,
                       &plan.algo, nullptr, 0, stream_),
                   "cublasLtMatmul")
            .withContext(context));
    // The next outer multi-index, row-major.
    for (size_t i = batch.outerRank; i-- > 0;) {
      if (++index[i] < shape[i])
        break;
      index[i] = 0;
    }
  }
  return Status::ok();
}

} // namespace

StatusOr<std::unique_ptr<Backend>>
createCudaBackend(const SessionOptions &options) {
  int deviceCount = 0;
  StatusOr<const DriverSymbols *> cu = initDriver(deviceCount);
  if (!cu)
    return cu.status();
  auto backend = std::make_unique<CudaBackend>(**cu);
  MEMFIT_RT_RETURN_IF_ERROR(backend->init(options.cudaDevice, deviceCount));
  return std::unique_ptr<Backend>(std::move(backend));
}

bool cudaUsable(std::string *whyNot) {
  int deviceCount = 0;
  StatusOr<const DriverSymbols *> cu = initDriver(deviceCount);
  if (!cu && whyNot)
    *whyNot = cu.status().message();
  return cu.isOk();
}

} // namespace memfit::rt
