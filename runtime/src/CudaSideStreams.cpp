//===- CudaSideStreams.cpp - collectives and copies beside the steps ------===//
//
// The cuda backend's side queues (Backend.h): collectives through NCCL, the
// copies of offloaded activations and the host's tasks, each on a stream of
// its own beside the step's, ordered by events (see CudaBackend.h).
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <algorithm>

namespace memfit::rt::cuda {

Status CudaBackend::sideEvent(SideStream &side, CUevent &event) {
  if (!side.spare.empty()) {
    event = side.spare.back();
    side.spare.pop_back();
    return Status::ok();
  }
  // Not timed: ordering only.
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventCreate, &event, 2u);
  return Status::ok();
}

Status CudaBackend::retireFinished(SideStream &side, bool synchronized) {
  while (!side.inFlight.empty()) {
    SideTask &task = side.inFlight.front();
    if (task.done && !synchronized) {
      CUresult result = cu_.cuEventQuery(task.done);
      if (result == CUDA_ERROR_NOT_READY)
        break;
      MEMFIT_RT_RETURN_IF_ERROR(cu_.check(result, "cuEventQuery"));
    }
    for (CUevent event : {task.ready, task.done})
      if (event)
        side.spare.push_back(event);
    side.finished = task.number + 1;
    side.inFlight.pop_front();
  }
  return Status::ok();
}

Status CudaBackend::makeSideStream(SideStream &side) {
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  if (!side.stream)
    // Blocking, as the step's: ordered with the synchronous copies too.
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamCreate, &side.stream, 0u);
  return Status::ok();
}

Status CudaBackend::startOnSide(
    SideStream &side, const std::function<Status(CUstream)> &enqueue) {
  MEMFIT_RT_RETURN_IF_ERROR(makeSideStream(side));
  MEMFIT_RT_RETURN_IF_ERROR(retireFinished(side, false));
  SideTask task{side.started, nullptr, nullptr};
  MEMFIT_RT_RETURN_IF_ERROR(sideEvent(side, task.ready));
  Status made = sideEvent(side, task.done);
  if (!made.isOk()) {
    side.spare.push_back(task.ready);
    return made;
  }
  // Kept before anything can fail, so that its events are destroyed.
  side.inFlight.push_back(task);
  ++side.started;
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventRecord, task.ready, stream_);
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamWaitEvent, side.stream, task.ready,
                            0u);
  MEMFIT_RT_RETURN_IF_ERROR(enqueue(side.stream));
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuEventRecord, task.done, side.stream);
  return Status::ok();
}

Status CudaBackend::runInStep(SideQueue queue,
                              const std::function<Status(CUstream)> &enqueue) {
  SideStream &side = sides_[queue];
  // After the tasks before it, as the queue's order says.
  MEMFIT_RT_RETURN_IF_ERROR(waitQueue(queue, side.started));
  MEMFIT_RT_RETURN_IF_ERROR(enqueue(stream_));
  side.inFlight.push_back({side.started, nullptr, nullptr});
  ++side.started;
  side.waited = side.started;
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

const CudaBackend::SideTask *
CudaBackend::lastOnStream(const SideStream &side, uint64_t count) const {
  // The others ran in the step's stream, or before it on the side stream.
  for (auto task = side.inFlight.rbegin(); task != side.inFlight.rend();
       ++task)
    if (task->number < count && task->done)
      return &*task;
  return nullptr;
}

Status CudaBackend::waitQueue(SideQueue queue, uint64_t count) {
  SideStream &side = sides_[queue];
  if (count <= std::max(side.waited, side.finished))
    return Status::ok();
  if (const SideTask *task = lastOnStream(side, count)) {
    MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamWaitEvent, stream_, task->done, 0u);
  }
  side.waited = count;
  return queue == HostTasks ? hostFailure() : Status::ok();
}

Status CudaBackend::orderQueues(SideQueue waiter, SideQueue queue,
                                uint64_t count) {
  if (!sideStreams_ || capturing_ || waiter == Collectives)
    return waitQueue(queue, count);
  const SideStream &side = sides_[queue];
  if (count <= std::max(side.waited, side.finished))
    return Status::ok();
  const SideTask *task = lastOnStream(side, count);
  if (!task)
    return Status::ok();
  SideStream &next = sides_[waiter];
  MEMFIT_RT_RETURN_IF_ERROR(makeSideStream(next));
  MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamWaitEvent, next.stream, task->done,
                            0u);
  return Status::ok();
}

uint64_t CudaBackend::queueFinished(SideQueue queue) const {
  return std::max(sides_[queue].waited, sides_[queue].finished);
}

Status CudaBackend::synchronizeSides() {
  for (int queue = 0; queue < kSideQueues; ++queue) {
    SideStream &side = sides_[queue];
    // The host's updates go on past the end of a run, beside the next
    // one's forward: what is done of them is seen without waiting.
    bool wait = queue != HostTasks && side.stream;
    if (wait)
      MEMFIT_CU_RETURN_IF_ERROR(cu_, cuStreamSynchronize, side.stream);
    MEMFIT_RT_RETURN_IF_ERROR(retireFinished(side, wait || !side.stream));
  }
  return hostFailure();
}

void CudaBackend::destroySideStreams() {
  for (SideStream &side : sides_) {
    if (side.stream)
      (void)cu_.cuStreamSynchronize(side.stream);
    (void)retireFinished(side, true);
    for (CUevent event : side.spare)
      (void)cu_.cuEventDestroy(event);
    side.spare.clear();
    if (side.stream)
      (void)cu_.cuStreamDestroy(side.stream);
    side.stream = nullptr;
  }
}

} // namespace memfit::rt::cuda
