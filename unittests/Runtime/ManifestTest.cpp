//===- ManifestTest.cpp - manifests: JSON, validation, executables --------===//

#include "TestUtil.h"

#include "memfit/runtime/ExecutableCache.h"
#include "memfit/runtime/Manifest.h"

#include "Files.h"

#include <chrono>
#include <functional>
#include <thread>

namespace memfit::rt::test {

namespace {

/// A manifest in which every field differs from its default.
Manifest sampleManifest() {
  Manifest m;
  m.model = "models/tiny \"gpt\".onnx";
  m.source = "extern \"C\" __global__ void k0(float *p) {}\n";
  m.weightsBytes = 516;
  m.arenaBytes = 4096;
  m.buffers = {
      {"w", Region::Weights, 0, 24, DType::f64, {3}},
      {"x", Region::Arena, 0, 64, DType::f32, {2, 8}},
      {"y", Region::Arena, 256, 64, DType::f32, {2, 8}},
      {"mask", Region::Arena, 512, 6, DType::i1, {2, 3}},
      {"h", Region::Arena, 768, 32, DType::bf16, {16}},
      {"scalar", Region::Arena, 1024, 8, DType::i64, {}},
      {"y2", Region::Arena, 1280, 256, DType::f32, {2, 32}},
      {"w.exp_avg", Region::Weights, 256, 24, DType::f64, {3}},
      {"step", Region::Weights, 512, 4, DType::f32, {}},
  };
  Kernel k;
  k.name = "k0";
  k.grid = {7, 2, 3};
  k.block = {128, 2, 1};
  k.sharedBytes = 512;
  k.usesBarriers = true;
  k.threadLoops = true;
  k.onnxNodes = {"/layer/Add", "/layer/Relu"};
  k.kind = KernelKind::Rows;
  k.cost = {4096, 300};
  m.kernels = {k};
  Contraction c;
  c.name = "mm";
  c.dtype = DType::f32;
  c.m = 2;
  c.n = 4;
  c.k = 4;
  c.transA = true;
  c.transB = true;
  c.alpha = 0.1f;
  c.beta = -2.5f;
  c.batchShape = {2};
  c.batchStridesA = {8};
  c.batchStridesB = {0};
  c.setPackedLayout();
  c.onnxNodes = {"/MatMul"};
  c.cost = {224, 128};
  m.contractions = {c};
  m.trainableParameters = 3;
  m.frozenParameters = 5;
  m.quantizedParameters = 4;
  m.loraAdapters.push_back(
      {"h.0.q.lora_A.weight", "h.0.q.lora_B.weight", "q", 2.5, true});
  m.entries = {{"main",
                {{StepKind::Kernel, 0, {1, 2, 3}},
                 {StepKind::Contraction, 0, {1, 2, 6}}},
                {{"x", 1}, {"mask", 3}},
                {{"y", 2}}},
               {"update", {{StepKind::Kernel, 0, {0}}}, {{"lr", 5}}, {}}};
  m.entries[0].boundBytes = 1000;
  m.variables = {{"w", 0, VariableKind::Parameter},
                 {"w.exp_avg", 7, VariableKind::OptimizerState},
                 {"step", 8, VariableKind::Counter}};
  m.variables[0].wholeRows = 5; // ZeRO stage 3: 3 rows of a weight of 5
  m.memory = {{"weights", 300}, {"activations", 4096}};
  return m;
}

bool sameBuffer(const Buffer &a, const Buffer &b) {
  return a.name == b.name && a.region == b.region && a.offset == b.offset &&
         a.bytes == b.bytes && a.dtype == b.dtype && a.shape == b.shape;
}

bool sameKernel(const Kernel &a, const Kernel &b) {
  return a.name == b.name && a.grid == b.grid && a.block == b.block &&
         a.sharedBytes == b.sharedBytes && a.usesBarriers == b.usesBarriers &&
         a.threadLoops == b.threadLoops && a.onnxNodes == b.onnxNodes &&
         a.kind == b.kind && a.cost.bytes == b.cost.bytes &&
         a.cost.flops == b.cost.flops;
}

bool sameContraction(const Contraction &a, const Contraction &b) {
  return a.name == b.name && a.dtype == b.dtype && a.m == b.m && a.n == b.n &&
         a.k == b.k && a.transA == b.transA && a.transB == b.transB &&
         a.alpha == b.alpha && a.beta == b.beta &&
         a.batchShape == b.batchShape && a.batchStridesA == b.batchStridesA &&
         a.batchStridesB == b.batchStridesB &&
         a.batchStridesOut == b.batchStridesOut && a.offsets == b.offsets &&
         a.ld == b.ld && a.onnxNodes == b.onnxNodes &&
         a.cost.bytes == b.cost.bytes && a.cost.flops == b.cost.flops;
}

template <typename T, typename Eq>
bool sameList(const std::vector<T> &a, const std::vector<T> &b, Eq eq) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!eq(a[i], b[i]))
      return false;
  return true;
}

