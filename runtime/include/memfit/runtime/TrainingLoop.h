//===- TrainingLoop.h - steps, progress and checkpoints of a run *- C++ -*-===//
//
// memfit-run --train's loop, for the C++ API as well: optionally resume from
// a checkpoint, take `steps` optimizer steps with the learning-rate schedule
// over the micro-batches of a TrainingData, report progress, write the
// losses as CSV and the checkpoint at the end and every `saveEvery` steps.
//
//   rt::TrainingLoopOptions loop;
//   loop.steps = 200;
//   loop.checkpoint = "ckpt";
//   loop.log = &std::cout;
//   auto summary = rt::runTraining(*session, *trainer, *data, loop);
//
// Output on `log` (steps are global: the step counter + 1):
//
//   resumed from ckpt at step 5                   with `resume`
//   input input_ids: 2x8xi64 (tokens of text.txt (71 tokens))
//   training: steps 6 to 8, 1 micro-batch per step, constant learning
//     rate 1.000e-03
//   step 6/8 loss 4.557586 lr 1.000e-03 0.4 ms   or the progress bar
//   step 7/8 loss 4.5 lr 1.000e-03 0.4 ms scale 65536 skipped
//                                                 dynamic loss scaling
//   saved checkpoint ckpt at step 8              (not with the bar)
//   trained 3 steps in 0.00 s (0.4 ms/step), last loss 4.493109
//
// With `stop`, a flag that a signal handler sets to the signal's number, the
// loop checks the flag before every step: once set, it saves the checkpoint
// and the losses at the step reached and returns a summary whose stoppedBy
// is the flag and whose endStep is that step (a flag set during the last
// step ends the run as usual).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_TRAININGLOOP_H
#define MEMFIT_RUNTIME_TRAININGLOOP_H

#include "memfit/runtime/TrainingData.h"

#include <csignal>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace memfit::rt {

struct TrainingLoopOptions {
  /// Optimizer steps to take (after the resumed ones).
  int64_t steps = 20;
  /// decaySteps 0 ends the decay at the last step of the run.
  LrSchedule schedule;
  /// A checkpoint to load before the first step (empty: none).
  std::string resume;
  /// Saved at the end and after every step whose global number is a
  /// multiple of saveEvery (0: only at the end); empty: never.
  std::string checkpoint;
  int64_t saveEvery = 0;
  /// "step,loss" CSV (the loss as %.9g), written atomically whenever the
  /// checkpoint is; empty: none.
  std::string losses;
  /// Messages and one line per step; null: silent.
  std::ostream *log = nullptr;
  /// A terminal: a progress bar redrawn per step (step, loss, learning
  /// rate, ms/step, ETA) replaces the step lines on `log`.
  std::ostream *progressBar = nullptr;
  /// Warnings (the step counter disagrees with the steps taken).
  std::function<void(const std::string &)> warn;
  /// Non-zero (a signal's number, set by its handler): stop before the next
  /// step, after saving the checkpoint. Null: never.
  const volatile std::sig_atomic_t *stop = nullptr;
  /// Data parallel: the ranks agree before each step whether to stop (the
  /// largest signal number any rank saw, 0: none), so that all stop after
  /// the same step rather than some waiting for the others in the next
  /// step's collectives. Null: this process decides alone.
  std::function<StatusOr<int>(int)> agreeToStop;
  /// Before writing `checkpoint`, rename the one on disk to
  /// `checkpoint`.prev: ranks that each write their own file (ZeRO stage 1)
  /// keep, whatever step a kill lands in, a file of a step every rank has.
  bool keepPrevious = false;
  /// Called after each checkpoint is written, with its step (a data-parallel
  /// launch writes the index of its rank files once they all exist). Null:
  /// nothing.
  std::function<Status(int64_t)> afterSave;
};

struct TrainingSummary {
  /// The step counter before and after the run.
  int64_t firstStep = 0, endStep = 0;
  /// The `stop` flag that ended the run before its last step (endStep is
  /// then the step it stopped after); 0: the run took all its steps.
  int stoppedBy = 0;
  /// The steps the run was asked to reach (firstStep + steps).
  int64_t plannedEndStep = 0;
  /// (global step, loss) of every step taken.
  std::vector<std::pair<int64_t, float>> losses;
  /// Dynamic loss scaling: the global steps skipped for inf/NaN gradients
  /// (their parameters and states unchanged).
  std::vector<int64_t> skipped;
  double seconds = 0;
  /// The first step's time (its whole step, accumulation included).
  double firstStepSeconds = 0;
};

/// Runs the loop on `session` through `trainer` (made for it) with `data`;
/// errors of a step name its global number.
StatusOr<TrainingSummary> runTraining(Session &session, Trainer &trainer,
                                      const TrainingData &data,
                                      const TrainingLoopOptions &options);

/// "m:ss" or "h:mm:ss", rounded to seconds.
std::string formatDuration(double seconds);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_TRAININGLOOP_H
