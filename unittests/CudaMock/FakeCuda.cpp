//===- FakeCuda.cpp - a FAKE libcuda.so.1 for testing the CUDA backend ----===//
//
// NOT A DRIVER: a stand-in for the NVIDIA driver API, loaded only by
// memfit-cuda-mock-test, so that the CUDA backend (runtime/src/
// CudaBackend.cpp) runs in CI without a GPU. See MockCuda.h for how it is
// loaded and controlled.
//
// What it emulates, for the entry points the backend resolves
// (MEMFIT_CUDA_DRIVER_SYMBOLS in CudaSymbols.h):
//  - devices with names and compute capabilities, cuInit, primary contexts
//    with reference counts and a current context per thread;
//  - device memory in a fake address space (0x300000000000 up, never
//    reused, so addresses are not host pointers and stale ones are caught)
//    backed by host memory that starts as garbage (0xAB bytes); copies,
//    memsets, kernel arguments and cuBLASLt operands must lie inside a live
//    allocation;
//  - modules: cuModuleLoadData reads the CUBIN (ELF) that NVRTC made
//    (FakeCubin.cpp): the header, EM_CUDA, the SM architecture in e_flags
//    against the current device, the kernels (entry-point symbols) with
//    their parameter sizes (.nv.info.<kernel>) and static shared memory
//    (.nv.shared.<kernel>);
//  - launches: checked (context, stream, dimensions, the dynamic shared
//    memory limit and its opt-in, parameters) and recorded with their
//    parameter values; a kernel "runs" only if the test registered a host
//    emulation of it (mockcuda::emulateKernel);
//  - streams, which are synchronous: work is done when it is issued, or,
//    on a capturing stream, when the graph is launched (FakeCudaGraph.cpp);
//  - failures injected by the test for any entry point.
//
// What it does not prove: that the real driver accepts these calls and
// images, anything about asynchronous execution, sticky errors, or the
// device's real limits beyond the few numbers here.
//
//===----------------------------------------------------------------------===//

#include "FakeCubin.h"
#include "FakeCudaCodes.h"
#include "MockCuda.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

namespace {

using namespace fakecuda;

using CUdeviceptr = unsigned long long;

// Attributes (cuda.h).
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMaxSharedPerBlockOptin = 97;
constexpr int kFuncAttrMaxDynamicShared = 8;

constexpr int kMaxDevices = 8;
constexpr uint64_t kAddressBase = 0x300000000000ull;
constexpr uint64_t kDefaultSharedLimit = 48 * 1024;

struct ErrorInfo {
  CUresult code;
  const char *name, *text;
};
const ErrorInfo kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not initiated in this stream"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking "
     "stream"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

struct Context {
  int device = 0;
  int refs = 0; // primary context retains; destroyed when it drops to 0
};

struct Module;
struct Function {
  Module *module = nullptr;
  std::string name;
  std::vector<uint32_t> paramSizes; // by parameter ordinal
  uint32_t staticShared = 0;
  int maxDynamicShared = -1; // -1: not set with cuFuncSetAttribute
};

struct Module {
  Context *context = nullptr;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

struct Stream {
  Context *context = nullptr;
};

struct Allocation {
  Context *context = nullptr;
  uint64_t bytes = 0;
  std::unique_ptr<unsigned char[]> host;
  bool pinned = false; // host memory mapped for the device (FakeCudaHost)
};

struct Failure {
  CUresult result = kSuccess;
  int times = 0; // < 0: forever
};

struct State {
  // Configuration (reset() restores it).
  std::vector<mockcuda::DeviceSpec> devices;
  int driverVersion = 13000;
  uint64_t freeBytes = 0, totalBytes = 0;
  std::map<std::string, Failure> failures;
  std::map<std::string, std::function<void(const mockcuda::Launch &)>>
      emulations;
  // Records.
  std::map<std::string, int> calls;
  std::vector<std::string> events, violations;
  std::vector<mockcuda::Launch> launches;
  std::string lastLoadError;
  // The driver's objects.
  bool initialized = false;
  Context contexts[kMaxDevices];
  std::map<uint64_t, Allocation> allocations; // by address
  uint64_t nextAddress = kAddressBase;
  uint64_t lastAllocation = 0;
  std::map<Module *, std::unique_ptr<Module>> modules;
  std::map<Stream *, std::unique_ptr<Stream>> streams;

