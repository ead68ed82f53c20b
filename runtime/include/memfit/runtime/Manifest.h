//===- Manifest.h - the executable the compiler hands the runtime -*- C++ -*-===//
//
// The manifest is the contract between the compiler and the runtime, and its
// schema is owned here. An executable is a manifest, the CUDA C++ source of
// its kernels and a weights blob. On disk it is a directory:
//
//   manifest.json   this structure as JSON (schema "memfit-executable", v2)
//   kernels.cu      Manifest::source
//   weights.bin     the initial contents of the weights region (a prefix:
//                   the rest of the region starts as zeros)
//
// An executable has one or more entries, each a call sequence with its own
// inputs and outputs over the same buffers: a forward pass has one ("main");
// a training step has "train_step", or "accumulate" and "apply" (gradients
// summed over micro-batches, then one optimizer step). Variables name the
// persistent tensors of the weights region that training updates and
// checkpoints hold: parameters, optimizer states, gradient accumulators and
// the step counter.
//
// Device memory is one allocation of totalBytes(): the weights region
// [0, weightsBytes) followed, at arenaOffset(), by the arena of
// arenaBytes that holds inputs, outputs and every intermediate value at
// the offsets the compiler's memory plan chose. Buffers of the same region
// may share offsets when their lifetimes do not overlap, and views
// (reshapes) share the offset of the value they view. Optimizer states
// kept in host memory (--offload=optimizer) are a host region of
// hostBytes, outside the device allocation: a session addresses it at
// hostOffset(), past the device's bytes, and a GPU backend maps it from
// pinned host memory.
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

/// Element types. `i1` is stored as one byte (0 or 1) per element. The
/// 8-bit floats (ONNX's FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2,
/// FLOAT8E5M2FNUZ), FLOAT4E2M1 and the 4- and 2-bit integers are stored one
/// element per byte, in its low bits (the other bits zero), as ml_dtypes
/// holds them; ONNX files pack the sub-byte types, the importer unpacks
/// them.
enum class DType {
  f32,
  f64,
  f16,
  bf16,
  i64,
  i32,
  i16,
  i8,
  u64,
  u32,
  u16,
  u8,
  i1,
  f8e4m3fn,
  f8e4m3fnuz,
  f8e5m2,
  f8e5m2fnuz,
  f4e2m1,
  i4,
  u4,
  i2,
  u2,
};

/// Every DType, in declaration order.
extern const DType kAllDTypes[22];

size_t dtypeSize(DType type);
/// Whether NumPy has no dtype of its own for `type` (bf16 and the 8-, 4-
/// and 2-bit types): .npy files hold its bit patterns as raw bytes ('|V1',
/// '|V2'), which is what NumPy writes for ml_dtypes' arrays.
bool dtypeIsOpaqueToNumpy(DType type);
const char *dtypeName(DType type);
/// Parses the names dtypeName prints ("f32", "i64", ...).
StatusOr<DType> parseDType(const std::string &name);

enum class Region { Weights, Arena, Host };
/// "weights", "arena", "host".
const char *regionName(Region region);

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

/// What a step costs by the compiler's model (memfit-op-cost): the bytes it
/// reads and writes and its floating-point operations; 0 and 0 where the
/// manifest does not say (older executables). For predicted times
/// (Roofline.h).
struct StepCost {
  uint64_t bytes = 0, flops = 0;
};

/// What a kernel computes, for profiles and predictions: element-wise ops
/// (and data movement), a row op (reduction, norm, softmax, loss) with its
/// prologue and epilogue, an optimizer's update of parameters and states, or
/// attention.
enum class KernelKind { ElementWise, Rows, Optimizer, Attention };
/// "elementwise", "rows", "optimizer", "attention".
const char *kernelKindName(KernelKind kind);

