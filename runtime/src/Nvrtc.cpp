//===- Nvrtc.cpp - compiling CUDA C++ to CUBIN with NVRTC -----------------===//
//
// NVRTC compiles for a real architecture (--gpu-architecture=sm_XX) straight
// to CUBIN, so the driver loads machine code without a PTX JIT step, and no
// GPU is needed to compile: the test suite compiles every emitted kernel for
// sm_80 and sm_90 on machines without one.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Nvrtc.h"

#include "CudaSymbols.h"
#include "KernelCache.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace memfit::rt {
namespace {

using namespace cuda;

/// The numeric part of "sm_90" (90), of "sm_90a" (90) or of "sm_100f" (100);
/// -1 when `arch` is not of that form.
int parseArch(const std::string &arch) {
  if (arch.compare(0, 3, "sm_") != 0)
    return -1;
  size_t end = 3;
  while (end < arch.size() &&
         std::isdigit(static_cast<unsigned char>(arch[end])))
    ++end;
  size_t digits = end - 3;
  // Architecture-specific ("a") and family ("f") variants are accepted.
  bool suffixOk =
      end == arch.size() ||
      (end + 1 == arch.size() && (arch[end] == 'a' || arch[end] == 'f'));
  if (digits < 2 || digits > 3 || !suffixOk)
    return -1;
  return static_cast<int>(std::strtol(arch.c_str() + 3, nullptr, 10));
}

/// Checks `arch` against the architectures this NVRTC compiles for, when
/// it can tell (nvrtcGetSupportedArchs, NVRTC 11.2 and later).
Status checkSupportedArch(const NvrtcSymbols &nvrtc, const std::string &arch,
                          int number) {
  int count = 0;
  if (!nvrtc.nvrtcGetNumSupportedArchs || !nvrtc.nvrtcGetSupportedArchs ||
      nvrtc.nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
    return Status::ok();
  std::vector<int> archs(count);
  if (nvrtc.nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return Status::ok();
  if (std::find(archs.begin(), archs.end(), number) != archs.end())
    return Status::ok();
  std::string supported;
  for (int supportedArch : archs)
    supported +=
        (supported.empty() ? "sm_" : ", sm_") + std::to_string(supportedArch);
  return invalidArgument(
      "GPU architecture '" + arch + "' is not supported by NVRTC " +
      std::to_string(nvrtc.major) + "." + std::to_string(nvrtc.minor) +
      " (supported: " + supported + ")");
}

bool isFile(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

/// The include directory of the first CUDA home that has cuda_fp16.h, or
/// empty. The emitted kernels include nothing (KERNELS.md); the directory is
/// on the path so hand-written sources may use the CUDA headers.
std::string cudaIncludeDirectory() {
  for (const std::string &home : cudaHomeCandidates())
    if (isFile(home + "/include/cuda_fp16.h"))
      return home + "/include";
  return "";
}

/// The program log without its trailing NUL and newlines.
std::string programLog(const NvrtcSymbols &nvrtc, nvrtcProgram program) {
  size_t size = 0;
  if (nvrtc.nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS ||
      size == 0)
    return "";
  std::string log(size, '\0');
  if (nvrtc.nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS)
    return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' ||
                          log.back() == '\r' || log.back() == ' '))
    log.pop_back();
  return log;
}

/// Destroys the program when it goes out of scope.
struct ProgramGuard {
  const NvrtcSymbols &nvrtc;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program)
      (void)nvrtc.nvrtcDestroyProgram(&program);
  }
};

} // namespace

bool nvrtcAvailable(std::string *whyNot) {
  StatusOr<const NvrtcSymbols *> nvrtc = loadNvrtc();
  if (!nvrtc && whyNot)
    *whyNot = nvrtc.status().message();
  return nvrtc.isOk();
}

StatusOr<std::string> nvrtcVersion() {
  StatusOr<const NvrtcSymbols *> nvrtc = loadNvrtc();
  if (!nvrtc)
    return nvrtc.status();
  return std::to_string((*nvrtc)->major) + "." +
         std::to_string((*nvrtc)->minor);
}

