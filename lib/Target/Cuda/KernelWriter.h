//===- KernelWriter.h - the writer the kernel emitters share ----*- C++ -*-===//
//
// Internal to the CUDA target; the header the ops' emitters include.
// KernelWriter writes one memfit.kernel as a __global__ function: it picks
// the kernel's shape (pointwise, a fused row kernel, or the template of its
// anchor op), composes the element-wise and data-movement ops of a
// pointwise kernel through KernelEmitterOpInterface, and offers the ops'
// emitters what they write with: parameter names, loads, variables, launch
// dimensions and the block-reduction scaffolding. Its members are defined
// by what they do:
//  - KernelWriter.cpp: the kernel's shape, signature and name; the
//    composition of a pointwise kernel's ops;
//  - RowProgram.cpp: fused row kernels;
//  - QuantEmitters.cpp: pointwise kernels that end in quantize ops;
//  - Launch.cpp, Indexing.cpp: launches, block reductions, row indexing.
// ElementTypes.h, Indexing.h and Launch.h turn types, shapes and launches
// into C++ text.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_KERNELWRITER_H
#define MEMFIT_LIB_TARGET_CUDA_KERNELWRITER_H

#include "ElementTypes.h"
#include "Indexing.h"
#include "KernelEmitter.h"
#include "KernelEmitterInterface.h"
#include "Launch.h"
#include "memfit/Dialect/RowFrame.h"
#include "memfit/Dialect/ShapeInference.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <optional>
#include <string>

namespace mlir::memfit::cuda {

class KernelWriter {
public:
  KernelWriter(KernelOp kernel, unsigned index) : kernel(kernel), index(index) {}

  /// Writes the kernel's __global__ function to `out`.
  FailureOr<rt::Kernel> emit(raw_ostream &out);

  // What the ops' emitters write with.

  /// The kernel's body, written before the signature is known.
  raw_ostream &body() { return os; }
  /// `cannot emit CUDA for '<op>': `, to be continued with the reason.
  InFlightDiagnostic error(Operation *op) { return cannotEmit(op); }
  /// The kernel's position in the executable (dropout's seed depends on it).
  unsigned kernelIndex() const { return index; }
  /// The shape a pointwise kernel iterates over (its coordinates are `c<d>`,
  /// its linear index `idx`).
  ArrayRef<int64_t> domain() const { return domainShape; }
  /// The parameter name of a kernel input (`in<n>`).
  std::string param(Value value);
  /// The view that the kernel input `value` reads in place (its parameter
  /// is the viewed value's buffer; memfit-fuse's views), else null.
  StridedViewOp viewOf(Value value);
  /// The offset in the viewed buffer of `view`'s element at the
  /// coordinates `c<d>` of a domain of `rank` dimensions.
  static std::string viewOffset(StridedViewOp view, size_t rank);
  /// The scalar of `value` at the kernel's index: a kernel input loaded and
  /// broadcast to the domain (or read through its view), a splat
  /// constant's literal or the variable of an op already written.
  FailureOr<std::string> scalar(Value value);
  /// scalar() of each of `values`.
  FailureOr<SmallVector<std::string>> scalars(ValueRange values);
  /// The element of a kernel input at `offset`, or a splat constant's value;
  /// `user` gets the diagnostic for anything else.
  FailureOr<std::string> load(Value value, StringRef offset, Operation *user);
  /// A fresh variable name `<prefix><n>`.
  std::string freshName(StringRef prefix);

  // Index checks (Indexing.cpp).

  /// Writes, at `indent`, a test of the index in `variable` (as
  /// read, negative ones not yet moved) against an axis of `extent`
  /// entries: an index outside [-extent, extent) is recorded in the
  /// executable's index-error word, and the run fails with a message that
  /// names `op`'s ONNX nodes and says `what` the index selects. The caller
  /// still guards its read or write.
  void checkIndex(Operation *op, StringRef variable, int64_t extent,
                  StringRef what, StringRef indent = "  ");

  // Launches and block reductions (Launch.cpp).

