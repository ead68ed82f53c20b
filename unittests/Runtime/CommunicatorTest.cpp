//===- CommunicatorTest.cpp - launches, communicators, the ranks' data ----===//
//
// Data parallelism's runtime without a second process: the launcher's
// variables read by detectLaunch, the communicator of one rank, what a
// missing MPI plugin says, torchrun's TCP rendezvous (two ranks in two
// threads), and the training data a rank reads (its rows of the global
// batch).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Communicator.h"
#include "memfit/runtime/TrainingData.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace memfit::rt::test {

namespace {

/// Sets the variables of `names` to `values` for the scope, then unsets
/// them.
class Env {
public:
  Env(const char *name, const char *value)
      : Env({{name, value}, {name, value}}) {}
  Env(std::vector<std::pair<const char *, const char *>> vars)
      : vars_(std::move(vars)) {
    for (auto [name, value] : vars_)
      ::setenv(name, value, 1);
  }
  ~Env() {
    for (auto [name, value] : vars_)
      ::unsetenv(name);
  }

private:
  std::vector<std::pair<const char *, const char *>> vars_;
};

void testDetectLaunch() {
  StatusOr<LaunchInfo> none = detectLaunch();
  if (CHECK_OK(none.status()))
    CHECK(none->worldSize == 1 && none->rank == 0 && none->launcher == "none");
  {
    Env env({{"OMPI_COMM_WORLD_RANK", "1"},
             {"OMPI_COMM_WORLD_SIZE", "4"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
    StatusOr<LaunchInfo> mpi = detectLaunch();
    if (CHECK_OK(mpi.status()))
      CHECK(mpi->rank == 1 && mpi->worldSize == 4 && mpi->localRank == 1 &&
            mpi->launcher == "mpirun");
  }
  {
    Env env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}});
    StatusOr<LaunchInfo> torchrun = detectLaunch();
    if (CHECK_OK(torchrun.status())) {
      CHECK(torchrun->launcher == "torchrun" && torchrun->worldSize == 2);
      CHECK_ERROR(createCommunicator(*torchrun).status(),
                  "torchrun's launch: $MASTER_ADDR and $MASTER_PORT must say "
                  "where rank 0 listens");
    }
  }
  {
    Env env({{"RANK", "1"},
             {"WORLD_SIZE", "2"},
             {"MASTER_ADDR", "node0"},
             {"MASTER_PORT", "29500"}});
    StatusOr<LaunchInfo> torchrun = detectLaunch();
    if (CHECK_OK(torchrun.status()))
      CHECK(torchrun->rank == 1 && torchrun->masterAddr == "node0" &&
            torchrun->masterPort == 29500 &&
            torchrun->rendezvousPort == 29501);
  }
  {
    Env env({{"RANK", "1"},
             {"WORLD_SIZE", "2"},
             {"MASTER_ADDR", "node0"},
             {"MASTER_PORT", "29500"},
             {"MEMFIT_RENDEZVOUS_PORT", "31000"}});
    StatusOr<LaunchInfo> torchrun = detectLaunch();
    if (CHECK_OK(torchrun.status()))
      CHECK(torchrun->rendezvousPort == 31000);
  }
  {
    Env env({{"PMI_RANK", "3"}, {"PMI_SIZE", "2"}});
    CHECK_ERROR(detectLaunch().status(), "$PMI_RANK=3 is not a rank of "
                                         "$PMI_SIZE=2");
  }
  {
    Env env("OMPI_COMM_WORLD_SIZE", "two");
    CHECK_ERROR(detectLaunch().status(), "$OMPI_COMM_WORLD_SIZE='two' is not "
                                         "a rank or a number of ranks");
  }
}

void testSelfCommunicator() {
  StatusOr<std::shared_ptr<Communicator>> self =
      createCommunicator(LaunchInfo{});
  if (!CHECK_OK(self.status()))
    return;
  Communicator &comm = **self;
  CHECK(comm.rank() == 0 && comm.size() == 1);
  CHECK_OK(comm.barrier());
  Collective c;
  c.name = "x0_all_reduce";
  c.reduction = Collective::Reduction::Mean;
  c.count = 3;
  float in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
  CHECK_OK(comm.run(c, in, out));
  CHECK(out[0] == 1 && out[1] == 2 && out[2] == 3);
  c.groupSize = 2;
  CHECK_ERROR(comm.run(c, in, out),
              "collective 'x0_all_reduce': a group of 2 ranks; this runtime "
              "runs collectives over all 1 ranks of the launch");
}

void testMissingPlugin() {
  Env env("MEMFIT_MPI_PLUGIN", "/nonexistent/libmemfit-mpi.so");
  LaunchInfo launch;
  launch.worldSize = 2;
  launch.launcher = "mpirun";
  Status status = createCommunicator(launch).status();
  CHECK_ERROR(status, "a run of 2 ranks needs memfit's MPI plugin, "
                      "libmemfit-mpi.so");
  CHECK_ERROR(status, "/nonexistent/libmemfit-mpi.so");
}

/// Rank r of N reads rows [r * B, (r + 1) * B) of what one process of
/// batch N * B reads: random inputs and a --data file alike.
void testRankSlices() {
  Manifest m;
  m.buffers = {{"ids", Region::Arena, 0, 32, DType::i64, {2, 2}},
               {"ids", Region::Arena, 0, 64, DType::i64, {4, 2}}};
  std::vector<Binding> rankInputs = {{"ids", 0}}, wholeInputs = {{"ids", 1}};
  TrainingDataOptions options;
  options.seed = 7;
  options.intHigh = 1000;
  StatusOr<TrainingData> whole = TrainingData::create(m, wholeInputs, options);
  if (!CHECK_OK(whole.status()))
    return;
  options.worldSize = 2;
  for (int rank = 0; rank < 2; ++rank) {
    options.rank = rank;
    StatusOr<TrainingData> part = TrainingData::create(m, rankInputs, options);
    if (!CHECK_OK(part.status()))
      return;
    for (int64_t step = 0; step < 3; ++step) {
      MicroBatch wholeBatch = whole->batch(step, 0);
      MicroBatch partBatch = part->batch(step, 0);
      const Tensor &w = wholeBatch.at("ids");
      const Tensor &p = partBatch.at("ids");
      CHECK(p.shape == std::vector<int64_t>({2, 2}));
      CHECK(std::memcmp(p.data.data(), w.data.data() + rank * 32, 32) == 0);
    }
  }
  options.rank = 2;
  CHECK_ERROR(TrainingData::create(m, rankInputs, options).status(),
              "training data: rank 2 of 2");
}

/// A port nothing listens at now.
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &size);
  int port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

