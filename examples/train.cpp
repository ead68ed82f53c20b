//===- train.cpp - training with the memfit C++ API in one page ------------===//
//
// Compiles an ONNX language model for training (cross-entropy over its
// logits, AdamW), takes 5 optimizer steps on random tokens on the host
// backend (or on CUDA with --cuda), saves a checkpoint, loads it into a
// fresh session and checks that the parameters match.
//
//   memfit-example-train model.onnx batch=2,seq=16 checkpoint-file [--cuda]
//
//===----------------------------------------------------------------------===//

#include "memfit/JIT/Compiler.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/Tensor.h"
#include "memfit/runtime/Trainer.h"

#include <cstdio>
#include <cstring>

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
  options.train->loss = "cross-entropy";
  options.train->optimizer = "adamw";
  rt::StatusOr<rt::Executable> executable = compileModelFile(argv[1], options);
  if (!executable)
    return fail(executable.status());
  std::printf("%s", rt::formatMemoryReport(executable->manifest).c_str());

  bool cuda = argc > 4 && std::strcmp(argv[4], "--cuda") == 0;
  rt::DeviceKind device = cuda ? rt::DeviceKind::Cuda : rt::DeviceKind::Host;
  auto session = rt::Session::create(*executable, device);
  if (!session)
    return fail(session.status());
  rt::StatusOr<rt::Trainer> trainer = rt::Trainer::create(**session);
  if (!trainer)
    return fail(trainer.status());

  // Random tokens; labels are the inputs shifted by one position.
  rt::LrSchedule schedule;
  schedule.peak = 1e-3f;
  for (int step = 0; step < 5; ++step) {
    rt::MicroBatch batch;
    for (const rt::Binding &input : trainer->batchInputs()) {
      const rt::Buffer &buffer = executable->manifest.buffers[input.buffer];
      rt::Tensor tensor = rt::Tensor::zeros(buffer.dtype, buffer.shape);
      rt::fillRandom(tensor, /*seed=*/step, /*intHigh=*/96);
      batch[input.name] = tensor;
    }
    if (batch.count("labels") && batch.begin()->first != "labels") {
      const rt::Tensor &ids = batch.begin()->second;
      rt::Tensor &labels = batch["labels"];
      int64_t n = labels.numElements();
      for (int64_t i = 0; i < n; ++i)
        labels.as<int64_t>()[i] = ids.as<int64_t>()[(i + 1) % n];
    }
    rt::StatusOr<int64_t> count = trainer->stepCount();
    if (!count)
      return fail(count.status());
    float lr = rt::learningRate(schedule, *count);
    rt::StatusOr<float> loss = trainer->step({batch}, lr);
    if (!loss)
      return fail(loss.status());
    std::printf("step %lld loss %.6f\n", (long long)*count + 1, *loss);
  }

  // Checkpoint, then a fresh session from the same executable.
  if (rt::Status s = (*session)->saveCheckpoint(argv[3]); !s)
    return fail(s);
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
  std::printf("checkpoint: %zu variables match, step %lld\n", compared,
              (long long)*count);
  return 0;
}
