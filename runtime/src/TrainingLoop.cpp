//===- TrainingLoop.cpp - a training run: steps, progress, checkpoints ----===//
//
// The loop of TrainingLoop.h: resume, steps with the schedule, a line (or
// the bar) per step, checkpoints every saveEvery steps and at the end, and a
// stop between steps when the caller's flag (a signal) asks for one.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/TrainingLoop.h"

#include "Files.h"
#include "Format.h"

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdio>
#include <ostream>

namespace memfit::rt {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The "step,loss" CSV of the steps so far.
std::string lossesCsv(const std::vector<std::pair<int64_t, float>> &losses) {
  std::string csv = "step,loss\n";
  for (const auto &[step, loss] : losses)
    csv += std::to_string(step) + "," + format("%.9g", double(loss)) + "\n";
  return csv;
}

} // namespace

std::string formatDuration(double seconds) {
  long long s = std::llround(seconds);
  if (s >= 3600)
    return format("%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  return format("%lld:%02lld", s / 60, s % 60);
}

StatusOr<TrainingSummary> runTraining(Session &session, Trainer &trainer,
                                      const TrainingData &data,
                                      const TrainingLoopOptions &options) {
  if (options.steps < 0 || options.saveEvery < 0)
    return invalidArgument("training loop: steps (" +
                           std::to_string(options.steps) + ") and saveEvery (" +
                           std::to_string(options.saveEvery) +
                           ") must not be negative");
  std::ostream *log = options.log, *bar = options.progressBar;
  if (!options.resume.empty())
    MEMFIT_RT_RETURN_IF_ERROR(session.loadCheckpoint(options.resume));
  StatusOr<int64_t> counter = trainer.stepCount();
  if (!counter)
    return counter.status();
  TrainingSummary summary;
  int64_t start = summary.firstStep = *counter;
  int64_t end = summary.endStep = summary.plannedEndStep =
      start + options.steps;
  LrSchedule schedule = options.schedule;
  if (!schedule.decaySteps)
    schedule.decaySteps = end;
  int64_t k = trainer.accumulationSteps();
  if (log) {
    if (!options.resume.empty())
      *log << "resumed from " << options.resume << " at step " << start << "\n";
    *log << data.describe()
         << format("training: steps %lld to %lld, %lld micro-batch%s per "
                   "step, %s learning rate %.3e\n",
                   (long long)start + 1, (long long)end, (long long)k,
                   k == 1 ? "" : "es", lrScheduleName(schedule.kind),
                   double(schedule.peak));
  }

  int64_t savedAt = -1;
  auto saveState = [&](int64_t global) -> Status {
    savedAt = global;
    if (!options.checkpoint.empty()) {
      std::string previous = options.checkpoint + ".prev";
      if (options.keepPrevious &&
          std::rename(options.checkpoint.c_str(), previous.c_str()) != 0 &&
          errno != ENOENT)
        return invalidArgument("--checkpoint=" + options.checkpoint +
                               ": cannot keep it as " + previous + ": " +
                               std::strerror(errno));
      MEMFIT_RT_RETURN_IF_ERROR(session.saveCheckpoint(options.checkpoint));
      if (options.afterSave)
        MEMFIT_RT_RETURN_IF_ERROR(options.afterSave(global));
      if (log && !bar)
        *log << "saved checkpoint " << options.checkpoint << " at step "
             << global << "\n";
    }
    if (!options.losses.empty()) {
      std::string csv = lossesCsv(summary.losses);
      MEMFIT_RT_RETURN_IF_ERROR(
          writeFileAtomic(options.losses, csv.data(), csv.size()));
    }
    return Status::ok();
  };

  auto trainStart = Clock::now();
  for (int64_t s = start; s < end; ++s) {
    int stopBy = options.stop ? int(*options.stop) : 0;
    if (options.agreeToStop) {
      StatusOr<int> agreed = options.agreeToStop(stopBy);
      if (!agreed)
        return agreed.status().withContext("before step " +
                                           std::to_string(s + 1));
      stopBy = *agreed;
    }
    if (stopBy) {
      summary.stoppedBy = stopBy;
      summary.endStep = s;
      if (bar && s > start)
        *bar << "\n";
      if (savedAt != s)
        MEMFIT_RT_RETURN_IF_ERROR(saveState(s));
      if (log)
        log->flush();
      summary.seconds = secondsSince(trainStart);
      return summary;
    }
    float lr = learningRate(schedule, s);
    auto stepStart = Clock::now();
    StatusOr<float> loss = trainer.step(data.step(s), lr);
    int64_t global = s + 1;
    if (!loss) {
      if (bar)
        *bar << "\n";
      return loss.status().withContext("step " + std::to_string(global));
    }
    double ms = secondsSince(stepStart) * 1e3;
    if (summary.losses.empty())
      summary.firstStepSeconds = ms / 1e3;
    summary.losses.emplace_back(global, *loss);
    // Dynamic loss scaling: " scale 65536", and " skipped" for a step whose
    // gradients overflowed.
    std::string scaling;
    if (trainer.scalesLoss()) {
      StatusOr<Trainer::LossScaleStep> scale = trainer.lastLossScale();
      if (!scale)
        return scale.status().withContext("step " + std::to_string(global));
      scaling = format(" scale %g", double(scale->scale));
      if (scale->skipped) {
        scaling += " skipped";
        summary.skipped.push_back(global);
      }
    }
    if (bar) {
      double done = double(global - start) / double(end - start);
      double eta = secondsSince(trainStart) / double(global - start) *
                   double(end - global);
      int width = 24, filled = int(done * width);
      *bar << "\r[" << std::string(filled, '#')
           << std::string(width - filled, '.')
           << format("] step %lld/%lld loss %.6f lr %.6e %.1f ms/step ETA %s"
                     "   ",
                     (long long)global, (long long)end, double(*loss),
                     double(lr), ms, formatDuration(eta).c_str());
      if (global == end)
        *bar << "\n";
      bar->flush();
    } else if (log) {
      *log << format("step %lld/%lld loss %.6f lr %.3e %.1f ms%s\n",
                     (long long)global, (long long)end, double(*loss),
                     double(lr), ms, scaling.c_str());
      // A log piped to a file shows each step as it ends, and a killed
      // run's log ends at its last step.
      log->flush();
    }
    if (options.saveEvery > 0 && global % options.saveEvery == 0 &&
        global != end)
      MEMFIT_RT_RETURN_IF_ERROR(saveState(global));
  }
  if (log)
    log->flush();
  summary.seconds = secondsSince(trainStart);
  StatusOr<int64_t> finalCount = trainer.stepCount();
  if (!finalCount)
    return finalCount.status();
  if (*finalCount != end && options.warn)
    options.warn("the executable's step counter is " +
                 std::to_string(*finalCount) + ", expected " +
                 std::to_string(end));
  MEMFIT_RT_RETURN_IF_ERROR(saveState(end));
  if (log && options.steps > 0) {
    *log << format("trained %lld steps in %.2f s (%.1f ms/step), last loss "
                   "%.6f\n",
                   (long long)options.steps, summary.seconds,
                   summary.seconds * 1e3 / double(options.steps),
                   double(summary.losses.back().second));
    // What ran beside the steps, and the steps' waits for it, a step. A
    // GPU's streams wait for one another on the GPU, untimed: `onGpu` says
    // so instead.
    const SessionTimings &t = session.timings();
    const double perStep = 1.0 / double(options.steps);
    auto waited = [&](const char *who, double seconds, const char *onGpu) {
      return t.waitsOnDevice
                 ? std::string(onGpu)
                 : format("; %s waited %.1f ms a step for them", who,
                          seconds * 1e3 * perStep);
    };
    if (t.hostTasks)
      *log << format("host updates (--offload=optimizer): %.1f kernels a "
                     "step on the host's threads, beside the %s%s\n",
                     double(t.hostTasks) * perStep,
                     t.waitsOnDevice ? "GPU" : "device",
                     waited("the device", t.hostWaitSeconds,
                            ", whose streams wait for them where they read "
                            "what they wrote")
                         .c_str());
    if (t.copies)
      *log << format("copies to and from host memory beside the steps: "
                     "%.1f a step%s\n",
                     double(t.copies) * perStep,
                     waited("the steps", t.copyWaitSeconds,
                            ", on a copy stream")
                         .c_str());
    if (t.collectiveWaitSeconds)
      *log << format("collectives: the steps waited %.1f ms a step for "
                     "the collectives\n",
                     t.collectiveWaitSeconds * 1e3 * perStep);
    if (trainer.scalesLoss())
      *log << format("loss scaling: %lld of %lld steps skipped (inf or NaN "
                     "gradients)\n",
                     (long long)summary.skipped.size(),
                     (long long)options.steps);
  }
  return summary;
}

} // namespace memfit::rt