/// Every field but the source (which manifest.json does not hold).
void checkSameManifest(const Manifest &a, const Manifest &b) {
  CHECK(a.model == b.model);
  CHECK(a.weightsBytes == b.weightsBytes && a.arenaBytes == b.arenaBytes);
  CHECK(a.trainableParameters == b.trainableParameters);
  CHECK(a.frozenParameters == b.frozenParameters);
  CHECK(a.quantizedParameters == b.quantizedParameters);
  CHECK(a.loraAdapters.size() == b.loraAdapters.size());
  for (size_t i = 0; i < a.loraAdapters.size() && i < b.loraAdapters.size();
       ++i)
    CHECK(a.loraAdapters[i].a == b.loraAdapters[i].a &&
          a.loraAdapters[i].b == b.loraAdapters[i].b &&
          a.loraAdapters[i].base == b.loraAdapters[i].base &&
          a.loraAdapters[i].scale == b.loraAdapters[i].scale &&
          a.loraAdapters[i].transposed == b.loraAdapters[i].transposed);
  CHECK(sameList(a.buffers, b.buffers, sameBuffer));
  CHECK(sameList(a.kernels, b.kernels, sameKernel));
  CHECK(sameList(a.contractions, b.contractions, sameContraction));
  CHECK(sameList(a.entries, b.entries, [](const Entry &x, const Entry &y) {
    auto sameBinding = [](const Binding &p, const Binding &q) {
      return p.name == q.name && p.buffer == q.buffer;
    };
    return x.name == y.name && x.boundBytes == y.boundBytes &&
           sameList(x.steps, y.steps,
                    [](const Step &p, const Step &q) {
                      return p.kind == q.kind && p.index == q.index &&
                             p.buffers == q.buffers;
                    }) &&
           sameList(x.inputs, y.inputs, sameBinding) &&
           sameList(x.outputs, y.outputs, sameBinding);
  }));
  CHECK(sameList(a.variables, b.variables,
                 [](const Variable &x, const Variable &y) {
                   return x.name == y.name && x.buffer == y.buffer &&
                          x.kind == y.kind && x.wholeRows == y.wholeRows;
                 }));
  CHECK(sameList(a.memory, b.memory,
                 [](const MemoryCategory &x, const MemoryCategory &y) {
                   return x.name == y.name && x.bytes == y.bytes;
                 }));
}

void testDTypes() {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64,
                  DType::i32, DType::i8, DType::u8, DType::i1}) {
    StatusOr<DType> parsed = parseDType(dtypeName(t));
    CHECK(parsed.isOk() && *parsed == t);
  }
  CHECK(dtypeSize(DType::f64) == 8 && dtypeSize(DType::bf16) == 2 &&
        dtypeSize(DType::i1) == 1 && dtypeSize(DType::i32) == 4);
  CHECK_ERROR(parseDType("float32").status(), "unknown dtype 'float32'");
}

void testJsonRoundTrip() {
  Manifest m = sampleManifest();
  CHECK_OK(m.validate());
  CHECK(m.arenaOffset() == 768 && m.totalBytes() == 768 + 4096);
  std::string json = manifestToJson(m);
  CHECK(json.find("\"schema\": \"memfit-executable\"") != std::string::npos);
  CHECK(json.find("\"alpha\": 0.1,") != std::string::npos);
  CHECK(json.find("k0(float") == std::string::npos); // no source
  StatusOr<Manifest> back = manifestFromJson(json);
  if (!CHECK_OK(back.status()))
    return;
  CHECK(back->source.empty());
  checkSameManifest(m, *back);
  CHECK(manifestToJson(*back) == json);
}

