//===- HostKernels.h - the host backend's compiled kernels (internal) -*- C++ -*-===//
//
// An executable's kernels compiled by the host C++ compiler and loaded, one
// launcher per Manifest::kernels entry.
//
// With the kernel cache, each kernel is cached on its own: its key is its
// CUDA source with its name taken out (a kernel's name carries its index in
// the executable), the source before the first kernel (the prelude and
// tables it calls), the emulation header, the compiler and its flags. The
// kernels that no executable compiled before go into translation units of
// about equal length, one per worker thread (at least 4 kernels each),
// compiled side by side into shared objects (`host-batch-<key>.so`), and
// each kernel gets an index entry (`host-kernel-<key>.lib`) naming its
// object. So an
// executable that shares most of its kernels with one compiled before (the
// training step of a model whose gradients were compiled, the same model
// under another remat policy) compiles only the kernels that are new, and
// loads the others from the objects that hold them. Without the cache, or
// for a source laid out otherwise, the whole source is one translation unit.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_HOSTKERNELS_H
#define MEMFIT_RUNTIME_SRC_HOSTKERNELS_H

#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/Status.h"

#define MEMFIT_HOST_ABI_ONLY
#include "host/memfit_cuda_host.h"

#include <string>
#include <vector>

namespace memfit::rt {

/// The loaded kernels of one session.
struct HostKernels {
  HostKernels() = default;
  HostKernels(const HostKernels &) = delete;
  HostKernels &operator=(const HostKernels &) = delete;
  /// Unloads the libraries.
  ~HostKernels();

  /// One per Manifest::kernels entry.
  std::vector<memfit_host_launcher> launchers;
  /// Each loaded library's per-thread release, which every worker thread
  /// calls before it exits.
  std::vector<memfit_host_release> releases;
  /// The dlopen handles.
  std::vector<void *> libraries;
};

/// Compiles (or loads from the cache) the kernels of `manifest` with
/// `compiler` (its `--version` line is `version`) and loads them into
/// `out`, in up to `jobs` compiler processes at a time. `timings` gets the
/// compile time (wall clock) and whether nothing had to be compiled. With
/// `onHostOnly` (a device backend's host tasks), only the Kernel::onHost
/// kernels get a launcher; the others stay null.
Status loadHostKernels(const Manifest &manifest,
                       const std::vector<std::string> &compiler,
                       const std::string &version,
                       const SessionOptions &options, unsigned jobs,
                       SessionTimings &timings, HostKernels &out,
                       bool onHostOnly = false);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_HOSTKERNELS_H
