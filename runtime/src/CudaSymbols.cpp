//===- CudaSymbols.cpp - CUDA libraries loaded with dlopen ----------------===//

#include "CudaSymbols.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>

#ifndef MEMFIT_DEFAULT_CUDA_HOME
#define MEMFIT_DEFAULT_CUDA_HOME "/usr/local/cuda"
#endif

namespace memfit::rt::cuda {
namespace {

/// The file the dynamic loader resolved `handle` to, or `fallback`.
std::string loadedPath(void *handle, const std::string &fallback) {
  struct link_map *map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
      map->l_name[0])
    return map->l_name;
  return fallback;
}

} // namespace

StatusOr<Library> openLibrary(const char *what,
                              const std::vector<std::string> &names) {
  std::vector<std::string> candidates = names;
  std::vector<std::string> directories;
  for (const std::string &home : cudaHomeCandidates())
    for (const char *lib : {"/lib64", "/lib"}) {
      directories.push_back(home + lib);
      for (const std::string &name : names)
        candidates.push_back(directories.back() + "/" + name);
    }

  std::string failures;
  for (const std::string &candidate : candidates) {
    void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle)
      return Library{handle, loadedPath(handle, candidate)};
    const char *error = dlerror();
    if (error && !std::strstr(error, "No such file or directory"))
      failures += std::string("; ") + error;
  }

  std::string message = std::string(what) + " not found: tried ";
  for (size_t i = 0; i < names.size(); ++i)
    message += (i ? ", " : "") + names[i];
  message += " on the library path";
  if (!directories.empty()) {
    message += " and in ";
    for (size_t i = 0; i < directories.size(); ++i)
      message += (i ? ", " : "") + directories[i];
  }
  message += " (set CUDA_HOME to a CUDA toolkit)" + failures;
  return unavailable(message);
}

namespace {

/// Resolves `symbol` into `*slot`; false when the library lacks it.
template <typename Fn>
bool resolve(void *handle, const char *symbol, Fn *slot) {
  void *address = dlsym(handle, symbol);
  *slot = reinterpret_cast<Fn>(address);
  return address != nullptr;
}

Status missingSymbol(const std::string &path, const char *symbol,
                     const char *hint) {
  return unavailable(path + " lacks " + symbol + " (" + hint + ")");
}

StatusOr<const DriverSymbols *> openDriver() {
  // Only the versioned name: libcuda.so without a version is, on most
  // systems, the toolkit's link-time stub, which fails every call.
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *error = dlerror();
    return unavailable(
        std::string("no CUDA driver (libcuda.so.1 not found): ") +
        (error ? error : "dlopen failed"));
  }
  auto *syms = new DriverSymbols();
  syms->path = loadedPath(handle, "libcuda.so.1");
#define MEMFIT_CU_RESOLVE(member, symbol, ...)                                 \
  if (!resolve(handle, symbol, &syms->member))                                 \
    return missingSymbol(syms->path, symbol, "CUDA driver too old?");
  MEMFIT_CUDA_DRIVER_SYMBOLS(MEMFIT_CU_RESOLVE)
#undef MEMFIT_CU_RESOLVE
  return static_cast<const DriverSymbols *>(syms);
}

