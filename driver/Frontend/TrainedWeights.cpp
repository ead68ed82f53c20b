//===- TrainedWeights.cpp - trained parameters in and out of a session ----===//
//
// What memfit-run (and any front end) does with a session's trained
// parameters: export them as safetensors (every one, or the LoRA adapters
// with PEFT's names), as the source ONNX model with the trained weights
// (LoRA merged, lib/Import/OnnxExport.cpp), and load adapters back in.
//
//===----------------------------------------------------------------------===//

#include "memfit/Frontend/TrainedWeights.h"

#include "memfit/Import/OnnxExport.h"
#include "memfit/runtime/Safetensors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstring>

namespace memfit::frontend {

namespace {

/// PEFT's prefix of an adapter's name in its adapter_model.safetensors.
constexpr llvm::StringLiteral kPeftPrefix = "base_model.model.";

/// Whether a variable is one of the manifest's LoRA adapters.
bool isAdapter(const rt::Manifest &manifest, const rt::Variable &v) {
  return llvm::any_of(manifest.loraAdapters, [&](const rt::LoraAdapter &a) {
    return v.name == a.a || v.name == a.b;
  });
}

/// A parameter's value through `read`, else the session's.
rt::StatusOr<rt::Tensor> valueOf(const rt::Session &session,
                                 const ParameterReader &read,
                                 const std::string &name) {
  return read ? read(name) : session.readVariable(name);
}

} // namespace

/// Writes the trainable parameters (the LoRA adapters only, with PEFT's
/// names) to a safetensors file.
rt::Status exportParameters(const rt::Session &session, const std::string &path,
                            bool adaptersOnly, const ParameterReader &read) {
  rt::NamedTensors tensors;
  for (const rt::Variable &v : session.variables()) {
    if (v.kind != rt::VariableKind::Parameter ||
        (adaptersOnly && !isAdapter(session.manifest(), v)))
      continue;
    auto value = valueOf(session, read, v.name);
    if (!value)
      return value.status();
    tensors.emplace_back(adaptersOnly ? kPeftPrefix.str() + v.name : v.name,
                         std::move(*value));
  }
  if (tensors.empty())
    return rt::invalidArgument(path + ": the model has no " +
                               (adaptersOnly
                                    ? "LoRA adapters (train with --lora-rank)"
                                    : "trainable parameters"));
  return rt::writeSafetensors(path, tensors, {{"format", "pt"}});
}

namespace {

/// An f32 variable's values.
rt::StatusOr<std::vector<float>> floatValues(const rt::Session &session,
                                             const ParameterReader &read,
                                             const std::string &name) {
  auto tensor = valueOf(session, read, name);
  if (!tensor)
    return tensor.status();
  if (tensor->dtype != rt::DType::f32)
    return rt::invalidArgument("--export: parameter '" + name + "' is " +
                               rt::describe(tensor->dtype, tensor->shape) +
                               ", not f32");
  std::vector<float> values(tensor->numElements());
  std::memcpy(values.data(), tensor->data.data(), tensor->data.size());
  return values;
}

} // namespace

/// --export: the source ONNX model with the trained parameters, LoRA
/// adapters merged into their base weights.
rt::Status exportModel(const rt::Session &session,
                       const std::string &sourceModel, const std::string &path,
                       bool externalData, const ParameterReader &read) {
  std::vector<mlir::memfit::TrainedTensor> trained;
  for (const rt::Variable &v : session.variables()) {
    if (v.kind != rt::VariableKind::Parameter ||
        isAdapter(session.manifest(), v))
      continue;
    auto values = floatValues(session, read, v.name);
    if (!values)
      return values.status();
    trained.push_back({v.name, std::move(*values)});
  }
  std::vector<mlir::memfit::LoraMerge> merges;
  for (const rt::LoraAdapter &adapter : session.manifest().loraAdapters) {
    mlir::memfit::LoraMerge merge;
    auto a = floatValues(session, read, adapter.a);
    auto b = floatValues(session, read, adapter.b);
    if (!a || !b)
      return !a ? a.status() : b.status();
    const rt::Variable *varA = session.manifest().findVariable(adapter.a);
    const auto &shapeA = session.manifest().buffers[varA->buffer].shape;
    merge.base = adapter.base;
    merge.rank = varA->wholeRows > 0 ? varA->wholeRows : shapeA[0];
    merge.in = shapeA[1];
    merge.out = static_cast<int64_t>(b->size()) / merge.rank;
    merge.a = std::move(*a);
    merge.b = std::move(*b);
    merge.scale = adapter.scale;
    merge.transposed = adapter.transposed;
    merges.push_back(std::move(merge));
  }
  mlir::memfit::OnnxExportOptions options;
  options.externalData = externalData;
  std::string error = mlir::memfit::exportTrainedOnnx(sourceModel, path, trained,
                                                      merges, options);
  if (!error.empty())
    return rt::invalidArgument(error);
  return rt::Status::ok();
}

/// --load-adapters: sets trainable parameters from a safetensors file,
/// after checking every tensor (so on error nothing changed).
rt::Status loadParameters(rt::Session &session, const std::string &path) {
  auto tensors = rt::readSafetensors(path);
  if (!tensors)
    return tensors.status();
  std::vector<std::pair<std::string, rt::Tensor *>> writes;
  for (auto &[name, tensor] : *tensors) {
    llvm::StringRef key(name);
    key.consume_front(kPeftPrefix);
    const rt::Variable *var = nullptr;
    for (const rt::Variable &v : session.variables())
      if (v.name == key && v.kind == rt::VariableKind::Parameter)
        var = &v;
    if (!var)
      return rt::invalidArgument(path + ": tensor '" + name +
                                 "' names no trainable parameter of the model");
    const rt::Buffer &buffer = session.manifest().buffers[var->buffer];
    if (buffer.dtype != tensor.dtype || buffer.shape != tensor.shape)
      return rt::invalidArgument(path + ": tensor '" + name + "' is " +
                                 rt::describe(tensor.dtype, tensor.shape) +
                                 ", the parameter " +
                                 rt::describe(buffer.dtype, buffer.shape));
    writes.emplace_back(var->name, &tensor);
  }
  for (auto &[name, tensor] : writes)
    MEMFIT_RT_RETURN_IF_ERROR(session.writeVariable(name, *tensor));
  return rt::Status::ok();
}

} // namespace memfit::frontend
