//===- TrainingDataTest.cpp - training data, the training loop, summaries -===//
//
// The pieces memfit-run --train is made of, through the runtime's API: the
// corpus encoding and its error positions, the micro-batch scheme of
// --corpus and --data (the formulas of memfit-run --help, recomputed
// here), fixed and random inputs and their errors; runTraining's output,
// losses CSV, checkpoints and resuming on the hand-written training
// executable of TrainingTest.cpp; the plan and tensor summaries.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Bytes.h"
#include "memfit/runtime/Summary.h"
#include "memfit/runtime/TrainingLoop.h"

#include "Files.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <tuple>

namespace memfit::rt::test {

namespace {

bool contains(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}

std::string scratch(const std::string &name) {
  return scratchDirectory() + "/" + name;
}

template <typename T>
Tensor tensor(DType dtype, std::vector<int64_t> shape,
              const std::vector<T> &values) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

/// Inputs input_ids and labels (i64 [2, 4]) and x (f32 [3]).
Manifest dataManifest() {
  Manifest m;
  m.buffers = {{"input_ids", Region::Arena, 0, 64, DType::i64, {2, 4}},
               {"labels", Region::Arena, 256, 64, DType::i64, {2, 4}},
               {"x", Region::Arena, 512, 12, DType::f32, {3}}};
  return m;
}

const std::vector<Binding> kInputs = {
    {"input_ids", 0}, {"labels", 1}, {"x", 2}};

void testCorpusEncoding() {
  StatusOr<std::vector<int64_t>> tokens = encodeCorpus("a\n ~", "t.txt");
  CHECK(tokens.isOk() && *tokens == std::vector<int64_t>({66, 0, 1, 95}));
  CHECK_ERROR(encodeCorpus("ab\ncd\tef\n", "tab.txt").status(),
              "tab.txt:2:3: byte 0x09 is not in the character vocabulary "
              "('\\n' and ' '..'~')");
  CHECK_ERROR(encodeCorpus("\xc3\xa9", "utf8.txt").status(),
              "utf8.txt:1:1: byte 0xc3");
  CHECK_ERROR(readCorpus(scratch("no-such-corpus.txt")).status(), "--corpus: ");
  CHECK(corpusOffset(0, 0, 2, 8, 71) == 0);
  CHECK(corpusOffset(3, 1, 2, 8, 71) == (7 * 8) % 62);
  CHECK(corpusOffset(5, 0, 2, 8, 71) == (10 * 8) % 62);
}

void testCorpusBatches() {
  std::string text = "the quick brown fox\njumps over the lazy dog\n";
  std::string path = scratch("corpus.txt");
  CHECK_OK(writeFile(path, text.data(), text.size()));
  TrainingDataOptions options;
  options.corpus = path;
  options.accumulationSteps = 2;
  StatusOr<TrainingData> data =
      TrainingData::create(dataManifest(), kInputs, options);
  if (!CHECK_OK(data.status()))
    return;
  CHECK(data->describe() == "input input_ids: 2x4xi64 (tokens of " + path +
                                " (44 tokens))\n"
                                "input labels: 2x4xi64 (next tokens of " +
                                path +
                                " (44 tokens))\n"
                                "input x: 3xf32 (random)\n");

  // Row r of micro-batch j of step s, as memfit-run --help writes it.
  std::vector<int64_t> tokens = *encodeCorpus(text, path);
  int64_t B = 2, T = 4, k = 2, N = int64_t(tokens.size());
  bool matches = true;
  for (int64_t s : {0, 1, 7})
    for (int64_t j = 0; j < k; ++j) {
      MicroBatch batch = data->batch(s, j);
      for (int64_t r = 0; r < B; ++r) {
        int64_t idx = (s * k + j) * B + r;
        int64_t offset = (idx * T) % (N - T - 1);
        for (int64_t t = 0; t < T; ++t) {
          matches &=
              batch["input_ids"].as<int64_t>()[r * T + t] == tokens[offset + t];
          matches &= batch["labels"].as<int64_t>()[r * T + t] ==
                     tokens[offset + t + 1];
        }
      }
    }
  CHECK(matches);
  // Random inputs differ per micro-batch and repeat for the same one.
  std::vector<MicroBatch> step = data->step(1);
  CHECK(step.size() == 2);
  CHECK(step[0]["x"].data != step[1]["x"].data);
  CHECK(step[1]["x"].data == data->batch(1, 1)["x"].data);
  CHECK(step[0]["input_ids"].data == data->batch(1, 0)["input_ids"].data);

  std::string shortPath = scratch("short.txt");
  CHECK_OK(writeFile(shortPath, "short", 5));
  options.corpus = shortPath;
  CHECK_ERROR(TrainingData::create(dataManifest(), kInputs, options).status(),
              "--corpus=" + shortPath +
                  ": 5 tokens, but sequences of 4 need more than 5");
  options.corpus = path;
  CHECK_ERROR(
      TrainingData::create(dataManifest(), {kInputs[0], kInputs[2]}, options)
          .status(),
      "--corpus: the training step has no 'labels' input");
  CHECK_ERROR(
      TrainingData::create(dataManifest(), {kInputs[2]}, options).status(),
      "--corpus: the model has no int64 input of shape [B, T] for the tokens "
      "(inputs of the training step: 'x' 3xf32)");
}

void testNpySources() {
  // x: micro-batches along the first dimension (2 of them).
  std::string batches = scratch("x-batches.npy");
  CHECK_OK(
      writeNpy(batches, tensor<float>(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6})));
  std::string fixed = scratch("ids.npy");
  CHECK_OK(writeNpy(
      fixed, tensor<int64_t>(DType::i64, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})));
  TrainingDataOptions options;
  options.data = {{"x", batches}};
  options.fixed = {{"input_ids", fixed}};
  options.accumulationSteps = 3;
  StatusOr<TrainingData> data =
      TrainingData::create(dataManifest(), kInputs, options);
  if (!CHECK_OK(data.status()))
    return;
  CHECK(contains(data->describe(),
                 "input x: 3xf32 (micro-batches of " + batches + " (2))\n"));
  CHECK(contains(data->describe(),
                 "input input_ids: 2x4xi64 (fixed, " + fixed + ")\n"));
  // Micro-batch s*k + j reads index (s*k + j) mod 2.
  for (auto [s, j, index] : {std::tuple<int64_t, int64_t, int>{0, 0, 0},
                             {0, 1, 1},
                             {0, 2, 0},
                             {1, 0, 1},
                             {2, 1, 1}}) {
    MicroBatch batch = data->batch(s, j);
    CHECK(batch["x"].as<float>()[0] == float(1 + 3 * index));
    CHECK(batch["input_ids"].as<int64_t>()[7] == 8);
  }

