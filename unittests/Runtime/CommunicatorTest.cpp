//===- CommunicatorTest.cpp - launches, communicators, the ranks' data ----===//
//
// Data parallelism's runtime without a second process: the launcher's
// variables read by detectLaunch, the communicator of one rank, what a
// missing MPI plugin or torchrun says, and the training data a rank reads
// (its rows of the global batch).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Communicator.h"
#include "memfit/runtime/TrainingData.h"

#include <cstdlib>
#include <cstring>

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
                  "memfit's ranks meet through MPI: launch with mpirun -np 2");
    }
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

} // namespace

void runCommunicatorTests() {
  testDetectLaunch();
  testSelfCommunicator();
  testMissingPlugin();
  testRankSlices();
}

} // namespace memfit::rt::test
