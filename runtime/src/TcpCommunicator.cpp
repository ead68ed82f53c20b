//===- TcpCommunicator.cpp - torchrun's ranks, meeting over TCP -----------===//
//
// Under torchrun there is no MPI: the ranks know $MASTER_ADDR and
// $MASTER_PORT. torchrun's agent keeps its own store at MASTER_PORT, so
// rank 0 listens at the next port ($MEMFIT_RENDEZVOUS_PORT to choose
// another) and every other rank connects to it, as PyTorch's TCP store
// does. The connections carry what the runtime
// itself exchanges: NCCL's unique id (a broadcast of 128 bytes), the
// numbers the ranks agree on (the step they resume at, the signal they stop
// for: all-reduces of one value) and barriers, each through rank 0. A
// data-parallel step's tensors do not go this way: on GPUs they go through
// NCCL (CudaCollective.cpp); on the host backend a launch needs mpirun.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Communicator.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace memfit::rt {
namespace {

/// The most a collective may move through the rendezvous: control
/// messages, not tensors.
constexpr uint64_t kMaxBytes = 64 * 1024;

class TcpCommunicator final : public Communicator {
public:
  TcpCommunicator(int rank, int size, std::string where)
      : rank_(rank), size_(size), where_(std::move(where)) {}
  ~TcpCommunicator() override {
    for (int fd : peers_)
      if (fd >= 0)
        ::close(fd);
    if (upstream_ >= 0)
      ::close(upstream_);
  }

