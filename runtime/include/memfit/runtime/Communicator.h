//===- Communicator.h - collectives between ranks ---------------*- C++ -*-===//
//
// What a session runs a step's collectives (Manifest::collectives, from
// memfit-shard) through: one rank of a group of processes started by a
// launcher. `self` is the group of one; `mpi` is MPI (Open MPI from Debian,
// or any MPI) through memfit's plugin, libmemfit-mpi.so, which the runtime
// loads with dlopen only when a run has more than one rank, so that memfit
// starts on machines without MPI. Collectives here move host memory (the
// host backend's buffers); the cuda backend runs them through NCCL on the
// GPU and uses the communicator only to share NCCL's unique id.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_COMMUNICATOR_H
#define MEMFIT_RUNTIME_COMMUNICATOR_H

#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Status.h"

#include <memory>
#include <string>

namespace memfit::rt {

/// Where this process sits in a launch, from the launcher's environment:
/// Open MPI's mpirun (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), MPICH and
/// Slurm's PMI (PMI_RANK, PMI_SIZE), or torchrun (RANK, WORLD_SIZE,
/// LOCAL_RANK); one rank of one otherwise.
struct LaunchInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  std::string launcher = "none"; // "mpirun", "pmi", "torchrun", "none"
  /// torchrun's $MASTER_ADDR and $MASTER_PORT. torchrun's own store holds
  /// MASTER_PORT, so memfit's rank 0 listens at `rendezvousPort`:
  /// $MEMFIT_RENDEZVOUS_PORT, else MASTER_PORT + 1.
  std::string masterAddr;
  int masterPort = 0;
  int rendezvousPort = 0;
};

/// Reads the launcher's variables; an error names a variable that is set
/// but not a rank within the world.
StatusOr<LaunchInfo> detectLaunch();

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "self", "MPI (Open MPI v4.1.4...), rank 0 of 2".
  virtual std::string description() const = 0;
  /// Runs `c` on host memory: `in` holds c.count elements, `out`
  /// c.resultCount() (they may be the same memory for all-reduce and
  /// broadcast). Every rank of the group must call it in the same order.
  virtual Status run(const Collective &c, const void *in, void *out) = 0;
  virtual Status barrier() = 0;
  /// Whether `run` may be called from a thread of its own, one call at a
  /// time, while the thread that made the communicator makes none (MPI
  /// initialized serialized): a backend may then run a step's collectives
  /// beside its other steps.
  virtual bool runsOnAnyThread() const { return false; }
  /// One number reduced over every rank (the step all can resume at, the
  /// largest signal any saw): an all-reduce of one i64.
  StatusOr<int64_t> reduceScalar(int64_t value,
                                 Collective::Reduction reduction);
  /// Ends every rank of the launch (a rank that fails must not leave the
  /// others waiting in a collective).
  [[noreturn]] virtual void abort(int code) = 0;
};

/// The communicator of a launch: `self` for one rank, torchrun's TCP
/// rendezvous under torchrun, else MPI through the
/// plugin ($MEMFIT_MPI_PLUGIN, else libmemfit-mpi.so in the lib folder
/// beside the binary's bin folder, or beside the library holding the
/// runtime). An error says what is missing.
StatusOr<std::shared_ptr<Communicator>>
createCommunicator(const LaunchInfo &launch);

/// torchrun's ranks (TcpCommunicator.cpp): rank 0 listens at
/// launch.rendezvousPort, the others connect to masterAddr, waiting up to
/// `timeoutSeconds` for each other. It carries the runtime's own messages
/// (NCCL's unique id, the numbers the ranks agree on, barriers: at most 64
/// KiB a collective); tensors go through NCCL, and a host backend's
/// collective is refused with a message that names mpirun.
StatusOr<std::shared_ptr<Communicator>>
openTcpCommunicator(const LaunchInfo &launch, int timeoutSeconds = 300);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_COMMUNICATOR_H