/// One __global__ function of Manifest::source. Its parameters are the
/// device pointers of the buffers a kernel step passes, in order.
struct Kernel {
  std::string name;                 // extern "C" name in the source
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;         // dynamic shared memory (static is in the source)
  bool usesBarriers = false;        // __syncthreads or warp shuffles
  /// Its threads appear only in the prelude's thread loops
  /// (runtime/KERNELS.md): the host backend runs each block once.
  bool threadLoops = false;
  std::vector<std::string> onnxNodes; // the ONNX nodes it computes
  /// What each of its index checks tests ("ONNX node 'g' (memfit.gather):
  /// indices 'ids' must be within [-96, 95], ..."). A kernel with checks
  /// takes Manifest::indexErrorBuffer as its last parameter (see there).
  std::vector<std::string> indexChecks;
  KernelKind kind = KernelKind::ElementWise;
  StepCost cost;
  /// Runs on the host's cores, not the device (--offload=optimizer's
  /// updates): its buffers are all in the host region, so a backend may run
  /// it beside the device's later steps, each of which waits for it only
  /// where it touches the same bytes (Session). A backend without host
  /// tasks runs it in order.
  bool onHost = false;
  /// Runs on the device, but in the host tasks' queue, after the host
  /// kernels before it: the copy of what a host kernel wrote (the new
  /// working copy) from the host region to the device.
  bool toDevice = false;
  /// A copy of an offloaded activation to the host region or back
  /// (--offload=activations), or of what a host kernel reads to the host
  /// region (--offload=optimizer's gradients): a backend may run it on a
  /// copy queue beside the later steps, which wait for it where they touch
  /// its bytes.
  bool copyQueue = false;
};

/// The first bytes of Manifest::indexErrorBuffer, two u64: `code`, 0 while
/// no index was out of range, else (kernel << 32) | (check + 1) of the
/// first failing check; `value`, the index it found.
struct IndexError {
  uint64_t code = 0;
  int64_t value = 0;
};
/// "no buffer", for an optional buffer id.
constexpr uint32_t kNoBuffer = 0xffffffffu;

/// What a contraction computes besides its product (cuBLASLt's epilogues).
/// The step's fourth buffer is a packed vector:
///   Bias:        out = alpha * op(A) x op(B) + bias, the n-element bias
///                added to every row (beta is 0);
///   GeluAuxBias: the same out, and gelu(out) (the tanh approximation) in
///                the step's fifth buffer, a packed [m, n]: a linear
///                layer's pre-activation, kept for the backward, and its
///                GELU;
///   BiasGradA:   also writes the sums of op(A) over k (m elements),
///   BiasGradB:   also writes the sums of op(B) over k (n elements): a
///                linear layer's bias gradient beside its weight gradient.
/// A backend without the epilogue runs the contraction's `fallbackKernel`
/// instead: for Bias and GeluAuxBias, on {bias, out}, writing the bias into
/// every row before the product accumulates onto it (beta 1), and then for
/// GeluAuxBias its `activationKernel` on {out, gelu}; for the sums, on {the
/// summed operand, sums}.
enum class Epilogue { None, Bias, BiasGradA, BiasGradB, GeluAuxBias };
/// "none", "bias", "bias_grad_a", "bias_grad_b", "gelu_aux_bias".
const char *epilogueName(Epilogue epilogue);
constexpr uint32_t kNoKernel = 0xffffffffu;

/// out[b] = alpha * op(A[b]) x op(B[b]) + beta * out[b], row-major, for every
/// batch index b of batchShape. A is [m, k] ([k, m] when transA), B is
/// [k, n] ([n, k] when transB), out is [m, n]. batchStridesA/B/Out give,
/// per batch dimension, the element stride of A/B/out (0 where an operand
/// is broadcast). Each matrix starts at its offset (elements) in its buffer
/// and its rows are ld elements apart: a view reads or writes a slice or a
/// permutation of a larger tensor in place (the attention heads of a QKV
/// projection, the heads merged back).
struct Contraction {
  enum Operand { A = 0, B = 1, Out = 2 };
  std::string name;
  DType dtype = DType::f32;
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  float alpha = 1.0f, beta = 0.0f;
  Epilogue epilogue = Epilogue::None;
  uint32_t fallbackKernel = kNoKernel;   // with an epilogue (see Epilogue)
  uint32_t activationKernel = kNoKernel; // GeluAuxBias's GELU
  std::vector<int64_t> batchShape;
  std::vector<int64_t> batchStridesA, batchStridesB, batchStridesOut;
  std::array<int64_t, 3> offsets{0, 0, 0};
  std::array<int64_t, 3> ld{0, 0, 0};
  std::vector<std::string> onnxNodes;
  StepCost cost;

