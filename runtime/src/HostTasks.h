//===- HostTasks.h - work beside the steps (internal) -----------*- C++ -*-===//

#ifndef MEMFIT_RUNTIME_SRC_HOSTTASKS_H
#define MEMFIT_RUNTIME_SRC_HOSTTASKS_H

#include "memfit/runtime/Status.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace memfit::rt {

/// Lowers the calling thread to batch scheduling, so that waking it does
/// not preempt the thread that woke it (best effort).
void lowerToBatchPriority();

/// Tasks run one after another, in the order pushed, by a thread of their
/// own beside the caller: the host backend's host tasks (Kernel::onHost).
/// After a task fails the later ones are skipped, and the failure is
/// reported once, by the next wait that covers it.
class HostTaskQueue {
public:
  HostTaskQueue();
  /// Runs what is queued, then stops.
  ~HostTaskQueue();
  HostTaskQueue(const HostTaskQueue &) = delete;
  HostTaskQueue &operator=(const HostTaskQueue &) = delete;

  void push(std::function<Status()> task);
  /// Waits until the first `count` tasks pushed have finished.
  Status waitFor(uint64_t count);
  uint64_t finished() const { return finished_.load(); }
  /// How many tasks were pushed.
  uint64_t pushed() const { return pushed_; }

private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<std::function<Status()>> queue_;
  std::atomic<uint64_t> finished_{0};
  uint64_t pushed_ = 0; // by the pushing thread only
  Status failure_ = Status::ok();
  bool failed_ = false, reported_ = false, stop_ = false;
  std::thread thread_;
};

/// The bytes of the host tasks a session has started and not seen finish,
/// by task number: a later step that touches them waits for them.
class PendingHostTasks {
public:
  using Range = std::pair<uint64_t, uint64_t>; // [begin, end)

  bool empty() const { return tasks_.empty(); }
  /// Task `ticket` (its number + 1: the tasks that must finish for it to
  /// have finished) touches `ranges`.
  void add(uint64_t ticket, std::vector<Range> ranges);
  /// Forgets the tasks among the first `finished`.
  void dropFinished(uint64_t finished);
  /// How many tasks must finish before [begin, end) may be touched: the
  /// ticket of the last pending task that touches it, or 0.
  uint64_t mustFinish(uint64_t begin, uint64_t end) const;

private:
  struct Task {
    uint64_t ticket;
    std::vector<Range> ranges; // sorted, disjoint
  };
  std::deque<Task> tasks_;
};

class Backend;

/// A backend's queues of work that runs beside its steps, in order within
/// each: the host's kernels (Kernel::onHost), collectives, and the copies
/// of offloaded activations (Kernel::copyQueue).
enum SideQueue { HostTasks = 0, Collectives = 1, Copies = 2 };
constexpr int kSideQueues = 3;

/// What a session started on its backend's side queues and has not seen
/// finish: a later step, copy or read waits for those that touch its
/// bytes.
class SideQueues {
public:
  using Range = PendingHostTasks::Range;

  /// The backend started the next task of `queue`, which touches `ranges`.
  void started(SideQueue queue, std::vector<Range> ranges);
  uint64_t count(SideQueue queue) const { return started_[queue]; }
  /// Waits for the tasks that touch [offset, offset + bytes), of every
  /// queue but `except` (a task of a queue waits for none of its own: each
  /// runs after those before it). With `waiter`, the next task of that
  /// queue is what must come after them: the backend orders it after them
  /// (Backend::orderQueues) rather than the steps waiting.
  Status waitTouching(Backend &backend, uint64_t offset, uint64_t bytes,
                      int except = -1, int waiter = -1);
  /// Waits for every task of `queue`.
  Status waitAll(Backend &backend, SideQueue queue);
  /// The seconds spent waiting for each queue, over the session.
  double waitSeconds[kSideQueues] = {0, 0, 0};

private:
  Status wait(Backend &backend, SideQueue queue, uint64_t count);

  PendingHostTasks pending_[kSideQueues];
  uint64_t started_[kSideQueues] = {0, 0, 0};
};

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_HOSTTASKS_H