  State() {
    for (int i = 0; i < kMaxDevices; ++i)
      contexts[i].device = i;
    configureDefaults();
  }
  void configureDefaults() {
    devices = {{"Mock GPU A", 8, 0}, {"Mock GPU B", 9, 0}};
    driverVersion = 13000;
    freeBytes = 1ull << 30;
    totalBytes = 16ull << 30;
    failures.clear();
    emulations.clear();
    calls.clear();
    events.clear();
    violations.clear();
    launches.clear();
    lastLoadError.clear();
  }
};

State &state() {
  static State s;
  return s;
}

thread_local Context *current = nullptr;


/// Counts a call of `entry` and returns the failure injected for it, if any.
CUresult enter(const char *entry) {
  State &s = state();
  ++s.calls[entry];
  auto it = s.failures.find(entry);
  if (it == s.failures.end())
    return kSuccess;
  CUresult result = it->second.result;
  if (it->second.times > 0 && --it->second.times == 0)
    s.failures.erase(it);
  return result;
}

#define FAKE_ENTER(entry)                                                      \
  do {                                                                         \
    if (CUresult injected_ = enter(entry); injected_ != kSuccess)              \
      return injected_;                                                        \
  } while (false)

/// Records a breach of the driver's rules and returns `result`.
CUresult violation(CUresult result, const char *entry,
                   const std::string &what) {
  state().violations.push_back(std::string(entry) + ": " + what);
  return result;
}

CUresult requireInit(const char *entry) {
  return state().initialized
             ? kSuccess
             : violation(kNotInitialized, entry, "called before cuInit");
}

CUresult requireContext(const char *entry) {
  if (CUresult result = requireInit(entry))
    return result;
  if (!current)
    return violation(kInvalidContext, entry, "no current context");
  if (current->refs == 0)
    return violation(kInvalidContext, entry,
                     "the current context (device " +
                         std::to_string(current->device) + ") was released");
  return kSuccess;
}

/// A synchronous copy or memset waits for the legacy stream, which waits
/// for blocking streams: while one captures, that ends the capture.
CUresult forbiddenWhileCapturing() {
  if (!mockcuda::capturingAny())
    return kSuccess;
  mockcuda::invalidateCaptures();
  return kCaptureImplicit;
}

#define FAKE_REQUIRE(check)                                                    \
  do {                                                                         \
    if (CUresult result_ = (check); result_ != kSuccess)                       \
      return result_;                                                          \
  } while (false)

bool validDevice(int device) {
  return device >= 0 && device < int(state().devices.size());
}

/// Dynamic shared memory a block may opt into (cudaDevAttrMaxShared-
/// MemoryPerBlockOptin of the A100 and H100).
uint64_t sharedOptin(int device) {
  const mockcuda::DeviceSpec &spec = state().devices[device];
  if (spec.major >= 9)
    return 227 * 1024;
  if (spec.major == 8 && spec.minor == 0)
    return 163 * 1024;
  return 99 * 1024;
}

uint64_t allocatedBytes() {
  uint64_t bytes = 0;
  for (const auto &entry : state().allocations)
    bytes += entry.second.pinned ? 0 : entry.second.bytes;
  return bytes;
}

Function *findFunction(void *handle) {
  for (const auto &module : state().modules)
    for (const auto &entry : module.second->functions)
      if (entry.second.get() == handle)
        return entry.second.get();
  return nullptr;
}

/// The live allocation holding [address, address + bytes), or nullptr.
Allocation *findAllocation(uint64_t address, uint64_t bytes, uint64_t *offset) {
  std::map<uint64_t, Allocation> &allocations = state().allocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin())
    return nullptr;
  --it;
  uint64_t start = address - it->first;
  if (start > it->second.bytes || bytes > it->second.bytes - start)
    return nullptr;
  *offset = start;
  return &it->second;
}

/// What the release of a primary context to 0 references does: everything
/// created in it goes. The backend must have destroyed it all before.
void destroyContext(Context *context) {
  State &s = state();
  int allocations = 0, modules = 0, streams = 0;
  for (auto it = s.allocations.begin(); it != s.allocations.end();)
    if (it->second.context == context) {
      ++allocations;
      it = s.allocations.erase(it);
    } else {
      ++it;
    }
  for (auto it = s.modules.begin(); it != s.modules.end();)
    if (it->second->context == context) {
      ++modules;
      it = s.modules.erase(it);
    } else {
      ++it;
    }
  for (auto it = s.streams.begin(); it != s.streams.end();)
    if (it->second->context == context) {
      ++streams;
      it = s.streams.erase(it);
    } else {
      ++it;
    }
  if (allocations || modules || streams)
    violation(kSuccess, "cuDevicePrimaryCtxRelease_v2",
              "the context of device " + std::to_string(context->device) +
                  " was destroyed with " + std::to_string(allocations) +
                  " allocation(s), " + std::to_string(modules) +
                  " module(s) and " + std::to_string(streams) +
                  " stream(s) alive");
}

} // namespace

