//===- TrainingTest.cpp - entries, variables, checkpoints and the Trainer -===//
//
// Hand-written training executables on the host backend: a "train_step"
// one and an "accumulate" + "apply" one (k = 2) over the same buffers, with
// the loss 0.5 * |w - x|^2 and momentum SGD. Checks multi-entry sessions
// and the shared-arena rules, the zero-filled weights tail, variables,
// checkpoints (round trip, rejected files, atomic writes), the Trainer,
// learning-rate schedules and the memory report.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Session.h"
#include "memfit/runtime/Trainer.h"

#include "Files.h"

#include <cmath>
#include <cstring>
#include <dirent.h>
#include <functional>
#include <sys/stat.h>

namespace memfit::rt::test {

namespace {

const char *kSource = R"cuda(
// loss = 0.5 * sum((w - x)^2); grad = w - x; m = 0.9 m + grad;
// w -= lr * m; step += 1.
extern "C" __global__ void train_step(const float* __restrict__ x,
                                      const float* __restrict__ lr,
                                      float* __restrict__ w,
                                      float* __restrict__ m,
                                      float* __restrict__ step,
                                      float* __restrict__ loss) {
  float sum = 0.0f;
  for (int i = 0; i < 4; ++i) {
    float grad = w[i] - x[i];
    sum += 0.5f * grad * grad;
    m[i] = 0.9f * m[i] + grad;
    w[i] -= lr[0] * m[i];
  }
  step[0] += 1.0f;
  loss[0] = sum;
}

// g += w - x; loss of this micro-batch.
extern "C" __global__ void accumulate(const float* __restrict__ x,
                                      const float* __restrict__ w,
                                      float* __restrict__ g,
                                      float* __restrict__ loss) {
  float sum = 0.0f;
  for (int i = 0; i < 4; ++i) {
    float grad = w[i] - x[i];
    sum += 0.5f * grad * grad;
    g[i] += grad;
  }
  loss[0] = sum;
}

// The mean gradient of k = 2 micro-batches; then as train_step.
extern "C" __global__ void apply(const float* __restrict__ lr,
                                 float* __restrict__ w,
                                 float* __restrict__ m,
                                 float* __restrict__ g,
                                 float* __restrict__ step) {
  for (int i = 0; i < 4; ++i) {
    m[i] = 0.9f * m[i] + 0.5f * g[i];
    w[i] -= lr[0] * m[i];
    g[i] = 0.0f;
  }
  step[0] += 1.0f;
}
)cuda";

enum : uint32_t { W, C, M, G, Counter, X, Lr, Loss };

} // namespace

/// Weights: w [4] (parameter) at 0, c [4] (frozen) at 256, w.momentum at
/// 512, w.grad at 768, step [] at 1024; the blob holds w and c only.
/// Arena: x [4], lr [], loss [].
Executable trainingExecutable(bool accumulateApply) {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "hand-written training step";
  m.source = kSource;
  m.buffers = {
      {"w", Region::Weights, 0, 16, DType::f32, {4}},
      {"c", Region::Weights, 256, 16, DType::f32, {4}},
      {"w.momentum", Region::Weights, 512, 16, DType::f32, {4}},
      {"w.grad", Region::Weights, 768, 16, DType::f32, {4}},
      {"step", Region::Weights, 1024, 4, DType::f32, {}},
      {"x", Region::Arena, 0, 16, DType::f32, {4}},
      {"lr", Region::Arena, 256, 4, DType::f32, {}},
      {"loss", Region::Arena, 512, 4, DType::f32, {}},
  };
  m.weightsBytes = 1028;
  m.arenaBytes = 768;
  m.trainableParameters = 4;
  auto kernel = [](const char *name) {
    Kernel k;
    k.name = name;
    return k;
  };
  m.kernels = {kernel("train_step"), kernel("accumulate"), kernel("apply")};
  m.variables = {{"w", W, VariableKind::Parameter},
                 {"c", C, VariableKind::FrozenParameter},
                 {"w.momentum", M, VariableKind::OptimizerState},
                 {"step", Counter, VariableKind::Counter}};
  if (accumulateApply) {
    m.entries = {{"accumulate",
                  {{StepKind::Kernel, 1, {X, W, G, Loss}}},
                  {{"x", X}},
                  {{"loss", Loss}}},
                 {"apply", {{StepKind::Kernel, 2, {Lr, W, M, G, Counter}}},
                  {{"lr", Lr}}, {}}};
    m.variables.insert(m.variables.begin() + 3,
                       {"w.grad", G, VariableKind::GradientAccumulator});
  } else {
    m.entries = {{"train_step",
                  {{StepKind::Kernel, 0, {X, Lr, W, M, Counter, Loss}}},
                  {{"x", X}, {"lr", Lr}},
                  {{"loss", Loss}}}};
  }
  m.memory = {{"parameters", 16},        {"frozen_parameters", 16},
              {"optimizer_states", 16},  {"gradient_accumulators", 16},
              {"inputs", 20},            {"outputs", 4},
              {"weights region", 1028},  {"arena peak", 768}};
  e.weights.assign(272, 0);
  const float w[4] = {1, 2, 3, 4}, c[4] = {7, 7, 7, 7};
  std::memcpy(&e.weights[0], w, sizeof w);
  std::memcpy(&e.weights[256], c, sizeof c);
  return e;
}

