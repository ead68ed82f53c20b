//===- KernelWriter.h - the writer the kernel emitters share ------*- C++ -*-===//
//
// Internal to the CUDA target. KernelWriter writes one memfit.kernel as a
// __global__ function: it picks the kernel's shape (pointwise, or the
// template of its anchor op), composes the element-wise and data-movement
// ops of a pointwise kernel through KernelEmitterOpInterface, and offers the
// ops' emitters what they write with: parameter names, loads, variables,
// launch dimensions and the block-reduction scaffolding. The helpers below
// turn shapes, types and attributes into C++ text.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_KERNELWRITER_H
#define MEMFIT_LIB_TARGET_CUDA_KERNELWRITER_H

#include "KernelEmitter.h"
#include "memfit/Dialect/RowFrame.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Target/Cuda/KernelEmitterInterface.h"

#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace mlir::memfit::cuda {

/// Threads per block of a pointwise kernel; the most of a row kernel.
constexpr int64_t kPointwiseBlock = 256;
constexpr int64_t kMaxRowBlock = 256;
/// CUDA's limit on gridDim.x.
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;

//===----------------------------------------------------------------------===//
// Text of shapes, types and attributes
//===----------------------------------------------------------------------===//

int64_t product(ArrayRef<int64_t> values);

/// A small float format that Prelude.cuh's memfit_fp_round, _encode and
/// _decode convert (see there): the 8-bit floats and FLOAT4E2M1.
struct SmallFloat {
  int ebits, mbits, bias;
  double maxValue;
  int kind; // 0 IEEE, 1 FN, 2 FNUZ, 3 no infinity or NaN
  /// "ebits, mbits, bias[, maxValue], kind" for the prelude's functions.
  std::string args(bool withMax) const;
};
std::optional<SmallFloat> smallFloatOf(Type type);
/// The format memfit_fp_round rounds to for a cast to `type`: the small
/// floats', or f16's and bf16's (held in float registers).
std::optional<SmallFloat> roundingFormatOf(Type type);
/// Whether `type` is stored as bits in a byte that kernels decode (the
/// small floats, the 4- and 2-bit integers in a byte's low bits).
bool isPackedType(Type type);

/// The C type of an element type the kernels support, as it is stored in
/// a buffer: `__half` for f16, `__nv_bfloat16` for bf16, `unsigned char`
/// for the packed types.
FailureOr<std::string> cType(Type type);
/// The type a kernel computes a value of element type `type` in: float for
/// f16, bf16 and the small floats, int for the 4- and 2-bit integers
/// (loaded with widen, stored with narrow), unsigned int for u16, cType
/// otherwise.
FailureOr<std::string> regType(Type type);
/// `access`, an element of `type` in a buffer, as its register value:
/// `__bfloat162float(access)` for bf16, `__half2float(access)` for f16,
/// decoded or sign-extended for the packed types, `access` otherwise.
std::string widen(Type type, StringRef access);
/// `access` as a value of the accumulator type `acc`: widened for f16,
/// bf16 and the packed types, `(acc)access` otherwise.
std::string loadAs(StringRef acc, Type type, StringRef access);
/// `expr`, a register value, as an element of `type` to store:
/// `__float2bfloat16_rn(expr)` for bf16, `__float2half_rn(expr)` for f16
/// (round to nearest even, as the runtime's conversions), encoded (small
/// floats: nearest even, not saturating) or masked (4- and 2-bit integers:
/// wrapping) for the packed types, `expr` otherwise.
std::string narrow(Type type, StringRef expr);
/// The accumulator type of a row or a reduction: float for f16, bf16, the
/// small floats and f32, double for f64, unsigned long long for u64, long
/// long for other integers; a diagnostic on `op` otherwise.
FailureOr<std::string> accType(Operation *op, Type type);
/// The float function for `type`: expf for f32, exp for f64.
std::string mathFn(StringRef base, Type type);
std::string floatLiteral(double value, bool isDouble);
std::string intLiteral(int64_t value);
/// A literal of `type` from an integer or float attribute.
FailureOr<std::string> literal(Attribute attr, Type type);

