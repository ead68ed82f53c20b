//===- OnnxExport.cpp - trained weights back into the ONNX model ----------===//
//
// See OnnxExport.h. The graph is the source's, untouched; only initializer
// data changes.
//
//===----------------------------------------------------------------------===//

#include "memfit/Import/OnnxExport.h"
#include "ImporterImpl.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

using namespace mlir::memfit;

namespace {

/// Initializers above this total go to a data file (protobuf: 2 GiB).
constexpr uint64_t kInlineLimit = uint64_t(3) << 29; // 1.5 GiB
/// Initializers smaller than this stay inline in a data-file export.
constexpr uint64_t kExternalMinimum = 1024;

struct Exporter {
  std::string source, output, error;
  std::string sourceDir;
  onnx::ModelProto model;
  std::map<std::string, onnx::TensorProto *> initializers;

  bool fail(const std::string &message) {
    error = message;
    return false;
  }

  int64_t elements(const onnx::TensorProto &t) const {
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    return n;
  }

  /// The raw little-endian bytes of a tensor stored as raw or external
  /// data (how exporters store weights), or nothing.
  std::optional<std::string> rawBytes(const onnx::TensorProto &t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) {
      if (t.has_raw_data())
        return t.raw_data();
      return std::nullopt;
    }
    llvm::Expected<std::string> bytes =
        onnx_import::readExternalData(t, sourceDir);
    if (!bytes) {
      llvm::consumeError(bytes.takeError());
      return std::nullopt;
    }
    return std::move(*bytes);
  }

  /// An f32 initializer's values (raw, external or float_data).
  std::optional<std::vector<float>> floats(const onnx::TensorProto &t) {
    if (t.data_type() != onnx::TensorProto::FLOAT)
      return std::nullopt;
    std::vector<float> values(elements(t));
    if (std::optional<std::string> raw = rawBytes(t)) {
      if (raw->size() != values.size() * sizeof(float))
        return std::nullopt;
      std::memcpy(values.data(), raw->data(), raw->size());
      return values;
    }
    if (t.float_data_size() != static_cast<int>(values.size()))
      return std::nullopt;
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = t.float_data(i);
    return values;
  }

  static void setFloats(onnx::TensorProto &t, const std::vector<float> &v) {
    t.clear_float_data();
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    t.set_raw_data(std::string(reinterpret_cast<const char *>(v.data()),
                               v.size() * sizeof(float)));
  }

  bool read() {
    sourceDir = llvm::sys::path::parent_path(source).str();
    auto buffer = llvm::MemoryBuffer::getFile(source, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return fail(source + ": " + buffer.getError().message());
    llvm::StringRef bytes = (*buffer)->getBuffer();
    google::protobuf::io::CodedInputStream stream(
        reinterpret_cast<const uint8_t *>(bytes.data()),
        static_cast<int>(bytes.size()));
    stream.SetTotalBytesLimit(std::numeric_limits<int>::max());
    if (!model.ParseFromCodedStream(&stream) || !model.has_graph())
      return fail(source + ": not an ONNX model");
    for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer())
      initializers[t.name()] = &t;
    return true;
  }