std::unique_ptr<Session> openTrainingSession(const Executable &e) {
  SessionOptions options;
  options.cacheDir = scratchDirectory() + "/cache-training";
  options.hostThreads = 1;
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(e, DeviceKind::Host, options);
  if (!CHECK_OK(session.status()))
    return nullptr;
  return std::move(*session);
}

namespace {

Tensor vec4(float a, float b, float c, float d) {
  Tensor t = Tensor::zeros(DType::f32, {4});
  float v[4] = {a, b, c, d};
  std::memcpy(t.data.data(), v, sizeof v);
  return t;
}

Tensor scalar(float v) {
  Tensor t = Tensor::zeros(DType::f32, {});
  *t.as<float>() = v;
  return t;
}

std::vector<float> values(const Session &s, const std::string &name) {
  StatusOr<Tensor> t = s.readVariable(name);
  if (!CHECK_OK(t.status()))
    return {};
  return std::vector<float>(t->as<float>(),
                            t->as<float>() + t->numElements());
}

bool near(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::fabs(a[i] - b[i]) > 1e-5f * (1 + std::fabs(b[i])))
      return false;
  return true;
}

/// Every variable's bytes, to check a failed load changed nothing.
std::vector<std::vector<uint8_t>> snapshot(const Session &s) {
  std::vector<std::vector<uint8_t>> all;
  for (const Variable &v : s.variables()) {
    StatusOr<Tensor> t = s.readVariable(v.name);
    all.push_back(t.isOk() ? t->data : std::vector<uint8_t>());
  }
  return all;
}

std::vector<std::string> directoryEntries(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *dir = ::opendir(path.c_str())) {
    while (struct dirent *entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    ::closedir(dir);
  }
  return names;
}

