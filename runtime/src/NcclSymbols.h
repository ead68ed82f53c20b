//===- NcclSymbols.h - NCCL loaded with dlopen ------------------*- C++ -*-===//
//
// NCCL (libnccl.so.2, in the CUDA toolkit and in PyTorch's wheels), which
// the cuda backend runs a data-parallel step's collectives through: opened
// with dlopen the first time a collective runs on a GPU, so that memfit
// starts without it (CudaSymbols.h has the driver's, NVRTC's and
// cuBLASLt's). The few types and constants used are declared with the
// values of nccl.h (NCCL 2.10 and later: ncclAvg).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_NCCLSYMBOLS_H
#define MEMFIT_RUNTIME_SRC_NCCLSYMBOLS_H

#include "CudaSymbols.h"

namespace memfit::rt::cuda {

using ncclResult_t = int;
using ncclComm_t = struct ncclComm *;
constexpr int NCCL_UNIQUE_ID_BYTES = 128;
struct ncclUniqueId {
  char internal[NCCL_UNIQUE_ID_BYTES];
};

constexpr ncclResult_t ncclSuccess = 0;
// ncclRedOp_t
constexpr int ncclSum = 0, ncclMax = 2, ncclMin = 3, ncclAvg = 4;
// ncclDataType_t
constexpr int ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclInt64 = 4,
              ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8,
              ncclBfloat16 = 9;

// X(return type, name, parameter types...); the exported symbol is the name.
#define MEMFIT_NCCL_SYMBOLS(X)                                                 \
  X(const char *, ncclGetErrorString, ncclResult_t)                            \
  X(ncclResult_t, ncclGetVersion, int *)                                       \
  X(ncclResult_t, ncclGetUniqueId, ncclUniqueId *)                             \
  X(ncclResult_t, ncclCommInitRank, ncclComm_t *, int, ncclUniqueId, int)      \
  X(ncclResult_t, ncclCommDestroy, ncclComm_t)                                 \
  X(ncclResult_t, ncclAllReduce, const void *, void *, size_t, int, int,       \
    ncclComm_t, CUstream)                                                      \
  X(ncclResult_t, ncclReduceScatter, const void *, void *, size_t, int, int,   \
    ncclComm_t, CUstream)                                                      \
  X(ncclResult_t, ncclAllGather, const void *, void *, size_t, int,            \
    ncclComm_t, CUstream)                                                      \
  X(ncclResult_t, ncclBroadcast, const void *, void *, size_t, int, int,       \
    ncclComm_t, CUstream)

struct NcclSymbols {
#define MEMFIT_NCCL_PFN(ret, name, ...) ret (*name)(__VA_ARGS__) = nullptr;
  MEMFIT_NCCL_SYMBOLS(MEMFIT_NCCL_PFN)
#undef MEMFIT_NCCL_PFN

  std::string path;
  int version = 0; // ncclGetVersion: 22800 for 2.28.0

  /// OK on ncclSuccess; otherwise "<call> failed: <NCCL's text> (n)".
  Status check(ncclResult_t result, const char *call) const;
};

/// NCCL, loaded once: libnccl.so.2, libnccl.so, then the same under the
/// CUDA homes' lib64 and lib. Fails when it is older than 2.10 (no
/// ncclAvg, which a mean takes).
StatusOr<const NcclSymbols *> loadNccl();

} // namespace memfit::rt::cuda

#endif // MEMFIT_RUNTIME_SRC_NCCLSYMBOLS_H
