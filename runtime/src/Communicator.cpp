//===- Communicator.cpp - self and MPI communicators, launch detection ----===//

#include "memfit/runtime/Communicator.h"

#include "Half.h"
#include "MpiPlugin.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace memfit::rt {

Communicator::~Communicator() = default;

StatusOr<int64_t> Communicator::reduceScalar(int64_t value,
                                             Collective::Reduction reduction) {
  Collective c;
  c.name = "scalar";
  c.reduction = reduction;
  c.dtype = DType::i64;
  c.count = 1;
  c.groupSize = size();
  int64_t result = 0;
  MEMFIT_RT_RETURN_IF_ERROR(run(c, &value, &result));
  return result;
}

namespace {

/// The integer value of `name`, if set.
StatusOr<std::optional<int>> envInt(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return std::optional<int>();
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end || value < 0 || value > 1 << 20)
    return invalidArgument(std::string("$") + name + "='" + text +
                           "' is not a rank or a number of ranks");
  return std::optional<int>(static_cast<int>(value));
}

/// Whether the group of `c` is the whole world of `size` ranks in order.
Status checkWorldGroup(const Collective &c, int size) {
  bool ordered = true;
  for (size_t i = 0; i < c.ranks.size(); ++i)
    ordered &= c.ranks[i] == static_cast<int64_t>(i);
  if (c.groupSize != size || !ordered)
    return invalidArgument("collective '" + c.name + "': a group of " +
                           std::to_string(c.groupSize) +
                           " ranks; this runtime runs collectives over all " +
                           std::to_string(size) + " ranks of the launch");
  return Status::ok();
}

class SelfCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string description() const override { return "self (one rank)"; }
  Status run(const Collective &c, const void *in, void *out) override {
    MEMFIT_RT_RETURN_IF_ERROR(checkWorldGroup(c, 1));
    if (in != out)
      std::memmove(out, in, c.count * dtypeSize(c.dtype));
    return Status::ok();
  }
  Status barrier() override { return Status::ok(); }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

/// MPI through libmemfit-mpi.so.
class MpiCommunicator final : public Communicator {
public:
  static StatusOr<std::shared_ptr<Communicator>> open(const LaunchInfo &launch);
  ~MpiCommunicator() override {
    if (api_)
      api_->finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override {
    return "MPI (" + std::string(api_->library()) + "), rank " +
           std::to_string(rank_) + " of " + std::to_string(size_);
  }
  Status run(const Collective &c, const void *in, void *out) override;
  bool runsOnAnyThread() const override { return api_->serialized() != 0; }
  Status barrier() override {
    char error[512];
    if (api_->barrier(error, sizeof(error)))
      return internalError(error);
    return Status::ok();
  }
  [[noreturn]] void abort(int code) override {
    api_->abort(code);
    std::_Exit(code);
  }

private:
  const memfit_mpi_api *api_ = nullptr;
  int rank_ = 0, size_ = 1;
};

/// Where the plugin is: $MEMFIT_MPI_PLUGIN, else lib/ beside the folder of
/// the library or program holding this code (build/bin/memfit-run ->
/// build/lib; an install's bin and lib alike), else the loader's path.
std::vector<std::string> pluginCandidates() {
  if (const char *env = std::getenv("MEMFIT_MPI_PLUGIN"); env && *env)
    return {env};
  std::vector<std::string> out;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&pluginCandidates), &info) &&
      info.dli_fname) {
    std::string self = info.dli_fname;
    if (self.find('/') == std::string::npos) {
      char exe[4096];
      ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
      self = n > 0 ? std::string(exe, n) : self;
    }
    std::string dir = self.substr(0, self.rfind('/'));
    out.push_back(dir + "/../lib/libmemfit-mpi.so");
    out.push_back(dir + "/libmemfit-mpi.so");
  }
  out.push_back("libmemfit-mpi.so");
  return out;
}