void testEntriesAndVariables() {
  Executable e = trainingExecutable(/*accumulateApply=*/true);
  if (!CHECK_OK(e.manifest.validate()))
    return;
  std::unique_ptr<Session> s = openTrainingSession(e);
  if (!s)
    return;

  // The weights past the 272-byte blob start at zero.
  CHECK(near(values(*s, "w"), {1, 2, 3, 4}));
  CHECK(near(values(*s, "c"), {7, 7, 7, 7}));
  CHECK(near(values(*s, "w.momentum"), {0, 0, 0, 0}));
  CHECK(near(values(*s, "w.grad"), {0, 0, 0, 0}));
  CHECK(near(values(*s, "step"), {0}));

  // Entries by name.
  CHECK_ERROR(s->run(), "the executable has several entries ('accumulate', "
                        "'apply'): name the one to run");
  Status unknown = s->run("main");
  CHECK(unknown.code() == StatusCode::NotFound);
  CHECK_ERROR(unknown, "no entry named 'main' (entries: 'accumulate', "
                       "'apply')");
  CHECK_ERROR(s->setInput("y", scalar(1)),
              "no input named 'y' (inputs: 'x', 'lr')");

  CHECK_OK(s->setInput("x", vec4(0, 0, 0, 0)));
  CHECK_OK(s->run("accumulate"));
  StatusOr<Tensor> loss = s->getOutput("loss");
  if (CHECK_OK(loss.status()))
    CHECK(*loss->as<float>() == 15.0f); // 0.5 * (1 + 4 + 9 + 16)
  CHECK_OK(s->run("accumulate")); // the same entry again: inputs stand
  CHECK(near(values(*s, "w.grad"), {2, 4, 6, 8}));
  CHECK_OK(s->setInput("lr", scalar(0.5f)));
  CHECK_OK(s->run("apply"));
  CHECK(near(values(*s, "w"), {0.5f, 1, 1.5f, 2}));
  CHECK(near(values(*s, "w.grad"), {0, 0, 0, 0}));
  CHECK(near(values(*s, "step"), {1}));

  // "apply" ran: the inputs and outputs of "accumulate" may be gone.
  CHECK_ERROR(s->getOutput("loss").status(),
              "output 'loss' of entry 'accumulate': entry 'apply' ran after "
              "it and may have overwritten it");
  CHECK_ERROR(s->run("accumulate"),
              "entry 'accumulate': input 'x' was not set since entry 'apply' "
              "ran (entries share the arena: set every input of 'accumulate' "
              "again)");
  CHECK_OK(s->run("apply")); // its own inputs stand
  CHECK_OK(s->setInput("x", vec4(1, 1, 1, 1)));
  CHECK_OK(s->run("accumulate"));
  CHECK_OK(s->getOutput("loss").status());
  CHECK_ERROR(s->run("apply"), "entry 'apply': input 'lr' was not set since "
                               "entry 'accumulate' ran");

  // Variables by name, with dtype and shape checked.
  CHECK_OK(s->writeVariable("w.momentum", vec4(1, 2, 3, 4)));
  CHECK(near(values(*s, "w.momentum"), {1, 2, 3, 4}));
  CHECK_ERROR(s->writeVariable("w.momentum", scalar(1)),
              "variable 'w.momentum': expected 4xf32, got f32");
  Status missing = s->readVariable("v").status();
  CHECK(missing.code() == StatusCode::NotFound);
  CHECK_ERROR(missing, "no variable named 'v' (variables: 'w', 'c', "
                       "'w.momentum', 'w.grad', 'step')");
  CHECK(s->variables().size() == 5);
}

