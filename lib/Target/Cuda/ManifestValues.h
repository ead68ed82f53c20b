//===- ManifestValues.h - what the manifest records of values ---*- C++ -*-===//
//
// Internal to the CUDA target. What the executable's manifest records of
// MLIR values: an element type as the runtime's DType, a parameter's or
// constant's elements as bytes of the weights blob, and a buffer's name.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_MANIFESTVALUES_H
#define MEMFIT_LIB_TARGET_CUDA_MANIFESTVALUES_H

#include "memfit/runtime/Manifest.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Value.h"

#include <string>

namespace mlir::memfit {
struct ModulePlan;
} // namespace mlir::memfit

namespace mlir::memfit::cuda {

/// The runtime's DType of an element type, or failure where it has none.
FailureOr<::memfit::rt::DType> toDType(Type type);

/// Copies the elements of a parameter or constant (`op`, for diagnostics)
/// into the weights blob at `dst`, `bytes` of them.
LogicalResult writeElements(ElementsAttr attr, Operation *op, uint8_t *dst,
                            int64_t bytes);

/// The weights blob: the weights region's initialized prefix (parameters
/// and constants with data), then the host region's (the masters kept in
/// host memory).
LogicalResult fillWeights(ModuleOp module, const ModulePlan &modulePlan,
                          std::vector<uint8_t> &weights);

/// Every parameter with a training role becomes a named variable that
/// sessions read, write and checkpoint; also counts the trainable and
/// frozen parameters and lists the LoRA adapters.
LogicalResult addVariables(ModuleOp module, const ModulePlan &modulePlan,
                           ::memfit::rt::Manifest &manifest);

/// A buffer's name: the ONNX input's, the parameter's, or the first ONNX
/// node of the op that writes it (with #i for its i-th result).
std::string describeValue(Value value);

} // namespace mlir::memfit::cuda

#endif // MEMFIT_LIB_TARGET_CUDA_MANIFESTVALUES_H