StatusOr<const NvrtcSymbols *> openNvrtc() {
  StatusOr<Library> library =
      openLibrary("NVRTC", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
  if (!library)
    return library.status();
  auto *syms = new NvrtcSymbols();
  syms->path = library->path;
#define MEMFIT_NVRTC_RESOLVE(ret, name, ...)                                   \
  if (!resolve(library->handle, #name, &syms->name))                           \
    return missingSymbol(syms->path, #name, "NVRTC 11.1 or later is needed");
  MEMFIT_NVRTC_SYMBOLS(MEMFIT_NVRTC_RESOLVE)
#undef MEMFIT_NVRTC_RESOLVE
#define MEMFIT_NVRTC_RESOLVE_OPTIONAL(ret, name, ...)                          \
  (void)resolve(library->handle, #name, &syms->name);
  MEMFIT_NVRTC_OPTIONAL_SYMBOLS(MEMFIT_NVRTC_RESOLVE_OPTIONAL)
#undef MEMFIT_NVRTC_RESOLVE_OPTIONAL
  MEMFIT_RT_RETURN_IF_ERROR(
      syms->check(syms->nvrtcVersion(&syms->major, &syms->minor),
                  "nvrtcVersion")
          .withContext(syms->path));
  return static_cast<const NvrtcSymbols *>(syms);
}

StatusOr<const BlasLtSymbols *> openBlasLt() {
  StatusOr<Library> library = openLibrary(
      "cuBLASLt", {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
  if (!library)
    return library.status();
  auto *syms = new BlasLtSymbols();
  syms->path = library->path;
#define MEMFIT_CUBLASLT_RESOLVE(ret, name, ...)                                \
  if (!resolve(library->handle, #name, &syms->name))                           \
    return missingSymbol(syms->path, #name, "cuBLAS 11 or later is needed");
  MEMFIT_CUBLASLT_SYMBOLS(MEMFIT_CUBLASLT_RESOLVE)
#undef MEMFIT_CUBLASLT_RESOLVE
#define MEMFIT_CUBLASLT_RESOLVE_OPTIONAL(ret, name, ...)                       \
  (void)resolve(library->handle, #name, &syms->name);
  MEMFIT_CUBLASLT_OPTIONAL_SYMBOLS(MEMFIT_CUBLASLT_RESOLVE_OPTIONAL)
#undef MEMFIT_CUBLASLT_RESOLVE_OPTIONAL
  return static_cast<const BlasLtSymbols *>(syms);
}

/// The StatusCode of a failed driver call.
StatusCode driverErrorCode(CUresult result) {
  switch (result) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    return StatusCode::ResourceExhausted;
  case CUDA_ERROR_NOT_INITIALIZED:
  case CUDA_ERROR_STUB_LIBRARY:
  case CUDA_ERROR_DEVICE_UNAVAILABLE:
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    return StatusCode::Unavailable;
  case CUDA_ERROR_NOT_FOUND:
    return StatusCode::NotFound;
  default:
    return StatusCode::Internal;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Loading, once per process
//===----------------------------------------------------------------------===//

// The function statics are initialized once, thread-safely (C++11 "magic
// statics"); a failure is remembered too, so an absent library is looked
// for only once. The tables and handles are deliberately never freed.

StatusOr<const DriverSymbols *> loadDriver() {
  static const StatusOr<const DriverSymbols *> driver = openDriver();
  return driver;
}

StatusOr<const NvrtcSymbols *> loadNvrtc() {
  static const StatusOr<const NvrtcSymbols *> nvrtc = openNvrtc();
  return nvrtc;
}

StatusOr<const BlasLtSymbols *> loadBlasLt() {
  static const StatusOr<const BlasLtSymbols *> blasLt = openBlasLt();
  return blasLt;
}

//===----------------------------------------------------------------------===//
// Status from result codes
//===----------------------------------------------------------------------===//

Status DriverSymbols::check(CUresult result, const char *call) const {
  if (result == CUDA_SUCCESS)
    return Status::ok();
  // The toolkit's stub libcuda answers nothing, not even cuGetErrorName.
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = result == CUDA_ERROR_STUB_LIBRARY ? "CUDA_ERROR_STUB_LIBRARY"
                                             : "CUDA_ERROR_UNKNOWN";
  const char *text = nullptr;
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    text = result == CUDA_ERROR_STUB_LIBRARY
               ? "the CUDA driver library is the toolkit's stub, not a driver"
               : "unknown error";
  return Status::error(driverErrorCode(result),
                       std::string(call) + " failed: " + name + " (" +
                           std::to_string(result) + "): " + text);
}

Status NvrtcSymbols::check(nvrtcResult result, const char *call) const {
  if (result == NVRTC_SUCCESS)
    return Status::ok();
  const char *name = nvrtcGetErrorString(result);
  std::string message = std::string(call) + " failed: " +
                        (name ? name : "NVRTC error " + std::to_string(result));
  switch (result) {
  case NVRTC_ERROR_OUT_OF_MEMORY:
    return Status::error(StatusCode::ResourceExhausted, message);
  case NVRTC_ERROR_INVALID_OPTION:
  case NVRTC_ERROR_COMPILATION:
    return invalidArgument(message);
  default:
    return internalError(message);
  }
}

Status BlasLtSymbols::check(cublasStatus_t result, const char *call) const {
  if (result == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  const char *name =
      cublasLtGetStatusName ? cublasLtGetStatusName(result) : nullptr;
  const char *text =
      cublasLtGetStatusString ? cublasLtGetStatusString(result) : nullptr;
  std::string message = std::string(call) +
                        " failed: " + (name ? name : "CUBLAS_STATUS_UNKNOWN") +
                        " (" + std::to_string(result) + ")";
  if (text)
    message += std::string(": ") + text;
  switch (result) {
  case CUBLAS_STATUS_ALLOC_FAILED:
    return Status::error(StatusCode::ResourceExhausted, message);
  case CUBLAS_STATUS_NOT_INITIALIZED:
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return unavailable(message);
  default:
    return internalError(message);
  }
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::vector<std::string> cudaHomeCandidates() {
  std::vector<std::string> homes;
  auto add = [&](const char *home) {
    if (!home || !home[0])
      return;
    std::string path = home;
    while (path.size() > 1 && path.back() == '/')
      path.pop_back();
    for (const std::string &existing : homes)
      if (existing == path)
        return;
    homes.push_back(path);
  };
  add(std::getenv("CUDA_HOME"));
  add(std::getenv("CUDA_PATH"));
  add(MEMFIT_DEFAULT_CUDA_HOME);
  return homes;
}

std::string formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

} // namespace memfit::rt::cuda