  /// One thread per element of `threads`, in blocks of kPointwiseBlock;
  /// the body reads its thread index only through threadLoop.
  void setPointwiseLaunch(int64_t threads);
  /// Begins a row kernel of `rows` rows of `rowLength` elements that
  /// accumulate in `acc`: rows that fit a warp (rowFitsWarp of the
  /// accumulator's bytes) take one each, in MEMFIT_WARP_ROWS (closed at the
  /// kernel's end), longer ones a block each (the shared scratch declared).
  /// A `contiguous` row of a whole number of 16-byte vectors of the
  /// accumulator is taken a vector at a time (rowWidth). Writes `row`, the
  /// row's index; rowStrideLoop, writeReduction, partialResult, rowLeader
  /// and setRowLaunch follow the choices.
  void beginRows(int64_t rowLength, int64_t rows, bool contiguous,
                 StringRef acc);
  /// The loop over [0, count) or [first, last) that the threads of a row
  /// share: a warp-stride loop in warp rows, else a block-stride loop;
  /// with `width`, each thread takes that many adjacent elements at a time.
  std::string rowStrideLoop(StringRef var, int64_t count) const;
  std::string rowStrideLoop(StringRef var, StringRef first, StringRef last,
                            int64_t width = 1) const;
  /// The condition of the one thread that writes a row's own results.
  StringRef rowLeader() const;
  /// The launch of the rows: a warp per row (beginRows chose it) or one
  /// block per row of `rowLength` elements. With `threadLoops`, the body
  /// reads its thread index only through block-stride loops
  /// (blockStrideLoop) and reduces only with writeReduction; without, it
  /// may use __syncthreads and threadIdx as it likes (the host backend then
  /// runs its threads as fibers).
  void setRowLaunch(int64_t rowLength, int64_t rows, bool threadLoops = true);
  /// One block of kMaxRowBlock threads, in thread loops like a row kernel.
  void setSingleBlockLaunch();
  /// Opens `MEMFIT_THREAD_LOOP(name, count) {`, closed at the kernel's end:
  /// the rest of the body runs once for each of the first `count` threads
  /// of the grid, `name` being the thread's index.
  void threadLoop(StringRef name, int64_t count);
  /// Declares the shared scratch of the block reductions.
  void writeScratch(StringRef acc);
  /// Writes a block-stride loop of `var` over [0, count) in which each
  /// thread folds `term` (an expression of `var`) into a partial result
  /// (MEMFIT_PARTIAL, from `init`) by sum or, with `isMax`, memfit_max;
  /// returns the expression of the block's result, the same in every
  /// thread (memfit_block_sum or memfit_block_max of the partials).
  std::string writeReduction(StringRef acc, bool isMax, StringRef init,
                             StringRef var, int64_t count, StringRef term);
  /// The pieces of writeReduction, for loops written otherwise: declares a
  /// fresh partial result from `init` and returns its name; the statement
  /// that folds `term` into it inside a block-stride loop over `var`; the
  /// block's result of the partials.
  std::string openPartial(StringRef acc, bool isMax, StringRef init);
  std::string foldPartial(StringRef partial, StringRef var, bool isMax,
                          StringRef term);
  std::string partialResult(StringRef partial, bool isMax);
  /// Writes `m`, the maximum of a row of `n` elements `element` (an
  /// expression of `j`), and `s`, the sum of exp(element - m) over it.
  void writeRowMaxSum(StringRef acc, Type type, int64_t n, StringRef element);

  // The elements of a row (Indexing.cpp).

  /// How a row kernel over a tensor of some shape finds the elements of
  /// its row: reduced dimensions trailing (row r is one contiguous run),
  /// or the reduced dimensions' shape and strides.
  struct RowIndexing {
    bool trailing = true;
    Shape redShape, redStrides;
  };
  /// Writes `base`, the offset of row `row`'s first element (beginRows
  /// wrote `row`) in a tensor of `shape` whose `reduced` dimensions a row
  /// spans.
  RowIndexing writeRowBase(ArrayRef<int64_t> shape, ArrayRef<bool> reduced);
  /// The offset from `base` of the row's element `j` (inside the loop over
  /// j; writes its coordinates `r<d>` first when they are needed).
  std::string writeRowOffset(const RowIndexing &indexing, StringRef indent);

  // Fused row kernels (RowProgram.cpp): what the row ops' emitRowReduction
  // and emitRowElement write with.