  /// Rows and columns of an operand's matrix as stored.
  int64_t storedRows(Operand o) const {
    return o == A ? (transA ? k : m) : o == B ? (transB ? n : k) : m;
  }
  int64_t storedColumns(Operand o) const {
    return o == A ? (transA ? m : k) : o == B ? (transB ? k : n) : n;
  }
  const std::vector<int64_t> &batchStrides(Operand o) const {
    return o == A ? batchStridesA : o == B ? batchStridesB : batchStridesOut;
  }
  /// Elements of the epilogue's vector: n for Bias and BiasGradB, m for
  /// BiasGradA, 0 without one.
  int64_t epilogueLength() const {
    return epilogue == Epilogue::None        ? 0
           : epilogue == Epilogue::BiasGradA ? m
                                             : n;
  }
  /// The contraction a backend without the epilogue runs after the fallback
  /// kernel: no epilogue, and for Bias beta 1 (onto the bias written).
  Contraction withoutEpilogue() const {
    Contraction plain = *this;
    if (epilogue == Epilogue::Bias || epilogue == Epilogue::GeluAuxBias)
      plain.beta = 1.0f;
    plain.epilogue = Epilogue::None;
    plain.fallbackKernel = plain.activationKernel = kNoKernel;
    return plain;
  }
  /// Packed rows for A, B and out, and out packed over the batch (m * n
  /// elements apart, 0 over dimensions of extent 1).
  void setPackedLayout() {
    for (Operand o : {A, B, Out})
      ld[o] = storedColumns(o);
    batchStridesOut.assign(batchShape.size(), 0);
    int64_t stride = m * n;
    for (size_t d = batchShape.size(); d-- > 0;) {
      batchStridesOut[d] = batchShape[d] == 1 ? 0 : stride;
      stride *= batchShape[d];
    }
  }
};

/// A collective of memfit-shard (memfit.all_reduce, ...): every rank of the
/// group runs it on its own buffers through the session's communicator.
struct Collective {
  enum class Kind { AllReduce, ReduceScatter, AllGather, Broadcast };
  enum class Reduction { Sum, Mean, Max, Min };
  std::string name;
  Kind kind = Kind::AllReduce;
  Reduction reduction = Reduction::Sum; // AllReduce, ReduceScatter
  DType dtype = DType::f32;
  uint64_t count = 0;        // elements of each rank's input
  int64_t groupSize = 1;
  int64_t root = 0;          // Broadcast
  std::vector<int64_t> ranks; // the group's ranks; empty: 0..groupSize-1
  std::vector<std::string> onnxNodes;

  /// Elements of each rank's result.
  uint64_t resultCount() const;
};
/// "all_reduce", "reduce_scatter", "all_gather", "broadcast"; "sum",
/// "mean", "max", "min": the dialect's spellings.
const char *collectiveKindName(Collective::Kind kind);
const char *reductionName(Collective::Reduction reduction);

enum class StepKind { Kernel, Contraction, Collective };
/// "kernel", "contraction", "collective".
const char *stepKindName(StepKind kind);

/// Elements an operand of `c` spans from its buffer's start: its offset,
/// the last batch matrix's offset, its last row's offset and one row.
/// Saturates at UINT64_MAX instead of overflowing.
uint64_t operandSpan(const Contraction &c, Contraction::Operand operand);

/// One entry of the call sequence. Kernel steps pass `buffers` as the
/// kernel's parameters; contraction steps pass {A, B, out}, and the
/// epilogue's vector fourth where it has one (and GeluAuxBias's GELU
/// fifth); collective steps {in, out}.
struct Step {
  StepKind kind = StepKind::Kernel;
  uint32_t index = 0; // into kernels, contractions or collectives
  std::vector<uint32_t> buffers;
};

