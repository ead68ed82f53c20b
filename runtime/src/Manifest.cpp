//===- Manifest.cpp - dtypes, manifest validation, JSON and executables ---===//
//
// The JSON schema mirrors the structs of Manifest.h field by field, with
// the same (camelCase) names; enums are written as lowercase keywords
// ("f32", "arena", "kernel"). Every field is required and unknown fields
// are errors, so a typo in a hand-written manifest does not go unnoticed.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Manifest.h"

#include "Files.h"
#include "Json.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <set>

namespace memfit::rt {

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::f64:
  case DType::i64:
    return 8;
  case DType::f32:
  case DType::i32:
    return 4;
  case DType::f16:
  case DType::bf16:
    return 2;
  case DType::i8:
  case DType::u8:
  case DType::i1:
    return 1;
  }
  return 1;
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::f32:
    return "f32";
  case DType::f64:
    return "f64";
  case DType::f16:
    return "f16";
  case DType::bf16:
    return "bf16";
  case DType::i64:
    return "i64";
  case DType::i32:
    return "i32";
  case DType::i8:
    return "i8";
  case DType::u8:
    return "u8";
  case DType::i1:
    return "i1";
  }
  return "?";
}

StatusOr<DType> parseDType(const std::string &name) {
  for (DType type : {DType::f32, DType::f64, DType::f16, DType::bf16,
                     DType::i64, DType::i32, DType::i8, DType::u8, DType::i1})
    if (name == dtypeName(type))
      return type;
  return invalidArgument("unknown dtype '" + name +
                         "' (expected f32, f64, f16, bf16, i64, i32, i8, u8 "
                         "or i1)");
}

const char *variableKindName(VariableKind kind) {
  switch (kind) {
  case VariableKind::Parameter:
    return "parameter";
  case VariableKind::FrozenParameter:
    return "frozen_parameter";
  case VariableKind::OptimizerState:
    return "optimizer_state";
  case VariableKind::GradientAccumulator:
    return "gradient_accumulator";
  case VariableKind::Counter:
    return "counter";
  }
  return "?";
}

StatusOr<VariableKind> parseVariableKind(const std::string &name) {
  for (VariableKind kind :
       {VariableKind::Parameter, VariableKind::FrozenParameter,
        VariableKind::OptimizerState, VariableKind::GradientAccumulator,
        VariableKind::Counter})
    if (name == variableKindName(kind))
      return kind;
  return invalidArgument("unknown variable kind '" + name +
                         "' (expected parameter, frozen_parameter, "
                         "optimizer_state, gradient_accumulator or counter)");
}

namespace {

const char *regionName(Region region) {
  return region == Region::Weights ? "weights" : "arena";
}

const char *stepKindName(StepKind kind) {
  return kind == StepKind::Kernel ? "kernel" : "contraction";
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool isIdentifier(const std::string &name) {
  if (name.empty())
    return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0))
      return false;
  }
  return true;
}

/// a * b, or false on overflow.
bool mulOverflows(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

} // namespace

//===----------------------------------------------------------------------===//
// Manifest::validate
//===----------------------------------------------------------------------===//

