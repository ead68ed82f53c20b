//===- OnnxExport.h - trained weights back into the ONNX model --*- C++ -*-===//
//
// Writes the model a user trained with memfit as ONNX: the original graph,
// its initializers replaced by the trained values, LoRA adapters merged
// into the weights they adapt, and the transposed copies of a trained
// weight (that memfit-tie-parameters re-tied) updated with it. Depends on
// ONNX's protobuf only inside the library.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_IMPORT_ONNXEXPORT_H
#define MEMFIT_IMPORT_ONNXEXPORT_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::memfit {

/// A trained f32 parameter, named as its ONNX initializer.
struct TrainedTensor {
  std::string name;
  std::vector<float> values;
};

/// A LoRA adapter to merge: base += scale * B A ([out, in], when the base
/// is stored so: `transposed`), else base += scale * (B A)^T ([in, out]).
/// A is [rank, in], B is [out, rank], row-major.
struct LoraMerge {
  std::string base;
  std::vector<float> a, b;
  int64_t rank = 0, in = 0, out = 0;
  double scale = 1.0;
  bool transposed = false;
};

struct OnnxExportOptions {
  /// Initializers in a side file (`<output>.data`, ONNX external data)
  /// even when the model is small; it always is when the initializers add
  /// up to more than 1.5 GiB (protobuf's limit is 2 GiB).
  bool externalData = false;
};

/// Reads `source`, applies `trained` and `merges`, and writes `output`
/// (and its data file) through temporaries renamed into place. Returns ""
/// or a message that names the file and the initializer.
std::string exportTrainedOnnx(const std::string &source,
                              const std::string &output,
                              const std::vector<TrainedTensor> &trained,
                              const std::vector<LoraMerge> &merges,
                              const OnnxExportOptions &options = {});

} // namespace mlir::memfit

#endif // MEMFIT_IMPORT_ONNXEXPORT_H
