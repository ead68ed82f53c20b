//===- Checkpoint.cpp - variables of a session saved to and loaded from disk -===//
//
// A checkpoint is one file:
//
//   memfit-checkpoint <H>\n      the magic line; H is the header's size
//   <H bytes of JSON>            the header (below)
//   <data>                       the variables' bytes, back to back
//
// The header is {"format": "memfit-checkpoint", "version": 1, "model",
// "dataBytes", "variables": [{"name", "kind", "dtype", "shape", "offset",
// "bytes", "fnv1a64"}]}, offsets counted from the first byte of the data and
// fnv1a64 the 64-bit FNV-1a hash of the variable's bytes in hex. Frozen
// parameters are not saved: they never change.
//
// The file is written through a DurableFileWriter (a temporary sibling,
// fsync, rename, fsync of the folder): a process killed at any instant of a
// save leaves the previous checkpoint whole. For the tests that kill a
// writer on purpose, MEMFIT_TEST_CHECKPOINT_PAUSE_MS=<ms> makes a save
// sleep that long after the header and after every variable, so a kill lands
// inside the write.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Checkpoint.h"
#include "memfit/runtime/Session.h"

#include "Files.h"
#include "Hash.h"
#include "Json.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>

namespace memfit::rt {

namespace {

constexpr const char *kMagic = "memfit-checkpoint";
constexpr int kCheckpointVersion = 1;

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A member of a header object of the expected kind, or nullptr.
const JsonValue *member(const JsonValue &object, const char *name,
                        JsonValue::Kind kind) {
  const JsonValue *v = object.isObject() ? object.find(name) : nullptr;
  if (!v)
    return nullptr;
  if (v->kind() == kind)
    return v;
  return nullptr;
}

/// MEMFIT_TEST_CHECKPOINT_PAUSE_MS's sleep between the parts of a save (a
/// test's window for killing the writer); nothing when it is not set.
void pauseForTests() {
  static const long ms = [] {
    const char *text = std::getenv("MEMFIT_TEST_CHECKPOINT_PAUSE_MS");
    return text ? std::strtol(text, nullptr, 10) : 0L;
  }();
  if (ms <= 0)
    return;
  struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}


} // namespace

bool isCheckpointed(const Variable &v) {
  return v.kind != VariableKind::FrozenParameter &&
         v.kind != VariableKind::WorkingCopy;
}

Status Session::saveCheckpoint(const std::string &path) const {
  std::string where = "saveCheckpoint: " + path;
  std::vector<Tensor> tensors;
  std::vector<const Variable *> saved;
  for (const Variable &v : variables()) {
    // Frozen weights are the executable's; working copies, their masters'.
    if (!isCheckpointed(v))
      continue;
    StatusOr<Tensor> t = readVariable(v.name);
    if (!t)
      return t.status().withContext(where);
    tensors.push_back(std::move(*t));
    saved.push_back(&v);
  }

  JsonValue list = JsonValue::array();
  uint64_t offset = 0;
  for (size_t i = 0; i < saved.size(); ++i) {
    const Tensor &t = tensors[i];
    JsonValue o = JsonValue::object();
    o.set("name", saved[i]->name);
    o.set("kind", variableKindName(saved[i]->kind));
    o.set("dtype", dtypeName(t.dtype));
    JsonValue shape = JsonValue::array();
    for (int64_t d : t.shape)
      shape.push(JsonValue(d));
    o.set("shape", std::move(shape));
    o.set("offset", offset);
    o.set("bytes", uint64_t(t.data.size()));
    o.set("fnv1a64", hex64(fnv1a64(t.data.data(), t.data.size())));
    list.push(std::move(o));
    offset += t.data.size();
  }
  JsonValue header = JsonValue::object();
  header.set("format", kMagic);
  header.set("version", kCheckpointVersion);
  header.set("model", manifest().model);
  header.set("dataBytes", offset);
  header.set("variables", std::move(list));
  std::string headerText = writeJson(header) + "\n";
  std::string magic =
      std::string(kMagic) + " " + std::to_string(headerText.size()) + "\n";

  DurableFileWriter file(path);
  MEMFIT_RT_RETURN_IF_ERROR(file.open().withContext("saveCheckpoint"));
  MEMFIT_RT_RETURN_IF_ERROR(
      file.append(magic.data(), magic.size()).withContext("saveCheckpoint"));
  MEMFIT_RT_RETURN_IF_ERROR(file.append(headerText.data(), headerText.size())
                                .withContext("saveCheckpoint"));
  pauseForTests();
  for (const Tensor &t : tensors) {
    MEMFIT_RT_RETURN_IF_ERROR(file.append(t.data.data(), t.data.size())
                                  .withContext("saveCheckpoint"));
    pauseForTests();
  }
  return file.commit().withContext("saveCheckpoint");
}

const CheckpointVariable *CheckpointFile::find(const std::string &name) const {
  for (const CheckpointVariable &v : variables)
    if (v.name == name)
      return &v;
  return nullptr;
}

StatusOr<CheckpointFile> readCheckpoint(const std::string &path) {
  StatusOr<std::string> read = readFile(path);
  if (!read)
    return read.status();
  const std::string &file = *read;
  auto error = [&](const std::string &message) {
    return invalidArgument(path + ": " + message);
  };

  // The magic line and the header.
  std::string prefix = std::string(kMagic) + " ";
  size_t newline = file.find('\n');
  if (file.compare(0, prefix.size(), prefix) != 0 ||
      newline == std::string::npos || newline > 64)
    return error("not a memfit checkpoint (the first line is not '" +
                 std::string(kMagic) + " <header bytes>')");
  uint64_t headerBytes = 0;
  for (size_t i = prefix.size(); i < newline; ++i) {
    char c = file[i];
    if (c < '0' || c > '9' || headerBytes > (1ull << 40))
      return error("not a memfit checkpoint (bad header size on the first "
                   "line)");
    headerBytes = headerBytes * 10 + uint64_t(c - '0');
  }
  uint64_t headerStart = newline + 1;
  if (headerBytes > file.size() - headerStart)
    return error("truncated: the header needs " + std::to_string(headerBytes) +
                 " bytes, the file has " +
                 std::to_string(file.size() - headerStart) + " after the "
                 "first line");
  StatusOr<JsonValue> parsed =
      parseJson(file.substr(headerStart, headerBytes));
  if (!parsed)
    return error("corrupt header: " + parsed.status().message());
  const JsonValue &header = *parsed;
  const JsonValue *format = member(header, "format", JsonValue::Kind::String);
  const JsonValue *version = member(header, "version", JsonValue::Kind::Int);
  const JsonValue *dataBytes =
      member(header, "dataBytes", JsonValue::Kind::Int);
  const JsonValue *list = member(header, "variables", JsonValue::Kind::Array);
  const JsonValue *model = member(header, "model", JsonValue::Kind::String);
  if (!format || format->asString() != kMagic || !version || !dataBytes ||
      dataBytes->asInt() < 0 || !list || !model)
    return error("corrupt header: expected an object with format \"" +
                 std::string(kMagic) +
                 "\", version, model, dataBytes and variables");
  if (version->asInt() != kCheckpointVersion)
    return error("checkpoint format version " +
                 std::to_string(version->asInt()) + ", this runtime reads " +
                 std::to_string(kCheckpointVersion));
  uint64_t dataStart = headerStart + headerBytes;
  uint64_t dataSize = uint64_t(dataBytes->asInt());
  uint64_t present = file.size() - dataStart;
  if (present < dataSize)
    return error("truncated: the header lists " + std::to_string(dataSize) +
                 " bytes of data, the file has " + std::to_string(present));
  if (present > dataSize)
    return error(std::to_string(present - dataSize) +
                 " bytes past the data the header lists");

  CheckpointFile checkpoint;
  checkpoint.path = path;
  checkpoint.model = model->asString();
  for (size_t i = 0; i < list->elements().size(); ++i) {
    const JsonValue &o = list->elements()[i];
    const JsonValue *name = member(o, "name", JsonValue::Kind::String);
    const JsonValue *kind = member(o, "kind", JsonValue::Kind::String);
    const JsonValue *dtype = member(o, "dtype", JsonValue::Kind::String);
    const JsonValue *shape = member(o, "shape", JsonValue::Kind::Array);
    const JsonValue *offset = member(o, "offset", JsonValue::Kind::Int);
    const JsonValue *bytes = member(o, "bytes", JsonValue::Kind::Int);
    const JsonValue *hash = member(o, "fnv1a64", JsonValue::Kind::String);
    if (!name || !kind || !dtype || !shape || !offset || !bytes || !hash ||
        offset->asInt() < 0 || bytes->asInt() < 0)
      return error("corrupt header: variables[" + std::to_string(i) +
                   "] needs name, kind, dtype, shape, offset, bytes and "
                   "fnv1a64");
    std::string label = "variable '" + name->asString() + "'";
    if (checkpoint.find(name->asString()))
      return error(label + " appears twice");
    StatusOr<DType> type = parseDType(dtype->asString());
    if (!type)
      return error(label + ": " + type.status().message());
    std::vector<int64_t> dims;
    for (const JsonValue &d : shape->elements()) {
      if (!d.isInt() || d.asInt() < 0)
        return error(label + ": shape holds a negative or non-integer size");
      dims.push_back(d.asInt());
    }
    // The shape's bytes, counted without overflow, must be the bytes the
    // entry lists before anything is allocated for them.
    uint64_t expected = dtypeSize(*type);
    for (int64_t d : dims)
      if (d != 0 && expected > UINT64_MAX / uint64_t(d))
        return error(label + ": shape " + shapeText(dims) +
                     " is too large for any file");
      else
        expected *= uint64_t(d);
    uint64_t start = uint64_t(offset->asInt()), size = uint64_t(bytes->asInt());
    if (size != expected || start > dataSize || size > dataSize - start)
      return error(label + ": " + std::to_string(size) + " bytes at offset " +
                   std::to_string(start) + " do not fit its " +
                   std::to_string(expected) + " bytes (" +
                   dtype->asString() + " " + shapeText(dims) + ") within the " +
                   std::to_string(dataSize) + " bytes of data");
    Tensor t = Tensor::zeros(*type, dims);
    const uint8_t *data =
        reinterpret_cast<const uint8_t *>(file.data()) + dataStart + start;
    if (hash->asString() != hex64(fnv1a64(data, size)))
      return error(label + ": the data does not match its checksum (the "
                           "file is corrupt)");
    std::copy_n(data, size, t.data.data());
    checkpoint.variables.push_back(
        {name->asString(), kind->asString(), std::move(t)});
  }
  return checkpoint;
}

Status Session::loadCheckpoint(const std::string &path) {
  StatusOr<CheckpointFile> checkpoint = readCheckpoint(path);
  if (!checkpoint)
    return checkpoint.status().withContext("loadCheckpoint");
  return loadCheckpoint(*checkpoint);
}

Status Session::loadCheckpoint(const CheckpointFile &checkpoint) {
  auto error = [&](const std::string &message) {
    return invalidArgument("loadCheckpoint: " + checkpoint.path + ": " +
                           message);
  };
  // Every variable against the manifest, before anything is written.
  const Manifest &m = manifest();
  std::map<std::string, const Tensor *> saved;
  for (const CheckpointVariable &c : checkpoint.variables) {
    std::string label = "variable '" + c.name + "'";
    const Variable *v = m.findVariable(c.name);
    if (!v)
      return error(label + " is not a variable of the executable");
    if (!isCheckpointed(*v))
      return error(label + " is a " +
                   (v->kind == VariableKind::FrozenParameter
                        ? "frozen parameter"
                        : "working copy") +
                   " of the executable, which checkpoints do not hold");
    if (c.kind != variableKindName(v->kind))
      return error(label + " is of kind " + c.kind +
                   " in the checkpoint but " + variableKindName(v->kind) +
                   " in the executable");
    const Buffer &buffer = m.buffers[v->buffer];
    if (c.tensor.dtype != buffer.dtype || c.tensor.shape != buffer.shape)
      return error(label + " is " + dtypeName(c.tensor.dtype) + " " +
                   shapeText(c.tensor.shape) + " in the checkpoint but " +
                   dtypeName(buffer.dtype) + " " + shapeText(buffer.shape) +
                   " in the executable");
    saved[v->name] = &c.tensor;
  }
  for (const Variable &v : m.variables)
    if (isCheckpointed(v) && !saved.count(v.name))
      return error("variable '" + v.name + "' (" + variableKindName(v.kind) +
                   ") of the executable is missing");
  for (const auto &[name, tensor] : saved)
    MEMFIT_RT_RETURN_IF_ERROR(writeVariable(name, *tensor).withContext(
        "loadCheckpoint: " + checkpoint.path));
  return Status::ok();
}

} // namespace memfit::rt