namespace {

/// Element count of a buffer whose shape and bytes validate() accepted.
uint64_t bufferElements(const Buffer &buffer) {
  return buffer.bytes / dtypeSize(buffer.dtype);
}

std::string bufferLabel(const Manifest &m, uint32_t id) {
  return "buffer " + std::to_string(id) + " ('" + m.buffers[id].name + "')";
}

Status validateBuffer(const Manifest &m, size_t i) {
  const Buffer &b = m.buffers[i];
  std::string where =
      "manifest: buffers[" + std::to_string(i) + "] ('" + b.name + "')";
  uint64_t elements = 1;
  for (int64_t d : b.shape) {
    if (d < 0)
      return invalidArgument(where + ": negative dimension in shape " +
                             shapeText(b.shape));
    if (mulOverflows(elements, static_cast<uint64_t>(d), elements))
      return invalidArgument(where + ": shape " + shapeText(b.shape) +
                             " overflows");
  }
  uint64_t expected;
  if (mulOverflows(elements, dtypeSize(b.dtype), expected) ||
      b.bytes != expected)
    return invalidArgument(where + ": bytes is " + std::to_string(b.bytes) +
                           " but shape " + shapeText(b.shape) + " of " +
                           dtypeName(b.dtype) + " needs " +
                           std::to_string(elements * dtypeSize(b.dtype)));
  if (b.offset % kBufferAlignment != 0)
    return invalidArgument(where + ": offset " + std::to_string(b.offset) +
                           " is not a multiple of " +
                           std::to_string(kBufferAlignment));
  uint64_t regionBytes =
      b.region == Region::Weights ? m.weightsBytes : m.arenaBytes;
  if (b.bytes > regionBytes || b.offset > regionBytes - b.bytes)
    return invalidArgument(
        where + ": offset " + std::to_string(b.offset) + " + " +
        std::to_string(b.bytes) + " bytes exceeds the " + regionName(b.region) +
        " region (" + std::to_string(regionBytes) + " bytes)");
  return Status::ok();
}

Status validateKernel(const Kernel &k, size_t i) {
  std::string where =
      "manifest: kernels[" + std::to_string(i) + "] ('" + k.name + "')";
  if (!isIdentifier(k.name))
    return invalidArgument(where + ": name is not a C identifier");
  static const uint32_t gridLimit[3] = {0x7fffffffu, 65535, 65535};
  static const uint32_t blockLimit[3] = {1024, 1024, 64};
  for (int d = 0; d < 3; ++d) {
    if (k.grid[d] == 0 || k.grid[d] > gridLimit[d])
      return invalidArgument(where + ": grid dimension " + std::to_string(d) +
                             " is " + std::to_string(k.grid[d]) +
                             " (must be 1 to " + std::to_string(gridLimit[d]) +
                             ")");
    if (k.block[d] == 0 || k.block[d] > blockLimit[d])
      return invalidArgument(where + ": block dimension " + std::to_string(d) +
                             " is " + std::to_string(k.block[d]) +
                             " (must be 1 to " + std::to_string(blockLimit[d]) +
                             ")");
  }
  uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
  if (threads > 1024)
    return invalidArgument(where + ": block of " + std::to_string(threads) +
                           " threads exceeds 1024");
  return Status::ok();
}

Status validateContraction(const Contraction &c, size_t i) {
  std::string where =
      "manifest: contractions[" + std::to_string(i) + "] ('" + c.name + "')";
  if (c.m < 1 || c.n < 1 || c.k < 1)
    return invalidArgument(where + ": m, n, k must be positive (got " +
                           std::to_string(c.m) + ", " + std::to_string(c.n) +
                           ", " + std::to_string(c.k) + ")");
  if (c.batchStridesA.size() != c.batchShape.size() ||
      c.batchStridesB.size() != c.batchShape.size())
    return invalidArgument(
        where + ": batchShape has " + std::to_string(c.batchShape.size()) +
        " dimensions but batchStridesA has " +
        std::to_string(c.batchStridesA.size()) + " and batchStridesB " +
        std::to_string(c.batchStridesB.size()));
  for (size_t d = 0; d < c.batchShape.size(); ++d) {
    if (c.batchShape[d] < 1)
      return invalidArgument(where + ": batchShape " + shapeText(c.batchShape) +
                             " has a dimension below 1");
    if (c.batchStridesA[d] < 0 || c.batchStridesB[d] < 0)
      return invalidArgument(where + ": negative batch stride");
  }
  if (!std::isfinite(c.alpha) || !std::isfinite(c.beta))
    return invalidArgument(where + ": alpha and beta must be finite");
  return Status::ok();
}

/// Elements an operand spans: the last batch element's offset plus one
/// matrix. Saturates instead of overflowing.
uint64_t operandSpan(const Contraction &c, const std::vector<int64_t> &strides,
                     uint64_t matrix) {
  uint64_t span = matrix;
  for (size_t d = 0; d < c.batchShape.size(); ++d) {
    uint64_t step;
    if (mulOverflows(uint64_t(c.batchShape[d] - 1), uint64_t(strides[d]),
                     step) ||
        __builtin_add_overflow(span, step, &span))
      return std::numeric_limits<uint64_t>::max();
  }
  return span;
}

Status validateContractionStep(const Manifest &m, const Step &s,
                               const std::string &where) {
  const Contraction &c = m.contractions[s.index];
  std::string label = where + " (contraction '" + c.name + "')";
  if (s.buffers.size() != 3)
    return invalidArgument(label + ": expected 3 buffers {A, B, out}, got " +
                           std::to_string(s.buffers.size()));
  uint64_t batch = 1;
  for (int64_t d : c.batchShape)
    if (mulOverflows(batch, uint64_t(d), batch))
      return invalidArgument(label + ": batch size overflows");
  uint64_t mk = uint64_t(c.m) * uint64_t(c.k),
           kn = uint64_t(c.k) * uint64_t(c.n);
  uint64_t outElements;
  if (mulOverflows(batch, uint64_t(c.m) * uint64_t(c.n), outElements))
    return invalidArgument(label + ": output size overflows");
  const char *roles[3] = {"A", "B", "out"};
  uint64_t needed[3] = {operandSpan(c, c.batchStridesA, mk),
                        operandSpan(c, c.batchStridesB, kn), outElements};
  for (int r = 0; r < 3; ++r) {
    const Buffer &b = m.buffers[s.buffers[r]];
    if (b.dtype != c.dtype)
      return invalidArgument(label + ": " + roles[r] + " is " +
                             bufferLabel(m, s.buffers[r]) + " of " +
                             dtypeName(b.dtype) + " but the contraction is " +
                             dtypeName(c.dtype));
    if (bufferElements(b) < needed[r])
      return invalidArgument(
          label + ": " + roles[r] + " is " + bufferLabel(m, s.buffers[r]) +
          " of " + std::to_string(bufferElements(b)) +
          " elements but the contraction spans " + std::to_string(needed[r]));
  }
  return Status::ok();
}

Status validateBindings(const Manifest &m, const std::vector<Binding> &bindings,
                        const std::string &field) {
  std::set<std::string> seen;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const Binding &b = bindings[i];
    std::string where = "manifest: " + field + "[" + std::to_string(i) +
                        "] ('" + b.name + "')";
    if (b.name.empty())
      return invalidArgument(where + ": empty name");
    if (!seen.insert(b.name).second)
      return invalidArgument(where + ": duplicate name");
    if (b.buffer >= m.buffers.size())
      return invalidArgument(where + ": buffer " + std::to_string(b.buffer) +
                             " out of range (" +
                             std::to_string(m.buffers.size()) + " buffers)");
  }
  return Status::ok();
}