void testTrainer() {
  // train_step: one micro-batch and lr per step.
  Executable e = trainingExecutable(/*accumulateApply=*/false);
  std::unique_ptr<Session> s = openTrainingSession(e);
  if (!s)
    return;
  CHECK_ERROR(Trainer::create(*s, 2).status(),
              "entry 'train_step' takes one micro-batch per optimizer step, "
              "but 2 were asked for");
  StatusOr<Trainer> t = Trainer::create(*s);
  if (!CHECK_OK(t.status()))
    return;
  CHECK(t->mode() == Trainer::Mode::TrainStep);
  CHECK(t->batchInputs().size() == 1 && t->batchInputs()[0].name == "x");
  StatusOr<int64_t> count = t->stepCount();
  CHECK(count.isOk() && *count == 0);
  StatusOr<float> loss = t->step({{{"x", vec4(0, 0, 0, 0)}}}, 0.1f);
  if (CHECK_OK(loss.status()))
    CHECK(*loss == 15.0f);
  // m = grad = w, w -= 0.1 * w.
  CHECK(near(values(*s, "w"), {0.9f, 1.8f, 2.7f, 3.6f}));
  loss = t->step({{{"x", vec4(0, 0, 0, 0)}}}, 0.0f);
  CHECK(near(values(*s, "w"), {0.9f, 1.8f, 2.7f, 3.6f})); // lr 0
  count = t->stepCount();
  CHECK(count.isOk() && *count == 2);
  CHECK_ERROR(t->step({}, 0.1f).status(),
              "step: 0 micro-batches given, the optimizer step takes 1");
  CHECK_ERROR(t->step({{{"y", vec4(0, 0, 0, 0)}}}, 0.1f).status(),
              "micro-batch: no tensor for input 'x' of entry 'train_step'");
  CHECK_ERROR(
      t->step({{{"x", vec4(0, 0, 0, 0)}, {"lr", scalar(1)}}}, 0.1f).status(),
      "micro-batch: 'lr' is not an input of entry 'train_step'");
  CHECK_ERROR(t->accumulate({}).status(),
              "accumulate: the executable has no 'accumulate' entry");
  CHECK_ERROR(t->apply(0.1f), "apply: the executable has no 'apply' entry");

  // accumulate + apply: k micro-batches, the mean loss.
  Executable acc = trainingExecutable(/*accumulateApply=*/true);
  std::unique_ptr<Session> a = openTrainingSession(acc);
  if (!a)
    return;
  CHECK_ERROR(Trainer::create(*a, 0).status(),
              "accumulation steps must be at least 1, got 0");
  StatusOr<Trainer> ta = Trainer::create(*a, 2);
  if (!CHECK_OK(ta.status()))
    return;
  CHECK(ta->mode() == Trainer::Mode::AccumulateApply &&
        ta->accumulationSteps() == 2);
  CHECK_ERROR(ta->apply(0.1f), "apply: 0 of 2 micro-batches are accumulated");
  loss = ta->step({{{"x", vec4(0, 0, 0, 0)}}, {{"x", vec4(2, 4, 6, 8)}}},
                  1.0f);
  if (CHECK_OK(loss.status()))
    CHECK(*loss == 15.0f); // (15 + 15) / 2
  // mean gradient 0: w stays.
  CHECK(near(values(*a, "w"), {1, 2, 3, 4}));
  count = ta->stepCount();
  CHECK(count.isOk() && *count == 1);
  StatusOr<float> one = ta->accumulate({{"x", vec4(0, 0, 0, 0)}});
  CHECK(one.isOk() && *one == 15.0f);
  CHECK_ERROR(ta->step({{{"x", vec4(0, 0, 0, 0)}}, {{"x", vec4(0, 0, 0, 0)}}},
                       1.0f)
                  .status(),
              "step: 1 micro-batches were accumulated outside step()");
  CHECK_OK(ta->accumulate({{"x", vec4(0, 0, 0, 0)}}).status());
  CHECK_ERROR(ta->accumulate({{"x", vec4(0, 0, 0, 0)}}).status(),
              "accumulate: 2 micro-batches are accumulated already");
  CHECK_OK(ta->apply(0.5f));
  CHECK(near(values(*a, "w"), {0.5f, 1, 1.5f, 2}));

  // Executables the Trainer refuses.
  Executable forward = trainingExecutable(false);
  forward.manifest.entries[0].name = "main";
  std::unique_ptr<Session> f = openTrainingSession(forward);
  if (f)
    CHECK_ERROR(Trainer::create(*f).status(),
                "the executable has no optimizer step (entries: 'main')");
  Executable noCounter = trainingExecutable(false);
  noCounter.manifest.variables.pop_back();
  std::unique_ptr<Session> n = openTrainingSession(noCounter);
  if (n)
    CHECK_ERROR(Trainer::create(*n).status(),
                "training executable: no 'step' counter variable");
  Executable noLr = trainingExecutable(false);
  noLr.manifest.entries[0].inputs.pop_back();
  std::unique_ptr<Session> l = openTrainingSession(noLr);
  if (l)
    CHECK_ERROR(Trainer::create(*l).status(),
                "training executable: entry 'train_step' has no input 'lr'");
}

/// Rewrites the header of the checkpoint at `path` with `from` -> `to` (the
/// first occurrence), fixing the size on the magic line.
void editHeader(const std::string &path, const std::string &out,
                const std::string &from, const std::string &to) {
  StatusOr<std::string> file = readFile(path);
  if (!CHECK_OK(file.status()))
    return;
  size_t newline = file->find('\n');
  size_t headerBytes = std::stoul(file->substr(18, newline - 18));
  std::string header = file->substr(newline + 1, headerBytes);
  size_t pos = header.find(from);
  if (!CHECK(pos != std::string::npos))
    return;
  header.replace(pos, from.size(), to);
  std::string text = "memfit-checkpoint " + std::to_string(header.size()) +
                     "\n" + header + file->substr(newline + 1 + headerBytes);
  CHECK_OK(writeFile(out, text.data(), text.size()));
}

