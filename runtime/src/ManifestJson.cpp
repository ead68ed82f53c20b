//===- ManifestJson.cpp - the manifest as JSON and back -------------------===//
//
// The JSON schema mirrors the structs of Manifest.h field by field, with
// the same (camelCase) names; enums are written as lowercase keywords
// ("f32", "arena", "kernel"). Every field is required and unknown fields
// are errors, so a typo in a hand-written manifest does not go unnoticed.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Manifest.h"

#include "Json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>

namespace memfit::rt {

//===----------------------------------------------------------------------===//
// Manifest -> JSON
//===----------------------------------------------------------------------===//

namespace {

template <typename Range> JsonValue intArray(const Range &values) {
  JsonValue a = JsonValue::array();
  for (auto v : values)
    a.push(JsonValue(static_cast<int64_t>(v)));
  return a;
}

/// A step's cost, where the compiler gave one.
void setCost(JsonValue &o, const StepCost &cost) {
  if (cost.bytes)
    o.set("bytes", cost.bytes);
  if (cost.flops)
    o.set("flops", cost.flops);
}

JsonValue stringArray(const std::vector<std::string> &values) {
  JsonValue a = JsonValue::array();
  for (const std::string &v : values)
    a.push(JsonValue(v));
  return a;
}

JsonValue bindingsToJson(const std::vector<Binding> &bindings) {
  JsonValue a = JsonValue::array();
  for (const Binding &b : bindings) {
    JsonValue o = JsonValue::object();
    o.set("name", b.name);
    o.set("buffer", b.buffer);
    a.push(std::move(o));
  }
  return a;
}

} // namespace

std::string manifestToJson(const Manifest &m) {
  JsonValue root = JsonValue::object();
  root.set("schema", "memfit-executable");
  root.set("version", Manifest::kVersion);
  root.set("model", m.model);
  root.set("weightsBytes", m.weightsBytes);
  root.set("arenaBytes", m.arenaBytes);
  if (m.hostBytes)
    root.set("hostBytes", m.hostBytes);
  if (m.initializedHostBytes)
    root.set("initializedHostBytes", m.initializedHostBytes);
  root.set("trainableParameters", m.trainableParameters);
  root.set("frozenParameters", m.frozenParameters);
  root.set("quantizedParameters", m.quantizedParameters);

  JsonValue buffers = JsonValue::array();
  for (const Buffer &b : m.buffers) {
    JsonValue o = JsonValue::object();
    o.set("name", b.name);
    o.set("region", regionName(b.region));
    o.set("offset", b.offset);
    o.set("bytes", b.bytes);
    o.set("dtype", dtypeName(b.dtype));
    o.set("shape", intArray(b.shape));
    buffers.push(std::move(o));
  }
  root.set("buffers", std::move(buffers));

  JsonValue kernels = JsonValue::array();
  for (const Kernel &k : m.kernels) {
    JsonValue o = JsonValue::object();
    o.set("name", k.name);
    o.set("grid", intArray(k.grid));
    o.set("block", intArray(k.block));
    o.set("sharedBytes", k.sharedBytes);
    o.set("usesBarriers", k.usesBarriers);
    if (k.threadLoops)
      o.set("threadLoops", true);
    if (k.onHost)
      o.set("onHost", true);
    if (k.copyQueue)
      o.set("copyQueue", true);
    if (k.toDevice)
      o.set("toDevice", true);
    o.set("onnxNodes", stringArray(k.onnxNodes));
    if (!k.indexChecks.empty())
      o.set("indexChecks", stringArray(k.indexChecks));
    if (k.kind != KernelKind::ElementWise)
      o.set("kind", kernelKindName(k.kind));
    setCost(o, k.cost);
    kernels.push(std::move(o));
  }
  root.set("kernels", std::move(kernels));

  JsonValue contractions = JsonValue::array();
  for (const Contraction &c : m.contractions) {
    JsonValue o = JsonValue::object();
    o.set("name", c.name);
    o.set("dtype", dtypeName(c.dtype));
    o.set("m", c.m);
    o.set("n", c.n);
    o.set("k", c.k);
    o.set("transA", c.transA);
    o.set("transB", c.transB);
    o.set("alpha", JsonValue::fromFloat(c.alpha));
    o.set("beta", JsonValue::fromFloat(c.beta));
    o.set("batchShape", intArray(c.batchShape));
    o.set("batchStridesA", intArray(c.batchStridesA));
    o.set("batchStridesB", intArray(c.batchStridesB));
    o.set("batchStridesOut", intArray(c.batchStridesOut));
    o.set("offsets", intArray(c.offsets));
    o.set("ld", intArray(c.ld));
    if (c.epilogue != Epilogue::None) {
      o.set("epilogue", epilogueName(c.epilogue));
      o.set("fallbackKernel", int64_t(c.fallbackKernel));
      if (c.activationKernel != kNoKernel)
        o.set("activationKernel", int64_t(c.activationKernel));
    }
    o.set("onnxNodes", stringArray(c.onnxNodes));
    setCost(o, c.cost);
    contractions.push(std::move(o));
  }
  root.set("contractions", std::move(contractions));

  JsonValue entries = JsonValue::array();
  for (const Entry &e : m.entries) {
    JsonValue steps = JsonValue::array();
    for (const Step &s : e.steps) {
      JsonValue o = JsonValue::object();
      o.set("kind", stepKindName(s.kind));
      o.set("index", s.index);
      o.set("buffers", intArray(s.buffers));
      steps.push(std::move(o));
    }
    JsonValue o = JsonValue::object();
    o.set("name", e.name);
    o.set("steps", std::move(steps));
    o.set("inputs", bindingsToJson(e.inputs));
    o.set("outputs", bindingsToJson(e.outputs));
    if (e.boundBytes)
      o.set("boundBytes", e.boundBytes);
    entries.push(std::move(o));
  }
  root.set("entries", std::move(entries));

  JsonValue variables = JsonValue::array();
  for (const Variable &v : m.variables) {
    JsonValue o = JsonValue::object();
    o.set("name", v.name);
    o.set("buffer", v.buffer);
    o.set("kind", variableKindName(v.kind));
    if (v.wholeRows > 0)
      o.set("wholeRows", v.wholeRows);
    if (!v.workingCopyOf.empty())
      o.set("workingCopyOf", v.workingCopyOf);
    variables.push(std::move(o));
  }
  root.set("variables", std::move(variables));

  JsonValue adapters = JsonValue::array();
  for (const LoraAdapter &a : m.loraAdapters) {
    JsonValue o = JsonValue::object();
    o.set("a", a.a);
    o.set("b", a.b);
    o.set("base", a.base);
    o.set("scale", JsonValue(a.scale));
    o.set("transposed", JsonValue(a.transposed));
    adapters.push(std::move(o));
  }
  root.set("loraAdapters", std::move(adapters));

  if (m.indexErrorBuffer != kNoBuffer)
    root.set("indexErrorBuffer", static_cast<int64_t>(m.indexErrorBuffer));

  if (m.worldSize != 1 || !m.collectives.empty()) {
    root.set("worldSize", m.worldSize);
    root.set("zeroStage", m.zeroStage);
    JsonValue collectives = JsonValue::array();
    for (const Collective &c : m.collectives) {
      JsonValue o = JsonValue::object();
      o.set("name", c.name);
      o.set("kind", collectiveKindName(c.kind));
      o.set("reduction", reductionName(c.reduction));
      o.set("dtype", dtypeName(c.dtype));
      o.set("count", c.count);
      o.set("groupSize", c.groupSize);
      o.set("root", c.root);
      o.set("ranks", intArray(c.ranks));
      o.set("onnxNodes", stringArray(c.onnxNodes));
      collectives.push(std::move(o));
    }
    root.set("collectives", std::move(collectives));
  }

  if (!m.inputRanges.empty()) {
    JsonValue ranges = JsonValue::array();
    for (const InputRange &r : m.inputRanges) {
      JsonValue o = JsonValue::object();
      o.set("name", r.name);
      o.set("low", r.low);
      o.set("high", r.high);
      o.set("also", intArray(r.also));
      o.set("what", r.what);
      ranges.push(std::move(o));
    }
    root.set("inputRanges", std::move(ranges));
  }

  JsonValue memory = JsonValue::array();
  for (const MemoryCategory &c : m.memory) {
    JsonValue o = JsonValue::object();
    o.set("name", c.name);
    o.set("bytes", c.bytes);
    memory.push(std::move(o));
  }
  root.set("memory", std::move(memory));
  return writeJson(root);
}

//===----------------------------------------------------------------------===//
// JSON -> Manifest
//===----------------------------------------------------------------------===//

namespace {

/// Reads the fields of one JSON object; `path` names it in errors
/// ("kernels[3]"), and every error reads "manifest: <path>.<field>: ...".
class ObjectReader {
public:
  ObjectReader(const JsonValue &object, std::string path)
      : object_(object), path_(std::move(path)) {}

