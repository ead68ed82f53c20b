//===- Manifest.h - the executable the compiler hands the runtime -*- C++ -*-===//
//
// The manifest is the contract between the compiler and the runtime, and its
// schema is owned here. An executable is a manifest, the CUDA C++ source of
// its kernels and a weights blob. On disk it is a directory:
//
//   manifest.json   this structure as JSON (schema "memfit-executable", v1)
//   kernels.cu      Manifest::source
//   weights.bin     the initial contents of the weights region
//
// Device memory is one allocation of totalBytes(): the weights region
// [0, weightsBytes) followed, at arenaOffset(), by the arena of
// arenaBytes that holds inputs, outputs and every intermediate value at
// the offsets the compiler's memory plan chose. Buffers of the same region
// may share offsets when their lifetimes do not overlap, and views
// (reshapes) share the offset of the value they view.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_MANIFEST_H
#define MEMFIT_RUNTIME_MANIFEST_H

#include "memfit/runtime/Status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace memfit::rt {

/// Element types. `i1` is stored as one byte (0 or 1) per element.
enum class DType { f32, f64, f16, bf16, i64, i32, i8, u8, i1 };

size_t dtypeSize(DType type);
const char *dtypeName(DType type);
/// Parses the names dtypeName prints ("f32", "i64", ...).
StatusOr<DType> parseDType(const std::string &name);

enum class Region { Weights, Arena };

/// Alignment of every buffer offset and of the arena, in bytes.
constexpr uint64_t kBufferAlignment = 256;

struct Buffer {
  std::string name;   // the IR value or ONNX tensor it holds, for messages
  Region region = Region::Arena;
  uint64_t offset = 0; // within its region
  uint64_t bytes = 0;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
};

/// One __global__ function of Manifest::source. Its parameters are the
/// device pointers of the buffers a kernel step passes, in order.
struct Kernel {
  std::string name;                 // extern "C" name in the source
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;         // dynamic shared memory (static is in the source)
  bool usesBarriers = false;        // __syncthreads or warp shuffles
  std::vector<std::string> onnxNodes; // the ONNX nodes it computes
};

/// out[b] = alpha * op(A[b]) x op(B[b]) + beta * out[b], row-major, for every
/// batch index b of batchShape. A is [m, k] ([k, m] when transA), B is
/// [k, n] ([n, k] when transB), out is [m, n] and contiguous over batches.
/// batchStridesA/B give, per batch dimension, the element stride of A/B
/// (0 where that operand is broadcast).
struct Contraction {
  std::string name;
  DType dtype = DType::f32;
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  float alpha = 1.0f, beta = 0.0f;
  std::vector<int64_t> batchShape;
  std::vector<int64_t> batchStridesA, batchStridesB;
  std::vector<std::string> onnxNodes;
};

enum class StepKind { Kernel, Contraction };

/// One entry of the call sequence. Kernel steps pass `buffers` as the
/// kernel's parameters; contraction steps pass {A, B, out}.
struct Step {
  StepKind kind = StepKind::Kernel;
  uint32_t index = 0; // into kernels or contractions
  std::vector<uint32_t> buffers;
};

/// A graph input or output and the buffer that holds it.
struct Binding {
  std::string name;
  uint32_t buffer = 0;
};

/// One line of the memory plan's breakdown ("weights", "inputs",
/// "activations", ...). Categories of the arena add up to more than
/// arenaBytes when buffers share space; peak is what counts.
struct MemoryCategory {
  std::string name;
  uint64_t bytes = 0;
};

struct Manifest {
  static constexpr int kVersion = 1;
  std::string model;       // the model file it was compiled from
  std::string source;      // CUDA C++ of every kernel
  uint64_t weightsBytes = 0;
  uint64_t arenaBytes = 0; // the plan's peak
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Contraction> contractions;
  std::vector<Step> steps;
  std::vector<Binding> inputs, outputs;
  std::vector<MemoryCategory> memory;

  uint64_t arenaOffset() const {
    return (weightsBytes + kBufferAlignment - 1) / kBufferAlignment *
           kBufferAlignment;
  }
  /// The size of the one device allocation a session makes.
  uint64_t totalBytes() const { return arenaOffset() + arenaBytes; }
  /// Checks indices, offsets and sizes against each other.
  Status validate() const;
};

/// A manifest and the initial contents of the weights region
/// (weights.size() == manifest.weightsBytes).
struct Executable {
  Manifest manifest;
  std::vector<uint8_t> weights;
};

/// JSON text of the manifest without its source (which goes to kernels.cu).
std::string manifestToJson(const Manifest &manifest);
/// Parses manifestToJson's output; the source is left empty. Errors name
/// the field that is wrong.
StatusOr<Manifest> manifestFromJson(const std::string &json);

/// Writes manifest.json, kernels.cu and weights.bin into `directory`
/// (created if missing). Files are written to temporaries and renamed, so a
/// failure leaves no half-written executable.
Status saveExecutable(const Executable &executable, const std::string &directory);
StatusOr<Executable> loadExecutable(const std::string &directory);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_MANIFEST_H
