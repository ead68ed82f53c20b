//===- CudaSymbols.h - CUDA libraries loaded with dlopen --------*- C++ -*-===//
//
// The runtime builds without the CUDA toolkit and starts on machines without
// a GPU: the driver (libcuda.so.1), NVRTC and cuBLASLt are opened with dlopen
// the first time they are needed, and their entry points are resolved into
// tables of function pointers, in the manner of IREE's
// hal/drivers/cuda/dynamic_symbols. The few types and constants memfit uses
// are declared here with the values of the CUDA 12/13 headers (their ABI is
// stable across those releases), so no CUDA header is included.
//
// Each library is loaded at most once per process (a thread-safe function
// static) and never unloaded: unloading the driver while other libraries of
// the process may still hold its handles is a well-known source of crashes at
// exit. A library that cannot be loaded yields a Status listing every file
// that was tried.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_CUDASYMBOLS_H
#define MEMFIT_RUNTIME_SRC_CUDASYMBOLS_H

#include "memfit/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memfit::rt::cuda {

//===----------------------------------------------------------------------===//
// Driver API (cuda.h)
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long; // CUdeviceptr_v2 on 64-bit hosts
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
/// A function the driver calls on a thread of its own, in a stream's order
/// (cuLaunchHostFunc); it must not call the driver.
using CUhostFn = void (*)(void *userData);
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUevent = struct CUevent_st *;

// CUresult values that memfit tells apart.
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
constexpr CUresult CUDA_ERROR_DEVICE_UNAVAILABLE = 46;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803;
constexpr CUresult CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804;

// CUdevice_attribute values.
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
// CUstreamCaptureMode: only this thread's unsafe calls end a capture.
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
// cuMemHostAlloc flags: pinned memory every context may use, mapped into
// the device's address space.
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x01;
constexpr unsigned CU_MEMHOSTALLOC_DEVICEMAP = 0x02;
// CUfunction_attribute values.
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// The driver entry points: X(member, exported symbol, parameter types...).
// Every one returns CUresult. The exported symbol is the one cuda.h maps the
// API name to (cuMemAlloc -> cuMemAlloc_v2), so the signatures below are
// those of the current ABI; the per-thread-default-stream variants (_ptds,
// _ptsz) are deliberately not used: memfit orders its work on one explicit
// stream. Plain dlsym of these names is used rather than cuGetProcAddress,
// whose own signature changed in CUDA 12.0 and which buys nothing for this
// short, long-stable list.
#define MEMFIT_CUDA_DRIVER_SYMBOLS(X)                                          \
  X(cuGetErrorName, "cuGetErrorName", CUresult, const char **)                 \
  X(cuGetErrorString, "cuGetErrorString", CUresult, const char **)             \
  X(cuInit, "cuInit", unsigned int)                                            \
  X(cuDriverGetVersion, "cuDriverGetVersion", int *)                           \
  X(cuDeviceGetCount, "cuDeviceGetCount", int *)                               \
  X(cuDeviceGet, "cuDeviceGet", CUdevice *, int)                               \
  X(cuDeviceGetName, "cuDeviceGetName", char *, int, CUdevice)                 \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", int *, int, CUdevice)        \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", size_t *, CUdevice)               \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUcontext *,         \
    CUdevice)                                                                  \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUdevice)       \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUcontext)                             \
  X(cuMemGetInfo, "cuMemGetInfo_v2", size_t *, size_t *)                       \
  X(cuMemAlloc, "cuMemAlloc_v2", CUdeviceptr *, size_t)                        \
  X(cuMemFree, "cuMemFree_v2", CUdeviceptr)                                    \
  X(cuMemHostAlloc, "cuMemHostAlloc", void **, size_t, unsigned int)          \
  X(cuMemFreeHost, "cuMemFreeHost", void *)                                    \
  X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", CUdeviceptr *,  \
    void *, unsigned int)                                                      \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUdeviceptr, const void *, size_t)        \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", void *, CUdeviceptr, size_t)              \
  X(cuMemsetD8, "cuMemsetD8_v2", CUdeviceptr, unsigned char, size_t)           \
  X(cuModuleLoadData, "cuModuleLoadData", CUmodule *, const void *)            \
  X(cuModuleUnload, "cuModuleUnload", CUmodule)                                \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUfunction *, CUmodule,        \
    const char *)                                                              \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", CUfunction, int, int)            \
  X(cuLaunchKernel, "cuLaunchKernel", CUfunction, unsigned int, unsigned int,  \
    unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,      \
    CUstream, void **, void **)                                                \
  X(cuStreamCreate, "cuStreamCreate", CUstream *, unsigned int)                \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUstream)                      \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUstream)                           \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", CUstream, int)            \
  X(cuStreamEndCapture, "cuStreamEndCapture", CUstream, CUgraph *)             \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags", CUgraphExec *, CUgraph, \
    unsigned long long)                                                        \
  X(cuGraphLaunch, "cuGraphLaunch", CUgraphExec, CUstream)                     \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", CUgraphExec)                     \
  X(cuGraphDestroy, "cuGraphDestroy", CUgraph)                                \
  X(cuEventCreate, "cuEventCreate", CUevent *, unsigned int)                   \
  X(cuEventRecord, "cuEventRecord", CUevent, CUstream)                         \
  X(cuEventSynchronize, "cuEventSynchronize", CUevent)                         \
  X(cuEventElapsedTime, "cuEventElapsedTime", float *, CUevent, CUevent)       \
  X(cuEventDestroy, "cuEventDestroy_v2", CUevent)                              \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", CUstream, CUevent, unsigned int)  \
  X(cuEventQuery, "cuEventQuery", CUevent)                                     \
  X(cuLaunchHostFunc, "cuLaunchHostFunc", CUstream, CUhostFn, void *)