Status validateEntry(const Manifest &m, size_t index,
                     std::set<std::string> &names) {
  const Entry &e = m.entries[index];
  std::string path = "entries[" + std::to_string(index) + "]";
  if (e.name.empty())
    return invalidArgument("manifest: " + path + ": empty name");
  if (!names.insert(e.name).second)
    return invalidArgument("manifest: " + path + " ('" + e.name +
                           "'): duplicate name");
  for (size_t i = 0; i < e.steps.size(); ++i) {
    const Step &s = e.steps[i];
    std::string where =
        "manifest: " + path + ".steps[" + std::to_string(i) + "]";
    size_t count =
        s.kind == StepKind::Kernel ? m.kernels.size() : m.contractions.size();
    if (s.index >= count)
      return invalidArgument(where + ": " + stepKindName(s.kind) + " index " +
                             std::to_string(s.index) + " out of range (" +
                             std::to_string(count) + " " +
                             stepKindName(s.kind) + "s)");
    for (uint32_t id : s.buffers)
      if (id >= m.buffers.size())
        return invalidArgument(where + ": buffer " + std::to_string(id) +
                               " out of range (" +
                               std::to_string(m.buffers.size()) + " buffers)");
    if (s.kind == StepKind::Contraction)
      MEMFIT_RT_RETURN_IF_ERROR(validateContractionStep(m, s, where));
  }
  MEMFIT_RT_RETURN_IF_ERROR(validateBindings(m, e.inputs, path + ".inputs"));
  return validateBindings(m, e.outputs, path + ".outputs");
}

} // namespace

