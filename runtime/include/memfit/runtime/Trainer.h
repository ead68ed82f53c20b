//===- Trainer.h - optimizer steps over a session of a training step -*- C++
//-*-===//
//
// A Trainer drives a Session of a training executable (Compiler.h,
// TrainOptions):
//
//   "train_step"            one micro-batch per optimizer step: inputs, "lr"
//                           (f32, shape []), output "loss"
//   "accumulate", "apply"   k micro-batches through "accumulate" (output
//                           "loss", gradients summed into the accumulators),
//                           then "apply" (input "lr") takes the optimizer
//                           step and clears them
//
// With dynamic loss scaling the optimizer step (train_step or apply) also
// returns "loss_scale" and "skipped" (f32 scalars).
//
// The executable counts optimizer steps in its "step" variable (f32 of
// shape [], exact up to 2^24 steps), so the count survives a checkpoint.
//
//   auto trainer = rt::Trainer::create(*session, /*accumulationSteps=*/1);
//   for (...) {
//     float lr = rt::learningRate(schedule, trainer->stepCount().value());
//     auto loss = trainer->step({{{"input_ids", ids}, {"labels", labels}}},
//     lr);
//   }
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_TRAINER_H
#define MEMFIT_RUNTIME_TRAINER_H

#include "memfit/runtime/Session.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace memfit::rt {

/// Learning rate per optimizer step: linear warmup from peak/warmupSteps to
/// peak over the first warmupSteps steps, then constant, or a cosine or
/// linear decay from peak to minimum reached at step decaySteps.
struct LrSchedule {
  enum class Kind { Constant, Cosine, Linear };
  Kind kind = Kind::Constant;
  float peak = 1e-3f;
  float minimum = 0.0f;
  int64_t warmupSteps = 0;
  int64_t decaySteps = 0; // the step at which the decay ends
};

/// The rate of 0-based optimizer step `step` (the counter before the step):
///   step < warmup:  peak * (step + 1) / warmup
///   otherwise, with p = clamp((step - warmup) / max(1, decaySteps - warmup), 0, 1):
///     constant  peak
///     cosine    minimum + (peak - minimum) * (1 + cos(pi * p)) / 2
///     linear    peak + (minimum - peak) * p
float learningRate(const LrSchedule &schedule, int64_t step);
/// "constant", "cosine", "linear".
StatusOr<LrSchedule::Kind> parseLrScheduleKind(const std::string &name);
/// The name parseLrScheduleKind reads.
const char *lrScheduleName(LrSchedule::Kind kind);

/// Input tensors of one micro-batch by name (model inputs and loss inputs
/// such as "labels"; never "lr").
using MicroBatch = std::map<std::string, Tensor>;

class Trainer {
public:
  enum class Mode { TrainStep, AccumulateApply };

  /// Checks the session's entries: "train_step" (accumulationSteps must be
  /// 1) or "accumulate" + "apply" (accumulationSteps micro-batches per
  /// step, as the executable was compiled for: the manifest does not
  /// record it), a "loss" output, an "lr" input and a "step" counter.
  static StatusOr<Trainer> create(Session &session,
                                  int64_t accumulationSteps = 1);

  Mode mode() const { return mode_; }
  int64_t accumulationSteps() const { return accumulationSteps_; }
  /// The inputs every micro-batch provides, in the entry's order.
  const std::vector<Binding> &batchInputs() const { return batchInputs_; }

  /// One optimizer step over accumulationSteps() micro-batches at learning
  /// rate `lr`; returns the mean of their losses.
  StatusOr<float> step(const std::vector<MicroBatch> &microBatches, float lr);
  /// Accumulate-apply mode: one micro-batch through "accumulate"; returns
  /// its loss.
  StatusOr<float> accumulate(const MicroBatch &batch);
  /// Accumulate-apply mode: the optimizer step, after exactly
  /// accumulationSteps() calls of accumulate().
  Status apply(float lr);

  /// Optimizer steps taken: the "step" variable.
  StatusOr<int64_t> stepCount() const;

  /// Dynamic loss scaling (fp16): whether the executable returns
  /// "loss_scale" and "skipped" from its optimizer step.
  bool scalesLoss() const { return scalesLoss_; }
  struct LossScaleStep {
    float scale = 1;      // the scale the step's gradients were computed with
    bool skipped = false; // inf or NaN gradients: nothing was updated
  };
  /// The last optimizer step's loss scale and whether it was skipped.
  StatusOr<LossScaleStep> lastLossScale() const;

private:
  Trainer() = default;
  Status setBatch(const MicroBatch &batch);
  StatusOr<float> loss() const;

  Session *session_ = nullptr;
  Mode mode_ = Mode::TrainStep;
  int64_t accumulationSteps_ = 1;
  int64_t pending_ = 0; // micro-batches accumulated since the last apply
  bool scalesLoss_ = false;
  std::vector<Binding> batchInputs_;
};

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_TRAINER_H