  /// The object itself must be an object with exactly `fields`, and
  /// any of `optional`.
  Status checkFields(std::initializer_list<const char *> fields,
                     std::initializer_list<const char *> optional = {}) const {
    if (!object_.isObject())
      return invalidArgument("manifest: " + displayPath() +
                             ": expected an object, got " +
                             JsonValue::kindName(object_.kind()));
    for (const auto &member : object_.members()) {
      bool known = false;
      for (const char *f : fields)
        known = known || member.first == f;
      for (const char *f : optional)
        known = known || member.first == f;
      if (!known)
        return invalidArgument("manifest: " + displayPath() +
                               ": unknown field '" + member.first + "'");
    }
    for (const char *f : fields)
      if (!object_.find(f))
        return error(f, "missing");
    return Status::ok();
  }

  /// Whether the object has `field` (an optional one).
  bool has(const char *field) const {
    return object_.isObject() && object_.find(field);
  }

  Status error(const std::string &field, const std::string &message) const {
    return invalidArgument("manifest: " + fieldPath(field) + ": " + message);
  }

  std::string fieldPath(const std::string &field) const {
    return path_.empty() ? field : path_ + "." + field;
  }

  Status string(const char *field, std::string &out) const {
    const JsonValue &v = get(field);
    if (!v.isString())
      return typeError(field, "a string", v);
    out = v.asString();
    return Status::ok();
  }