Status Manifest::validate() const {
  if (weightsBytes > std::numeric_limits<uint64_t>::max() - kBufferAlignment ||
      arenaBytes > std::numeric_limits<uint64_t>::max() - arenaOffset())
    return invalidArgument("manifest: weightsBytes + arenaBytes overflows");
  for (size_t i = 0; i < buffers.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateBuffer(*this, i));
  for (size_t i = 0; i < kernels.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateKernel(kernels[i], i));
  for (size_t i = 0; i < contractions.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateContraction(contractions[i], i));
  if (entries.empty())
    return invalidArgument("manifest: entries: no entry to run");
  std::set<std::string> entryNames;
  for (size_t i = 0; i < entries.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateEntry(*this, i, entryNames));
  std::set<std::string> variableNames;
  for (size_t i = 0; i < variables.size(); ++i) {
    const Variable &v = variables[i];
    std::string where = "manifest: variables[" + std::to_string(i) + "] ('" +
                        v.name + "')";
    if (v.name.empty())
      return invalidArgument(where + ": empty name");
    if (!variableNames.insert(v.name).second)
      return invalidArgument(where + ": duplicate name");
    if (v.buffer >= buffers.size())
      return invalidArgument(where + ": buffer " + std::to_string(v.buffer) +
                             " out of range (" +
                             std::to_string(buffers.size()) + " buffers)");
    if (buffers[v.buffer].region != Region::Weights)
      return invalidArgument(where + ": " + bufferLabel(*this, v.buffer) +
                             " is in the arena, not the weights region");
  }
  return Status::ok();
}

const Entry *Manifest::findEntry(const std::string &name) const {
  for (const Entry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

const Variable *Manifest::findVariable(const std::string &name) const {
  for (const Variable &v : variables)
    if (v.name == name)
      return &v;
  return nullptr;
}

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
  root.set("trainableParameters", m.trainableParameters);

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
    o.set("onnxNodes", stringArray(k.onnxNodes));
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
    o.set("onnxNodes", stringArray(c.onnxNodes));
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
    entries.push(std::move(o));
  }
  root.set("entries", std::move(entries));

  JsonValue variables = JsonValue::array();
  for (const Variable &v : m.variables) {
    JsonValue o = JsonValue::object();
    o.set("name", v.name);
    o.set("buffer", v.buffer);
    o.set("kind", variableKindName(v.kind));
    variables.push(std::move(o));
  }
  root.set("variables", std::move(variables));

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

  /// The object itself must be an object with exactly `fields`.
  Status checkFields(std::initializer_list<const char *> fields) const {
    if (!object_.isObject())
      return invalidArgument("manifest: " + displayPath() +
                             ": expected an object, got " +
                             JsonValue::kindName(object_.kind()));
    for (const auto &member : object_.members()) {
      bool known = false;
      for (const char *f : fields)
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
  else
    return r.error("region",
                   "expected \"weights\" or \"arena\", got \"" + region + "\"");
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("offset", b.offset));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("bytes", b.bytes));
  MEMFIT_RT_RETURN_IF_ERROR(readDType(r, "dtype", b.dtype));
  return r.integers("shape", b.shape);
}