/// Writes `const long long <prefix><d> = ...;` coordinates of `index` in
/// `shape`, one per dimension.
void emitCoords(raw_ostream &os, ArrayRef<int64_t> shape, StringRef index,
                StringRef prefix, StringRef indent = "  ");
/// The offset into a row-major tensor of shape `in` that broadcasts to a
/// result of rank `outRank` whose coordinates are `<prefix><d>`.
std::string broadcastOffset(ArrayRef<int64_t> in, size_t outRank,
                            StringRef prefix);
/// The offset into a row-major tensor of shape `shape` at coordinates
/// `c<d>`, with the coordinate along `axis` shifted down by `begin` (a part
/// of a concat or a split).
std::string shiftedOffset(ArrayRef<int64_t> shape, int64_t axis,
                          int64_t begin);

//===----------------------------------------------------------------------===//
// KernelWriter
//===----------------------------------------------------------------------===//

class KernelWriter {
public:
  KernelWriter(KernelOp kernel, unsigned index) : kernel(kernel), index(index) {}

  /// Writes the kernel's __global__ function to `out`.
  FailureOr<rt::Kernel> emit(raw_ostream &out);

  // What the ops' emitters write with.

  /// The kernel's body, written before the signature is known.
  raw_ostream &body() { return os; }
  /// `cannot emit CUDA for '<op>': `, to be continued with the reason.
  InFlightDiagnostic error(Operation *op);
  /// The kernel's position in the executable (dropout's seed depends on it).
  unsigned kernelIndex() const { return index; }
  /// The shape a pointwise kernel iterates over (its coordinates are `c<d>`,
  /// its linear index `idx`).
  ArrayRef<int64_t> domain() const { return domainShape; }
  /// The parameter name of a kernel input (`in<n>`).
  std::string param(Value value);
  /// The scalar of `value` at the kernel's index: a kernel input loaded and
  /// broadcast to the domain, a splat constant's literal or the variable of
  /// an op already written.
  FailureOr<std::string> scalar(Value value);
  /// scalar() of each of `values`.
  FailureOr<SmallVector<std::string>> scalars(ValueRange values);
  /// The element of a kernel input at `offset`, or a splat constant's value;
  /// `user` gets the diagnostic for anything else.
  FailureOr<std::string> load(Value value, StringRef offset, Operation *user);
  /// A fresh variable name `<prefix><n>`.
  std::string freshName(StringRef prefix);

  /// One thread per element of `threads`, in blocks of kPointwiseBlock.
  void setPointwiseLaunch(int64_t threads);
  /// One block per row of `rowLength` elements.
  void setRowLaunch(int64_t rowLength, int64_t rows);
  /// One block of kMaxRowBlock threads.
  void setSingleBlockLaunch();
  /// Declares the shared scratch of the block reductions.
  void writeScratch(StringRef acc);
  /// Writes `m`, the maximum of a row of `n` elements `element` (an
  /// expression of `j`), and `s`, the sum of exp(element - m) over it.
  void writeRowMaxSum(StringRef acc, Type type, int64_t n, StringRef element);

  /// How a row kernel over a tensor of some shape finds the elements of
  /// its row: reduced dimensions trailing (row r is one contiguous run),
  /// or the reduced dimensions' shape and strides.
  struct RowIndexing {
    bool trailing = true;
    Shape redShape, redStrides;
  };
  /// Writes `row` (the block) and `base`, the offset of the row's first
  /// element in a tensor of `shape` whose `reduced` dimensions a row spans.
  RowIndexing writeRowBase(ArrayRef<int64_t> shape, ArrayRef<bool> reduced);
  /// The offset from `base` of the row's element `j` (inside the loop over
  /// j; writes its coordinates `r<d>` first when they are needed).
  std::string writeRowOffset(const RowIndexing &indexing, StringRef indent);

private:
  /// The single op of a row, reduction or loss kernel, or null for a
  /// pointwise kernel.
  FailureOr<Operation *> findAnchor();
  LogicalResult writeSignature(raw_ostream &out);
  LogicalResult emitPointwise();
  /// A pointwise kernel of several segments (kSegmentsAttr): each block
  /// updates a chunk of one segment, its threads striding over it.
  LogicalResult emitSegments(ArrayRef<int64_t> sizes);
  /// A row kernel (rowFrameOf): reductions with their element-wise
  /// prologues and epilogues, one block per row.
  LogicalResult emitRowProgram(const RowFrame &frame);
  /// Inside a loop over a row's elements: defines `value`, a full value,
  /// after the full values it needs.
  LogicalResult defineFull(Value value);
  /// defineFull, then the value's scalar.
  FailureOr<std::string> fullScalar(Value value);
  /// A pointwise kernel that ends in quantize ops (EmitStyle::Blockwise):
  /// one thread block per quantization block.
  LogicalResult emitBlockwise(MutableArrayRef<QuantizeOp> quantizes);
  LogicalResult emitScalarOp(Operation *op);
  std::string define(Value value, StringRef expr);
  void collectNodeNamesInto(Location loc);

