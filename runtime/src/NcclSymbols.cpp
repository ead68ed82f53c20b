//===- NcclSymbols.cpp - NCCL loaded with dlopen --------------------------===//

#include "NcclSymbols.h"

#include <dlfcn.h>

namespace memfit::rt::cuda {
namespace {

StatusOr<const NcclSymbols *> openNccl() {
  StatusOr<Library> library =
      openLibrary("NCCL", {"libnccl.so.2", "libnccl.so"});
  if (!library)
    return library.status();
  auto *syms = new NcclSymbols();
  syms->path = library->path;
#define MEMFIT_NCCL_RESOLVE(ret, name, ...)                                    \
  syms->name =                                                                 \
      reinterpret_cast<ret (*)(__VA_ARGS__)>(dlsym(library->handle, #name));   \
  if (!syms->name)                                                             \
    return unavailable(syms->path + " has no " #name                           \
                                    ": NCCL 2.10 or later is needed");
  MEMFIT_NCCL_SYMBOLS(MEMFIT_NCCL_RESOLVE)
#undef MEMFIT_NCCL_RESOLVE
  MEMFIT_RT_RETURN_IF_ERROR(
      syms->check(syms->ncclGetVersion(&syms->version), "ncclGetVersion")
          .withContext(syms->path));
  if (syms->version < 21000)
    return unavailable(syms->path + " is NCCL " +
                       std::to_string(syms->version) +
                       "; 2.10 or later is needed (a mean over the ranks is "
                       "its ncclAvg)");
  return static_cast<const NcclSymbols *>(syms);
}

} // namespace

StatusOr<const NcclSymbols *> loadNccl() {
  static const StatusOr<const NcclSymbols *> nccl = openNccl();
  return nccl;
}

Status NcclSymbols::check(ncclResult_t result, const char *call) const {
  if (result == ncclSuccess)
    return Status::ok();
  const char *text = ncclGetErrorString ? ncclGetErrorString(result) : nullptr;
  return internalError(std::string(call) +
                       " failed: " + (text ? text : "NCCL error") + " (" +
                       std::to_string(result) + ")");
}

} // namespace memfit::rt::cuda
