//===- Safetensors.cpp - read and write safetensors files -----------------===//
//
// See Safetensors.h for the format.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Safetensors.h"

#include "Files.h"
#include "Json.h"
#include "memfit/runtime/Manifest.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace memfit::rt {

namespace {

/// memfit's dtypes and safetensors' names for them.
constexpr std::pair<DType, const char *> kDTypes[] = {
    {DType::f32, "F32"},       {DType::f64, "F64"},
    {DType::f16, "F16"},       {DType::bf16, "BF16"},
    {DType::i64, "I64"},       {DType::i32, "I32"},
    {DType::i16, "I16"},       {DType::i8, "I8"},
    {DType::u64, "U64"},       {DType::u32, "U32"},
    {DType::u16, "U16"},       {DType::u8, "U8"},
    {DType::i1, "BOOL"},       {DType::f8e4m3fn, "F8_E4M3"},
    {DType::f8e5m2, "F8_E5M2"}};

const char *safetensorsName(DType type) {
  for (auto [dtype, name] : kDTypes)
    if (dtype == type)
      return name;
  return "?";
}

/// The header's size field is 8 bytes; a header beyond this is refused
/// (the reference implementation's limit is 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

} // namespace

Status writeSafetensors(const std::string &path, const NamedTensors &tensors,
                        const std::map<std::string, std::string> &metadata) {
  JsonValue header = JsonValue::object();
  if (!metadata.empty()) {
    JsonValue meta = JsonValue::object();
    for (const auto &[key, value] : metadata)
      meta.set(key, JsonValue(value));
    header.set("__metadata__", std::move(meta));
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto &[name, tensor] : tensors) {
    if (name.empty() || name == "__metadata__" || !names.insert(name).second)
      return invalidArgument(path + ": tensor name '" + name +
                             "' is empty, reserved or repeated");
    uint64_t bytes = tensor.data.size();
    if (bytes != uint64_t(tensor.numElements()) * dtypeSize(tensor.dtype))
      return invalidArgument(path + ": tensor '" + name + "' holds " +
                             std::to_string(bytes) + " bytes for " +
                             describe(tensor.dtype, tensor.shape));
    JsonValue entry = JsonValue::object();
    entry.set("dtype", JsonValue(safetensorsName(tensor.dtype)));
    JsonValue shape = JsonValue::array();
    for (int64_t d : tensor.shape)
      shape.push(JsonValue(d));
    entry.set("shape", std::move(shape));
    JsonValue offsets = JsonValue::array();
    offsets.push(JsonValue(offset));
    offsets.push(JsonValue(offset + bytes));
    entry.set("data_offsets", std::move(offsets));
    header.set(name, std::move(entry));
    offset += bytes;
  }
  std::string text = writeJson(header);
  // One line, as other writers do, padded to a multiple of 8.
  text.erase(std::remove(text.begin(), text.end(), '\n'), text.end());
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t size = text.size();
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<unsigned char>(size >> (8 * i));

  DurableFileWriter file(path);
  MEMFIT_RT_RETURN_IF_ERROR(file.open());
  MEMFIT_RT_RETURN_IF_ERROR(file.append(prefix, sizeof(prefix)));
  MEMFIT_RT_RETURN_IF_ERROR(file.append(text.data(), text.size()));
  for (const auto &[name, tensor] : tensors)
    MEMFIT_RT_RETURN_IF_ERROR(
        file.append(tensor.data.data(), tensor.data.size()));
  return file.commit();
}

StatusOr<NamedTensors> readSafetensors(const std::string &path) {
  StatusOr<std::string> content = readFile(path);
  if (!content)
    return content.status();
  const std::string &bytes = *content;
  auto bad = [&](const std::string &what) {
    return invalidArgument(path + ": not a safetensors file: " + what);
  };
  if (bytes.size() < 8)
    return bad("shorter than its 8-byte header size");
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i)
    size |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (size > kMaxHeaderBytes || size > bytes.size() - 8)
    return bad("a header of " + std::to_string(size) + " bytes in a file of " +
               std::to_string(bytes.size()));
  StatusOr<JsonValue> header = parseJson(bytes.substr(8, size));
  if (!header)
    return bad("header: " + header.status().message());
  if (!header->isObject())
    return bad("the header is not a JSON object");
  uint64_t dataBytes = bytes.size() - 8 - size;
  const char *data = bytes.data() + 8 + size;

  struct Entry {
    uint64_t begin, end;
    std::string name;
    Tensor tensor;
  };
  std::vector<Entry> entries;
  for (const auto &[name, value] : header->members()) {
    if (name == "__metadata__")
      continue;
    auto field = [&](const char *key) { return value.find(key); };
    const JsonValue *dtype = field("dtype"), *shape = field("shape"),
                    *offsets = field("data_offsets");
    if (!value.isObject() || !dtype || !dtype->isString() || !shape ||
        !shape->isArray() || !offsets || !offsets->isArray() ||
        offsets->elements().size() != 2)
      return bad("tensor '" + name +
                 "' needs dtype, shape and two data_offsets");
    Entry e;
    e.name = name;
    bool known = false;
    for (auto [type, typeName] : kDTypes)
      if (dtype->asString() == typeName) {
        e.tensor.dtype = type;
        known = true;
      }
    if (!known)
      return bad("tensor '" + name + "' has dtype " + dtype->asString() +
                 ", which memfit does not read");
    uint64_t elements = 1;
    for (const JsonValue &d : shape->elements()) {
      if (!d.isInt() || d.asInt() < 0 || d.asInt() > (int64_t(1) << 40))
        return bad("tensor '" + name + "' has a bad dimension");
      e.tensor.shape.push_back(d.asInt());
      elements *= uint64_t(d.asInt());
      if (elements > (uint64_t(1) << 48))
        return bad("tensor '" + name + "' is too large");
    }
    const JsonValue &b = offsets->elements()[0], &f = offsets->elements()[1];
    if (!b.isInt() || !f.isInt() || b.asInt() < 0 || f.asInt() < b.asInt() ||
        uint64_t(f.asInt()) > dataBytes)
      return bad("tensor '" + name + "' has data_offsets outside the data");
    e.begin = b.asInt();
    e.end = f.asInt();
    if (e.end - e.begin != elements * dtypeSize(e.tensor.dtype))
      return bad("tensor '" + name + "' has " +
                 std::to_string(e.end - e.begin) + " bytes for " +
                 describe(e.tensor.dtype, e.tensor.shape));
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.begin < b.begin; });
  uint64_t next = 0;
  for (const Entry &e : entries) {
    if (e.begin != next)
      return bad("tensor '" + e.name + "' starts at byte " +
                 std::to_string(e.begin) + ", not " + std::to_string(next) +
                 " (a gap or an overlap)");
    next = e.end;
  }
  if (next != dataBytes)
    return bad(std::to_string(dataBytes - next) +
               " bytes after the last tensor");
  NamedTensors out;
  for (Entry &e : entries) {
    e.tensor.data.assign(data + e.begin, data + e.end);
    out.emplace_back(std::move(e.name), std::move(e.tensor));
  }
  return out;
}

} // namespace memfit::rt