Status readKernel(const ObjectReader &r, Kernel &k) {
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields(
      {"name", "grid", "block", "sharedBytes", "usesBarriers", "onnxNodes"}));
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
       "batchShape", "batchStridesA", "batchStridesB", "onnxNodes"}));
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
  else
    return r.error("kind", "expected \"kernel\" or \"contraction\", got \"" +
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
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields({"name", "buffer", "kind"}));
  MEMFIT_RT_RETURN_IF_ERROR(r.string("name", v.name));
  MEMFIT_RT_RETURN_IF_ERROR(r.integer("buffer", v.buffer));
  std::string kind;
  MEMFIT_RT_RETURN_IF_ERROR(r.string("kind", kind));
  StatusOr<VariableKind> parsed = parseVariableKind(kind);
  if (!parsed)
    return r.error("kind", parsed.status().message());
  v.kind = *parsed;
  return Status::ok();
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
      r.checkFields({"name", "steps", "inputs", "outputs"}));
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
  MEMFIT_RT_RETURN_IF_ERROR(r.checkFields(
      {"schema", "version", "model", "weightsBytes", "arenaBytes",
       "trainableParameters", "buffers", "kernels", "contractions",
       "entries", "variables", "memory"}));
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
  MEMFIT_RT_RETURN_IF_ERROR(readArray(r, "buffers", m.buffers, readBuffer));
  MEMFIT_RT_RETURN_IF_ERROR(readArray(r, "kernels", m.kernels, readKernel));
  MEMFIT_RT_RETURN_IF_ERROR(
      readArray(r, "contractions", m.contractions, readContraction));
  MEMFIT_RT_RETURN_IF_ERROR(readArray(r, "entries", m.entries, readEntry));
  MEMFIT_RT_RETURN_IF_ERROR(
      readArray(r, "variables", m.variables, readVariable));
  MEMFIT_RT_RETURN_IF_ERROR(
      readArray(r, "memory", m.memory, readMemoryCategory));
  return m;
}

//===----------------------------------------------------------------------===//
// Executables on disk
//===----------------------------------------------------------------------===//

Status saveExecutable(const Executable &executable,
                      const std::string &directory) {
  const Manifest &m = executable.manifest;
  std::string where = "saveExecutable: " + directory;
  MEMFIT_RT_RETURN_IF_ERROR(m.validate().withContext(where));
  if (executable.weights.size() > m.weightsBytes)
    return invalidArgument(where + ": weights has " +
                           std::to_string(executable.weights.size()) +
                           " bytes but the manifest says weightsBytes " +
                           std::to_string(m.weightsBytes));
  MEMFIT_RT_RETURN_IF_ERROR(makeDirectories(directory).withContext(where));

  std::string json = manifestToJson(m);
  struct File {
    std::string name;
    const void *data;
    size_t size;
    std::string temporary;
  } files[] = {
      {"manifest.json", json.data(), json.size(), ""},
      {"kernels.cu", m.source.data(), m.source.size(), ""},
      {"weights.bin", executable.weights.data(), executable.weights.size(), ""},
  };
  // Write every temporary first, then rename them all.
  auto removeTemporaries = [&] {
    for (File &f : files)
      if (!f.temporary.empty())
        std::remove(f.temporary.c_str());
  };
  for (File &f : files) {
    std::string temporary = temporarySibling(directory + "/" + f.name);
    Status written = writeFile(temporary, f.data, f.size);
    if (!written) {
      removeTemporaries();
      return written.withContext("saveExecutable");
    }
    f.temporary = temporary;
  }
  for (File &f : files) {
    Status renamed = renameFile(f.temporary, directory + "/" + f.name);
    if (!renamed) {
      removeTemporaries();
      return renamed.withContext("saveExecutable");
    }
    f.temporary.clear();
  }
  return Status::ok();
}

StatusOr<Executable> loadExecutable(const std::string &directory) {
  std::string manifestPath = directory + "/manifest.json";
  StatusOr<std::string> json = readFile(manifestPath);
  if (!json)
    return json.status().withContext("loadExecutable");
  StatusOr<Manifest> manifest = manifestFromJson(*json);
  if (!manifest)
    return manifest.status().withContext(manifestPath);
  Executable executable;
  executable.manifest = std::move(*manifest);

  StatusOr<std::string> source = readFile(directory + "/kernels.cu");
  if (!source)
    return source.status().withContext("loadExecutable");
  executable.manifest.source = std::move(*source);

  std::string weightsPath = directory + "/weights.bin";
  StatusOr<std::string> weights = readFile(weightsPath);
  if (!weights)
    return weights.status().withContext("loadExecutable");
  if (weights->size() > executable.manifest.weightsBytes)
    return invalidArgument(weightsPath + ": has " +
                           std::to_string(weights->size()) +
                           " bytes, more than the manifest's weightsBytes " +
                           std::to_string(executable.manifest.weightsBytes));
  executable.weights.assign(weights->begin(), weights->end());
  MEMFIT_RT_RETURN_IF_ERROR(
      executable.manifest.validate().withContext(manifestPath));
  return executable;
}

} // namespace memfit::rt