StatusOr<NvrtcResult> compileToCubin(const std::string &source,
                                     const std::string &arch,
                                     const std::string &name) {
  int archNumber = parseArch(arch);
  if (archNumber < 0)
    return invalidArgument(
        "invalid GPU architecture '" + arch +
        "': expected sm_<major><minor>, such as sm_80 or sm_90");
  StatusOr<const NvrtcSymbols *> loaded = loadNvrtc();
  if (!loaded)
    return loaded.status();
  const NvrtcSymbols &nvrtc = **loaded;
  MEMFIT_RT_RETURN_IF_ERROR(checkSupportedArch(nvrtc, arch, archNumber));

  // The options, kept minimal:
  //   --gpu-architecture=sm_XX  a real architecture, so the output is CUBIN
  //                             (a virtual compute_XX would give only PTX);
  //   -std=c++17                the dialect the emitter writes (also NVRTC
  //                             12's default, pinned for older releases);
  //   -I<cuda>/include          where cuda_fp16.h and friends live, when the
  //                             toolkit's headers are installed.
  // Floating-point contraction stays at NVRTC's default (--fmad=true), like
  // nvcc's; numerical tests compare with tolerances.
  std::vector<std::string> options = {"--gpu-architecture=" + arch,
                                      "-std=c++17"};
  std::string include = cudaIncludeDirectory();
  if (!include.empty())
    options.push_back("-I" + include);
  std::vector<const char *> optionPointers;
  for (const std::string &option : options)
    optionPointers.push_back(option.c_str());

  std::string context = "NVRTC " + std::to_string(nvrtc.major) + "." +
                        std::to_string(nvrtc.minor) + ", " + name + " for " +
                        arch;
  ProgramGuard guard{nvrtc};
  MEMFIT_RT_RETURN_IF_ERROR(
      nvrtc
          .check(nvrtc.nvrtcCreateProgram(&guard.program, source.c_str(),
                                          name.c_str(), 0, nullptr, nullptr),
                 "nvrtcCreateProgram")
          .withContext(context));
  nvrtcResult compiled = nvrtc.nvrtcCompileProgram(
      guard.program, static_cast<int>(optionPointers.size()),
      optionPointers.data());
  std::string log = programLog(nvrtc, guard.program);
  if (compiled != NVRTC_SUCCESS) {
    Status status =
        nvrtc.check(compiled, "nvrtcCompileProgram").withContext(context);
    return Status::error(status.code(),
                         status.message() + (log.empty() ? "" : "\n" + log));
  }

  NvrtcResult result;
  result.log = std::move(log);
  size_t size = 0;
  MEMFIT_RT_RETURN_IF_ERROR(
      nvrtc
          .check(nvrtc.nvrtcGetCUBINSize(guard.program, &size),
                 "nvrtcGetCUBINSize")
          .withContext(context));
  if (size == 0)
    return internalError(context + ": NVRTC produced no CUBIN");
  result.cubin.resize(size);
  MEMFIT_RT_RETURN_IF_ERROR(
      nvrtc
          .check(nvrtc.nvrtcGetCUBIN(guard.program, result.cubin.data()),
                 "nvrtcGetCUBIN")
          .withContext(context));
  return result;
}

} // namespace memfit::rt

memfit::rt::StatusOr<memfit::rt::NvrtcResult> memfit::rt::compileToCubinCached(
    const std::string &source, const std::string &arch,
    const SessionOptions &options, bool *cacheHit) {
  *cacheHit = false;
  StatusOr<std::string> version = nvrtcVersion();
  if (!version)
    return version.status();
  KernelCache cache(options);
  bool useCache = !options.disableCache && cache.enabled();
  std::string path =
      useCache ? cache.path("cubin", source, arch, *version, "cubin") : "";
  if (useCache) {
    if (std::optional<std::vector<char>> cubin = cache.load(path)) {
      *cacheHit = true;
      NvrtcResult result;
      result.cubin = std::move(*cubin);
      return result;
    }
  }
  StatusOr<NvrtcResult> compiled = compileToCubin(source, arch);
  if (compiled && useCache)
    cache.store(path, compiled->cubin);
  return compiled;
}