/// Applies `edit` to the sample's JSON text and expects `error`.
void checkJsonError(const std::string &from, const std::string &to,
                    const std::string &error,
                    const Manifest &manifest = sampleManifest()) {
  std::string json = manifestToJson(manifest);
  size_t pos = json.find(from);
  if (!CHECK(pos != std::string::npos))
    return;
  json.replace(pos, from.size(), to);
  CHECK_ERROR(manifestFromJson(json).status(), error);
}

void testJsonErrors() {
  checkJsonError("\"wholeRows\": 5", "\"wholeRows\": \"5\"",
                 "manifest: variables[0].wholeRows");
  checkJsonError("\"kind\": \"rows\"", "\"kind\": \"matmul\"",
                 "manifest: kernels[0].kind: expected \"elementwise\", "
                 "\"rows\", \"optimizer\" or \"attention\", got \"matmul\"");
  checkJsonError("\"boundBytes\": 1000", "\"boundBytes\": -1",
                 "manifest: entries[0].boundBytes:");
  checkJsonError("\"grid\": [7, 2, 3]", "\"grid\": [7, 2]",
                 "manifest: kernels[0].grid: expected 3 integers");
  checkJsonError("\"block\": [128, 2, 1]", "\"block\": [128, 2, -1]",
                 "manifest: kernels[0].block: expected 3 integers");
  checkJsonError("\"schema\": \"memfit-executable\"", "\"schema\": \"other\"",
                 "manifest: schema: expected \"memfit-executable\"");
  checkJsonError("\"version\": 4", "\"version\": 3",
                 "manifest: version: this runtime reads version 4, the "
                 "executable is version 3 (recompile it with this memfit)");
  checkJsonError("\"version\": 4", "\"version\": 5",
                 "the executable is version 5 (use the memfit that wrote it)");
  checkJsonError("\"dtype\": \"bf16\"", "\"dtype\": \"f128\"",
                 "manifest: buffers[4].dtype: unknown dtype 'f128'");
  checkJsonError(
      "\"region\": \"weights\"", "\"region\": \"rom\"",
      "manifest: buffers[0].region: expected \"weights\", \"arena\" or \"host\"");
  checkJsonError("\"offset\": 256", "\"offset\": -256",
                 "manifest: buffers[2].offset: -256 is out of range");
  checkJsonError(
      "\"offset\": 256", "\"offset\": 256.5",
      "manifest: buffers[2].offset: expected an integer, got a number");
  checkJsonError(
      "\"shape\": [2, 3]", "\"shape\": [2, \"3\"]",
      "manifest: buffers[3].shape[1]: expected an integer, got a string");
  checkJsonError("\"usesBarriers\": true", "\"usesBarriers\": 1",
                 "manifest: kernels[0].usesBarriers: expected a boolean");
  checkJsonError("\"threadLoops\": true", "\"threadLoops\": \"yes\"",
                 "manifest: kernels[0].threadLoops: expected a boolean");
  checkJsonError(
      "\"kind\": \"kernel\"", "\"kind\": \"copy\"",
      "manifest: entries[0].steps[0].kind: expected \"kernel\", "
      "\"contraction\" or \"collective\", got \"copy\"");
  checkJsonError("\"transA\": true,", "",
                 "manifest: contractions[0].transA: missing");
  checkJsonError("\"transA\": true,", "\"transA\": true, \"extra\": 1,",
                 "manifest: contractions[0]: unknown field 'extra'");
  checkJsonError("\"kind\": \"counter\"", "\"kind\": \"clock\"",
                 "manifest: variables[2].kind: unknown variable kind 'clock'");
  checkJsonError("\"trainableParameters\": 3,", "",
                 "manifest: trainableParameters: missing");
  checkJsonError("\"entries\": [", "\"steps\": [], \"entries\": [",
                 "manifest: top level: unknown field 'steps'");
  checkJsonError("\"/MatMul\"", "3",
                 "manifest: contractions[0].onnxNodes[0]: expected a string");
  checkJsonError("\"inputs\": [", "\"inputs\": [3, ",
                 "manifest: entries[0].inputs[0]: expected an object, got an "
                 "integer");
  Manifest noMemory = sampleManifest();
  noMemory.memory.clear();
  checkJsonError("\"memory\": []", "\"memory\": {}",
                 "manifest: memory: expected an array, got an object",
                 noMemory);
  checkJsonError(
      "\"model\"", "\"model\" 3",
      "manifest: invalid JSON: 4:11: expected ':' after key 'model'");
}

