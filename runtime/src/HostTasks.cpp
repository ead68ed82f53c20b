//===- HostTasks.cpp - tasks run in order beside the caller ----------------===//
//
// See HostTasks.h: the host backend's queues of work beside its steps, and
// the bytes a session waits on.
//
//===----------------------------------------------------------------------===//

#include "HostTasks.h"

#include "Backend.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>

namespace memfit::rt {

HostTaskQueue::HostTaskQueue() : thread_([this] { loop(); }) {}

HostTaskQueue::~HostTaskQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void HostTaskQueue::push(std::function<Status()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  ++pushed_;
  wake_.notify_one();
}

Status HostTaskQueue::waitFor(uint64_t count) {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return finished_.load() >= count; });
  if (failed_ && !reported_) {
    reported_ = true;
    return failure_;
  }
  return Status::ok();
}

void lowerToBatchPriority() {
  // Batch threads do not preempt the thread that woke them (Linux's
  // SCHED_BATCH): the caller goes on launching the device's steps.
  sched_param param{};
  param.sched_priority = 0;
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
}

void HostTaskQueue::loop() {
  lowerToBatchPriority();
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty())
      return; // stopping, with nothing left
    std::function<Status()> task = std::move(queue_.front());
    queue_.pop_front();
    bool skip = failed_;
    lock.unlock();
    Status status = skip ? Status::ok() : task();
    lock.lock();
    if (!status.isOk() && !failed_) {
      failed_ = true;
      failure_ = status;
    }
    finished_.fetch_add(1);
    done_.notify_all();
  }
}

void PendingHostTasks::add(uint64_t ticket, std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<Range> merged;
  for (const Range &r : ranges) {
    if (r.first == r.second)
      continue;
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  tasks_.push_back({ticket, std::move(merged)});
}

void PendingHostTasks::dropFinished(uint64_t finished) {
  while (!tasks_.empty() && tasks_.front().ticket <= finished)
    tasks_.pop_front();
}

void SideQueues::started(SideQueue queue, std::vector<Range> ranges) {
  pending_[queue].add(++started_[queue], std::move(ranges));
}

Status SideQueues::wait(Backend &backend, SideQueue queue, uint64_t count) {
  pending_[queue].dropFinished(count);
  auto begin = std::chrono::steady_clock::now();
  Status waited = backend.waitQueue(queue, count);
  waitSeconds[queue] += std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - begin)
                     .count();
  return waited;
}

Status SideQueues::waitTouching(Backend &backend, uint64_t offset,
                                uint64_t bytes, int except, int waiter) {
  for (SideQueue queue : {HostTasks, Collectives, Copies}) {
    PendingHostTasks &pending = pending_[queue];
    if (queue == except || queue == waiter || pending.empty() || bytes == 0)
      continue;
    pending.dropFinished(backend.queueFinished(queue));
    uint64_t need = pending.mustFinish(offset, offset + bytes);
    if (!need)
      continue;
    // The steps have not waited: the tasks stay pending for them.
    if (waiter >= 0)
      MEMFIT_RT_RETURN_IF_ERROR(
          backend.orderQueues(SideQueue(waiter), queue, need));
    else
      MEMFIT_RT_RETURN_IF_ERROR(wait(backend, queue, need));
  }
  return Status::ok();
}

Status SideQueues::waitAll(Backend &backend, SideQueue queue) {
  if (pending_[queue].empty())
    return Status::ok();
  return wait(backend, queue, started_[queue]);
}

uint64_t PendingHostTasks::mustFinish(uint64_t begin, uint64_t end) const {
  for (auto task = tasks_.rbegin(); task != tasks_.rend(); ++task) {
    // The first range that ends past `begin`.
    auto it = std::upper_bound(
        task->ranges.begin(), task->ranges.end(), begin,
        [](uint64_t at, const Range &r) { return at < r.second; });
    if (it != task->ranges.end() && it->first < end)
      return task->ticket;
  }
  return 0;
}

} // namespace memfit::rt