  KernelOp kernel;
  unsigned index;
  std::string text;
  llvm::raw_string_ostream os{text};
  rt::Kernel info;
  /// Blocks of the 1-D grid; checked against CUDA's limit before it goes
  /// into the manifest.
  int64_t gridBlocks = 1;
  Shape domainShape;
  DenseMap<Value, std::string> names;
  /// The row values of a row kernel, defined once per block: they may be
  /// read where the domain is the full shape.
  llvm::SmallPtrSet<Value, 8> rowValues;
  /// A row kernel's normalizations and softmaxes: the row statistics their
  /// elements are computed from (layer_norm: mean and 1/std; rms_norm:
  /// 1/rms; softmax: max and sum of exp; log_softmax: max + log(sum)), in
  /// the accumulator type.
  struct RowStats {
    std::string acc, shift, scale;
  };
  DenseMap<Operation *, RowStats> rowStats;
  unsigned nextVar = 0;
};

//===----------------------------------------------------------------------===//
// External models of KernelEmitterOpInterface
//===----------------------------------------------------------------------===//

/// The base of the ElementWise and IndexMapping models: no template.
template <typename Model, typename OpTy>
struct ScalarEmitterModel
    : KernelEmitterOpInterface::ExternalModel<Model, OpTy> {
  LogicalResult emitTemplate(Operation *op, KernelWriter &writer) const {
    return writer.error(op) << "no kernel template", failure();
  }
};

/// The base of the Template models: no scalar expression.
template <typename Model, typename OpTy>
struct TemplateEmitterModel
    : KernelEmitterOpInterface::ExternalModel<Model, OpTy> {
  EmitStyle getEmitStyle(Operation *) const { return EmitStyle::Template; }
  FailureOr<std::string> emitScalar(Operation *op, KernelWriter &writer,
                                    ArrayRef<std::string>) const {
    return writer.error(op) << "no element-wise template", failure();
  }
};

/// The Template model of OpTy: `Emit`, one of its file's overloads, writes
/// the kernel.
template <typename OpTy, LogicalResult (*Emit)(OpTy, KernelWriter &)>
struct TemplateModel
    : TemplateEmitterModel<TemplateModel<OpTy, Emit>, OpTy> {
  LogicalResult emitTemplate(Operation *op, KernelWriter &writer) const {
    return Emit(cast<OpTy>(op), writer);
  }
};

/// QuantEmitters.cpp: the code of `value` in a block whose absmax is
/// `absmax` under `scheme`, as a C expression of type unsigned char.
std::string quantEncodeExpr(QuantScheme scheme, StringRef value,
                            StringRef absmax);

/// The attach functions of the files that hold the models.
void attachPointwiseEmitters(MLIRContext *context); // PointwiseEmitters.cpp
void attachRowEmitters(MLIRContext *context);       // RowEmitters.cpp
void attachLossEmitters(MLIRContext *context);      // LossEmitters.cpp
void attachSpecialEmitters(MLIRContext *context);   // SpecialEmitters.cpp
void attachQuantEmitters(MLIRContext *context);     // QuantEmitters.cpp

} // namespace mlir::memfit::cuda

#endif // MEMFIT_LIB_TARGET_CUDA_KERNELWRITER_H