//===----------------------------------------------------------------------===//
// Test controls (MockCuda.h)
//===----------------------------------------------------------------------===//

namespace mockcuda {

void reset() { state().configureDefaults(); }

void setDevices(const std::vector<DeviceSpec> &devices) {
  state().devices = devices;
  if (devices.size() > kMaxDevices)
    state().devices.resize(kMaxDevices);
}

void setDriverVersion(int version) { state().driverVersion = version; }

void setMemory(uint64_t freeBytes, uint64_t totalBytes) {
  state().freeBytes = freeBytes;
  state().totalBytes = totalBytes;
}

void failNext(const std::string &entryPoint, int result, int times) {
  state().failures[entryPoint] = Failure{result, times};
}

int calls(const std::string &entryPoint) {
  auto it = state().calls.find(entryPoint);
  return it == state().calls.end() ? 0 : it->second;
}

std::vector<std::string> takeEvents() {
  std::vector<std::string> events;
  events.swap(state().events);
  return events;
}

std::vector<std::string> takeViolations() {
  std::vector<std::string> violations;
  violations.swap(state().violations);
  return violations;
}

Live live() {
  State &s = state();
  Live live;
  for (const Context &context : s.contexts)
    live.contextRefs += context.refs;
  live.allocations = int(s.allocations.size());
  live.allocatedBytes = allocatedBytes();
  live.modules = int(s.modules.size());
  live.streams = int(s.streams.size());
  mockcuda::countGraphs(live);
  mockcuda::countEvents(live);
  return live;
}

uint64_t lastAllocation() {
  State &s = state();
  return s.allocations.count(s.lastAllocation) ? s.lastAllocation : 0;
}

uint64_t mapPinned(uint64_t bytes, unsigned char **host) {
  State &s = state();
  Allocation allocation;
  allocation.context = current;
  allocation.bytes = bytes;
  allocation.host.reset(new unsigned char[bytes]);
  allocation.pinned = true;
  *host = allocation.host.get();
  uint64_t address = s.nextAddress;
  const uint64_t granule = 2ull << 20;
  s.nextAddress += (bytes + granule - 1) / granule * granule + granule;
  s.allocations.emplace(address, std::move(allocation));
  return address;
}

uint64_t pinnedAddress(void *host) {
  for (const auto &[address, allocation] : state().allocations)
    if (allocation.pinned && allocation.host.get() == host)
      return address;
  return 0;
}

bool unmapPinned(void *host) {
  uint64_t address = pinnedAddress(host);
  return address && state().allocations.erase(address);
}

void *hostRange(uint64_t address, uint64_t bytes, const char *who) {
  uint64_t offset = 0;
  Allocation *allocation = findAllocation(address, bytes, &offset);
  if (!allocation) {
    violation(kSuccess, who,
              "[" + hex(address) + ", +" + std::to_string(bytes) +
                  ") is outside every live allocation");
    return nullptr;
  }
  return allocation->host.get() + offset;
}

const std::vector<Launch> &launches() { return state().launches; }

void emulateKernel(const std::string &kernel,
                   std::function<void(const Launch &)> body) {
  state().emulations[kernel] = std::move(body);
}

std::string lastLoadError() { return state().lastLoadError; }

int maxDynamicSharedSet(const std::string &kernel) {
  for (const auto &module : state().modules) {
    auto it = module.second->functions.find(kernel);
    if (it != module.second->functions.end())
      return it->second->maxDynamicShared;
  }
  return -1;
}

bool contextCurrent() { return current && current->refs > 0; }

bool streamValid(void *stream) {
  auto it = state().streams.find(static_cast<Stream *>(stream));
  return it != state().streams.end() && it->second->context == current;
}

void recordEvent(const std::string &event) { state().events.push_back(event); }

void recordViolation(const std::string &what) {
  state().violations.push_back(what);
}

int enterDriver(const char *entry) { return enter(entry); }

} // namespace mockcuda

