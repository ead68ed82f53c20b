//===- train.cpp - training with the memfit C++ API in one page -----------===//
//
// Compiles an ONNX language model for training (cross-entropy over its
// logits, AdamW), takes 5 optimizer steps on random tokens on the host
// backend (or on CUDA with --cuda) with the runtime's training loop (the
// one memfit-run --train runs), which saves a checkpoint at the end; loads
// it into a fresh session and checks that the parameters match.
//
//   memfit-example-train model.onnx batch=2,seq=16 checkpoint-file [--cuda]
//
//===----------------------------------------------------------------------===//

#include "memfit/JIT/Compiler.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/Tensor.h"
#include "memfit/runtime/TrainingLoop.h"

#include <cstdio>
#include <cstring>
#include <iostream>

using namespace memfit;

static int fail(const rt::Status &status) {
  std::fprintf(stderr, "%s\n", status.message().c_str());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s model.onnx input-shapes checkpoint [--cuda]\n",
                 argv[0]);
    return 2;
  }

  // Compile the training step: forward, cross-entropy, backward, AdamW.
  CompileOptions options;
  options.inputShapes = argv[2];
  options.train = TrainOptions();
  options.train->loss = LossKind::CrossEntropy;
  options.train->optimizer = OptimizerKind::AdamW;
  rt::StatusOr<rt::Executable> executable = compileModelFile(argv[1], options);
  if (!executable)
    return fail(executable.status());
  std::cout << rt::formatMemoryReport(executable->manifest);

  bool cuda = argc > 4 && std::strcmp(argv[4], "--cuda") == 0;
  rt::DeviceKind device = cuda ? rt::DeviceKind::Cuda : rt::DeviceKind::Host;
  auto session = rt::Session::create(*executable, device);
  if (!session)
    return fail(session.status());
  rt::StatusOr<rt::Trainer> trainer = rt::Trainer::create(**session);
  if (!trainer)
    return fail(trainer.status());

  // Random tokens and labels from [0, 96), different for every step.
  rt::TrainingDataOptions data;
  data.intHigh = 96;
  rt::StatusOr<rt::TrainingData> batches = rt::TrainingData::create(
      executable->manifest, trainer->batchInputs(), data);
  if (!batches)
    return fail(batches.status());
  rt::TrainingLoopOptions loop;
  loop.steps = 5;
  loop.schedule.peak = 1e-3f;
  loop.checkpoint = argv[3];
  loop.log = &std::cout;
  rt::StatusOr<rt::TrainingSummary> summary =
      rt::runTraining(**session, *trainer, *batches, loop);
  if (!summary)
    return fail(summary.status());

  // A fresh session from the same executable and the checkpoint.
  auto fresh = rt::Session::create(*executable, device);
  if (!fresh)
    return fail(fresh.status());
  if (rt::Status s = (*fresh)->loadCheckpoint(argv[3]); !s)
    return fail(s);
  size_t compared = 0;
  for (const rt::Variable &v : (*session)->variables()) {
    auto a = (*session)->readVariable(v.name);
    auto b = (*fresh)->readVariable(v.name);
    if (!a || !b)
      return fail(!a ? a.status() : b.status());
    if (a->data != b->data) {
      std::fprintf(stderr, "variable '%s' differs after loading the "
                           "checkpoint\n", v.name.c_str());
      return 1;
    }
    ++compared;
  }
  rt::StatusOr<rt::Trainer> resumed = rt::Trainer::create(**fresh);
  if (!resumed)
    return fail(resumed.status());
  rt::StatusOr<int64_t> count = resumed->stepCount();
  if (!count)
    return fail(count.status());
  std::cout << "checkpoint: " << compared << " variables match, step " << *count
            << "\n";
  return 0;
}