StatusOr<std::shared_ptr<Communicator>>
MpiCommunicator::open(const LaunchInfo &launch) {
  std::string tried;
  void *handle = nullptr;
  for (const std::string &path : pluginCandidates()) {
    // RTLD_GLOBAL: Open MPI's components resolve libmpi's symbols through
    // the global scope.
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle)
      break;
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  if (!handle)
    return unavailable(
        "a run of " + std::to_string(launch.worldSize) +
        " ranks needs memfit's MPI plugin, libmemfit-mpi.so (built where "
        "CMake finds MPI: apt install libopenmpi-dev openmpi-bin, then "
        "rebuild; or set $MEMFIT_MPI_PLUGIN): " +
        tried);
  using GetApi = const memfit_mpi_api *(*)();
  auto get = reinterpret_cast<GetApi>(dlsym(handle, "memfit_mpi_get_api"));
  const memfit_mpi_api *api = get ? get() : nullptr;
  if (!api || api->version != MEMFIT_MPI_API_VERSION)
    return unavailable("libmemfit-mpi.so is not the plugin of this "
                       "memfit (no memfit_mpi_get_api of version " +
                       std::to_string(MEMFIT_MPI_API_VERSION) + ")");
  auto comm = std::make_shared<MpiCommunicator>();
  char error[512];
  if (api->init(&comm->rank_, &comm->size_, error, sizeof(error)))
    return internalError(std::string("MPI: ") + error);
  comm->api_ = api;
  if (comm->size_ != launch.worldSize || comm->rank_ != launch.rank)
    return unavailable("MPI says rank " + std::to_string(comm->rank_) + " of " +
                       std::to_string(comm->size_) + ", the launcher (" +
                       launch.launcher + ") rank " +
                       std::to_string(launch.rank) + " of " +
                       std::to_string(launch.worldSize));
  return std::shared_ptr<Communicator>(std::move(comm));
}

Status MpiCommunicator::run(const Collective &c, const void *in, void *out) {
  MEMFIT_RT_RETURN_IF_ERROR(checkWorldGroup(c, size_));
  using Kind = Collective::Kind;
  using Reduction = Collective::Reduction;
  // 16-bit floats reduce in f32 (MPI has no such types): widened into a
  // copy, reduced, rounded back.
  bool half = c.dtype == DType::f16 || c.dtype == DType::bf16;
  bool reduces = c.kind == Kind::AllReduce || c.kind == Kind::ReduceScatter;
  int type;
  switch (c.dtype) {
  case DType::f32:
    type = MEMFIT_MPI_F32;
    break;
  case DType::f64:
    type = MEMFIT_MPI_F64;
    break;
  case DType::i32:
    type = MEMFIT_MPI_I32;
    break;
  case DType::i64:
    type = MEMFIT_MPI_I64;
    break;
  default:
    if (half && reduces) {
      type = MEMFIT_MPI_F32;
      break;
    }
    if (reduces)
      return invalidArgument("collective '" + c.name +
                             "': MPI reduces f32, "
                             "f64, f16, bf16, i32 and i64, not " +
                             std::string(dtypeName(c.dtype)));
    type = MEMFIT_MPI_BYTE; // moved, not combined
  }
  int op = c.reduction == Reduction::Max   ? MEMFIT_MPI_MAX
           : c.reduction == Reduction::Min ? MEMFIT_MPI_MIN
                                           : MEMFIT_MPI_SUM;
  uint64_t width = dtypeSize(c.dtype);
  uint64_t moved = type == MEMFIT_MPI_BYTE ? width : 1; // per element
  std::vector<float> wide, wideOut;
  const void *src = in;
  void *dst = out;
  if (half && reduces) {
    wide.resize(c.count);
    wideOut.resize(c.resultCount());
    auto *h = static_cast<const uint16_t *>(in);
    for (uint64_t i = 0; i < c.count; ++i)
      wide[i] = c.dtype == DType::f16 ? halfToFloat(h[i]) : bf16ToFloat(h[i]);
    src = wide.data();
    dst = in == out && c.kind == Kind::AllReduce ? wide.data() : wideOut.data();
  }
  char error[512];
  int failed = 0;
  long long perRank = static_cast<long long>(c.resultCount());
  switch (c.kind) {
  case Kind::AllReduce:
    failed = api_->all_reduce(src, dst, static_cast<long long>(c.count), type,
                              op, error, sizeof(error));
    break;
  case Kind::ReduceScatter:
    failed =
        api_->reduce_scatter(src, dst, perRank, type, op, error, sizeof(error));
    break;
  case Kind::AllGather:
    failed = api_->all_gather(src, dst, static_cast<long long>(c.count * moved),
                              type, error, sizeof(error));
    break;
  case Kind::Broadcast:
    if (in != out)
      std::memcpy(out, in, c.count * width);
    failed = api_->broadcast(out, static_cast<long long>(c.count * moved), type,
                             static_cast<int>(c.root), error, sizeof(error));
    break;
  }
  if (failed)
    return internalError("collective '" + c.name + "' (" +
                         collectiveKindName(c.kind) + "): " + error);
  // Mean: the sum over the ranks divided by their number, in the
  // reduction's type.
  uint64_t n = c.resultCount();
  bool mean = reduces && c.reduction == Reduction::Mean;
  if (half && reduces) {
    const float *w = static_cast<const float *>(dst);
    auto *h = static_cast<uint16_t *>(out);
    for (uint64_t i = 0; i < n; ++i) {
      float v = mean ? w[i] / static_cast<float>(size_) : w[i];
      h[i] = c.dtype == DType::f16 ? floatToHalf(v) : floatToBf16(v);
    }
  } else if (mean && c.dtype == DType::f32) {
    auto *f = static_cast<float *>(out);
    for (uint64_t i = 0; i < n; ++i)
      f[i] /= static_cast<float>(size_);
  } else if (mean && c.dtype == DType::f64) {
    auto *d = static_cast<double *>(out);
    for (uint64_t i = 0; i < n; ++i)
      d[i] /= static_cast<double>(size_);
  } else if (mean) {
    return invalidArgument("collective '" + c.name +
                           "': mean over the ranks needs a float type");
  }
  return Status::ok();
}

} // namespace