  Status boolean(const char *field, bool &out) const {
    const JsonValue &v = get(field);
    if (!v.isBool())
      return typeError(field, "a boolean", v);
    out = v.asBool();
    return Status::ok();
  }

  Status real(const char *field, double &out) const {
    const JsonValue &v = get(field);
    if (!v.isNumber())
      return typeError(field, "a number", v);
    out = v.asDouble();
    return Status::ok();
  }

  Status number(const char *field, float &out) const {
    const JsonValue &v = get(field);
    if (!v.isNumber())
      return typeError(field, "a number", v);
    out = static_cast<float>(v.asDouble());
    return Status::ok();
  }

  template <typename Int> Status integer(const char *field, Int &out) const {
    return integerValue(get(field), fieldPath(field), out);
  }

  template <typename Int>
  Status integers(const char *field, std::vector<Int> &out) const {
    const JsonValue &v = get(field);
    if (!v.isArray())
      return typeError(field, "an array of integers", v);
    out.clear();
    for (size_t i = 0; i < v.elements().size(); ++i) {
      Int x;
      MEMFIT_RT_RETURN_IF_ERROR(
          integerValue(v.elements()[i],
                       fieldPath(field) + "[" + std::to_string(i) + "]", x));
      out.push_back(x);
    }
    return Status::ok();
  }