void testCheckpoints() {
  std::string dir = scratchDirectory() + "/checkpoints";
  CHECK_OK(makeDirectories(dir));
  Executable e = trainingExecutable(/*accumulateApply=*/true);
  std::unique_ptr<Session> s = openTrainingSession(e);
  std::unique_ptr<Session> fresh = openTrainingSession(e);
  if (!s || !fresh)
    return;
  StatusOr<Trainer> t = Trainer::create(*s, 2);
  if (!CHECK_OK(t.status()))
    return;
  for (int i = 0; i < 3; ++i)
    CHECK_OK(t->step({{{"x", vec4(1, 0, 1, 0)}}, {{"x", vec4(0, 1, 0, 1)}}},
                     0.1f)
                 .status());
  CHECK_OK(t->accumulate({{"x", vec4(1, 1, 1, 1)}}).status()); // mid-step
  CHECK_OK(s->writeVariable("c", vec4(5, 5, 5, 5)));  // frozen: not saved

  // Round trip into a fresh session; no temporary is left behind.
  std::string path = dir + "/state.ckpt";
  if (!CHECK_OK(s->saveCheckpoint(path)))
    return;
  CHECK(directoryEntries(dir) == std::vector<std::string>{"state.ckpt"});
  StatusOr<std::string> text = readFile(path);
  if (CHECK_OK(text.status())) {
    CHECK(text->rfind("memfit-checkpoint ", 0) == 0);
    CHECK(text->find("\"format\": \"memfit-checkpoint\"") !=
          std::string::npos);
    CHECK(text->find("\"name\": \"c\"") == std::string::npos);
  }
  if (!CHECK_OK(fresh->loadCheckpoint(path)))
    return;
  for (const char *name : {"w", "w.momentum", "w.grad", "step"})
    CHECK(values(*fresh, name) == values(*s, name));
  CHECK(near(values(*fresh, "c"), {7, 7, 7, 7}));
  StatusOr<Trainer> resumed = Trainer::create(*fresh, 2);
  if (CHECK_OK(resumed.status())) {
    StatusOr<int64_t> count = resumed->stepCount();
    CHECK(count.isOk() && *count == 3);
  }

  // Rejected files leave the session as it was and name file and variable.
  CHECK_OK(fresh->writeVariable("w", vec4(9, 9, 9, 9)));
  std::vector<std::vector<uint8_t>> before = snapshot(*fresh);
  auto rejected = [&](const std::string &file, const std::string &error) {
    Status loaded = fresh->loadCheckpoint(file);
    CHECK_ERROR(loaded, error);
    CHECK_ERROR(loaded, "loadCheckpoint: " + file);
    CHECK(snapshot(*fresh) == before);
  };
  std::string bad = dir + "/bad.ckpt";
  if (text.isOk()) {
    std::string truncated = text->substr(0, text->size() - 3);
    CHECK_OK(writeFile(bad, truncated.data(), truncated.size()));
    rejected(bad, "truncated: the header lists 52 bytes of data, the file "
                  "has 49");
    std::string longer = *text + "x";
    CHECK_OK(writeFile(bad, longer.data(), longer.size()));
    rejected(bad, "1 bytes past the data the header lists");
    std::string corrupt = *text;
    corrupt[corrupt.size() - 10] ^= 0x40;
    CHECK_OK(writeFile(bad, corrupt.data(), corrupt.size()));
    rejected(bad, "variable 'w.grad': the data does not match its checksum");
    std::string magic = "memfit-checkpoinx" + text->substr(17);
    CHECK_OK(writeFile(bad, magic.data(), magic.size()));
    rejected(bad, "not a memfit checkpoint");
    std::string cut = text->substr(0, 40);
    CHECK_OK(writeFile(bad, cut.data(), cut.size()));
    rejected(bad, "truncated: the header needs");
  }
  editHeader(path, bad, "\"variables\": [", "\"variables\": [3, ");
  rejected(bad, "corrupt header: variables[0] needs name, kind, dtype");
  editHeader(path, bad, "{", "[");
  rejected(bad, "corrupt header: ");
  editHeader(path, bad, "\"version\": 1", "\"version\": 7");
  rejected(bad, "checkpoint format version 7, this runtime reads 1");
  editHeader(path, bad, "\"dtype\": \"f32\"", "\"dtype\": \"f64\"");
  rejected(bad, "variable 'w': 16 bytes at offset 0 do not fit its 32 bytes "
                "(f64 [4])");
  // A shape far larger than the file is refused before anything is
  // allocated for it, and one whose bytes overflow 64 bits too.
  editHeader(path, bad, "\"shape\": [4]", "\"shape\": [4000000000000]");
  rejected(bad, "variable 'w': 16 bytes at offset 0 do not fit its "
                "16000000000000 bytes");
  editHeader(path, bad, "\"shape\": [4]",
             "\"shape\": [4000000000000, 4000000000000]");
  rejected(bad, "variable 'w': shape [4000000000000, 4000000000000] is too "
                "large for any file");
  editHeader(path, bad, "\"dtype\": \"f32\"", "\"dtype\": \"i32\"");
  rejected(bad, "variable 'w' is i32 [4] in the checkpoint but f32 [4] in "
                "the executable");
  editHeader(path, bad, "\"shape\": [4]", "\"shape\": [2, 2]");
  rejected(bad, "variable 'w' is f32 [2, 2] in the checkpoint but f32 [4]");
  editHeader(path, bad, "\"w.momentum\"", "\"w.velocity\"");
  rejected(bad, "variable 'w.velocity' is not a variable of the executable");
  editHeader(path, bad, "\"kind\": \"optimizer_state\"",
             "\"kind\": \"parameter\"");
  rejected(bad, "variable 'w.momentum' is of kind parameter in the "
                "checkpoint but optimizer_state in the executable");
  editHeader(path, bad, "\"name\": \"w.grad\"", "\"name\": \"c\"");
  rejected(bad, "variable 'c' is a frozen parameter of the executable");
  editHeader(path, bad, "\"name\": \"w.grad\"", "\"name\": \"w\"");
  rejected(bad, "variable 'w' appears twice");
  Status none = fresh->loadCheckpoint(dir + "/none.ckpt");
  CHECK(none.code() == StatusCode::NotFound);
  CHECK(snapshot(*fresh) == before);

  // A checkpoint of another executable: train_step has no w.grad.
  Executable single = trainingExecutable(/*accumulateApply=*/false);
  std::unique_ptr<Session> other = openTrainingSession(single);
  if (other) {
    std::string otherPath = dir + "/train-step.ckpt";
    CHECK_OK(other->saveCheckpoint(otherPath));
    rejected(otherPath, "variable 'w.grad' (gradient_accumulator) of the "
                        "executable is missing");
    CHECK_ERROR(other->loadCheckpoint(path),
                "variable 'w.grad' is not a variable of the executable");
  }

  // Writes that fail leave no temporary and the target untouched.
  CHECK_ERROR(s->saveCheckpoint(dir + "/missing/state.ckpt"),
              "saveCheckpoint: " + dir + "/missing/state.ckpt: cannot create");
  CHECK_ERROR(s->saveCheckpoint(path + "/state.ckpt"),
              "state.ckpt/state.ckpt: cannot create");
  std::string target = dir + "/is-a-directory";
  CHECK_OK(makeDirectories(target + "/inside"));
  CHECK_ERROR(s->saveCheckpoint(target), "cannot rename into place");
  CHECK(directoryEntries(target) == std::vector<std::string>{"inside"});
  std::vector<std::string> left = directoryEntries(dir);
  bool temporaries = false;
  for (const std::string &name : left)
    temporaries |= name.find(".tmp-") != std::string::npos;
  CHECK(!temporaries);
  // Overwriting a checkpoint replaces it whole.
  CHECK_OK(s->saveCheckpoint(path));
  CHECK_OK(fresh->loadCheckpoint(path));
}