/// A graph input or output and the buffer that holds it.
struct Binding {
  std::string name;
  uint32_t buffer = 0;
};

/// A call sequence the session can run by name, with the inputs it reads and
/// the outputs it writes. Entries share the buffers, and so the arena: one
/// entry's run may overwrite another's inputs and outputs.
struct Entry {
  std::string name;
  std::vector<Step> steps;
  std::vector<Binding> inputs, outputs;
  /// The bytes no schedule of the entry can move less of: every input,
  /// weight and state read once, every output and update written once,
  /// every saved activation written and read once (memfit-op-cost's lower
  /// bound); 0 where the manifest does not say.
  uint64_t boundBytes = 0;
};

/// What a variable holds. Checkpoints save every kind but FrozenParameter.
enum class VariableKind {
  Parameter,           // trainable
  FrozenParameter,     // a parameter training leaves alone
  OptimizerState,      // "<param>.exp_avg", "<param>.momentum", ...
  GradientAccumulator, // "<param>.grad", summed over micro-batches
  Counter,             // "step" (f32 []), loss scaling, "dropout_step" (i64 [])
  /// The device's copy of a parameter whose master is in host memory
  /// (--offload=optimizer): what the forward and backward read, f32 or
  /// 16-bit. Not checkpointed: a session fills it from its master
  /// (Variable::workingCopyOf) whenever the master is written from outside
  /// a run, and the update writes both.
  WorkingCopy,
};

/// "parameter", "frozen_parameter", "optimizer_state",
/// "gradient_accumulator", "counter", "working_copy".
const char *variableKindName(VariableKind kind);
StatusOr<VariableKind> parseVariableKind(const std::string &name);

/// A named persistent tensor: a buffer of the weights region.
struct Variable {
  std::string name;
  uint32_t buffer = 0;
  VariableKind kind = VariableKind::Parameter;
  /// ZeRO stage 3: the buffer holds this rank's rows of a parameter of this
  /// many rows (dimension 0; the last rank's end in zero rows). 0: the
  /// buffer is the whole variable.
  int64_t wholeRows = 0;
  /// A working copy's master (VariableKind::WorkingCopy), else empty.
  std::string workingCopyOf;
};

/// One line of the memory plan's breakdown. The compiler writes, for the
/// weights region, "parameters", "frozen_parameters", "constants",
/// "gradient_accumulators" and "optimizer_states"; for the arena, the bytes
/// live at its peak of "inputs", "outputs", "gradients",
/// "saved_activations" and "temporaries"; and the totals "weights region"
/// and "arena peak"; with a host region, each of its categories prefixed
/// kHostCategoryPrefix ("host optimizer_states") and its total
/// kHostRegionCategory. Readers tolerate other names.
constexpr const char kHostCategoryPrefix[] = "host ";
constexpr const char kHostRegionCategory[] = "host region";
struct MemoryCategory {
  std::string name;
  uint64_t bytes = 0;
};

/// A LoRA adapter of memfit-lora: its two variables, the ONNX initializer of
/// the weight it adapts and how to merge it: base += scale * B A when the
/// base is stored [out, in] (`transposed`, nn.Linear's layout, read through
/// a transpose or gemm's trans_b), else base += scale * (B A)^T.
struct LoraAdapter {
  std::string a, b, base;
  double scale = 1.0;
  bool transposed = false;
};

/// The values an integer input may hold where it indexes something (token
/// ids into an embedding table, labels into a loss's classes): the session
/// refuses any other before it reaches a kernel, which would read outside
/// the table. An input may have several.
struct InputRange {
  std::string name;          // the input
  int64_t low = 0, high = 0; // inclusive
  std::vector<int64_t> also; // other values allowed (a loss's ignore index)
  std::string what;          // what it indexes, for messages
};