  Status dims3(const char *field, std::array<uint32_t, 3> &out) const {
    const JsonValue &v = get(field);
    bool ok = v.isArray() && v.elements().size() == 3;
    for (size_t i = 0; ok && i < 3; ++i)
      ok = v.elements()[i].isInt() && v.elements()[i].asInt() >= 0 &&
           v.elements()[i].asInt() <= std::numeric_limits<uint32_t>::max();
    if (!ok)
      return error(field, "expected 3 integers");
    for (size_t i = 0; i < 3; ++i)
      out[i] = static_cast<uint32_t>(v.elements()[i].asInt());
    return Status::ok();
  }

  Status strings(const char *field, std::vector<std::string> &out) const {
    const JsonValue &v = get(field);
    if (!v.isArray())
      return typeError(field, "an array of strings", v);
    out.clear();
    for (size_t i = 0; i < v.elements().size(); ++i) {
      const JsonValue &e = v.elements()[i];
      if (!e.isString())
        return invalidArgument(
            "manifest: " + fieldPath(field) + "[" + std::to_string(i) +
            "]: expected a string, got " + JsonValue::kindName(e.kind()));
      out.push_back(e.asString());
    }
    return Status::ok();
  }

  /// An array field; each element is read with a reader of its own.
  const JsonValue &array(const char *field, Status &status) const {
    const JsonValue &v = get(field);
    if (!v.isArray())
      status = typeError(field, "an array", v);
    return v;
  }

  std::string elementPath(const char *field, size_t i) const {
    return fieldPath(field) + "[" + std::to_string(i) + "]";
  }

private:
  const JsonValue &get(const char *field) const { return *object_.find(field); }

  std::string displayPath() const {
    return path_.empty() ? "top level" : path_;
  }

  Status typeError(const char *field, const char *expected,
                   const JsonValue &got) const {
    return error(field, std::string("expected ") + expected + ", got " +
                            JsonValue::kindName(got.kind()));
  }

  template <typename Int>
  static Status integerValue(const JsonValue &v, const std::string &path,
                             Int &out) {
    if (!v.isInt())
      return invalidArgument("manifest: " + path +
                             ": expected an integer, got " +
                             JsonValue::kindName(v.kind()));
    int64_t x = v.asInt();
    bool inRange;
    if (std::numeric_limits<Int>::is_signed)
      inRange = x >= int64_t(std::numeric_limits<Int>::min()) &&
                x <= int64_t(std::numeric_limits<Int>::max());
    else
      inRange =
          x >= 0 && uint64_t(x) <= uint64_t(std::numeric_limits<Int>::max());
    if (!inRange)
      return invalidArgument("manifest: " + path + ": " + std::to_string(x) +
                             " is out of range");
    out = static_cast<Int>(x);
    return Status::ok();
  }

  const JsonValue &object_;
  std::string path_;
};

Status readDType(const ObjectReader &r, const char *field, DType &out) {
  std::string name;
  MEMFIT_RT_RETURN_IF_ERROR(r.string(field, name));
  StatusOr<DType> type = parseDType(name);
  if (!type)
    return r.error(field, type.status().message());
  out = *type;
  return Status::ok();
}

Status readBuffer(const ObjectReader &r, Buffer &b) {
  MEMFIT_RT_RETURN_IF_ERROR(
      r.checkFields({"name", "region", "offset", "bytes", "dtype", "shape"}));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", b.name));
  std::string region;
  MEMFIT_RT_RETURN_IF_ERROR(r.string("region", region));
  if (region == "weights")
    b.region = Region::Weights;
  else if (region == "arena")
    b.region = Region::Arena;
  else if (region == "host")
    b.region = Region::Host;
  else
    return r.error("region", "expected \"weights\", \"arena\" or \"host\", "
                             "got \"" + region + "\"");
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("offset", b.offset));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("bytes", b.bytes));
  MEMFIT_RT_RETURN_IF_ERROR(readDType(r, "dtype", b.dtype));
  return r.integers("shape", b.shape);
}