struct DriverSymbols {
#define MEMFIT_CU_PFN(member, symbol, ...)                                     \
  CUresult (*member)(__VA_ARGS__) = nullptr;
  MEMFIT_CUDA_DRIVER_SYMBOLS(MEMFIT_CU_PFN)
#undef MEMFIT_CU_PFN

  /// The file the driver was loaded from.
  std::string path;

  /// OK on CUDA_SUCCESS; otherwise "<call> failed: CUDA_ERROR_X (n): text",
  /// with the code the CUresult maps to (out of memory: ResourceExhausted;
  /// no device or driver trouble: Unavailable; a missing module function:
  /// NotFound; anything else: Internal).
  Status check(CUresult result, const char *call) const;
};

/// libcuda.so.1, loaded once. Fails with Unavailable and the loader's message
/// ("no CUDA driver (libcuda.so.1 not found): ...") when there is no driver.
StatusOr<const DriverSymbols *> loadDriver();

/// Calls `syms.fn(args...)` and returns its Status from the enclosing
/// function on failure, like IREE's IREE_CUDA_RETURN_IF_ERROR.
#define MEMFIT_CU_RETURN_IF_ERROR(syms, fn, ...)                               \
  MEMFIT_RT_RETURN_IF_ERROR((syms).check((syms).fn(__VA_ARGS__), #fn))

//===----------------------------------------------------------------------===//
// NVRTC (nvrtc.h)
//===----------------------------------------------------------------------===//

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;

constexpr nvrtcResult NVRTC_SUCCESS = 0;
constexpr nvrtcResult NVRTC_ERROR_OUT_OF_MEMORY = 1;
constexpr nvrtcResult NVRTC_ERROR_INVALID_OPTION = 5;
constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;

// X(return type, name, parameter types...); the exported symbol is the name.
#define MEMFIT_NVRTC_SYMBOLS(X)                                                \
  X(const char *, nvrtcGetErrorString, nvrtcResult)                            \
  X(nvrtcResult, nvrtcVersion, int *, int *)                                   \
  X(nvrtcResult, nvrtcCreateProgram, nvrtcProgram *, const char *,             \
    const char *, int, const char *const *, const char *const *)               \
  X(nvrtcResult, nvrtcDestroyProgram, nvrtcProgram *)                          \
  X(nvrtcResult, nvrtcCompileProgram, nvrtcProgram, int, const char *const *)  \
  X(nvrtcResult, nvrtcGetProgramLogSize, nvrtcProgram, size_t *)               \
  X(nvrtcResult, nvrtcGetProgramLog, nvrtcProgram, char *)                     \
  X(nvrtcResult, nvrtcGetCUBINSize, nvrtcProgram, size_t *)                    \
  X(nvrtcResult, nvrtcGetCUBIN, nvrtcProgram, char *)

// Resolved when present (NVRTC 11.2 and later), null otherwise.
#define MEMFIT_NVRTC_OPTIONAL_SYMBOLS(X)                                       \
  X(nvrtcResult, nvrtcGetNumSupportedArchs, int *)                             \
  X(nvrtcResult, nvrtcGetSupportedArchs, int *)

struct NvrtcSymbols {
#define MEMFIT_NVRTC_PFN(ret, name, ...) ret (*name)(__VA_ARGS__) = nullptr;
  MEMFIT_NVRTC_SYMBOLS(MEMFIT_NVRTC_PFN)
  MEMFIT_NVRTC_OPTIONAL_SYMBOLS(MEMFIT_NVRTC_PFN)
#undef MEMFIT_NVRTC_PFN

  std::string path;
  int major = 0, minor = 0; // nvrtcVersion, queried at load time

  /// OK on NVRTC_SUCCESS; otherwise "<call> failed: NVRTC_ERROR_X".
  Status check(nvrtcResult result, const char *call) const;
};

/// NVRTC, loaded once: libnvrtc.so.13, .12, libnvrtc.so, then the same
/// names under $CUDA_HOME/lib64 and MEMFIT_DEFAULT_CUDA_HOME/lib64.
StatusOr<const NvrtcSymbols *> loadNvrtc();

//===----------------------------------------------------------------------===//
// cuBLASLt (cublasLt.h, cublas_api.h, library_types.h)
//===----------------------------------------------------------------------===//

using cublasStatus_t = int;
using cublasLtHandle_t = struct cublasLtContext *;
// The descriptors are pointers to the "semi-opaque" structs of cublasLt.h.
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque *;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque *;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque *;
using cudaStream_t = CUstream; // the runtime API's stream is the driver's
using cudaDataType = int;
using cublasComputeType_t = int;

struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_INITIALIZED = 1;
constexpr cublasStatus_t CUBLAS_STATUS_ALLOC_FAILED = 3;
constexpr cublasStatus_t CUBLAS_STATUS_INVALID_VALUE = 7;
constexpr cublasStatus_t CUBLAS_STATUS_ARCH_MISMATCH = 8;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_SUPPORTED = 15;

// cudaDataType
constexpr cudaDataType CUDA_R_32F = 0;
constexpr cudaDataType CUDA_R_64F = 1;
constexpr cudaDataType CUDA_R_16F = 2;
constexpr cudaDataType CUDA_R_16BF = 14;
// cublasComputeType_t
constexpr cublasComputeType_t CUBLAS_COMPUTE_32F = 68;
constexpr cublasComputeType_t CUBLAS_COMPUTE_64F = 70;
// f32 data on tensor cores, inputs rounded to TF32 (SessionOptions::tf32).
constexpr cublasComputeType_t CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
// cublasOperation_t
constexpr int32_t CUBLAS_OP_N = 0;
constexpr int32_t CUBLAS_OP_T = 1;
// cublasLtMatmulDescAttributes_t (value types in the comments)
constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3; // int32_t
constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4; // int32_t
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;     // uint32_t
constexpr int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8; // void *
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11; // void *
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12;      // int64_t
// cublasLtEpilogue_t
constexpr uint32_t CUBLASLT_EPILOGUE_DEFAULT = 1;
constexpr uint32_t CUBLASLT_EPILOGUE_BIAS = 4;
constexpr uint32_t CUBLASLT_EPILOGUE_BGRADA = 256;
constexpr uint32_t CUBLASLT_EPILOGUE_BGRADB = 512;
constexpr uint32_t CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 32 | 128 | 4;
// cublasLtMatrixLayoutAttribute_t
constexpr int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;          // int32_t
constexpr int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6; // int64_t
// cublasLtMatmulPreferenceAttributes_t
constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;   // uint64_t
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5; // uint32_t
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6; // uint32_t
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7; // uint32_t
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8; // uint32_t

#define MEMFIT_CUBLASLT_SYMBOLS(X)                                             \
  X(size_t, cublasLtGetVersion, void)                                          \
  X(cublasStatus_t, cublasLtCreate, cublasLtHandle_t *)                        \
  X(cublasStatus_t, cublasLtDestroy, cublasLtHandle_t)                         \
  X(cublasStatus_t, cublasLtMatmulDescCreate, cublasLtMatmulDesc_t *,          \
    cublasComputeType_t, cudaDataType)                                         \
  X(cublasStatus_t, cublasLtMatmulDescDestroy, cublasLtMatmulDesc_t)           \
  X(cublasStatus_t, cublasLtMatmulDescSetAttribute, cublasLtMatmulDesc_t, int, \
    const void *, size_t)                                                      \
  X(cublasStatus_t, cublasLtMatrixLayoutCreate, cublasLtMatrixLayout_t *,      \
    cudaDataType, uint64_t, uint64_t, int64_t)                                 \
  X(cublasStatus_t, cublasLtMatrixLayoutDestroy, cublasLtMatrixLayout_t)       \
  X(cublasStatus_t, cublasLtMatrixLayoutSetAttribute, cublasLtMatrixLayout_t,  \
    int, const void *, size_t)                                                 \
  X(cublasStatus_t, cublasLtMatmulPreferenceCreate,                            \
    cublasLtMatmulPreference_t *)                                              \
  X(cublasStatus_t, cublasLtMatmulPreferenceDestroy,                           \
    cublasLtMatmulPreference_t)                                                \
  X(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,                      \
    cublasLtMatmulPreference_t, int, const void *, size_t)                     \
  X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic, cublasLtHandle_t,          \
    cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,      \
    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,                            \
    cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *, int *) \
  X(cublasStatus_t, cublasLtMatmul, cublasLtHandle_t, cublasLtMatmulDesc_t,    \
    const void *, const void *, cublasLtMatrixLayout_t, const void *,          \
    cublasLtMatrixLayout_t, const void *, const void *,                        \
    cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,                    \
    const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t)

// Resolved when present (cuBLAS 11.4 and later), null otherwise.
#define MEMFIT_CUBLASLT_OPTIONAL_SYMBOLS(X)                                    \
  X(const char *, cublasLtGetStatusName, cublasStatus_t)                       \
  X(const char *, cublasLtGetStatusString, cublasStatus_t)

struct BlasLtSymbols {
#define MEMFIT_CUBLASLT_PFN(ret, name, ...) ret (*name)(__VA_ARGS__) = nullptr;
  MEMFIT_CUBLASLT_SYMBOLS(MEMFIT_CUBLASLT_PFN)
  MEMFIT_CUBLASLT_OPTIONAL_SYMBOLS(MEMFIT_CUBLASLT_PFN)
#undef MEMFIT_CUBLASLT_PFN

  std::string path;

  /// OK on CUBLAS_STATUS_SUCCESS; otherwise "<call> failed:
  /// CUBLAS_STATUS_X (n): text".
  Status check(cublasStatus_t result, const char *call) const;
};

/// cuBLASLt, loaded once: libcublasLt.so.13, .12, libcublasLt.so, then the
/// same names under $CUDA_HOME/lib64 and MEMFIT_DEFAULT_CUDA_HOME/lib64.
StatusOr<const BlasLtSymbols *> loadBlasLt();

#define MEMFIT_CUBLASLT_RETURN_IF_ERROR(syms, fn, ...)                         \
  MEMFIT_RT_RETURN_IF_ERROR((syms).check((syms).fn(__VA_ARGS__), #fn))

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// CUDA installation directories to search, in order and without
/// duplicates: $CUDA_HOME, $CUDA_PATH, MEMFIT_DEFAULT_CUDA_HOME.
std::vector<std::string> cudaHomeCandidates();

/// A library opened with dlopen, never closed.
struct Library {
  void *handle = nullptr;
  std::string path; // the file the loader picked
};

/// dlopens the first loadable file of `names` (searched on the loader's
/// path) or of `names` under `<home>/lib64` and `<home>/lib` for each CUDA
/// home. The error says what was tried, and quotes the loader for every
/// candidate that exists but failed to load (wrong architecture, missing
/// dependency, ...), which is the interesting case.
StatusOr<Library> openLibrary(const char *what,
                              const std::vector<std::string> &names);

/// "13.0" for a CUDA version number such as 13000 (1000 * major + 10 * minor).
std::string formatCudaVersion(int version);

} // namespace memfit::rt::cuda

#endif // MEMFIT_RUNTIME_SRC_CUDASYMBOLS_H