  /// Rank 0 listens at `port` and accepts the others; they connect to
  /// `host`:`port`, retrying until `timeout`.
  static StatusOr<std::shared_ptr<Communicator>>
  open(const LaunchInfo &launch, std::chrono::seconds timeout) {
    std::string where =
        launch.masterAddr + ":" + std::to_string(launch.rendezvousPort);
    auto comm =
        std::make_shared<TcpCommunicator>(launch.rank, launch.worldSize, where);
    Status opened = launch.rank == 0 ? comm->listenAndAccept(launch, timeout)
                                     : comm->connectUp(launch, timeout);
    if (!opened)
      return opened.withContext("torchrun's rendezvous at " + where);
    return std::shared_ptr<Communicator>(comm);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override {
    return "torchrun's rendezvous at " + where_ + ", rank " +
           std::to_string(rank_) + " of " + std::to_string(size_) +
           " (tensors through NCCL)";
  }

  Status run(const Collective &c, const void *in, void *out) override {
    const uint64_t width = dtypeSize(c.dtype);
    const uint64_t bytes = c.count * width;
    if (c.groupSize != size_ || !c.ranks.empty())
      return invalidArgument("collective '" + c.name +
                             "': over a part of the ranks");
    // Only the runtime's own messages: a broadcast of bytes (NCCL's id) or
    // an all-reduce of integers (a step, a signal, a barrier). A tensor of
    // the model's is refused rather than averaged here.
    const bool control =
        bytes <= kMaxBytes &&
        (c.kind == Collective::Kind::Broadcast ||
         (c.kind == Collective::Kind::AllReduce && c.dtype == DType::i64 &&
          c.reduction != Collective::Reduction::Mean));
    if (!control)
      return unavailable(
          "collective '" + c.name + "': under torchrun memfit's ranks " +
          "exchange tensors through NCCL on GPUs (--device=cuda); on the " +
          "host backend launch them with mpirun -np " + std::to_string(size_));
    if (c.kind == Collective::Kind::Broadcast) {
      if (c.root != 0)
        return invalidArgument("collective '" + c.name +
                               "': a broadcast from rank 0 only");
      if (in != out)
        std::memmove(out, in, bytes);
      return exchange(out, bytes, /*reduce=*/{});
    }
    if (in != out)
      std::memmove(out, in, bytes);
    return exchange(out, bytes, [&](void *sum, const void *value) {
      reduce(c, static_cast<int64_t *>(sum),
             static_cast<const int64_t *>(value));
    });
  }

  Status barrier() override {
    int64_t zero = 0;
    Collective c;
    c.name = "barrier";
    c.dtype = DType::i64;
    c.count = 1;
    c.groupSize = size_;
    return run(c, &zero, &zero);
  }

  [[noreturn]] void abort(int code) override {
    // Closing the connections tells every other rank, whose next exchange
    // fails with a message instead of waiting.
    for (int &fd : peers_)
      if (fd >= 0)
        ::close(fd), fd = -1;
    if (upstream_ >= 0)
      ::close(upstream_), upstream_ = -1;
    std::_Exit(code);
  }

private:
  using Reducer = std::function<void(void *sum, const void *value)>;

  /// Rank 0 gathers every rank's bytes into `data` with `reduce` (none: a
  /// broadcast of rank 0's) and sends the result back; the others send
  /// theirs and receive it.
  Status exchange(void *data, uint64_t bytes, const Reducer &combine) {
    if (rank_ != 0) {
      MEMFIT_RT_RETURN_IF_ERROR(sendAll(upstream_, data, bytes, 0));
      return recvAll(upstream_, data, bytes, 0);
    }
    std::vector<uint8_t> value(bytes);
    for (int r = 1; r < size_; ++r) {
      MEMFIT_RT_RETURN_IF_ERROR(recvAll(peers_[r], value.data(), bytes, r));
      if (combine)
        combine(data, value.data());
    }
    for (int r = 1; r < size_; ++r)
      MEMFIT_RT_RETURN_IF_ERROR(sendAll(peers_[r], data, bytes, r));
    return Status::ok();
  }

  /// Folds a rank's i64 values into `acc` (run() lets no other type or
  /// a mean through).
  static void reduce(const Collective &c, int64_t *acc, const int64_t *v) {
    for (uint64_t i = 0; i < c.count; ++i)
      switch (c.reduction) {
      case Collective::Reduction::Sum:
      case Collective::Reduction::Mean:
        acc[i] += v[i];
        break;
      case Collective::Reduction::Max:
        acc[i] = std::max(acc[i], v[i]);
        break;
      case Collective::Reduction::Min:
        acc[i] = std::min(acc[i], v[i]);
        break;
      }
  }

  std::string peerName(int peer) const {
    return peer == 0 ? "rank 0" : "rank " + std::to_string(peer);
  }

  Status sendAll(int fd, const void *data, uint64_t bytes, int peer) {
    const char *p = static_cast<const char *>(data);
    while (bytes) {
      ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return unavailable(peerName(peer) + " of the torchrun launch is " +
                           "gone (sending: " + std::strerror(errno) + ")");
      p += n;
      bytes -= uint64_t(n);
    }
    return Status::ok();
  }

  Status recvAll(int fd, void *data, uint64_t bytes, int peer) {
    char *p = static_cast<char *>(data);
    while (bytes) {
      ssize_t n = ::recv(fd, p, bytes, 0);
      if (n < 0 && errno == EINTR)
        continue;
      if (n == 0)
        return unavailable(peerName(peer) + " of the torchrun launch closed "
                                            "its connection (it failed or "
                                            "was killed)");
      if (n < 0)
        return unavailable(peerName(peer) + ": " + std::strerror(errno));
      p += n;
      bytes -= uint64_t(n);
    }
    return Status::ok();
  }

  Status listenAndAccept(const LaunchInfo &launch,
                         std::chrono::seconds timeout) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
      return unavailable(std::string("socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(launch.rendezvousPort));
    if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) <
            0 ||
        ::listen(fd, size_) < 0) {
      Status failed = unavailable(std::string("rank 0 cannot listen: ") +
                                  std::strerror(errno));
      ::close(fd);
      return failed;
    }
    timeval wait{static_cast<time_t>(timeout.count()), 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    peers_.assign(size_, -1);
    for (int joined = 1; joined < size_; ++joined) {
      int peer = ::accept(fd, nullptr, nullptr);
      int32_t rank = -1;
      if (peer < 0 ||
          recvAll(peer, &rank, sizeof rank, joined).code() != StatusCode::Ok) {
        if (peer >= 0)
          ::close(peer);
        ::close(fd);
        return unavailable(std::to_string(joined - 1) + " of the " +
                           std::to_string(size_ - 1) +
                           " other ranks joined within " +
                           std::to_string(timeout.count()) + " s");
      }
      if (rank < 1 || rank >= size_ || peers_[rank] >= 0) {
        ::close(peer);
        ::close(fd);
        return invalidArgument("a rank joined as " + std::to_string(rank) +
                               ", not a rank of " + std::to_string(size_) +
                               " or one that joined already");
      }
      // An accepted socket inherits the listener's receive timeout; a step
      // may take longer than the wait for the others to join.
      timeval forever{0, 0};
      ::setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
      setNoDelay(peer);
      peers_[rank] = peer;
    }
    ::close(fd);
    return Status::ok();
  }

  Status connectUp(const LaunchInfo &launch, std::chrono::seconds timeout) {
    addrinfo hints{}, *found = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    std::string port = std::to_string(launch.rendezvousPort);
    if (int error = ::getaddrinfo(launch.masterAddr.c_str(), port.c_str(),
                                  &hints, &found))
      return unavailable("$MASTER_ADDR=" + launch.masterAddr + ": " +
                         ::gai_strerror(error));
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string why;
    // Rank 0 may not listen yet: try again until the deadline.
    while (std::chrono::steady_clock::now() < deadline) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
        ::freeaddrinfo(found);
        setNoDelay(fd);
        upstream_ = fd;
        int32_t rank = rank_;
        return sendAll(fd, &rank, sizeof rank, 0);
      }
      why = std::strerror(errno);
      if (fd >= 0)
        ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::freeaddrinfo(found);
    return unavailable("rank " + std::to_string(rank_) +
                       " found no rank 0 listening within " +
                       std::to_string(timeout.count()) + " s (" + why + ")");
  }

  static void setNoDelay(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  int rank_, size_;
  std::string where_;
  std::vector<int> peers_; // rank 0: a connection per rank (-1 for itself)
  int upstream_ = -1;      // the others: the connection to rank 0
};

} // namespace

StatusOr<std::shared_ptr<Communicator>>
openTcpCommunicator(const LaunchInfo &launch, int timeoutSeconds) {
  if (launch.masterAddr.empty() || launch.rendezvousPort <= 0 ||
      launch.rendezvousPort > 65535)
    return invalidArgument("torchrun's launch: $MASTER_ADDR and "
                           "$MASTER_PORT must say where rank 0 listens");
  return TcpCommunicator::open(launch, std::chrono::seconds(timeoutSeconds));
}

} // namespace memfit::rt