/// The optional cost fields of a kernel or a contraction.
Status readCost(const ObjectReader &r, StepCost &cost) {
  if (r.has("bytes"))
    MEMFIT_RT_RETURN_IF_ERROR(r.integer("bytes", cost.bytes));
  if (r.has("flops"))
    MEMFIT_RT_RETURN_IF_ERROR(r.integer("flops", cost.flops));
  return Status::ok();
}

std::optional<KernelKind> parseKernelKind(const std::string &name) {
  for (KernelKind kind : {KernelKind::ElementWise, KernelKind::Rows,
                          KernelKind::Optimizer, KernelKind::Attention})
    if (name == kernelKindName(kind))
      return kind;
  return std::nullopt;
}

Status readKernel(const ObjectReader &r, Kernel &k) {
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields(
      {"name", "grid", "block", "sharedBytes", "usesBarriers", "onnxNodes"},
      {"indexChecks", "threadLoops", "kind", "bytes", "flops", "onHost",
       "copyQueue", "toDevice"}));
  if (r.has("kind")) {
    std::string kind;
    MEMFIT_RT_RETURN_IF_ERROR(r.string("kind", kind));
    std::optional<KernelKind> parsed = parseKernelKind(kind);
    if (!parsed)
      return r.error("kind", "expected \"elementwise\", \"rows\", "
                             "\"optimizer\" or \"attention\", got \"" +
                                 kind + "\"");
    k.kind = *parsed;
  }
  MEMFIT_RT_RETURN_IF_ERROR(readCost(r, k.cost));
  if (r.has("threadLoops"))
    MEMFIT_RT_RETURN_IF_ERROR(r.boolean("threadLoops", k.threadLoops));
  if (r.has("onHost"))
    MEMFIT_RT_RETURN_IF_ERROR(r.boolean("onHost", k.onHost));
  if (r.has("copyQueue"))
    MEMFIT_RT_RETURN_IF_ERROR(r.boolean("copyQueue", k.copyQueue));
  if (r.has("toDevice"))
    MEMFIT_RT_RETURN_IF_ERROR(r.boolean("toDevice", k.toDevice));
  if (r.has("indexChecks"))
    MEMFIT_RT_RETURN_IF_ERROR(r.strings("indexChecks", k.indexChecks));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", k.name));
  MEMFIT_RT_RETURN_IF_ERROR(r.dims3("grid", k.grid));
  MEMFIT_RT_RETURN_IF_ERROR(r.dims3("block", k.block));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("sharedBytes", k.sharedBytes));
  MEMFIT_RT_RETURN_IF_ERROR(r.boolean("usesBarriers", k.usesBarriers));
  return r.strings("onnxNodes", k.onnxNodes);
}