/// Applies `edit` to a valid manifest and expects validate() to fail with
/// `error`.
void checkInvalid(const std::function<void(Manifest &)> &edit,
                  const std::string &error) {
  Manifest m = sampleManifest();
  edit(m);
  CHECK_ERROR(m.validate(), error);
}

void testValidate() {
  checkInvalid([](Manifest &m) { m.buffers[2].offset = 4096; },
               "manifest: buffers[2] ('y'): offset 4096 + 64 bytes exceeds the "
               "arena region (4096 bytes)");
  checkInvalid([](Manifest &m) { m.buffers[2].offset = 100; },
               "buffers[2] ('y'): offset 100 is not a multiple of 256");
  checkInvalid(
      [](Manifest &m) { m.weightsBytes = 16; },
      "buffers[0] ('w'): offset 0 + 24 bytes exceeds the weights region");
  checkInvalid(
      [](Manifest &m) { m.buffers[1].bytes = 60; },
      "buffers[1] ('x'): bytes is 60 but shape [2, 8] of f32 needs 64");
  checkInvalid(
      [](Manifest &m) {
        m.buffers[1].shape = {2, -8};
      },
      "buffers[1] ('x'): negative dimension in shape [2, -8]");
  checkInvalid([](Manifest &m) { m.entries[0].steps[0].buffers.push_back(9); },
               "manifest: entries[0].steps[0]: buffer 9 out of range (9 "
               "buffers)");
  checkInvalid([](Manifest &m) { m.entries[0].steps[0].index = 1; },
               "manifest: entries[0].steps[0]: kernel index 1 out of range "
               "(1 kernels)");
  checkInvalid([](Manifest &m) { m.entries[0].steps[1].index = 3; },
               "manifest: entries[0].steps[1]: contraction index 3 out of "
               "range");
  checkInvalid(
      [](Manifest &m) { m.entries[0].steps[1].buffers.pop_back(); },
      "entries[0].steps[1] (contraction 'mm'): expected 3 buffers {A, B, "
      "out}, got 2");
  checkInvalid(
      [](Manifest &m) { m.entries[0].steps[1].buffers[0] = 0; },
      "steps[1] (contraction 'mm'): A is buffer 0 ('w') of f64 but the "
      "contraction is f32");
  checkInvalid(
      [](Manifest &m) {
        m.entries[0].steps[1].buffers[2] = 1;
        m.contractions[0].batchShape = {3};
        m.contractions[0].batchStridesA = {0};
      },
      "steps[1] (contraction 'mm'): out is buffer 1 ('x') of 16 elements but "
      "the contraction spans 24");
  checkInvalid(
      [](Manifest &m) { m.contractions[0].batchStridesA = {32}; },
      "A is buffer 1 ('x') of 16 elements but the contraction spans 40");
  checkInvalid([](Manifest &m) { m.contractions[0].batchStridesB = {}; },
               "contractions[0] ('mm'): batchShape has 1 dimensions but "
               "batchStridesA has 1, batchStridesB 0 and batchStridesOut 1");
  checkInvalid([](Manifest &m) { m.contractions[0].offsets[0] = 1; },
               "A is buffer 1 ('x') of 16 elements but the contraction spans "
               "17");
  checkInvalid([](Manifest &m) { m.contractions[0].ld[1] = 3; },
               "contractions[0] ('mm'): the rows of B are 3 elements apart, "
               "fewer than their 4 columns");
  checkInvalid([](Manifest &m) { m.contractions[0].batchStridesOut = {0}; },
               "contractions[0] ('mm'): out is broadcast over batch "
               "dimension 0");
  checkInvalid([](Manifest &m) { m.contractions[0].offsets[2] = -1; },
               "contractions[0] ('mm'): negative offset of out");
  checkInvalid([](Manifest &m) { m.contractions[0].k = 0; },
               "contractions[0] ('mm'): m, n, k must be positive");
  checkInvalid(
      [](Manifest &m) {
        m.kernels[0].block = {1024, 2, 1};
      },
      "kernels[0] ('k0'): block of 2048 threads exceeds 1024");
  checkInvalid(
      [](Manifest &m) {
        m.kernels[0].grid = {0, 1, 1};
      },
      "kernels[0] ('k0'): grid dimension 0 is 0");
  checkInvalid(
      [](Manifest &m) {
        m.kernels[0].block = {1, 1, 65};
      },
      "kernels[0] ('k0'): block dimension 2 is 65 (must be 1 to 64)");
  checkInvalid([](Manifest &m) { m.kernels[0].name = "k0(); int x"; },
               "kernels[0] ('k0(); int x'): name is not a C identifier");
  checkInvalid([](Manifest &m) { m.entries[0].inputs[1].name = "x"; },
               "manifest: entries[0].inputs[1] ('x'): duplicate name");
  checkInvalid([](Manifest &m) { m.entries[0].outputs[0].buffer = 9; },
               "manifest: entries[0].outputs[0] ('y'): buffer 9 out of range "
               "(9 buffers)");
  checkInvalid([](Manifest &m) { m.arenaBytes = ~0ull - 100; },
               "weightsBytes + arenaBytes overflows");

  // Entries.
  checkInvalid([](Manifest &m) { m.entries.clear(); },
               "manifest: entries: no entry to run");
  checkInvalid([](Manifest &m) { m.entries[1].name = "main"; },
               "manifest: entries[1] ('main'): duplicate name");
  checkInvalid([](Manifest &m) { m.entries[1].name.clear(); },
               "manifest: entries[1]: empty name");
  checkInvalid([](Manifest &m) { m.entries[1].steps[0].buffers = {12}; },
               "manifest: entries[1].steps[0]: buffer 12 out of range");
  checkInvalid([](Manifest &m) { m.entries[1].inputs.push_back({"lr", 1}); },
               "manifest: entries[1].inputs[1] ('lr'): duplicate name");
  // An input name may recur in another entry.
  Manifest shared = sampleManifest();
  shared.entries[1].inputs.push_back({"x", 1});
  CHECK_OK(shared.validate());

  // Variables.
  checkInvalid([](Manifest &m) { m.variables[1].buffer = 1; },
               "manifest: variables[1] ('w.exp_avg'): buffer 1 ('x') is in "
               "the arena, not the weights region");
  checkInvalid([](Manifest &m) { m.variables[0].wholeRows = 2; },
               "manifest: variables[0] ('w'): wholeRows 2 is not the rows of "
               "a tensor that buffer 0 ('w') holds a part of");
  checkInvalid([](Manifest &m) { m.variables[2].buffer = 20; },
               "manifest: variables[2] ('step'): buffer 20 out of range (9 "
               "buffers)");
  checkInvalid([](Manifest &m) { m.variables[2].name = "w"; },
               "manifest: variables[2] ('w'): duplicate name");
  checkInvalid([](Manifest &m) { m.variables[0].name.clear(); },
               "manifest: variables[0] (''): empty name");
}

