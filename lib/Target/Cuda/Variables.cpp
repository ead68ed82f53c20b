//===- Variables.cpp - the manifest's variables and the weights blob -------===//
//
// See ManifestValues.h.
//
//===----------------------------------------------------------------------===//

#include "ManifestValues.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstring>

using namespace mlir;
using namespace mlir::memfit;
namespace rt = ::memfit::rt;

LogicalResult cuda::fillWeights(ModuleOp module, const ModulePlan &modulePlan,
                                std::vector<uint8_t> &weights) {
  // Zero-initialized states lie past the initialized prefix; the runtime
  // zero-fills them. The masters kept in host memory follow, as the host
  // region's initialized prefix.
  const int64_t device = modulePlan.initializedWeightsBytes;
  weights.assign(device + modulePlan.initializedHostBytes, 0);
  for (auto param : module.getOps<ParameterOp>()) {
    int64_t bytes = tensorBytes(param.getType());
    int64_t at = -1;
    if (auto it = modulePlan.parameterOffsets.find(param.getSymName());
        it != modulePlan.parameterOffsets.end() &&
        it->second + bytes <= device)
      at = it->second;
    if (auto it = modulePlan.hostOffsets.find(param.getSymName());
        it != modulePlan.hostOffsets.end() &&
        it->second + bytes <= modulePlan.initializedHostBytes)
      at = device + it->second;
    if (at >= 0 && failed(writeElements(param.getValue(), param,
                                        weights.data() + at, bytes)))
      return failure();
  }
  for (const MemoryPlan &functionPlan : modulePlan.functions)
    for (const PlannedBuffer &buffer : functionPlan.buffers)
      if (auto constant = buffer.value.getDefiningOp<ConstantOp>())
        if (buffer.region == BufferRegion::Weights &&
            failed(writeElements(constant.getValue(), constant,
                                 weights.data() + buffer.offset,
                                 buffer.bytes)))
          return failure();
  return success();
}

/// Every parameter with a training role becomes a named variable that
/// sessions read, write and checkpoint.
LogicalResult cuda::addVariables(ModuleOp module, const ModulePlan &modulePlan,
                                 rt::Manifest &manifest) {
  for (auto param : module.getOps<ParameterOp>()) {
    StringRef role = parameterRole(param);
    auto it = modulePlan.parameterOffsets.find(param.getSymName());
    auto host = modulePlan.hostOffsets.find(param.getSymName());
    bool inHost = host != modulePlan.hostOffsets.end();
    if (role.empty() || (it == modulePlan.parameterOffsets.end() && !inHost))
      continue;
    rt::VariableKind kind = rt::VariableKind::Parameter;
    if (role == kRoleFrozen)
      kind = rt::VariableKind::FrozenParameter;
    else if (role == kRoleOptimizerState)
      kind = rt::VariableKind::OptimizerState;
    else if (role == kRoleGradientAccumulator)
      kind = rt::VariableKind::GradientAccumulator;
    else if (role == kRoleCounter)
      kind = rt::VariableKind::Counter;
    else if (role == kRoleWorkingCopy)
      kind = rt::VariableKind::WorkingCopy;
    RankedTensorType type = param.getType();
    FailureOr<rt::DType> dtype = toDType(type.getElementType());
    if (failed(dtype))
      return param.emitError() << "the runtime has no element type for "
                               << type;
    rt::Buffer buffer;
    buffer.name = param.getSymName().str();
    buffer.region = inHost ? rt::Region::Host : rt::Region::Weights;
    buffer.offset = inHost ? host->second : it->second;
    buffer.bytes = tensorBytes(type);
    buffer.dtype = *dtype;
    buffer.shape.assign(type.getShape().begin(), type.getShape().end());
    manifest.buffers.push_back(std::move(buffer));
    manifest.variables.push_back(
        {param.getSymName().str(),
         static_cast<uint32_t>(manifest.buffers.size() - 1), kind});
    if (auto of = param->getAttrOfType<FlatSymbolRefAttr>(kWorkingCopyOfAttr))
      manifest.variables.back().workingCopyOf = of.getValue().str();
    // ZeRO stage 3: the rank's rows of a parameter, which counts whole.
    int64_t elements = type.getNumElements();
    if (auto whole = param->getAttrOfType<IntegerAttr>(kWholeRowsAttr);
        whole && type.getRank() > 0 && type.getDimSize(0) > 0) {
      manifest.variables.back().wholeRows = whole.getInt();
      elements = elements / type.getDimSize(0) * whole.getInt();
    }
    if (kind == rt::VariableKind::Parameter)
      manifest.trainableParameters += elements;
    if (auto of = param->getAttrOfType<StringAttr>(kLoraOfAttr);
        of && param->getAttrOfType<StringAttr>(kLoraAttr).getValue() == "A") {
      StringRef a = param.getSymName();
      rt::LoraAdapter adapter;
      adapter.a = a.str();
      adapter.b = (a.drop_back(strlen("A.weight")) + "B.weight").str();
      adapter.base = of.getValue().str();
      if (auto scale = param->getAttrOfType<FloatAttr>(kLoraScaleAttr))
        adapter.scale = scale.getValueAsDouble();
      if (auto t = param->getAttrOfType<BoolAttr>(kLoraTransposedAttr))
        adapter.transposed = t.getValue();
      manifest.loraAdapters.push_back(std::move(adapter));
    }
    if (kind == rt::VariableKind::FrozenParameter) {
      // A quantized weight counts its values: two per byte of 4-bit codes
      // (ui8), one per int8 code; its scales none.
      auto quantized = param->getAttrOfType<StringAttr>(kQuantizedAttr);
      if (!quantized)
        manifest.frozenParameters += type.getNumElements();
      else if (quantized.getValue() == "weight_codes") {
        uint64_t values = type.getNumElements() *
                          (type.getElementType().isUnsignedInteger(8) ? 2 : 1);
        manifest.frozenParameters += values;
        manifest.quantizedParameters += values;
      }
    }
  }
  return success();
}

