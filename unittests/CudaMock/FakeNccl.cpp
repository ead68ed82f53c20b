//===- FakeNccl.cpp - a FAKE libnccl.so.2 for testing the CUDA backend ----===//
//
// NOT NCCL: a stand-in for the collectives the CUDA backend runs
// (runtime/src/CudaCollective.cpp), loaded only by memfit-cuda-mock-test
// (see MockCuda.h). It runs a group of ONE rank, the only one a single
// process can hold: a unique id, a communicator of one rank, and each
// collective as what it is for one rank (a copy: the sum, mean, max or min
// of one value, one rank's slice, the root's data), done on the fake
// driver's stream (at once, or at a graph's launch). It checks what NCCL
// requires: a live communicator, a stream of the current context, buffers
// inside live device allocations, known data types and reductions; it does
// not prove anything about several ranks, which only a GPU run (or the
// host backend's MPI path) shows.
//
//===----------------------------------------------------------------------===//

#include "MockCuda.h"

#include <cstring>
#include <map>
#include <set>

namespace {

using Result = int;
constexpr Result kSuccess = 0, kInvalidArgument = 4, kInvalidUsage = 5;
constexpr char kIdMagic[] = "fake-nccl-unique-id";

struct Comm {};

struct State {
  std::map<std::string, std::pair<Result, int>> failures;
  std::map<std::string, int> calls;
  std::set<Comm *> comms;
};

State &state() {
  static State s;
  return s;
}

Result enter(const char *entry) {
  State &s = state();
  ++s.calls[entry];
  auto it = s.failures.find(entry);
  if (it == s.failures.end())
    return kSuccess;
  Result result = it->second.first;
  if (it->second.second > 0 && --it->second.second == 0)
    s.failures.erase(it);
  return result;
}

Result violation(Result result, const char *entry, const std::string &what) {
  mockcuda::recordViolation(std::string(entry) + ": " + what);
  return result;
}

#define FAKE_ENTER(entry)                                                      \
  do {                                                                         \
    if (Result injected_ = enter(entry))                                       \
      return injected_;                                                        \
  } while (false)

uint64_t typeBytes(int type) {
  switch (type) {
  case 0: // ncclInt8
  case 1: // ncclUint8
    return 1;
  case 6: // ncclFloat16
  case 9: // ncclBfloat16
    return 2;
  case 2: // ncclInt32
  case 7: // ncclFloat32
    return 4;
  case 4: // ncclInt64
  case 8: // ncclFloat64
    return 8;
  default:
    return 0;
  }
}

/// Checks a collective's arguments and copies `bytes` from `send` to
/// `receive` on `stream`: one rank's result of any of them.
Result oneRank(const char *entry, const void *send, void *receive, size_t count,
               int type, int op, void *comm, void *stream) {
  FAKE_ENTER(entry);
  if (!state().comms.count(static_cast<Comm *>(comm)))
    return violation(kInvalidArgument, entry, "not a live communicator");
  if (!mockcuda::contextCurrent() || (stream && !mockcuda::streamValid(stream)))
    return violation(kInvalidUsage, entry,
                     "not a live stream of the current context");
  uint64_t e = typeBytes(type);
  if (!e)
    return violation(kInvalidArgument, entry,
                     "unknown data type " + std::to_string(type));
  if (op < 0 || op > 4)
    return violation(kInvalidArgument, entry,
                     "unknown reduction " + std::to_string(op));
  uint64_t bytes = uint64_t(count) * e;
  uint64_t from = reinterpret_cast<uint64_t>(send);
  uint64_t to = reinterpret_cast<uint64_t>(receive);
  if (!mockcuda::hostRange(from, bytes, entry) ||
      !mockcuda::hostRange(to, bytes, entry))
    return kInvalidArgument;
  mockcuda::submit(stream, [=] {
    void *dst = mockcuda::hostRange(to, bytes, "ncclAllReduce");
    void *src = mockcuda::hostRange(from, bytes, "ncclAllReduce");
    if (dst && src)
      std::memmove(dst, src, bytes);
    mockcuda::recordEvent(std::string(entry) + " " + std::to_string(bytes));
  });
  return kSuccess;
}

} // namespace

namespace mocknccl {

void reset() {
  state().failures.clear();
  state().calls.clear();
}

void failNext(const std::string &entry, int result, int times) {
  state().failures[entry] = {result, times};
}

int calls(const std::string &entry) {
  auto it = state().calls.find(entry);
  return it == state().calls.end() ? 0 : it->second;
}

int liveComms() { return int(state().comms.size()); }

} // namespace mocknccl

extern "C" {

const char *ncclGetErrorString(Result result) {
  switch (result) {
  case kSuccess:
    return "no error";
  case kInvalidArgument:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case kInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  default:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  }
}

Result ncclGetVersion(int *version) {
  FAKE_ENTER("ncclGetVersion");
  *version = 22800;
  return kSuccess;
}

Result ncclGetUniqueId(char *id) {
  FAKE_ENTER("ncclGetUniqueId");
  std::memset(id, 0, 128);
  std::memcpy(id, kIdMagic, sizeof kIdMagic);
  return kSuccess;
}

struct UniqueId {
  char internal[128];
};

Result ncclCommInitRank(void **comm, int ranks, UniqueId id, int rank) {
  const char *entry = "ncclCommInitRank";
  FAKE_ENTER(entry);
  if (!mockcuda::contextCurrent())
    return violation(kInvalidUsage, entry, "no current context");
  if (std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0)
    return violation(kInvalidArgument, entry, "not an id of ncclGetUniqueId");
  if (ranks != 1 || rank != 0)
    return violation(kInvalidArgument, entry,
                     "the fake runs one rank, not rank " +
                         std::to_string(rank) + " of " + std::to_string(ranks));
  Comm *made = new Comm;
  state().comms.insert(made);
  *comm = made;
  mockcuda::recordEvent(entry);
  return kSuccess;
}

Result ncclCommDestroy(void *comm) {
  const char *entry = "ncclCommDestroy";
  FAKE_ENTER(entry);
  if (!state().comms.erase(static_cast<Comm *>(comm)))
    return violation(kInvalidArgument, entry, "not a live communicator");
  delete static_cast<Comm *>(comm);
  mockcuda::recordEvent(entry);
  return kSuccess;
}

Result ncclAllReduce(const void *send, void *receive, size_t count, int type,
                     int op, void *comm, void *stream) {
  return oneRank("ncclAllReduce", send, receive, count, type, op, comm, stream);
}

Result ncclReduceScatter(const void *send, void *receive, size_t count,
                         int type, int op, void *comm, void *stream) {
  return oneRank("ncclReduceScatter", send, receive, count, type, op, comm,
                 stream);
}

Result ncclAllGather(const void *send, void *receive, size_t count, int type,
                     void *comm, void *stream) {
  return oneRank("ncclAllGather", send, receive, count, type, 0, comm, stream);
}

Result ncclBroadcast(const void *send, void *receive, size_t count, int type,
                     int root, void *comm, void *stream) {
  if (root != 0)
    return violation(kInvalidArgument, "ncclBroadcast",
                     "root " + std::to_string(root) + " of one rank");
  return oneRank("ncclBroadcast", send, receive, count, type, 0, comm, stream);
}

} // extern "C"
