//===- HostWorkers.cpp - running compiled kernels on host threads ---------===//

#include "HostWorkers.h"

#include "HostTasks.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <thread>

#ifndef MEMFIT_HOST_CXX
#define MEMFIT_HOST_CXX "c++"
#endif

namespace memfit::rt {

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (pthread_t &t : threads_)
    pthread_join(t, nullptr);
}

Status WorkerPool::start(unsigned count, bool batch) {
  batch_ = batch;
  for (unsigned i = 0; i < count; ++i) {
    pthread_t thread;
    int error = pthread_create(&thread, nullptr, &WorkerPool::entry, this);
    if (error != 0)
      return internalError("cannot start host worker thread " +
                           std::to_string(i) + ": " + std::strerror(error));
    threads_.push_back(thread);
  }
  return Status::ok();
}

void WorkerPool::setExitHooks(std::vector<void (*)()> hooks) {
  std::lock_guard<std::mutex> lock(mutex_);
  exitHooks_ = std::move(hooks);
}

void WorkerPool::run(size_t count, const std::function<void(size_t)> &task) {
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = &task;
  count_ = count;
  next_.store(0);
  active_ = threads_.size();
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [&] { return active_ == 0; });
  task_ = nullptr;
}

void *WorkerPool::entry(void *self) {
  static_cast<WorkerPool *>(self)->loop();
  return nullptr;
}

void WorkerPool::loop() {
  if (batch_)
    lowerToBatchPriority();
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_)
      break;
    seen = generation_;
    const std::function<void(size_t)> *task = task_;
    size_t count = count_;
    lock.unlock();
    for (size_t i = next_.fetch_add(1); i < count; i = next_.fetch_add(1))
      (*task)(i);
    lock.lock();
    if (--active_ == 0)
      done_.notify_one();
  }
  std::vector<void (*)()> hooks = exitHooks_;
  lock.unlock();
  for (void (*hook)() : hooks)
    hook();
}

Status runHostKernel(WorkerPool &pool, memfit_host_launcher launcher,
                     const std::array<uint32_t, 3> &grid,
                     const std::array<uint32_t, 3> &block,
                     const std::vector<void *> &pointers) {
  std::vector<void *> values = pointers;
  std::vector<void *> args(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    args[i] = &values[i];
  uint64_t blocks = uint64_t(grid[0]) * grid[1] * grid[2];
  uint64_t perTask =
      std::max<uint64_t>(1, blocks / (uint64_t(pool.size()) * 4));
  size_t tasks = static_cast<size_t>((blocks + perTask - 1) / perTask);
  std::vector<std::string> errors(tasks);
  pool.run(tasks, [&](size_t task) {
    char message[1024] = "";
    memfit_host_launch launch;
    std::memset(&launch, 0, sizeof(launch));
    for (int d = 0; d < 3; ++d) {
      launch.grid[d] = grid[d];
      launch.block[d] = block[d];
    }
    launch.blockBegin = task * perTask;
    launch.blockEnd = std::min<uint64_t>(blocks, (task + 1) * perTask);
    launch.numArgs = static_cast<unsigned>(args.size());
    launch.error = message;
    launch.errorSize = sizeof(message);
    if (launcher(&launch, args.data()) != 0)
      errors[task] = message[0] ? message : "unknown error";
  });
  for (const std::string &error : errors)
    if (!error.empty())
      return invalidArgument(error); // Session names the step and kernel
  return Status::ok();
}

StatusOr<unsigned> threadCount(unsigned given, const char *what,
                               const char *variable) {
  if (given > 1024)
    return invalidArgument("host backend: " + std::to_string(given) + " " +
                           what + ": expected a number of threads from 1 "
                           "to 1024");
  if (given != 0)
    return given;
  const char *env = std::getenv(variable);
  if (!env || !*env)
    return 0u;
  char *end = nullptr;
  unsigned long n = std::strtoul(env, &end, 10);
  if (*end != '\0' || n == 0 || n > 1024)
    return invalidArgument(std::string(variable) + "='" + env +
                           "': expected a number of threads from 1 to 1024");
  return unsigned(n);
}

unsigned usableCpus() {
  unsigned count = 0;
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
    count = unsigned(CPU_COUNT(&cpus));
  if (count == 0)
    count = std::max(1u, std::thread::hardware_concurrency());
  return count;
}

StatusOr<unsigned> hostTaskThreads(const SessionOptions &options,
                                   unsigned byDefault) {
  StatusOr<unsigned> threads =
      threadCount(options.hostTaskThreads, "host task threads",
                  "MEMFIT_HOST_TASK_THREADS");
  if (threads && *threads == 0)
    return byDefault;
  return threads;
}

unsigned hostTaskCpus() {
  unsigned cpus = usableCpus();
  unsigned ranks = 1;
  for (const char *variable : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    if (const char *env = std::getenv(variable); env && *env) {
      char *end = nullptr;
      unsigned long n = std::strtoul(env, &end, 10);
      if (*end == '\0' && n > 0 && n <= 4096) {
        ranks = unsigned(n);
        break;
      }
    }
  // Bound to a part of the machine already: that part is this rank's.
  if (cpus < std::thread::hardware_concurrency())
    ranks = 1;
  unsigned share = std::max(1u, cpus / ranks);
  return std::max(1u, share - 1);
}

std::string hostCompilerCommand(const SessionOptions &options) {
  if (!options.hostCompiler.empty())
    return options.hostCompiler;
  if (const char *env = std::getenv("MEMFIT_HOST_CXX"); env && *env)
    return env;
  return MEMFIT_HOST_CXX;
}

} // namespace memfit::rt