/// torchrun's rendezvous with two ranks in two threads: rank 0's bytes
/// broadcast (NCCL's id), numbers reduced, a barrier; a tensor refused with
/// the message that names mpirun; a rank gone is an error for the other,
/// not a wait; no rank 0 within the timeout is an error.
void testTcpRendezvous() {
  LaunchInfo launch;
  launch.launcher = "torchrun";
  launch.worldSize = 2;
  launch.masterAddr = "127.0.0.1";
  launch.rendezvousPort = freePort();
  std::shared_ptr<Communicator> comms[2];
  Status opened[2];
  auto open = [&](int rank) {
    LaunchInfo mine = launch;
    mine.rank = rank;
    StatusOr<std::shared_ptr<Communicator>> comm =
        openTcpCommunicator(mine, 2);
    opened[rank] = comm.status();
    if (comm)
      comms[rank] = *comm;
  };
  std::thread first(open, 0), second(open, 1);
  first.join();
  second.join();
  if (!CHECK_OK(opened[0]) || !CHECK_OK(opened[1]))
    return;
  CHECK(comms[1]->description() ==
        "torchrun's rendezvous at 127.0.0.1:" +
            std::to_string(launch.rendezvousPort) +
            ", rank 1 of 2 (tensors through NCCL)");

  char ids[2][128] = {};
  for (int i = 0; i < 128; ++i)
    ids[0][i] = char(i * 7);
  int64_t sums[2] = {}, maxima[2] = {};
  Status results[2][4];
  auto work = [&](int rank) {
    Collective share;
    share.name = "id";
    share.kind = Collective::Kind::Broadcast;
    share.dtype = DType::u8;
    share.count = 128;
    share.groupSize = 2;
    results[rank][0] = comms[rank]->run(share, ids[rank], ids[rank]);
    StatusOr<int64_t> sum =
        comms[rank]->reduceScalar(rank + 1, Collective::Reduction::Sum);
    StatusOr<int64_t> max =
        comms[rank]->reduceScalar(10 * rank, Collective::Reduction::Max);
    results[rank][1] = sum.status();
    results[rank][2] = max.status();
    sums[rank] = sum ? *sum : -1;
    maxima[rank] = max ? *max : -1;
    // A step longer than the wait for the others to join: rank 0's
    // connection to rank 1 must not time out.
    if (rank == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    results[rank][3] = comms[rank]->barrier();
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (int rank = 0; rank < 2; ++rank)
    for (const Status &s : results[rank])
      CHECK_OK(s);
  CHECK(std::memcmp(ids[0], ids[1], 128) == 0 && ids[1][5] == char(35));
  CHECK(sums[0] == 3 && sums[1] == 3 && maxima[0] == 10 && maxima[1] == 10);

  Collective tensor;
  tensor.name = "grad.w";
  tensor.count = 1 << 20;
  tensor.groupSize = 2;
  std::vector<float> data(1 << 20);
  CHECK_ERROR(comms[0]->run(tensor, data.data(), data.data()),
              "collective 'grad.w': under torchrun memfit's ranks exchange "
              "tensors through NCCL on GPUs (--device=cuda); on the host "
              "backend launch them with mpirun -np 2");

  // A small float tensor is a model's too: refused, not averaged here.
  Collective mean;
  mean.name = "loss";
  mean.count = 1;
  mean.groupSize = 2;
  mean.reduction = Collective::Reduction::Mean;
  float loss = 1;
  CHECK_ERROR(comms[0]->run(mean, &loss, &loss),
              "collective 'loss': under torchrun memfit's ranks exchange "
              "tensors through NCCL");

  comms[1].reset(); // rank 1 gone: its connection closes
  Status gone = comms[0]->reduceScalar(1, Collective::Reduction::Sum).status();
  CHECK_ERROR(gone, "rank 1 of the torchrun launch closed its connection");

  LaunchInfo alone = launch;
  alone.rank = 1;
  alone.rendezvousPort = freePort();
  CHECK_ERROR(openTcpCommunicator(alone, 1).status(),
              "rank 1 found no rank 0 listening within 1 s");
}

} // namespace

void runCommunicatorTests() {
  testDetectLaunch();
  testSelfCommunicator();
  testMissingPlugin();
  testRankSlices();
  testTcpRendezvous();
}

} // namespace memfit::rt::test
