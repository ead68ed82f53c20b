//===- CudaCollective.cpp - collectives on the GPU through NCCL -----------===//
//
// The cuda backend's collectives (memfit-shard's all-reduces, reduce-
// scatters, all-gathers and broadcasts) run through NCCL on the backend's
// stream, on device memory, in order with the kernels around them. The
// communicator is made at the first collective: rank 0 asks NCCL for a
// unique id, the ranks agree through the session's communicator (MPI or
// torchrun's rendezvous) that each could load NCCL, it broadcasts the id's
// 128 bytes, and every rank joins with ncclCommInitRank. A group of one rank runs through
// NCCL as well (the id is not sent anywhere).
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "NcclSymbols.h"

namespace memfit::rt::cuda {
namespace {

/// NCCL's data type for `dtype`, or -1.
int ncclType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return ncclFloat32;
  case DType::f64:
    return ncclFloat64;
  case DType::f16:
    return ncclFloat16;
  case DType::bf16:
    return ncclBfloat16;
  case DType::i32:
    return ncclInt32;
  case DType::i64:
    return ncclInt64;
  case DType::i8:
    return ncclInt8;
  case DType::u8:
    return ncclUint8;
  default:
    return -1;
  }
}

int ncclOp(Collective::Reduction reduction) {
  switch (reduction) {
  case Collective::Reduction::Sum:
    return ncclSum;
  case Collective::Reduction::Mean:
    return ncclAvg;
  case Collective::Reduction::Max:
    return ncclMax;
  case Collective::Reduction::Min:
    return ncclMin;
  }
  return ncclSum;
}

} // namespace

Status CudaBackend::initNccl(Communicator &comm) {
  if (ncclComm_)
    return Status::ok();
  StatusOr<const NcclSymbols *> loaded = loadNccl();
  Status mine = loaded.status().withContext("collectives on " + deviceName() +
                                            " run through NCCL");
  ncclUniqueId id{};
  if (loaded) {
    nccl_ = *loaded;
    if (comm.rank() == 0)
      mine = nccl_->check(nccl_->ncclGetUniqueId(&id), "ncclGetUniqueId");
  }
  if (comm.size() > 1) {
    // Every rank says whether it could go on: one that could not must not
    // leave the others waiting in ncclCommInitRank for it.
    StatusOr<int64_t> ready =
        comm.reduceScalar(mine ? 1 : 0, Collective::Reduction::Min);
    if (!ready)
      return ready.status().withContext("setting up NCCL through " +
                                        comm.description());
    if (!mine)
      return mine;
    if (*ready == 0)
      return unavailable("another rank could not set up NCCL (its own "
                         "message says why); rank " +
                         std::to_string(comm.rank()) + " stops too");
    Collective share;
    share.name = "NCCL's unique id";
    share.kind = Collective::Kind::Broadcast;
    share.dtype = DType::u8;
    share.count = NCCL_UNIQUE_ID_BYTES;
    share.groupSize = comm.size();
    MEMFIT_RT_RETURN_IF_ERROR(
        comm.run(share, id.internal, id.internal)
            .withContext("sharing NCCL's unique id through " +
                         comm.description()));
  }
  if (!mine)
    return mine;
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  return nccl_
      ->check(nccl_->ncclCommInitRank(&ncclComm_, comm.size(), id, comm.rank()),
              "ncclCommInitRank")
      .withContext(deviceName() + ", rank " + std::to_string(comm.rank()) +
                   " of " + std::to_string(comm.size()) + ", " + nccl_->path);
}

void CudaBackend::destroyNccl() {
  if (nccl_ && ncclComm_)
    (void)nccl_->ncclCommDestroy(ncclComm_);
  ncclComm_ = nullptr;
}

Status CudaBackend::runCollective(const Collective &c, uint64_t in,
                                  uint64_t out, Communicator &comm) {
  return enqueueCollective(c, in, out, comm, stream_);
}

Status CudaBackend::enqueueCollective(const Collective &c, uint64_t in,
                                      uint64_t out, Communicator &comm,
                                      CUstream stream) {
  const std::string context = "collective '" + c.name + "'";
  int type = ncclType(c.dtype);
  if (type < 0)
    return invalidArgument(context + ": NCCL does not move " +
                           std::string(dtypeName(c.dtype)));
  if (!c.ranks.empty() || c.groupSize != comm.size())
    return invalidArgument(
        context + ": a group of " + std::to_string(c.groupSize) + " of the " +
        std::to_string(comm.size()) + " ranks; NCCL runs over every rank only");
  const uint64_t e = dtypeSize(c.dtype);
  MEMFIT_RT_RETURN_IF_ERROR(
      checkRange("its input", in, c.count * e).withContext(context));
  MEMFIT_RT_RETURN_IF_ERROR(
      checkRange("its output", out, c.resultCount() * e).withContext(context));
  MEMFIT_RT_RETURN_IF_ERROR(initNccl(comm).withContext(context));
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  const void *send = reinterpret_cast<const void *>(address(in));
  void *receive = reinterpret_cast<void *>(address(out));
  ncclResult_t result = ncclSuccess;
  const char *call = "";
  switch (c.kind) {
  case Collective::Kind::AllReduce:
    call = "ncclAllReduce";
    result = nccl_->ncclAllReduce(send, receive, c.count, type,
                                  ncclOp(c.reduction), ncclComm_, stream);
    break;
  case Collective::Kind::ReduceScatter:
    call = "ncclReduceScatter";
    result = nccl_->ncclReduceScatter(send, receive, c.resultCount(), type,
                                      ncclOp(c.reduction), ncclComm_, stream);
    break;
  case Collective::Kind::AllGather:
    call = "ncclAllGather";
    result =
        nccl_->ncclAllGather(send, receive, c.count, type, ncclComm_, stream);
    break;
  case Collective::Kind::Broadcast:
    call = "ncclBroadcast";
    result = nccl_->ncclBroadcast(send, receive, c.count, type,
                                  static_cast<int>(c.root), ncclComm_, stream);
    break;
  }
  return nccl_->check(result, call).withContext(context);
}

} // namespace memfit::rt::cuda
