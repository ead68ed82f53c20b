//===- Nvrtc.h - compiling CUDA C++ with NVRTC (no GPU needed) --*- C++ -*-===//

#ifndef MEMFIT_RUNTIME_NVRTC_H
#define MEMFIT_RUNTIME_NVRTC_H

#include "memfit/runtime/Session.h"
#include "memfit/runtime/Status.h"

#include <string>
#include <vector>

namespace memfit::rt {

/// NVRTC loaded with dlopen (libnvrtc.so.13, .12, then libnvrtc.so, also
/// under $CUDA_HOME/lib64 and /usr/local/cuda/lib64).
bool nvrtcAvailable(std::string *whyNot);
/// "13.0"; an error when NVRTC cannot be loaded.
StatusOr<std::string> nvrtcVersion();

struct NvrtcResult {
  std::vector<char> cubin;
  std::string log; // warnings, if any
};

/// Compiles `source` to CUBIN for `arch` ("sm_80", "sm_90", ...), with the
/// CUDA include directory on the include path. Errors carry NVRTC's log.
StatusOr<NvrtcResult> compileToCubin(const std::string &source,
                                     const std::string &arch,
                                     const std::string &name = "kernels.cu");

/// compileToCubin through the on-disk kernel cache of the CUDA backend (the
/// same key: source, architecture, NVRTC version), so that compiling ahead
/// of time warms the cache for later sessions. `cacheHit` says whether the
/// CUBIN came from the cache; options.disableCache bypasses it.
StatusOr<NvrtcResult> compileToCubinCached(const std::string &source,
                                           const std::string &arch,
                                           const SessionOptions &options,
                                           bool *cacheHit);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_NVRTC_H