void testExecutables() {
  Executable e;
  e.manifest = sampleManifest();
  e.weights.resize(e.manifest.weightsBytes);
  for (size_t i = 0; i < e.weights.size(); ++i)
    e.weights[i] = static_cast<uint8_t>(i * 7);
  std::string dir = scratchDirectory() + "/executable/nested";
  if (!CHECK_OK(saveExecutable(e, dir)))
    return;
  StatusOr<Executable> back = loadExecutable(dir);
  if (!CHECK_OK(back.status()))
    return;
  checkSameManifest(e.manifest, back->manifest);
  CHECK(back->manifest.source == e.manifest.source);
  CHECK(back->weights == e.weights);

  // A weights.bin longer than the region is refused; a shorter one is a
  // prefix (the session zero-fills the rest).
  std::string bad = scratchDirectory() + "/executable/bad";
  CHECK_OK(saveExecutable(e, bad));
  std::vector<uint8_t> longer(517, 1);
  CHECK_OK(writeFile(bad + "/weights.bin", longer.data(), longer.size()));
  CHECK_ERROR(loadExecutable(bad).status(),
              "weights.bin: has 517 bytes, more than the manifest's "
              "weightsBytes 516");
  // weights.sum, written with the executable, refuses a weights.bin of
  // another size or content.
  CHECK_OK(writeFile(bad + "/weights.bin", "abc", 3));
  CHECK_ERROR(loadExecutable(bad).status(),
              "weights.bin: has 3 bytes, but the executable was saved with "
              "516 (weights.sum)");
  std::vector<uint8_t> changed = e.weights;
  changed[7] ^= 1;
  CHECK_OK(writeFile(bad + "/weights.bin", changed.data(), changed.size()));
  CHECK_ERROR(loadExecutable(bad).status(),
              "weights.bin: the data does not match its checksum in "
              "weights.sum");
  CHECK_OK(writeFile(bad + "/weights.sum", "12 fnv1a64:xyz\n", 15));
  CHECK_ERROR(loadExecutable(bad).status(), "weights.sum: malformed");
  // Without weights.sum (an executable written by hand), a shorter file
  // is a prefix.
  std::remove((bad + "/weights.sum").c_str());
  CHECK_OK(writeFile(bad + "/weights.bin", "abc", 3));
  StatusOr<Executable> prefix = loadExecutable(bad);
  if (CHECK_OK(prefix.status()))
    CHECK(prefix->weights.size() == 3);
  // A manifest that does not validate.
  std::string json = manifestToJson(e.manifest);
  json.replace(json.find("\"offset\": 256"), 13, "\"offset\": 8192");
  CHECK_OK(writeFile(bad + "/weights.bin", e.weights.data(), e.weights.size()));
  CHECK_OK(writeFile(bad + "/manifest.json", json.data(), json.size()));
  CHECK_ERROR(loadExecutable(bad).status(),
              "bad/manifest.json: manifest: buffers[2]");

  StatusOr<Executable> missing =
      loadExecutable(scratchDirectory() + "/nowhere");
  CHECK(missing.status().code() == StatusCode::NotFound);
  CHECK_ERROR(missing.status(), "nowhere/manifest.json: cannot open");

  // Saving refuses weights longer than the region and leaves nothing behind.
  e.weights.push_back(0);
  CHECK_ERROR(saveExecutable(e, scratchDirectory() + "/executable/long"),
              "weights has 517 bytes but the manifest says weightsBytes 516");
  CHECK(!fileExists(scratchDirectory() + "/executable/long/manifest.json"));
}

