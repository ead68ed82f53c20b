//===- CudaSideStreams.cpp - collectives and copies beside the steps ------===//
//
// The cuda backend's side queues (Backend.h): collectives through NCCL and
// the copies of offloaded activations, each on a stream of its own beside
// the step's, ordered by events (see CudaBackend.h).
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

namespace memfit::rt::cuda {

Status CudaBackend::sideEvent(SideStream &side, size_t slot, CUevent &event) {
  while (side.events.size() <= slot) {
    CUevent made = nullptr;
    // Not timed: ordering only.
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventCreate, &made, 2u);
    side.events.push_back(made);
  }
  event = side.events[slot];
  return Status::ok();
}

Status CudaBackend::startOnSide(
    SideStream &side, const std::function<Status(CUstream)> &enqueue) {
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  if (!side.stream)
    // Blocking, as the step's: ordered with the synchronous copies too.
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamCreate, &side.stream, 0u);
  const size_t slot = 2 * size_t(side.started - side.base);
  CUevent ready = nullptr, done = nullptr;
  MEMFIT_RT_RETURN_IF_ERROR(sideEvent(side, slot, ready));
  MEMFIT_RT_RETURN_IF_ERROR(sideEvent(side, slot + 1, done));
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventRecord, ready, stream_);
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamWaitEvent, side.stream, ready, 0u);
  MEMFIT_RT_RETURN_IF_ERROR(enqueue(side.stream));
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventRecord, done, side.stream);
  ++side.started;
  return Status::ok();
}

StatusOr<bool> CudaBackend::startCollective(const Collective &c, uint64_t in,
                                            uint64_t out, Communicator &comm) {
  if (!sideStreams_ || capturing_) {
    MEMFIT_RT_RETURN_IF_ERROR(runCollective(c, in, out, comm));
    return false;
  }
  MEMFIT_RT_RETURN_IF_ERROR(
      startOnSide(sides_[Collectives], [&](CUstream stream) {
        return enqueueCollective(c, in, out, comm, stream);
      }));
  return true;
}

StatusOr<bool> CudaBackend::startCopyKernel(
    uint32_t kernel, const std::vector<uint64_t> &offsets) {
  if (!sideStreams_ || capturing_) {
    MEMFIT_RT_RETURN_IF_ERROR(launchKernel(kernel, offsets));
    return false;
  }
  MEMFIT_RT_RETURN_IF_ERROR(
      startOnSide(sides_[Copies], [&](CUstream stream) {
        return launchOn(kernel, offsets, stream);
      }));
  return true;
}

Status CudaBackend::waitQueue(SideQueue queue, uint64_t count) {
  if (queue == HostTasks)
    return Status::ok(); // run in the step's stream
  SideStream &side = sides_[queue];
  if (count <= side.waited)
    return Status::ok();
  // Done before the last synchronize: nothing to wait for.
  if (count <= side.base) {
    side.waited = count;
    return Status::ok();
  }
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  CUevent done = side.events[2 * size_t(count - 1 - side.base) + 1];
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamWaitEvent, stream_, done, 0u);
  side.waited = count;
  return Status::ok();
}

uint64_t CudaBackend::queueFinished(SideQueue queue) const {
  return queue == HostTasks ? ~uint64_t(0) : sides_[queue].waited;
}

Status CudaBackend::synchronizeSides() {
  for (SideStream &side : sides_) {
    if (!side.stream)
      continue;
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamSynchronize, side.stream);
    // Every task started is done: the next run reuses their events.
    side.base = side.started;
  }
  return Status::ok();
}

void CudaBackend::destroySideStreams() {
  for (SideStream &side : sides_) {
    if (side.stream)
      (void)cu_.cuStreamSynchronize(side.stream);
    for (CUevent event : side.events)
      (void)cu_.cuEventDestroy(event);
    side.events.clear();
    if (side.stream)
      (void)cu_.cuStreamDestroy(side.stream);
    side.stream = nullptr;
  }
}

} // namespace memfit::rt::cuda