Status readContraction(const ObjectReader &r, Contraction &c) {
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields(
      {"name", "dtype", "m", "n", "k", "transA", "transB", "alpha", "beta",
       "batchShape", "batchStridesA", "batchStridesB", "batchStridesOut",
       "offsets", "ld", "onnxNodes"},
      {"bytes", "flops", "epilogue", "fallbackKernel", "activationKernel"}));
  MEMFIT_RT_RETURN_IF_ERROR(readCost(r, c.cost));
  if (r.has("epilogue")) {
    std::string name;
    MEMFIT_RT_RETURN_IF_ERROR(r.string("epilogue", name));
    bool known = false;
    for (Epilogue e : {Epilogue::None, Epilogue::Bias, Epilogue::BiasGradA,
                       Epilogue::BiasGradB, Epilogue::GeluAuxBias})
      if (name == epilogueName(e)) {
        c.epilogue = e;
        known = true;
      }
    if (!known)
      return r.error("epilogue", "expected \"none\", \"bias\", "
                                 "\"bias_grad_a\", \"bias_grad_b\" or "
                                 "\"gelu_aux_bias\", got \"" +
                                     name + "\"");
  }
  if (r.has("fallbackKernel"))
    MEMFIT_RT_RETURN_IF_ERROR(r.integer("fallbackKernel", c.fallbackKernel));
  if (r.has("activationKernel"))
    MEMFIT_RT_RETURN_IF_ERROR(
        r.integer("activationKernel", c.activationKernel));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", c.name));
  MEMFIT_RT_RETURN_IF_ERROR(readDType(r, "dtype", c.dtype));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("m", c.m));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("n", c.n));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("k", c.k));
  MEMFIT_RT_RETURN_IF_ERROR(r.boolean("transA", c.transA));
  MEMFIT_RT_RETURN_IF_ERROR(r.boolean("transB", c.transB));
  MEMFIT_RT_RETURN_IF_ERROR(r.number("alpha", c.alpha));
  MEMFIT_RT_RETURN_IF_ERROR(r.number("beta", c.beta));
  MEMFIT_RT_RETURN_IF_ERROR(r.integers("batchShape", c.batchShape));
  MEMFIT_RT_RETURN_IF_ERROR(r.integers("batchStridesA", c.batchStridesA));
  MEMFIT_RT_RETURN_IF_ERROR(r.integers("batchStridesB", c.batchStridesB));
  MEMFIT_RT_RETURN_IF_ERROR(r.integers("batchStridesOut", c.batchStridesOut));
  for (const char *field : {"offsets", "ld"}) {
    std::vector<int64_t> values;
    MEMFIT_RT_RETURN_IF_ERROR(r.integers(field, values));
    if (values.size() != 3)
      return r.error(field, "expected 3 integers (A, B, out), got " +
                                std::to_string(values.size()));
    std::copy(values.begin(), values.end(),
              (field[0] == 'o' ? c.offsets : c.ld).begin());
  }
  return r.strings("onnxNodes", c.onnxNodes);
}

Status readStep(const ObjectReader &r, Step &s) {
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields({"kind", "index", "buffers"}));
  std::string kind;
  MEMFIT_RT_RETURN_IF_ERROR(r.string("kind", kind));
  if (kind == "kernel")
    s.kind = StepKind::Kernel;
  else if (kind == "contraction")
    s.kind = StepKind::Contraction;
  else if (kind == "collective")
    s.kind = StepKind::Collective;
  else
    return r.error("kind", "expected \"kernel\", \"contraction\" or "
                           "\"collective\", got \"" +
                               kind + "\"");
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("index", s.index));
  return r.integers("buffers", s.buffers);
}

Status readBinding(const ObjectReader &r, Binding &b) {
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields({"name", "buffer"}));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", b.name));
  return r.integer("buffer", b.buffer);
}

Status readVariable(const ObjectReader &r, Variable &v) {
  MEMFIT_RT_RETURN_IF_ERROR(
      r.checkFields({"name", "buffer", "kind"}, {"wholeRows", "workingCopyOf"}));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", v.name));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("buffer", v.buffer));
  std::string kind;
  MEMFIT_RT_RETURN_IF_ERROR(r.string("kind", kind));
  StatusOr<VariableKind> parsed = parseVariableKind(kind);
  if (!parsed)
    return r.error("kind", parsed.status().message());
  v.kind = *parsed;
  if (r.has("wholeRows"))
    MEMFIT_RT_RETURN_IF_ERROR(r.integer("wholeRows", v.wholeRows));
  if (r.has("workingCopyOf"))
    MEMFIT_RT_RETURN_IF_ERROR(r.string("workingCopyOf", v.workingCopyOf));
  return Status::ok();
}

Status readLoraAdapter(const ObjectReader &r, LoraAdapter &a) {
  MEMFIT_RT_RETURN_IF_ERROR(
      r.checkFields({"a", "b", "base", "scale", "transposed"}));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("a", a.a));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("b", a.b));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("base", a.base));
  MEMFIT_RT_RETURN_IF_ERROR(r.real("scale", a.scale));
  return r.boolean("transposed", a.transposed);
}