/// The executable cache: keys from the configuration and the model's bytes,
/// entries checked against the files they were compiled from, the least
/// recently used removed past the size limit.
void testExecutableCache() {
  Executable e;
  e.manifest = sampleManifest();
  e.weights.assign(e.manifest.weightsBytes, 3);
  std::string dir = scratchDirectory() + "/executable-cache";
  std::string model = scratchDirectory() + "/cached-model.onnx";
  std::string data = scratchDirectory() + "/cached-model.bin";
  CHECK_OK(writeFile(model, "model bytes", 11));
  CHECK_OK(writeFile(data, "weights", 7));

  ExecutableCache probe(dir, /*disabled=*/false);
  CHECK(probe.enabled() && probe.directory() == dir);
  CHECK(!ExecutableCache(dir, /*disabled=*/true).enabled());
  StatusOr<std::string> a = probe.key("options a", model);
  StatusOr<std::string> b = probe.key("options b", model);
  if (!CHECK_OK(a.status()) || !CHECK_OK(b.status()))
    return;
  CHECK(a->rfind("executable-", 0) == 0 && *a != *b);
  CHECK(*probe.key("options a", model) == *a);
  CHECK_ERROR(probe.key("options a", scratchDirectory() + "/none.onnx")
                  .status(),
              "none.onnx: cannot open");
  CHECK_OK(writeFile(model, "model bytez", 11));
  StatusOr<std::string> changedModel = probe.key("options a", model);
  CHECK(changedModel && *changedModel != *a);

  // Stored, then loaded while its external file is unchanged.
  CHECK(!probe.load(*a));
  CHECK_OK(probe.store(*a, {data}, e));
  std::optional<Executable> back = probe.load(*a);
  if (CHECK(back.has_value())) {
    checkSameManifest(e.manifest, back->manifest);
    CHECK(back->weights == e.weights);
  }
  CHECK_OK(writeFile(data, "weightz", 7));
  CHECK(!probe.load(*a));
  CHECK_OK(probe.store(*a, {data}, e)); // replaces the stale entry
  CHECK(probe.load(*a).has_value());
  // A corrupt entry is a miss, and removed.
  CHECK_OK(writeFile(dir + "/" + *a + "/weights.bin", "x", 1));
  CHECK(!probe.load(*a));
  CHECK(!fileExists(dir + "/" + *a + "/manifest.json"));
  // Plan-only executables are not stored.
  Executable plan = e;
  plan.planOnly = true;
  CHECK_OK(probe.store(*b, {}, plan));
  CHECK(!fileExists(dir + "/" + *b + "/manifest.json"));

  // Room for two entries: storing a third removes the one used longest
  // ago (b, since a was loaded after it was stored).
  CHECK_OK(probe.store(*a, {}, e));
  uint64_t entryBytes = 0;
  for (const char *file :
       {"manifest.json", "kernels.cu", "weights.bin", "weights.sum", "inputs"})
    if (StatusOr<std::string> bytes = readFile(dir + "/" + *a + "/" + file))
      entryBytes += bytes->size();
  ExecutableCache small(dir, false, entryBytes * 2 + entryBytes / 2);
  // Uses are told apart by modification times, which the file system
  // keeps to a few milliseconds.
  auto later = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  later();
  CHECK_OK(small.store(*b, {}, e));
  later();
  CHECK(small.load(*a).has_value());
  later();
  std::string c = *small.key("options c", model);
  CHECK_OK(small.store(c, {}, e));
  CHECK(small.load(*a).has_value());
  CHECK(!small.load(*b));
  CHECK(small.load(c).has_value());
  // An executable larger than the whole limit is not stored.
  ExecutableCache tiny(dir, false, 16);
  std::string d = *tiny.key("options d", model);
  CHECK_OK(tiny.store(d, {}, e));
  CHECK(!tiny.load(d));
}

} // namespace