void testSchedules() {
  LrSchedule s;
  s.peak = 1.0f;
  CHECK(learningRate(s, 0) == 1.0f && learningRate(s, 1000) == 1.0f);
  s.warmupSteps = 4;
  CHECK(learningRate(s, 0) == 0.25f && learningRate(s, 3) == 1.0f &&
        learningRate(s, 4) == 1.0f);
  s.kind = LrSchedule::Kind::Cosine;
  s.minimum = 0.1f;
  s.decaySteps = 14;
  CHECK(learningRate(s, 1) == 0.5f);
  CHECK(learningRate(s, 4) == 1.0f);
  CHECK(std::fabs(learningRate(s, 9) - 0.55f) < 1e-6f);
  CHECK(std::fabs(learningRate(s, 14) - 0.1f) < 1e-6f);
  CHECK(std::fabs(learningRate(s, 100) - 0.1f) < 1e-6f);
  s.kind = LrSchedule::Kind::Linear;
  CHECK(std::fabs(learningRate(s, 9) - 0.55f) < 1e-6f);
  CHECK(std::fabs(learningRate(s, 6) - 0.82f) < 1e-6f);
  CHECK(std::fabs(learningRate(s, 20) - 0.1f) < 1e-6f);
  s.warmupSteps = 0;
  s.decaySteps = 0;
  CHECK(learningRate(s, 0) == 1.0f && learningRate(s, 1) == 0.1f);
  StatusOr<LrSchedule::Kind> kind = parseLrScheduleKind("cosine");
  CHECK(kind.isOk() && *kind == LrSchedule::Kind::Cosine);
  CHECK_ERROR(parseLrScheduleKind("step").status(),
              "unknown learning-rate schedule 'step' (expected constant, "
              "cosine or linear)");
}