//===----------------------------------------------------------------------===//
// Driver entry points
//===----------------------------------------------------------------------===//

extern "C" {

CUresult cuGetErrorName(CUresult error, const char **name) {
  FAKE_ENTER("cuGetErrorName");
  for (const ErrorInfo &info : kErrors)
    if (info.code == error) {
      *name = info.name;
      return kSuccess;
    }
  *name = nullptr;
  return kInvalidValue;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  FAKE_ENTER("cuGetErrorString");
  for (const ErrorInfo &info : kErrors)
    if (info.code == error) {
      *text = info.text;
      return kSuccess;
    }
  *text = nullptr;
  return kInvalidValue;
}

// Not used by the backend: NVRTC 13 dlopens libcuda.so.1 itself and, when
// it loads, calls cuInit and asks for this private table (and crashes if the
// symbol is missing). No table here: NVRTC then carries on as without a
// driver.
CUresult cuGetExportTable(const void **table, const void * /*id*/) {
  FAKE_ENTER("cuGetExportTable");
  *table = nullptr;
  return kNotFound;
}

CUresult cuInit(unsigned int flags) {
  FAKE_ENTER("cuInit");
  if (flags != 0)
    return violation(kInvalidValue, "cuInit", "flags must be 0");
  state().initialized = true;
  return kSuccess;
}

CUresult cuDriverGetVersion(int *version) {
  FAKE_ENTER("cuDriverGetVersion");
  *version = state().driverVersion;
  return kSuccess;
}

CUresult cuDeviceGetCount(int *count) {
  FAKE_ENTER("cuDeviceGetCount");
  FAKE_REQUIRE(requireInit("cuDeviceGetCount"));
  *count = int(state().devices.size());
  return kSuccess;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  FAKE_REQUIRE(requireInit("cuDeviceGet"));
  if (!validDevice(ordinal))
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

CUresult cuDeviceGetName(char *name, int length, int device) {
  FAKE_ENTER("cuDeviceGetName");
  FAKE_REQUIRE(requireInit("cuDeviceGetName"));
  if (!validDevice(device))
    return kInvalidDevice;
  if (!name || length <= 0)
    return kInvalidValue;
  std::snprintf(name, size_t(length), "%s",
                state().devices[device].name.c_str());
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  FAKE_ENTER("cuDeviceGetAttribute");
  FAKE_REQUIRE(requireInit("cuDeviceGetAttribute"));
  if (!validDevice(device))
    return kInvalidDevice;
  const mockcuda::DeviceSpec &spec = state().devices[device];
  switch (attribute) {
  case kAttrComputeCapabilityMajor:
    *value = spec.major;
    return kSuccess;
  case kAttrComputeCapabilityMinor:
    *value = spec.minor;
    return kSuccess;
  case kAttrMaxSharedPerBlockOptin:
    *value = int(sharedOptin(device));
    return kSuccess;
  default:
    return violation(kInvalidValue, "cuDeviceGetAttribute",
                     "attribute " + std::to_string(attribute) +
                         " is not emulated (extend the fake)");
  }
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, int device) {
  FAKE_ENTER("cuDeviceTotalMem_v2");
  FAKE_REQUIRE(requireInit("cuDeviceTotalMem_v2"));
  if (!validDevice(device))
    return kInvalidDevice;
  *bytes = state().totalBytes;
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  FAKE_REQUIRE(requireInit("cuDevicePrimaryCtxRetain"));
  if (!validDevice(device))
    return kInvalidDevice;
  Context &c = state().contexts[device];
  ++c.refs;
  *context = &c;
  mockcuda::recordEvent("cuDevicePrimaryCtxRetain " + std::to_string(device));
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease_v2");
  FAKE_REQUIRE(requireInit("cuDevicePrimaryCtxRelease_v2"));
  if (!validDevice(device))
    return kInvalidDevice;
  Context &c = state().contexts[device];
  if (c.refs == 0)
    return violation(kInvalidContext, "cuDevicePrimaryCtxRelease_v2",
                     "device " + std::to_string(device) +
                         "'s primary context is not retained");
  mockcuda::recordEvent("cuDevicePrimaryCtxRelease_v2 " +
                        std::to_string(device));
  if (--c.refs == 0)
    destroyContext(&c);
  return kSuccess;
}

CUresult cuCtxSetCurrent(void *context) {
  FAKE_ENTER("cuCtxSetCurrent");
  FAKE_REQUIRE(requireInit("cuCtxSetCurrent"));
  State &s = state();
  Context *c = static_cast<Context *>(context);
  if (c && (c < s.contexts || c >= s.contexts + kMaxDevices))
    return violation(kInvalidContext, "cuCtxSetCurrent", "not a context");
  if (c && c->refs == 0)
    return violation(kInvalidContext, "cuCtxSetCurrent",
                     "the context of device " + std::to_string(c->device) +
                         " was released");
  current = c;
  return kSuccess;
}

CUresult cuMemGetInfo_v2(size_t *freeBytes, size_t *totalBytes) {
  FAKE_ENTER("cuMemGetInfo_v2");
  FAKE_REQUIRE(requireContext("cuMemGetInfo_v2"));
  uint64_t used = allocatedBytes();
  *freeBytes = state().freeBytes > used ? state().freeBytes - used : 0;
  *totalBytes = state().totalBytes;
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  FAKE_ENTER("cuMemAlloc_v2");
  FAKE_REQUIRE(requireContext("cuMemAlloc_v2"));
  if (bytes == 0)
    return violation(kInvalidValue, "cuMemAlloc_v2", "0 bytes");
  State &s = state();
  if (allocatedBytes() + bytes > s.freeBytes)
    return kOutOfMemory;
  Allocation allocation;
  allocation.context = current;
  allocation.bytes = bytes;
  allocation.host.reset(new unsigned char[bytes]);
  std::memset(allocation.host.get(), 0xAB, bytes); // not zeroed, like a GPU's
  uint64_t address = s.nextAddress;
  // 2 MiB granules with a granule of gap, so that an address just past one
  // allocation is in none.
  const uint64_t granule = 2ull << 20;
  s.nextAddress += (bytes + granule - 1) / granule * granule + granule;
  s.allocations.emplace(address, std::move(allocation));
  s.lastAllocation = address;
  *pointer = address;
  mockcuda::recordEvent("cuMemAlloc_v2 " + std::to_string(bytes) + " -> " +
                        hex(address));
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  FAKE_ENTER("cuMemFree_v2");
  FAKE_REQUIRE(requireContext("cuMemFree_v2"));
  if (!state().allocations.erase(pointer))
    return violation(kInvalidValue, "cuMemFree_v2",
                     hex(pointer) + " is not a live allocation");
  mockcuda::recordEvent("cuMemFree_v2 " + hex(pointer));
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr destination, const void *source,
                         size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD_v2");
  FAKE_REQUIRE(requireContext("cuMemcpyHtoD_v2"));
  FAKE_REQUIRE(forbiddenWhileCapturing());
  void *host = mockcuda::hostRange(destination, bytes, "cuMemcpyHtoD_v2");
  if (!host)
    return kInvalidValue;
  std::memcpy(host, source, bytes);
  return kSuccess;
}

CUresult cuMemcpyDtoH_v2(void *destination, CUdeviceptr source, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH_v2");
  FAKE_REQUIRE(requireContext("cuMemcpyDtoH_v2"));
  FAKE_REQUIRE(forbiddenWhileCapturing());
  void *host = mockcuda::hostRange(source, bytes, "cuMemcpyDtoH_v2");
  if (!host)
    return kInvalidValue;
  std::memcpy(destination, host, bytes);
  return kSuccess;
}

CUresult cuMemsetD8_v2(CUdeviceptr destination, unsigned char value,
                       size_t count) {
  FAKE_ENTER("cuMemsetD8_v2");
  FAKE_REQUIRE(requireContext("cuMemsetD8_v2"));
  FAKE_REQUIRE(forbiddenWhileCapturing());
  void *host = mockcuda::hostRange(destination, count, "cuMemsetD8_v2");
  if (!host)
    return kInvalidValue;
  std::memset(host, value, count);
  return kSuccess;
}

CUresult cuModuleLoadData(void **module, const void *image) {
  FAKE_ENTER("cuModuleLoadData");
  FAKE_REQUIRE(requireContext("cuModuleLoadData"));
  State &s = state();
  if (!image)
    return violation(kInvalidValue, "cuModuleLoadData", "no image");
  const mockcuda::DeviceSpec &spec = s.devices[current->device];
  auto loaded = std::make_unique<Module>();
  loaded->context = current;
  s.lastLoadError.clear();
  std::vector<fakecuda::CubinKernel> kernels;
  if (CUresult result = fakecuda::readCubin(
          static_cast<const unsigned char *>(image),
          spec.major * 10 + spec.minor, kernels, s.lastLoadError))
    return result;
  for (fakecuda::CubinKernel &kernel : kernels) {
    auto function = std::make_unique<Function>();
    function->module = loaded.get();
    function->name = kernel.name;
    function->paramSizes = std::move(kernel.paramSizes);
    function->staticShared = kernel.staticShared;
    loaded->functions[kernel.name] = std::move(function);
  }
  Module *handle = loaded.get();
  mockcuda::recordEvent("cuModuleLoadData (" +
                        std::to_string(handle->functions.size()) + " kernels)");
  s.modules.emplace(handle, std::move(loaded));
  *module = handle;
  return kSuccess;
}

CUresult cuModuleUnload(void *module) {
  FAKE_ENTER("cuModuleUnload");
  FAKE_REQUIRE(requireContext("cuModuleUnload"));
  if (!state().modules.erase(static_cast<Module *>(module)))
    return violation(kInvalidHandle, "cuModuleUnload", "not a live module");
  mockcuda::recordEvent("cuModuleUnload");
  return kSuccess;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  FAKE_REQUIRE(requireContext("cuModuleGetFunction"));
  auto it = state().modules.find(static_cast<Module *>(module));
  if (it == state().modules.end())
    return violation(kInvalidHandle, "cuModuleGetFunction",
                     "not a live module");
  auto found = it->second->functions.find(name);
  if (found == it->second->functions.end())
    return kNotFound;
  *function = found->second.get();
  return kSuccess;
}

CUresult cuFuncSetAttribute(void *handle, int attribute, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  FAKE_REQUIRE(requireContext("cuFuncSetAttribute"));
  Function *function = findFunction(handle);
  if (!function)
    return violation(kInvalidHandle, "cuFuncSetAttribute",
                     "not a function of a live module");
  if (attribute != kFuncAttrMaxDynamicShared)
    return violation(kInvalidValue, "cuFuncSetAttribute",
                     "attribute " + std::to_string(attribute) +
                         " is not emulated (extend the fake)");
  uint64_t limit = sharedOptin(function->module->context->device);
  if (value < 0 || function->staticShared + uint64_t(value) > limit)
    return kInvalidValue;
  function->maxDynamicShared = value;
  return kSuccess;
}

CUresult cuLaunchKernel(void *handle, unsigned int gridX, unsigned int gridY,
                        unsigned int gridZ, unsigned int blockX,
                        unsigned int blockY, unsigned int blockZ,
                        unsigned int sharedBytes, void *stream, void **params,
                        void **extra) {
  const char *entry = "cuLaunchKernel";
  FAKE_ENTER(entry);
  FAKE_REQUIRE(requireContext(entry));
  Function *function = findFunction(handle);
  if (!function)
    return violation(kInvalidHandle, entry, "not a function of a live module");
  if (function->module->context != current)
    return violation(kInvalidContext, entry,
                     "the function's module belongs to another context");
  if (stream && !mockcuda::streamValid(stream))
    return violation(kInvalidHandle, entry,
                     "not a live stream of the current context");
  if (extra)
    return violation(kInvalidValue, entry, "extra is not emulated");
  if (!gridX || !gridY || !gridZ || !blockX || !blockY || !blockZ ||
      uint64_t(blockX) * blockY * blockZ > 1024 || blockZ > 64)
    return kInvalidValue;
  uint64_t sharedLimit = function->maxDynamicShared >= 0
                             ? uint64_t(function->maxDynamicShared)
                             : kDefaultSharedLimit - function->staticShared;
  if (sharedBytes > sharedLimit)
    return violation(kInvalidValue, entry,
                     function->name + " asks for " +
                         std::to_string(sharedBytes) +
                         " bytes of dynamic shared memory, over its limit of " +
                         std::to_string(sharedLimit) + " bytes");

  mockcuda::Launch launch;
  launch.kernel = function->name;
  launch.grid[0] = gridX;
  launch.grid[1] = gridY;
  launch.grid[2] = gridZ;
  launch.block[0] = blockX;
  launch.block[1] = blockY;
  launch.block[2] = blockZ;
  launch.sharedBytes = sharedBytes;
  launch.stream = stream;
  // The driver reads each parameter's bytes through kernelParams[i], as
  // many as the CUBIN says the parameter has.
  const std::vector<uint32_t> &sizes = function->paramSizes;
  if (!sizes.empty() && !params)
    return violation(kInvalidValue, entry,
                     function->name + " has " + std::to_string(sizes.size()) +
                         " parameters but kernelParams is null");
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!params[i])
      return violation(kInvalidValue, entry,
                       "kernelParams[" + std::to_string(i) + "] is null");
    if (sizes[i] == 0 || sizes[i] > 8)
      return violation(kInvalidValue, entry,
                       "parameters of " + std::to_string(sizes[i]) +
                           " bytes are not emulated");
    uint64_t value = 0;
    std::memcpy(&value, params[i], sizes[i]);
    launch.params.push_back(value);
  }
  // Done now, or at each launch of the graph being captured.
  mockcuda::submit(stream, [launch] {
    State &s = state();
    mockcuda::workDone(false);
    s.launches.push_back(launch);
    mockcuda::recordEvent("cuLaunchKernel " + launch.kernel);
    auto emulation = s.emulations.find(launch.kernel);
    if (emulation != s.emulations.end())
      emulation->second(launch);
  });
  return kSuccess;
}