/// A data-parallel manifest: a collective step over 2 ranks averaging
/// 'x' into 'y'.
Manifest collectiveManifest() {
  Manifest m = sampleManifest();
  m.worldSize = 2;
  Collective c;
  c.name = "x0_all_reduce";
  c.kind = Collective::Kind::AllReduce;
  c.reduction = Collective::Reduction::Mean;
  c.count = 16;
  c.groupSize = 2;
  c.onnxNodes = {"/MatMul"};
  m.collectives = {c};
  m.entries[0].steps.push_back({StepKind::Collective, 0, {1, 2}});
  return m;
}

void testCollectives() {
  Manifest m = collectiveManifest();
  CHECK_OK(m.validate());
  std::string json = manifestToJson(m);
  CHECK(json.find("\"kind\": \"all_reduce\"") != std::string::npos);
  StatusOr<Manifest> back = manifestFromJson(json);
  if (CHECK_OK(back.status())) {
    CHECK(back->worldSize == 2 && back->collectives.size() == 1);
    CHECK(back->collectives[0].reduction == Collective::Reduction::Mean);
    CHECK(manifestToJson(*back) == json);
  }
  // One rank without collectives writes none of the fields.
  CHECK(manifestToJson(sampleManifest()).find("worldSize") ==
        std::string::npos);
  auto invalid = [](const std::function<void(Manifest &)> &edit,
                    const std::string &error) {
    Manifest bad = collectiveManifest();
    edit(bad);
    CHECK_ERROR(bad.validate(), error);
  };
  invalid([](Manifest &b) { b.collectives[0].groupSize = 3; },
          "collectives[0] ('x0_all_reduce'): a group of 3 ranks in a world "
          "of 2");
  invalid([](Manifest &b) { b.collectives[0].ranks = {0, 2}; },
          "rank 2 is outside the world of 2");
  invalid(
      [](Manifest &b) {
        b.collectives[0].kind = Collective::Kind::Broadcast;
        b.collectives[0].root = 2;
      },
      "root 2 is outside the group of 2");
  invalid([](Manifest &b) { b.collectives[0].count = 8; },
          "steps[2] (collective 'x0_all_reduce'): in is buffer 1 ('x') of "
          "16 f32 but the collective reads 8 f32");
  invalid(
      [](Manifest &b) {
        b.collectives[0].kind = Collective::Kind::ReduceScatter;
      },
      "out is buffer 2 ('y') of 16 f32 but the collective writes 8 f32");
  invalid([](Manifest &b) { b.worldSize = 0; },
          "manifest: worldSize 0 must be at least 1");
  invalid([](Manifest &b) { b.zeroStage = 4; },
          "manifest: zeroStage 4 is not a ZeRO stage");
  checkJsonError("\"kind\": \"all_reduce\"", "\"kind\": \"gossip\"",
                 "collectives[0].kind: expected all_reduce, reduce_scatter, "
                 "all_gather or broadcast, got \"gossip\"",
                 collectiveManifest());
  checkJsonError("\"reduction\": \"mean\"", "\"reduction\": \"median\"",
                 "collectives[0].reduction: expected sum, mean, max or min",
                 collectiveManifest());
}

void runManifestTests() {
  testDTypes();
  testCollectives();
  testJsonRoundTrip();
  testJsonErrors();
  testValidate();
  testExecutables();
  testExecutableCache();
}

} // namespace memfit::rt::test