void testMemoryReport() {
  Manifest m = trainingExecutable(true).manifest;
  m.trainableParameters = 1000;
  m.memory = {{"parameters", 4000},        {"frozen_parameters", 0},
              {"constants", 24},           {"gradient_accumulators", 0},
              {"optimizer_states", 8000},  {"inputs", 100},
              {"outputs", 4},              {"gradients", 4000},
              {"saved_activations", 2048}, {"temporaries", 1000},
              {"scratch", 7},              {"weights region", 12288},
              {"arena peak", 8192}};
  std::string report = formatMemoryReport(m);
  // Column widths aside: runs of spaces read as one.
  auto squeeze = [](const std::string &text) {
    std::string out;
    for (char c : text)
      if (c != ' ' || out.empty() || out.back() != ' ')
        out += c;
    return out;
  };
  std::string squeezed = squeeze(report);
  auto has = [&](const std::string &text) {
    return CHECK(squeezed.find(text) != std::string::npos);
  };
  has("memory report (hand-written training step): 1,000 trainable "
      "parameters");
  has("B/param");
  has("\n weights 4,024 0.00 4.02\n parameters 4,000 0.00 4.00\n");
  has("\n gradients 4,000 0.00 4.00\n gradient accumulators 0 0.00 0.00\n");
  has("\n optimizer states 8,000 0.01 8.00\n saved activations 2,048");
  has("\n temporaries 1,104 0.00 1.10\n temporaries 1,000");
  has("\n other\n scratch 7 0.00 0.01\n");
  has("\n one allocation 2,048 0.00 2.05\n");
  has("parameters + gradients + optimizer states: 4.00 + 4.00 + 8.00 = "
      "16.00 bytes per trainable parameter");
  has("rule of thumb for fp32 AdamW: 4 weights + 4 gradients + 8 states = 16 "
      "B/param, plus activations");
  // A group of one category is one row.
  CHECK(squeezed.find("8.00\n optimizer states") == std::string::npos);

  m.memory[4].bytes = 4000; // SGD with momentum
  auto hasNow = [&](const std::string &text) {
    return CHECK(formatMemoryReport(m).find(text) != std::string::npos);
  };
  hasNow("fp32 SGD with momentum: 4 weights + 4 gradients + 4 states = 12 "
      "B/param");
  m.memory[4].bytes = 0;
  hasNow("fp32 plain SGD: 4 weights + 4 gradients = 8 B/param");

  // A forward pass: no parameters to divide by, the emitter's own names.
  Manifest forward;
  forward.weightsBytes = 1024;
  forward.arenaBytes = 512;
  forward.memory = {{"parameter", 1000}, {"activation", 512}};
  report = formatMemoryReport(forward);
  CHECK(report.find("B/param") == std::string::npos);
  CHECK(report.find("bytes per trainable parameter") == std::string::npos);
  squeezed = squeeze(report);
  CHECK(squeezed.find("\n weights 1,000 0.00\n parameter 1,000 0.00\n") !=
        std::string::npos);
  CHECK(squeezed.find("\n activation 512 0.00\n") != std::string::npos);
  CHECK(squeezed.find("\n one allocation 1,536 0.00\n") != std::string::npos);
}

} // namespace

void runTrainingTests() {
  testEntriesAndVariables();
  testTrainer();
  testCheckpoints();
  testSchedules();
  testMemoryReport();
}

} // namespace memfit::rt::test