  // A data file without the micro-batch dimension, or of another dtype.
  std::string flat = scratch("x-flat.npy");
  CHECK_OK(
      writeNpy(flat, tensor<float>(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6})));
  options.data = {{"x", flat}};
  CHECK_ERROR(TrainingData::create(dataManifest(), kInputs, options).status(),
              "--data=x=" + flat +
                  ": expected 3xf32 micro-batches along a first dimension "
                  "(Nx3xf32), got 3x2xf32");
  options.data = {};
  options.fixed = {{"input_ids", batches}};
  CHECK_ERROR(TrainingData::create(dataManifest(), kInputs, options).status(),
              "--input=input_ids=" + batches +
                  ": expected 2x4xi64, got 2x3xf32");
  options.fixed = {{"x", flat}};
  options.data = {{"x", batches}};
  CHECK_ERROR(TrainingData::create(dataManifest(), kInputs, options).status(),
              "--data=x and --input=x: give one of them");
  options.fixed = {};
  options.data = {{"y", batches}};
  CHECK_ERROR(TrainingData::create(dataManifest(), kInputs, options).status(),
              "--data=y=" + batches +
                  ": the training step has no input named 'y' (inputs: "
                  "'input_ids' 2x4xi64, 'labels' 2x4xi64, 'x' 3xf32)");
  options.data = {};
  options.accumulationSteps = 0;
  CHECK_ERROR(TrainingData::create(dataManifest(), kInputs, options).status(),
              "training data: accumulation steps must be at least 1, got 0");
  options.accumulationSteps = 1;
  options.data = {{"x", scratch("missing.npy")}};
  CHECK_ERROR(TrainingData::create(dataManifest(), kInputs, options).status(),
              "--data=x: " + scratch("missing.npy"));
}

/// `steps` steps with x = 0 at lr 0.1 (loss 15 at the first step), from
/// `resume` when given; the log, or "" when the run fails.
std::string train(const Executable &e, int64_t steps, const std::string &resume,
                  const std::string &checkpoint, const std::string &losses,
                  TrainingSummary *summary, std::ostream *bar = nullptr) {
  std::unique_ptr<Session> session = openTrainingSession(e);
  if (!session)
    return "";
  StatusOr<Trainer> trainer = Trainer::create(*session);
  if (!CHECK_OK(trainer.status()))
    return "";
  std::string zeros = scratch("x-zeros.npy");
  CHECK_OK(writeNpy(zeros, Tensor::zeros(DType::f32, {4})));
  TrainingDataOptions dataOptions;
  dataOptions.fixed = {{"x", zeros}};
  StatusOr<TrainingData> data = TrainingData::create(
      session->manifest(), trainer->batchInputs(), dataOptions);
  if (!CHECK_OK(data.status()))
    return "";
  std::ostringstream log;
  TrainingLoopOptions options;
  options.steps = steps;
  options.schedule.peak = 0.1f;
  options.resume = resume;
  options.checkpoint = checkpoint;
  options.saveEvery = 2;
  options.losses = losses;
  options.log = &log;
  options.progressBar = bar;
  StatusOr<TrainingSummary> result =
      runTraining(*session, *trainer, *data, options);
  if (!CHECK_OK(result.status()))
    return "";
  *summary = *result;
  return log.str();
}

