//===- Trainer.cpp - optimizer steps over a session of a training step ----===//

#include "memfit/runtime/Trainer.h"

#include <algorithm>
#include <cmath>

namespace memfit::rt {

float learningRate(const LrSchedule &s, int64_t step) {
  step = std::max<int64_t>(step, 0);
  if (step < s.warmupSteps)
    return float(double(s.peak) * double(step + 1) / double(s.warmupSteps));
  if (s.kind == LrSchedule::Kind::Constant)
    return s.peak;
  double span = double(std::max<int64_t>(1, s.decaySteps - s.warmupSteps));
  double p = std::clamp(double(step - s.warmupSteps) / span, 0.0, 1.0);
  double peak = s.peak, minimum = s.minimum;
  if (s.kind == LrSchedule::Kind::Cosine)
    return float(minimum + (peak - minimum) * 0.5 * (1.0 + std::cos(M_PI * p)));
  return float(peak + (minimum - peak) * p);
}

StatusOr<LrSchedule::Kind> parseLrScheduleKind(const std::string &name) {
  if (name == "constant")
    return LrSchedule::Kind::Constant;
  if (name == "cosine")
    return LrSchedule::Kind::Cosine;
  if (name == "linear")
    return LrSchedule::Kind::Linear;
  return invalidArgument("unknown learning-rate schedule '" + name +
                         "' (expected constant, cosine or linear)");
}

const char *lrScheduleName(LrSchedule::Kind kind) {
  switch (kind) {
  case LrSchedule::Kind::Constant:
    return "constant";
  case LrSchedule::Kind::Cosine:
    return "cosine";
  case LrSchedule::Kind::Linear:
    return "linear";
  }
  return "constant";
}

namespace {

const Binding *findBinding(const std::vector<Binding> &list,
                           const std::string &name) {
  for (const Binding &b : list)
    if (b.name == name)
      return &b;
  return nullptr;
}

/// The binding `name` of `entry` must be an f32 scalar.
Status requireScalar(const Manifest &m, const Entry &entry,
                     const std::vector<Binding> &list, const char *what,
                     const std::string &name) {
  const Binding *b = findBinding(list, name);
  if (!b)
    return invalidArgument("training executable: entry '" + entry.name +
                           "' has no " + what + " '" + name + "'");
  const Buffer &buffer = m.buffers[b->buffer];
  if (buffer.dtype != DType::f32 || !buffer.shape.empty())
    return invalidArgument("training executable: " + std::string(what) + " '" +
                           name + "' of entry '" + entry.name + "' is " +
                           describe(buffer.dtype, buffer.shape) +
                           ", expected f32 of shape []");
  return Status::ok();
}

Tensor scalar(float value) {
  Tensor t = Tensor::zeros(DType::f32, {});
  *t.as<float>() = value;
  return t;
}

} // namespace

StatusOr<Trainer> Trainer::create(Session &session,
                                  int64_t accumulationSteps) {
  const Manifest &m = session.manifest();
  Trainer t;
  t.session_ = &session;
  t.accumulationSteps_ = accumulationSteps;
  const Entry *trainStep = m.findEntry("train_step");
  const Entry *accumulate = m.findEntry("accumulate");
  const Entry *apply = m.findEntry("apply");
  std::string names;
  for (const Entry &e : m.entries)
    names += (names.empty() ? "'" : ", '") + e.name + "'";
  if (trainStep) {
    if (accumulationSteps != 1)
      return invalidArgument(
          "training executable: entry 'train_step' takes one micro-batch per "
          "optimizer step, but " +
          std::to_string(accumulationSteps) +
          " were asked for (compile with accumulate=" +
          std::to_string(accumulationSteps) + " for 'accumulate' + 'apply')");
    t.mode_ = Mode::TrainStep;
    MEMFIT_RT_RETURN_IF_ERROR(
        requireScalar(m, *trainStep, trainStep->inputs, "input", "lr"));
    MEMFIT_RT_RETURN_IF_ERROR(
        requireScalar(m, *trainStep, trainStep->outputs, "output", "loss"));
    for (const Binding &b : trainStep->inputs)
      if (b.name != "lr")
        t.batchInputs_.push_back(b);
  } else if (accumulate && apply) {
    if (accumulationSteps < 1)
      return invalidArgument("training executable: accumulation steps must "
                             "be at least 1, got " +
                             std::to_string(accumulationSteps));
    t.mode_ = Mode::AccumulateApply;
    MEMFIT_RT_RETURN_IF_ERROR(
        requireScalar(m, *apply, apply->inputs, "input", "lr"));
    MEMFIT_RT_RETURN_IF_ERROR(
        requireScalar(m, *accumulate, accumulate->outputs, "output", "loss"));
    t.batchInputs_ = accumulate->inputs;
  } else if (m.findEntry("main")) {
    return invalidArgument("the executable has no optimizer step (entries: " +
                           names +
                           "): it is a forward pass or computes gradients "
                           "only; compile it with an optimizer");
  } else {
    return invalidArgument(
        "training executable: expected the entry 'train_step', or "
        "'accumulate' and 'apply'; it has " +
        names);
  }
  const Entry *update = trainStep ? trainStep : apply;
  if (findBinding(update->outputs, "skipped")) {
    MEMFIT_RT_RETURN_IF_ERROR(
        requireScalar(m, *update, update->outputs, "output", "skipped"));
    MEMFIT_RT_RETURN_IF_ERROR(
        requireScalar(m, *update, update->outputs, "output", "loss_scale"));
    t.scalesLoss_ = true;
  }
  const Variable *counter = m.findVariable("step");
  if (!counter || counter->kind != VariableKind::Counter)
    return invalidArgument(
        "training executable: no 'step' counter variable");
  const Buffer &buffer = m.buffers[counter->buffer];
  if (buffer.dtype != DType::f32 || !buffer.shape.empty())
    return invalidArgument("training executable: the 'step' counter is " +
                           describe(buffer.dtype, buffer.shape) +
                           ", expected f32 of shape []");
  return t;
}

Status Trainer::setBatch(const MicroBatch &batch) {
  const char *entry = mode_ == Mode::TrainStep ? "train_step" : "accumulate";
  for (const Binding &b : batchInputs_)
    if (!batch.count(b.name))
      return invalidArgument("micro-batch: no tensor for input '" + b.name +
                             "' of entry '" + entry + "'");
  for (const auto &[name, tensor] : batch) {
    if (!findBinding(batchInputs_, name))
      return invalidArgument("micro-batch: '" + name +
                             "' is not an input of entry '" + entry + "'");
    MEMFIT_RT_RETURN_IF_ERROR(
        session_->setInput(name, tensor).withContext("micro-batch"));
  }
  return Status::ok();
}

StatusOr<float> Trainer::loss() const {
  StatusOr<Tensor> t = session_->getOutput("loss");
  if (!t)
    return t.status();
  return *t->as<float>();
}

StatusOr<float> Trainer::accumulate(const MicroBatch &batch) {
  if (mode_ != Mode::AccumulateApply)
    return invalidArgument("accumulate: the executable has no 'accumulate' "
                           "entry (it takes one 'train_step' per step)");
  if (pending_ >= accumulationSteps_)
    return invalidArgument("accumulate: " + std::to_string(pending_) +
                           " micro-batches are accumulated already; apply "
                           "them first");
  MEMFIT_RT_RETURN_IF_ERROR(setBatch(batch));
  MEMFIT_RT_RETURN_IF_ERROR(session_->run("accumulate"));
  ++pending_;
  return loss();
}

Status Trainer::apply(float lr) {
  if (mode_ != Mode::AccumulateApply)
    return invalidArgument("apply: the executable has no 'apply' entry (it "
                           "takes one 'train_step' per step)");
  if (pending_ != accumulationSteps_)
    return invalidArgument("apply: " + std::to_string(pending_) + " of " +
                           std::to_string(accumulationSteps_) +
                           " micro-batches are accumulated");
  MEMFIT_RT_RETURN_IF_ERROR(session_->setInput("lr", scalar(lr)));
  MEMFIT_RT_RETURN_IF_ERROR(session_->run("apply"));
  pending_ = 0;
  return Status::ok();
}

StatusOr<float> Trainer::step(const std::vector<MicroBatch> &microBatches,
                              float lr) {
  if (int64_t(microBatches.size()) != accumulationSteps_)
    return invalidArgument("step: " + std::to_string(microBatches.size()) +
                           " micro-batches given, the optimizer step takes " +
                           std::to_string(accumulationSteps_));
  if (mode_ == Mode::TrainStep) {
    MEMFIT_RT_RETURN_IF_ERROR(setBatch(microBatches[0]));
    MEMFIT_RT_RETURN_IF_ERROR(session_->setInput("lr", scalar(lr)));
    MEMFIT_RT_RETURN_IF_ERROR(session_->run("train_step"));
    return loss();
  }
  if (pending_ != 0)
    return invalidArgument("step: " + std::to_string(pending_) +
                           " micro-batches were accumulated outside step()");
  double sum = 0;
  for (const MicroBatch &batch : microBatches) {
    StatusOr<float> l = accumulate(batch);
    if (!l)
      return l.status();
    sum += *l;
  }
  MEMFIT_RT_RETURN_IF_ERROR(apply(lr));
  return float(sum / double(accumulationSteps_));
}

StatusOr<Trainer::LossScaleStep> Trainer::lastLossScale() const {
  if (!scalesLoss_)
    return invalidArgument("the executable does not scale its loss");
  StatusOr<Tensor> scale = session_->getOutput("loss_scale");
  if (!scale)
    return scale.status();
  StatusOr<Tensor> skipped = session_->getOutput("skipped");
  if (!skipped)
    return skipped.status();
  return LossScaleStep{*scale->as<float>(), *skipped->as<float>() != 0.0f};
}

StatusOr<int64_t> Trainer::stepCount() const {
  StatusOr<Tensor> t = session_->readVariable("step");
  if (!t)
    return t.status();
  return int64_t(std::llround(*t->as<float>()));
}

} // namespace memfit::rt