struct Manifest {
  static constexpr int kVersion = 4;
  std::string model;       // the model file it was compiled from
  std::string source;      // CUDA C++ of every kernel
  uint64_t weightsBytes = 0;
  uint64_t arenaBytes = 0; // the plan's peak
  /// The host region (optional in manifest.json; absent: 0), and its first
  /// bytes that the weights blob initializes (the masters of
  /// --offload=optimizer; the blob's last `initializedHostBytes`).
  uint64_t hostBytes = 0;
  uint64_t initializedHostBytes = 0;
  /// Elements of the trainable parameters (0 for a forward pass), for the
  /// memory report's bytes per parameter.
  uint64_t trainableParameters = 0;
  /// Values of the frozen ones (a quantized weight's values, not its
  /// codes' bytes), for the memory report's share of trainable parameters.
  uint64_t frozenParameters = 0;
  /// Values of the frozen weights stored quantized (part of the above).
  uint64_t quantizedParameters = 0;
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Contraction> contractions;
  /// Optional in manifest.json, with worldSize and zeroStage (absent: no
  /// collectives, one rank).
  std::vector<Collective> collectives;
  /// The ranks the step was compiled for (memfit-shard) and its ZeRO stage:
  /// a session must be given a communicator of that many ranks.
  int64_t worldSize = 1;
  int64_t zeroStage = 0;
  std::vector<Entry> entries;
  std::vector<Variable> variables;
  std::vector<MemoryCategory> memory;
  std::vector<LoraAdapter> loraAdapters;
  /// Optional in manifest.json ("inputRanges"; absent: none).
  std::vector<InputRange> inputRanges;
  /// The index-error word (an IndexError, 16 bytes of the weights region,
  /// zero when a session starts), or kNoBuffer when no kernel checks
  /// indices. Kernels cannot fail: one that finds an index out of range
  /// (a gather's or scatter's, computed at run time) reads it as zero or
  /// skips the update, and the first such thread records it here; the
  /// session reads the word after each run and fails the run with the
  /// check's message, as onnxruntime fails the node. Optional in
  /// manifest.json ("indexErrorBuffer").
  uint32_t indexErrorBuffer = kNoBuffer;

  const Entry *findEntry(const std::string &name) const;
  const Variable *findVariable(const std::string &name) const;

  uint64_t arenaOffset() const {
    return (weightsBytes + kBufferAlignment - 1) / kBufferAlignment *
           kBufferAlignment;
  }
  /// The size of the one device allocation a session makes.
  uint64_t totalBytes() const { return arenaOffset() + arenaBytes; }
  /// Checks indices, offsets and sizes against each other.
  Status validate() const;
};

/// A table of the memory plan for people: weights, gradients, optimizer
/// states, saved activations and temporaries in bytes, MiB and bytes per
/// trainable parameter, the region totals, and parameters + gradients +
/// optimizer states per parameter next to the usual fp32 rule of thumb.
std::string formatMemoryReport(const Manifest &manifest);

/// A manifest and the initial contents of the weights region: a prefix of
/// it (weights.size() <= manifest.weightsBytes); the session fills the rest
/// with zeros, so zero-initialized optimizer states take no space on disk.
struct Executable {
  Manifest manifest;
  std::vector<uint8_t> weights;
  /// Compiled to plan only (memfit::CompileOptions::planOnly): `weights` is
  /// empty whatever the model holds. Sessions and saveExecutable refuse it.
  bool planOnly = false;
};

/// JSON text of the manifest without its source (which goes to kernels.cu).
std::string manifestToJson(const Manifest &manifest);
/// Parses manifestToJson's output; the source is left empty. Errors name
/// the field that is wrong.
StatusOr<Manifest> manifestFromJson(const std::string &json);

/// Writes manifest.json, kernels.cu, weights.bin and weights.sum (the
/// weights' size and checksum, checked by loadExecutable) into `directory`
/// (created if missing). Files are written to temporaries and renamed, so a
/// failure leaves no half-written executable.
Status saveExecutable(const Executable &executable, const std::string &directory);
StatusOr<Executable> loadExecutable(const std::string &directory);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_MANIFEST_H