  /// The row statistics a normalization's or softmax's elements are
  /// computed from, in the accumulator type (layer_norm: mean and 1/std;
  /// rms_norm: 1/rms; softmax: max and sum of exp; log_softmax: max +
  /// log(sum)).
  struct RowStats {
    std::string shift, scale;
  };
  /// The accumulator type of the row kernel's reductions.
  StringRef rowAcc() const { return row->acc; }
  /// The number of elements of a row.
  int64_t rowLength() const { return row->frame->length; }
  /// Writes a block-wide sum (or, with `isMax`, maximum) over the row of
  /// `term` of the element of `input` (`term` gets it in the accumulator
  /// type); returns the variable that holds it.
  FailureOr<std::string> reduceRow(Value input, bool isMax,
                                   function_ref<std::string(StringRef)> term);
  /// Writes `expr`, a statistic that every thread of the block shares, into
  /// a fresh variable of the accumulator type; returns its name.
  std::string rowStatistic(StringRef expr);
  /// Defines `value`, one element per row, as `expr` converted to its
  /// register type.
  void defineRowValue(Value value, StringRef expr);
  /// Records the row statistics of `op`, a normalization or a softmax.
  void setRowStats(Operation *op, RowStats stats);
  /// The row statistics recorded for `op`.
  const RowStats &rowStatsOf(Operation *op) const;

private:
  /// The single op of a row, reduction or loss kernel, or null for a
  /// pointwise kernel.
  FailureOr<Operation *> findAnchor();
  /// Writes the kernel's parameters: its inputs, then its results.
  LogicalResult writeSignature(raw_ostream &out);
  /// One thread per element of the kernel's results.
  LogicalResult emitPointwise();
  /// A pointwise kernel of several segments (kSegmentsAttr): each block
  /// updates a chunk of one segment, its threads striding over it.
  LogicalResult emitSegments(ArrayRef<int64_t> sizes);
  /// A row kernel (rowFrameOf): reductions with their element-wise
  /// prologues and epilogues, one block per row.
  LogicalResult emitRowProgram(const RowFrame &frame);
  /// Writes a loop over a row's elements whose `body` computes at the
  /// full shape (RowProgram.cpp).
  LogicalResult writeRowLoop(function_ref<LogicalResult()> body);
  /// Inside a loop over a row's elements: defines `value`, a full value,
  /// after the full values it needs.
  LogicalResult defineFull(Value value);
  /// defineFull, then the value's scalar.
  FailureOr<std::string> fullScalar(Value value);
  /// A pointwise kernel that ends in quantize ops (EmitStyle::Blockwise):
  /// one thread block per quantization block (QuantEmitters.cpp).
  LogicalResult emitBlockwise(MutableArrayRef<QuantizeOp> quantizes);
  /// Defines the value of `op` at the kernel's index through its
  /// KernelEmitterOpInterface model.
  LogicalResult emitScalarOp(Operation *op);
  /// Defines `value` as `expr` in a fresh variable of its register type.
  std::string define(Value value, StringRef expr);
  /// The diagnostic for an op whose model was not attached.
  InFlightDiagnostic missingModel(Operation *op);
  /// Adds the ONNX node names of `loc` to the kernel's, once each.
  void collectNodeNamesInto(Location loc);
  /// `block` threads per block, `blocks` blocks, with or without barriers,
  /// in the prelude's thread loops or not (rt::Kernel::threadLoops).
  void setLaunch(int64_t block, int64_t blocks, bool barriers,
                 bool threadLoops);

  KernelOp kernel;
  unsigned index;
  std::string text;
  llvm::raw_string_ostream os{text};
  /// What closes the loops the body opened (threadLoop), before the
  /// kernel's closing brace.
  std::string closings;
  rt::Kernel info;
  /// Blocks of the 1-D grid; checked against CUDA's limit before it goes
  /// into the manifest.
  int64_t gridBlocks = 1;
  /// A row kernel whose rows take a warp each (beginRows).
  bool warpPerRow = false;
  /// The adjacent elements a row kernel's threads take at a time
  /// (beginRows): a row's reductions add them in this order, loaded as
  /// vectors in fused row kernels.
  int64_t rowWidth = 1;
  Shape domainShape;
  /// The linear index of the domain's element in the code being written
  /// (`idx`; `row` in a row kernel's per-row code): an input of the
  /// domain's shape is read at it.
  std::string domainIndex = "idx";
  DenseMap<Value, std::string> names;
  unsigned nextVar = 0;