Status readInputRange(const ObjectReader &r, InputRange &range) {
  MEMFIT_RT_RETURN_IF_ERROR(
      r.checkFields({"name", "low", "high", "also", "what"}));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", range.name));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("low", range.low));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("high", range.high));
  MEMFIT_RT_RETURN_IF_ERROR(r.integers("also", range.also));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("what", range.what));
  if (range.low > range.high)
    return r.error("low", "is above high");
  return Status::ok();
}

Status readCollective(const ObjectReader &r, Collective &c) {
  MEMFIT_RT_RETURN_IF_ERROR(
      r.checkFields({"name", "kind", "reduction", "dtype", "count",
                     "groupSize", "root", "ranks", "onnxNodes"}));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", c.name));
  std::string kind, reduction;
  MEMFIT_RT_RETURN_IF_ERROR(r.string("kind", kind));
  bool known = false;
  for (auto k : {Collective::Kind::AllReduce, Collective::Kind::ReduceScatter,
                 Collective::Kind::AllGather, Collective::Kind::Broadcast})
    if (kind == collectiveKindName(k))
      c.kind = k, known = true;
  if (!known)
    return r.error("kind", "expected all_reduce, reduce_scatter, all_gather "
                           "or broadcast, got \"" +
                               kind + "\"");
  MEMFIT_RT_RETURN_IF_ERROR(r.string("reduction", reduction));
  known = false;
  for (auto k : {Collective::Reduction::Sum, Collective::Reduction::Mean,
                 Collective::Reduction::Max, Collective::Reduction::Min})
    if (reduction == reductionName(k))
      c.reduction = k, known = true;
  if (!known)
    return r.error("reduction", "expected sum, mean, max or min, got \"" +
                                    reduction + "\"");
  MEMFIT_RT_RETURN_IF_ERROR(readDType(r, "dtype", c.dtype));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("count", c.count));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("groupSize", c.groupSize));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("root", c.root));
  MEMFIT_RT_RETURN_IF_ERROR(r.integers("ranks", c.ranks));
  return r.strings("onnxNodes", c.onnxNodes);
}

Status readMemoryCategory(const ObjectReader &r, MemoryCategory &c) {
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields({"name", "bytes"}));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", c.name));
  return r.integer("bytes", c.bytes);
}

/// Reads the array `field` of `r` element by element with `readElement`.
template <typename T, typename ReadFn>
Status readArray(const ObjectReader &r, const char *field, std::vector<T> &out,
                 ReadFn readElement) {
  Status status;
  const JsonValue &array = r.array(field, status);
  MEMFIT_RT_RETURN_IF_ERROR(status);
  out.clear();
  out.reserve(array.elements().size());
  for (size_t i = 0; i < array.elements().size(); ++i) {
    T element;
    MEMFIT_RT_RETURN_IF_ERROR(readElement(
        ObjectReader(array.elements()[i], r.elementPath(field, i)), element));
    out.push_back(std::move(element));
  }
  return Status::ok();
}

Status readEntry(const ObjectReader &r, Entry &e) {
  MEMFIT_RT_RETURN_IF_ERROR(
      r.checkFields({"name", "steps", "inputs", "outputs"}, {"boundBytes"}));
  if (r.has("boundBytes"))
    MEMFIT_RT_RETURN_IF_ERROR(r.integer("boundBytes", e.boundBytes));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", e.name));
  MEMFIT_RT_RETURN_IF_ERROR(readArray(r, "steps", e.steps, readStep));
  MEMFIT_RT_RETURN_IF_ERROR(readArray(r, "inputs", e.inputs, readBinding));
  return readArray(r, "outputs", e.outputs, readBinding);
}

} // namespace