void testTrainingLoop() {
  Executable e = trainingExecutable(false);
  std::string checkpoint = scratch("loop.ckpt"), csv = scratch("loop.csv");
  TrainingSummary first;
  std::string log = train(e, 3, "", checkpoint, csv, &first);
  CHECK(contains(log, "input x: 4xf32 (fixed, "));
  CHECK(contains(log, "training: steps 1 to 3, 1 micro-batch per step, "
                      "constant learning rate 1.000e-01\n"
                      "step 1/3 loss 15.000000 lr 1.000e-01 "));
  CHECK(contains(log, "saved checkpoint " + checkpoint + " at step 2\n"));
  CHECK(contains(log, "saved checkpoint " + checkpoint + " at step 3\n"));
  CHECK(contains(log, "trained 3 steps in "));
  CHECK(first.firstStep == 0 && first.endStep == 3 && first.losses.size() == 3);
  // w = 0.9 w0 after one step: loss 15 * 0.81.
  CHECK(first.losses.size() == 3 &&
        std::fabs(first.losses[1].second - 12.15f) < 1e-4f);
  StatusOr<std::string> written = readFile(csv);
  CHECK(written.isOk() && written->rfind("step,loss\n1,15\n2,", 0) == 0);

  // Resumed, the counter and the losses continue those of one straight run.
  TrainingSummary resumed, straight;
  log = train(e, 2, checkpoint, "", "", &resumed);
  CHECK(contains(log, "resumed from " + checkpoint + " at step 3\n"));
  CHECK(contains(log, "training: steps 4 to 5"));
  CHECK(contains(log, "step 5/5 loss "));
  train(e, 5, "", "", "", &straight);
  CHECK(resumed.firstStep == 3 && resumed.endStep == 5);
  CHECK(straight.losses.size() == 5 && resumed.losses.size() == 2 &&
        straight.losses[3] == resumed.losses[0] &&
        straight.losses[4] == resumed.losses[1]);

  // With a progress bar, the step lines and checkpoint lines are not logged.
  std::ostringstream bar;
  TrainingSummary barred;
  log = train(e, 2, "", checkpoint, "", &barred, &bar);
  CHECK(!contains(log, "step 1/2") && !contains(log, "saved checkpoint"));
  CHECK(contains(bar.str(), "\r[############............] step 1/2 loss "
                            "15.000000 lr 1.000000e-01 "));
  CHECK(contains(bar.str(), "ms/step ETA 0:00   \n"));

  // A step that fails names its global number.
  std::unique_ptr<Session> session = openTrainingSession(e);
  if (!session)
    return;
  StatusOr<Trainer> trainer = Trainer::create(*session);
  Manifest other = dataManifest();
  StatusOr<TrainingData> wrong =
      TrainingData::create(other, {{"x", 2}}, TrainingDataOptions());
  if (CHECK_OK(trainer.status()) && CHECK_OK(wrong.status())) {
    TrainingLoopOptions options;
    options.steps = 1;
    CHECK_ERROR(runTraining(*session, *trainer, *wrong, options).status(),
                "step 1: micro-batch");
    options.steps = -1;
    CHECK_ERROR(runTraining(*session, *trainer, *wrong, options).status(),
                "training loop: steps (-1) and saveEvery (0) must not be "
                "negative");
  }
  CHECK(formatDuration(0) == "0:00" && formatDuration(59.6) == "1:00" &&
        formatDuration(3725) == "1:02:05");
}

void testSummaries() {
  Manifest m;
  m.weightsBytes = 1028;
  m.arenaBytes = 768;
  m.memory = {{"parameters", 1024},
              {"weights region", 1028},
              {"saved_activations", 1234567}};
  std::string plan = formatPlanSummary(m);
  CHECK(plan == "memory plan: " + groupDigits(int64_t(m.totalBytes())) +
                    " bytes in one allocation (weights 1,028, arena peak "
                    "768)\n"
                    "  by category (each buffer counted once; arena buffers "
                    "share space):\n"
                    "    parameters                      1,024 bytes\n"
                    "    saved_activations           1,234,567 bytes\n");

  Tensor t = tensor<float>(DType::f32, {4}, {1, -2, NAN, INFINITY});
  CHECK(formatTensorSummary("t", t) ==
        "  t: 4xf32  min -2.00 max 1.00 mean -0.50  non-finite 2\n"
        "    [1.00, -2.00, nan, INF]\n");
  Tensor ids = tensor<int64_t>(DType::i64, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(formatTensorSummary("ids", ids) ==
        "  ids: 2x4xi64  min 0.00 max 7.00 mean 3.50\n"
        "    [0.00, 1.00, 2.00, 3.00, 4.00, 5.00, ...]\n");
  CHECK(formatTensorSummary("none", Tensor::zeros(DType::f32, {0})) ==
        "  none: 0xf32\n    []\n");
  CHECK(tensorFileName("grad./h.0/attn:w-1") == "grad._h.0_attn_w-1");
}

} // namespace

void runTrainingDataTests() {
  testCorpusEncoding();
  testCorpusBatches();
  testNpySources();
  testTrainingLoop();
  testSummaries();
}

} // namespace memfit::rt::test