  /// A row kernel while it is written: its frame, its accumulator type and
  /// how it indexes its rows.
  struct RowProgram {
    const RowFrame *frame;
    std::string acc;
    RowIndexing indexing;
    Shape kept;
    /// Results of the full shape already written, by a loop over the row
    /// that computed them (writeRowLoop).
    llvm::SmallDenseSet<unsigned, 4> written = {};
  };
  std::optional<RowProgram> row;
  /// A loop over a row in vectors while it is written (writeRowLoop): each
  /// thread takes `width` adjacent elements at a time (`j0` on), the
  /// inputs of the full shape loaded and the results stored as vectors.
  struct VectorLoop {
    int64_t width;
    llvm::SmallVector<unsigned> inputs = {}, outputs = {};
  };
  std::optional<VectorLoop> vectors;
  /// Writes result `i` of the full shape, `value`, as `v` at the loop's
  /// element, and records it written.
  void writeFullResult(unsigned i, Value value, StringRef v);
  /// The row values of a row kernel, defined once per block: they may be
  /// read where the domain is the full shape.
  llvm::SmallPtrSet<Value, 8> rowValues;
  /// A row kernel's normalizations and softmaxes: their row statistics.
  DenseMap<Operation *, RowStats> rowStats;
};

//===----------------------------------------------------------------------===//
// External models of KernelEmitterOpInterface
//===----------------------------------------------------------------------===//

/// The base of every model: each method fails with a diagnostic, and a
/// model defines those of its style.
template <typename Model, typename OpTy>
struct EmitterModel : KernelEmitterOpInterface::ExternalModel<Model, OpTy> {
  FailureOr<std::string> emitScalar(Operation *op, KernelWriter &writer,
                                    ArrayRef<std::string>) const {
    return writer.error(op) << "no element-wise template", failure();
  }
  LogicalResult emitTemplate(Operation *op, KernelWriter &writer) const {
    return writer.error(op) << "no kernel template", failure();
  }
  LogicalResult emitRowReduction(Operation *op, KernelWriter &writer) const {
    return writer.error(op) << "no reduction over a row", failure();
  }
  FailureOr<std::string> emitRowElement(Operation *op, KernelWriter &writer,
                                        ArrayRef<std::string>) const {
    return writer.error(op) << "no element from row statistics", failure();
  }
};

/// The base of the Template models.
template <typename Model, typename OpTy>
struct TemplateEmitterModel : EmitterModel<Model, OpTy> {
  EmitStyle getEmitStyle(Operation *) const { return EmitStyle::Template; }
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

/// Whether a dropout of `ratio`, `seed` and `stream` keeps the element at
/// flat index `idx` at step `step` (C++ expressions): a call of the
/// prelude's memfit_dropout_keep with the seed and stream combined as every
/// dropout combines them, so memfit.dropout, its mask, its gradient and the
/// probabilities of memfit.attention keep the same elements wherever they
/// run. Defined in PointwiseEmitters.cpp.
std::string dropoutKeepTest(double ratio, std::optional<int64_t> seed,
                            int64_t stream, StringRef step, StringRef idx);

/// What an index along `axis` of data of `shape` selects, for the message
/// of a run that finds one out of range (KernelWriter::checkIndex).
/// Defined in IndexEmitters.cpp, as the next.
std::string indexIntoAxis(int64_t axis, ArrayRef<int64_t> shape);
/// `v` combined with `u` by a scatter's `reduction` ("none": replaced by
/// `u`; "add", "mul", "max", "min").
std::string scatterCombine(StringRef reduction, StringRef v, StringRef u);

/// The attach functions of the files that hold the models.
void attachPointwiseEmitters(MLIRContext *context); // PointwiseEmitters.cpp
void attachRowEmitters(MLIRContext *context);       // RowEmitters.cpp
void attachLossEmitters(MLIRContext *context);      // LossEmitters.cpp
void attachSpecialEmitters(MLIRContext *context);   // SpecialEmitters.cpp
void attachIndexEmitters(MLIRContext *context);     // IndexEmitters.cpp
void attachQuantEmitters(MLIRContext *context);     // QuantEmitters.cpp
void attachAttentionEmitters(MLIRContext *context); // AttentionEmitters.cpp

} // namespace mlir::memfit::cuda

#endif // MEMFIT_LIB_TARGET_CUDA_KERNELWRITER_H
