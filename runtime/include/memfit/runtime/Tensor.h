//===- Tensor.h - host tensors and .npy files -------------------*- C++ -*-===//

#ifndef MEMFIT_RUNTIME_TENSOR_H
#define MEMFIT_RUNTIME_TENSOR_H

#include "memfit/runtime/Manifest.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memfit::rt {

/// A dense row-major tensor in host memory.
struct Tensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; // numElements() * dtypeSize(dtype) bytes

  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  int64_t numElements() const;
  template <typename T> T *as() { return reinterpret_cast<T *>(data.data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(data.data());
  }
};

/// A dense row-major tensor in memory someone else owns (a NumPy array or
/// a torch tensor under the Python package): what Session::setInput reads
/// without a copy of its own.
struct TensorView {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  size_t bytes = 0;

  TensorView() = default;
  TensorView(DType dtype, std::vector<int64_t> shape, const void *data,
             size_t bytes)
      : dtype(dtype), shape(std::move(shape)),
        data(static_cast<const uint8_t *>(data)), bytes(bytes) {}
  TensorView(const Tensor &t) // NOLINT: a tensor is a view of itself
      : TensorView(t.dtype, t.shape, t.data.data(), t.data.size()) {}
};

/// "2x16xf32"-style description for messages.
std::string describe(DType dtype, const std::vector<int64_t> &shape);

/// Reads a NumPy .npy file (format 1.0-3.0, little-endian, C order) of a
/// dtype the runtime knows (bool reads as i1). Raw bytes ('|V1', '|V2': an
/// ml_dtypes array) read as `opaque` when that is a type NumPy has no dtype
/// of and its elements have that size (dtypeIsOpaqueToNumpy).
StatusOr<Tensor> readNpy(const std::string &path,
                         std::optional<DType> opaque = std::nullopt);
/// Writes a .npy file (format 1.0) through a temporary renamed into place;
/// the types NumPy has no dtype of as raw bytes ('|V1', '|V2'), which
/// `numpy.load(path).view(ml_dtypes.bfloat16)` (or float8_e4m3fn, ...) reads.
Status writeNpy(const std::string &path, const Tensor &tensor);

/// Fills `tensor` with reproducible values from `seed`: floats uniform in
/// [-1, 1), integers uniform in [0, intHigh), bools uniform.
void fillRandom(Tensor &tensor, uint64_t seed, int64_t intHigh);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_TENSOR_H