  /// The final values of every trained or merged initializer, by name.
  bool apply(const std::vector<TrainedTensor> &trained,
             const std::vector<LoraMerge> &merges) {
    std::map<std::string, std::vector<float>> updated;
    for (const TrainedTensor &t : trained) {
      auto it = initializers.find(t.name);
      if (it == initializers.end())
        return fail(source + ": the model has no initializer '" + t.name +
                    "' for the trained parameter of that name");
      if (it->second->data_type() != onnx::TensorProto::FLOAT ||
          elements(*it->second) != static_cast<int64_t>(t.values.size()))
        return fail(source + ": initializer '" + t.name +
                    "' is not an f32 tensor of " +
                    std::to_string(t.values.size()) + " values");
      updated[t.name] = t.values;
    }
    for (const LoraMerge &m : merges) {
      auto it = initializers.find(m.base);
      if (it == initializers.end())
        return fail(source + ": the model has no initializer '" + m.base +
                    "', the weight a LoRA adapter adapts");
      std::optional<std::vector<float>> base = floats(*it->second);
      if (!base || base->size() != static_cast<size_t>(m.in * m.out) ||
          m.a.size() != static_cast<size_t>(m.rank * m.in) ||
          m.b.size() != static_cast<size_t>(m.out * m.rank))
        return fail(source + ": initializer '" + m.base + "' is not the f32 " +
                    std::to_string(m.in) + "x" + std::to_string(m.out) +
                    " weight its LoRA adapter adapts");
      // delta[o][i] = scale * sum_k B[o][k] A[k][i], in double.
      for (int64_t o = 0; o < m.out; ++o)
        for (int64_t i = 0; i < m.in; ++i) {
          double sum = 0;
          for (int64_t k = 0; k < m.rank; ++k)
            sum += double(m.b[o * m.rank + k]) * double(m.a[k * m.in + i]);
          float &w =
              m.transposed ? (*base)[o * m.in + i] : (*base)[i * m.out + o];
          w = static_cast<float>(double(w) + m.scale * sum);
        }
      updated[m.base] = std::move(*base);
    }
    // Transposed copies of an updated weight (re-tied by
    // memfit-tie-parameters) follow it.
    std::map<std::string, std::vector<float>> copies;
    // Each updated weight's source values, read once.
    std::map<std::string, std::optional<std::vector<float>>> originals;
    for (auto &[name, tensor] : initializers) {
      if (updated.count(name) || tensor->dims_size() != 2)
        continue;
      std::optional<std::vector<float>> values;
      for (auto &[from, newValues] : updated) {
        const onnx::TensorProto &s = *initializers[from];
        if (s.dims_size() != 2 || s.dims(0) != tensor->dims(1) ||
            s.dims(1) != tensor->dims(0))
          continue;
        if (!values && !(values = floats(*tensor)))
          break;
        auto [it, fresh] = originals.try_emplace(from);
        if (fresh)
          it->second = floats(s);
        const std::optional<std::vector<float>> &original = it->second;
        int64_t rows = s.dims(0), cols = s.dims(1);
        bool tied = original.has_value();
        for (int64_t r = 0; tied && r < rows; ++r)
          for (int64_t c = 0; tied && c < cols; ++c)
            tied = std::memcmp(&(*values)[c * rows + r],
                               &(*original)[r * cols + c], sizeof(float)) == 0;
        if (!tied)
          continue;
        std::vector<float> transposed(newValues.size());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            transposed[c * rows + r] = newValues[r * cols + c];
        copies[name] = std::move(transposed);
        break;
      }
    }
    updated.merge(copies);
    for (auto &[name, values] : updated)
      setFloats(*initializers[name], values);
    return true;
  }

  /// Writes `bytes` to `path` through a temporary renamed into place.
  bool writeAtomically(const std::string &path, const std::string &bytes) {
    std::string temporary =
        path + ".tmp-" + std::to_string(llvm::sys::Process::getProcessId());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.flush();
      if (!out) {
        llvm::sys::fs::remove(temporary);
        return fail(path + ": cannot write " + temporary);
      }
    }
    if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
      llvm::sys::fs::remove(temporary);
      return fail(path + ": cannot rename " + temporary + ": " + ec.message());
    }
    return true;
  }

  bool write(bool externalData) {
    uint64_t total = 0;
    for (auto &[name, t] : initializers) {
      // Data the source kept in its own files is read in.
      if (t->data_location() == onnx::TensorProto::EXTERNAL) {
        std::optional<std::string> raw = rawBytes(*t);
        if (!raw)
          return fail(source +
                      ": cannot read the external data of "
                      "initializer '" +
                      name + "'");
        t->clear_external_data();
        t->set_data_location(onnx::TensorProto::DEFAULT);
        t->set_raw_data(std::move(*raw));
      }
      total += t->raw_data().size();
    }
    if (externalData || total > kInlineLimit) {
      std::string dataName = llvm::sys::path::filename(output).str() + ".data";
      std::string data;
      for (auto &[name, t] : initializers) {
        if (t->raw_data().size() < kExternalMinimum)
          continue;
        uint64_t offset = data.size();
        data += t->raw_data();
        t->clear_raw_data();
        t->set_data_location(onnx::TensorProto::EXTERNAL);
        auto add = [&](const char *key, const std::string &value) {
          onnx::StringStringEntryProto *entry = t->add_external_data();
          entry->set_key(key);
          entry->set_value(value);
        };
        add("location", dataName);
        add("offset", std::to_string(offset));
        add("length", std::to_string(data.size() - offset));
      }
      llvm::SmallString<256> dataPath(llvm::sys::path::parent_path(output));
      llvm::sys::path::append(dataPath, dataName);
      if (!writeAtomically(dataPath.str().str(), data))
        return false;
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes))
      return fail(output + ": the model does not serialize (over 2 GiB "
                           "inline?)");
    return writeAtomically(output, bytes);
  }
};

} // namespace

std::string mlir::memfit::exportTrainedOnnx(
    const std::string &source, const std::string &output,
    const std::vector<TrainedTensor> &trained,
    const std::vector<LoraMerge> &merges, const OnnxExportOptions &options) {
  Exporter e;
  e.source = source;
  e.output = output;
  if (!e.read() || !e.apply(trained, merges) || !e.write(options.externalData))
    return e.error;
  return "";
}
