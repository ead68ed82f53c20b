//===- FakeCudaHost.cpp - the FAKE driver's pinned host memory ------------===//
//
// Part of the fake libcuda.so.1 (see FakeCuda.cpp and MockCuda.h):
// cuMemHostAlloc, cuMemHostGetDevicePointer and cuMemFreeHost. Pinned
// memory is an allocation of the fake's address space that is not device
// memory: the host pointer and the device pointer reach the same bytes, as
// mapped pinned memory does under unified addressing.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaCodes.h"
#include "MockCuda.h"

#include <cstdint>

namespace {

using namespace fakecuda;

constexpr unsigned kDeviceMap = 0x02;


} // namespace

extern "C" {

CUresult cuMemHostAlloc(void **host, size_t bytes, unsigned int flags) {
  if (CUresult injected = mockcuda::enterDriver("cuMemHostAlloc"))
    return injected;
  if (!mockcuda::contextCurrent())
    return kInvalidContext;
  if (!host || bytes == 0) {
    mockcuda::recordViolation("cuMemHostAlloc: no pointer or 0 bytes");
    return kInvalidValue;
  }
  unsigned char *bytesAt = nullptr;
  uint64_t address = mockcuda::mapPinned(bytes, &bytesAt);
  *host = bytesAt;
  mockcuda::recordEvent("cuMemHostAlloc " + std::to_string(bytes) +
                        ((flags & kDeviceMap) ? " mapped" : "") + " -> " +
                        hex(address));
  return kSuccess;
}

CUresult cuMemHostGetDevicePointer_v2(uint64_t *device, void *host,
                                      unsigned int flags) {
  if (CUresult injected = mockcuda::enterDriver("cuMemHostGetDevicePointer_v2"))
    return injected;
  uint64_t address = mockcuda::pinnedAddress(host);
  if (!device || !address || flags != 0) {
    mockcuda::recordViolation("cuMemHostGetDevicePointer_v2: not pinned "
                              "memory, or flags not 0");
    return kInvalidValue;
  }
  *device = address;
  return kSuccess;
}

CUresult cuMemFreeHost(void *host) {
  if (CUresult injected = mockcuda::enterDriver("cuMemFreeHost"))
    return injected;
  uint64_t address = mockcuda::pinnedAddress(host);
  if (!mockcuda::unmapPinned(host)) {
    mockcuda::recordViolation("cuMemFreeHost: not pinned memory");
    return kInvalidValue;
  }
  mockcuda::recordEvent("cuMemFreeHost " + hex(address));
  return kSuccess;
}

} // extern "C"