StatusOr<LaunchInfo> detectLaunch() {
  struct Scheme {
    const char *launcher, *rank, *size, *localRank;
  };
  static const Scheme kSchemes[] = {
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
  };
  for (const Scheme &s : kSchemes) {
    StatusOr<std::optional<int>> size = envInt(s.size);
    if (!size)
      return size.status();
    if (!*size)
      continue;
    StatusOr<std::optional<int>> rank = envInt(s.rank);
    StatusOr<std::optional<int>> local = envInt(s.localRank);
    if (!rank)
      return rank.status();
    if (!local)
      return local.status();
    LaunchInfo info;
    info.launcher = s.launcher;
    info.worldSize = **size;
    info.rank = rank->value_or(0);
    info.localRank = local->value_or(info.rank);
    if (info.launcher == "torchrun") {
      if (const char *addr = std::getenv("MASTER_ADDR"))
        info.masterAddr = addr;
      StatusOr<std::optional<int>> port = envInt("MASTER_PORT");
      if (!port)
        return port.status();
      info.masterPort = port->value_or(0);
      StatusOr<std::optional<int>> own = envInt("MEMFIT_RENDEZVOUS_PORT");
      if (!own)
        return own.status();
      info.rendezvousPort =
          own->value_or(info.masterPort > 0 ? info.masterPort + 1 : 0);
    }
    if (info.worldSize < 1 || info.rank >= info.worldSize)
      return invalidArgument(std::string("$") + s.rank + "=" +
                             std::to_string(info.rank) + " is not a rank of $" +
                             s.size + "=" + std::to_string(info.worldSize));
    return info;
  }
  return LaunchInfo{};
}

StatusOr<std::shared_ptr<Communicator>>
createCommunicator(const LaunchInfo &launch) {
  if (launch.worldSize <= 1)
    return std::shared_ptr<Communicator>(std::make_shared<SelfCommunicator>());
  if (launch.launcher == "torchrun")
    return openTcpCommunicator(launch);
  return MpiCommunicator::open(launch);
}

} // namespace memfit::rt