StatusOr<Manifest> manifestFromJson(const std::string &json) {
  StatusOr<JsonValue> parsed = parseJson(json);
  if (!parsed)
    return parsed.status().withContext("manifest: invalid JSON");
  const JsonValue &root = *parsed;
  ObjectReader r(root, "");
  // The schema and version first: an executable of another version has
  // other fields, and the version is what to report.
  const JsonValue *schema = root.isObject() ? root.find("schema") : nullptr;
  if (schema && schema->isString() &&
      schema->asString() != "memfit-executable")
    return r.error("schema", "expected \"memfit-executable\", got \"" +
                                 schema->asString() + "\"");
  const JsonValue *version = root.isObject() ? root.find("version") : nullptr;
  if (version && version->isInt() && version->asInt() != Manifest::kVersion)
    return r.error("version",
                   "this runtime reads version " +
                       std::to_string(Manifest::kVersion) +
                       ", the executable is version " +
                       std::to_string(version->asInt()) +
                       (version->asInt() < Manifest::kVersion
                            ? " (recompile it with this memfit)"
                            : " (use the memfit that wrote it)"));
  // inputRanges, indexErrorBuffer and the collectives (with worldSize and
  // zeroStage) are optional: manifests written without them have none.
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields(
      {"schema", "version", "model", "weightsBytes", "arenaBytes",
       "trainableParameters", "frozenParameters", "quantizedParameters",
       "buffers", "kernels", "contractions", "entries", "variables", "memory",
       "loraAdapters"},
      {"inputRanges", "indexErrorBuffer", "collectives", "worldSize",
       "zeroStage", "hostBytes", "initializedHostBytes"}));
  int64_t versionNumber;
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("version", versionNumber));
  std::string schemaName;
  MEMFIT_RT_RETURN_IF_ERROR(r.string("schema", schemaName));
  Manifest m;
  MEMFIT_RT_RETURN_IF_ERROR(r.string("model", m.model));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("weightsBytes", m.weightsBytes));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("arenaBytes", m.arenaBytes));
  MEMFIT_RT_RETURN_IF_ERROR(
      r.integer("trainableParameters", m.trainableParameters));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("frozenParameters", m.frozenParameters));
  MEMFIT_RT_RETURN_IF_ERROR(
      r.integer("quantizedParameters", m.quantizedParameters));
  MEMFIT_RT_RETURN_IF_ERROR(readArray(r, "buffers", m.buffers, readBuffer));
  MEMFIT_RT_RETURN_IF_ERROR(readArray(r, "kernels", m.kernels, readKernel));
  MEMFIT_RT_RETURN_IF_ERROR(
      readArray(r, "contractions", m.contractions, readContraction));
  MEMFIT_RT_RETURN_IF_ERROR(readArray(r, "entries", m.entries, readEntry));
  MEMFIT_RT_RETURN_IF_ERROR(
      readArray(r, "variables", m.variables, readVariable));
  MEMFIT_RT_RETURN_IF_ERROR(
      readArray(r, "memory", m.memory, readMemoryCategory));
  MEMFIT_RT_RETURN_IF_ERROR(
      readArray(r, "loraAdapters", m.loraAdapters, readLoraAdapter));
  if (r.has("collectives"))
    MEMFIT_RT_RETURN_IF_ERROR(
        readArray(r, "collectives", m.collectives, readCollective));
  if (r.has("worldSize"))
    MEMFIT_RT_RETURN_IF_ERROR(r.integer("worldSize", m.worldSize));
  if (r.has("zeroStage"))
    MEMFIT_RT_RETURN_IF_ERROR(r.integer("zeroStage", m.zeroStage));
  if (r.has("hostBytes"))
    MEMFIT_RT_RETURN_IF_ERROR(r.integer("hostBytes", m.hostBytes));
  if (r.has("initializedHostBytes"))
    MEMFIT_RT_RETURN_IF_ERROR(
        r.integer("initializedHostBytes", m.initializedHostBytes));
  if (r.has("inputRanges"))
    MEMFIT_RT_RETURN_IF_ERROR(
        readArray(r, "inputRanges", m.inputRanges, readInputRange));
  if (r.has("indexErrorBuffer"))
    MEMFIT_RT_RETURN_IF_ERROR(
        r.integer("indexErrorBuffer", m.indexErrorBuffer));
  return m;
}

} // namespace memfit::rt