CUresult cuStreamCreate(void **stream, unsigned int flags) {
  FAKE_ENTER("cuStreamCreate");
  FAKE_REQUIRE(requireContext("cuStreamCreate"));
  if (flags > 1)
    return violation(kInvalidValue, "cuStreamCreate", "unknown flags");
  auto created = std::make_unique<Stream>();
  created->context = current;
  Stream *handle = created.get();
  state().streams.emplace(handle, std::move(created));
  *stream = handle;
  mockcuda::recordEvent("cuStreamCreate");
  return kSuccess;
}

CUresult cuStreamSynchronize(void *stream) {
  FAKE_ENTER("cuStreamSynchronize");
  FAKE_REQUIRE(requireContext("cuStreamSynchronize"));
  if (stream && !mockcuda::streamValid(stream))
    return violation(kInvalidHandle, "cuStreamSynchronize",
                     "not a live stream of the current context");
  if (mockcuda::capturing(stream)) {
    mockcuda::invalidateCaptures();
    return kCaptureUnsupported;
  }
  mockcuda::recordEvent("cuStreamSynchronize");
  return kSuccess;
}

CUresult cuStreamDestroy_v2(void *stream) {
  FAKE_ENTER("cuStreamDestroy_v2");
  FAKE_REQUIRE(requireContext("cuStreamDestroy_v2"));
  if (!mockcuda::streamValid(stream))
    return violation(kInvalidHandle, "cuStreamDestroy_v2",
                     "not a live stream of the current context");
  if (mockcuda::capturing(stream)) {
    mockcuda::endCapture(stream);
    violation(kSuccess, "cuStreamDestroy_v2", "the stream was capturing");
  }
  state().streams.erase(static_cast<Stream *>(stream));
  mockcuda::recordEvent("cuStreamDestroy_v2");
  return kSuccess;
}

} // extern "C"
