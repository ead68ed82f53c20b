//===- Training.h - attributes of training-step IR -----------------*- C++ -*-===//
//
// The attributes that memfit-autodiff and memfit-optimizer put on the IR
// and that the memory planner and the emitter read back:
//   memfit.role on a memfit.parameter: what the tensor is during training;
//   memfit.backward on an op: created by memfit-autodiff;
//   memfit.gradient_of on a function result: the parameter it is the
//   gradient of.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_TRAINING_H
#define MEMFIT_DIALECT_TRAINING_H

#include "memfit/Dialect/MemfitOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::memfit {

constexpr char kRoleAttr[] = "memfit.role";
constexpr char kRoleParameter[] = "parameter";
constexpr char kRoleFrozen[] = "frozen";
constexpr char kRoleOptimizerState[] = "optimizer_state";
constexpr char kRoleGradientAccumulator[] = "gradient_accumulator";
constexpr char kRoleCounter[] = "counter";
/// A trained parameter's copy on the device that the forward and backward
/// read when its master is in host memory (offload-states): f32, or the
/// 16-bit type every read casts it to. It starts as zeros in the module;
/// the runtime fills it from the master (Manifest.h, `workingCopyOf`).
constexpr char kRoleWorkingCopy[] = "working_copy";
constexpr char kBackwardAttr[] = "memfit.backward";
constexpr char kGradientOfAttr[] = "memfit.gradient_of";
/// On the ops memfit-chunk-loss builds for a loss's chunks (their logits,
/// probabilities and partial gradients): the memory plan files their
/// temporaries as the loss's, like those of the loss ops themselves.
constexpr char kLossAttr[] = "memfit.loss";
/// On an op that memfit-remat cloned into the backward: the saved values
/// (by name) that its recomputation starts from.
constexpr char kRecomputedFromAttr[] = "memfit.recomputed_from";
/// On a forward op whose result memfit-remat keeps for the backward: why.
constexpr char kSavedAttr[] = "memfit.saved";
/// On the loss-scaling state that memfit-autodiff creates (role counter):
/// "scale" (the factor the loss gradient is seeded with) or
/// "growth_tracker" (good steps since the scale last changed; dynamic
/// scaling only).
constexpr char kLossScaleAttr[] = "memfit.loss_scale";

/// On an optimizer state: the parameter it belongs to (a symbol
/// reference), so that later passes can select states by parameter name.
constexpr char kStateOfAttr[] = "memfit.state_of";
/// On an optimizer state that never holds a negative value (AdamW's
/// exp_avg_sq): memfit-quantize gives it the unsigned dynamic map.
constexpr char kNonNegativeAttr[] = "memfit.nonnegative";
/// On the tensors of a quantized optimizer state (memfit-quantize):
/// "codes" or "absmax"; on those of a quantized weight: "weight_codes" or
/// "weight_absmax".
constexpr char kQuantizedAttr[] = "memfit.quantized";
/// On the module, from memfit-quantize `saved-activations=int8`: memfit-remat
/// may save a forward value compressed. A dictionary: `scheme` ("int8") and
/// `block_size` (values per absmax).
constexpr char kSavedActivationsAttr[] = "memfit.saved_activations";
/// On the kernels memfit-remat adds to save a value compressed: the name of
/// the value ("compressed" on the quantization, "decompressed" on each
/// dequantization, as the key).
constexpr char kCompressedAttr[] = "memfit.compressed";
/// memfit-lora: on an adapter parameter, the name of the base weight it
/// adapts (a string, not a symbol use: memfit-quantize may replace that
/// weight by its codes) and which of the two it is ("A" or "B"); on the
/// ops of an adapter, the module path of its target.
constexpr char kLoraOfAttr[] = "memfit.lora_of";
constexpr char kLoraAttr[] = "memfit.lora";
constexpr char kLoraTargetAttr[] = "memfit.lora_target";
/// On an adapter's A: the scale of its update (alpha / r), and whether the
/// base weight is stored [out, in] (read through a transpose or gemm's
/// trans_b), which says how a merge adds the update to it.
constexpr char kLoraScaleAttr[] = "memfit.lora_scale";
constexpr char kLoraTransposedAttr[] = "memfit.lora_transposed";
constexpr char kDecompressedAttr[] = "memfit.decompressed";
/// On the ops memfit-optimizer adds under ZeRO stage 1 to take a rank's
/// rows of a parameter or its gradient: memfit-early-updates moves the
/// kernels made of them with the update that alone reads them.
constexpr char kShardSliceAttr[] = "memfit.shard_slice";
/// On ZeRO stage 3's gathers of a parameter's rows, numbered per parameter:
/// each reader's own, which CSE must not merge into one.
constexpr char kRegatherAttr[] = "memfit.regather";
/// On a ZeRO stage 3 parameter that holds this rank's rows: the whole
/// parameter's rows (i64).
constexpr char kWholeRowsAttr[] = "memfit.whole_rows";
/// On a parameter or training state kept in host memory (memfit-optimizer
/// offload-states): "host". The memory plan puts it in the host region.
constexpr char kMemorySpaceAttr[] = "memfit.memory_space";
/// offload-states: on a working copy (kRoleWorkingCopy), its master.
constexpr char kWorkingCopyOfAttr[] = "memfit.working_copy_of";
/// offload-states: on the kernels of the optimizer's update, which run on
/// the host's cores, overlapped with the device (the runtime's `onHost`).
/// They read host memory only: memfit-host-transfers copies what else they
/// read there first, with kernels marked kToHostAttr.
constexpr char kOnHostAttr[] = "memfit.on_host";
constexpr char kToHostAttr[] = "memfit.to_host";
/// On the copy of an on-host kernel's result to the device (the new working
/// copy): run after the host kernels, in their queue (the runtime's
/// `toDevice`).
constexpr char kToDeviceAttr[] = "memfit.to_device";
/// memfit-remat offload-activations: on the kernel that copies a saved
/// value to host memory after its last forward use (its result lives in
/// the host region), and on the one that copies it back before a backward
/// step needs it; the value's name.
constexpr char kOffloadedAttr[] = "memfit.offloaded";
constexpr char kFetchedAttr[] = "memfit.fetched";
/// On the module, from memfit-shard: the ranks the step runs on, its ZeRO
/// stage and (from stage 1) the rank it was compiled for (i64 each).
constexpr char kWorldSizeAttr[] = "memfit.world_size";
constexpr char kZeroStageAttr[] = "memfit.zero";
constexpr char kRankAttr[] = "memfit.rank";

/// memfit-lora's reproducible generator of the adapters' initial values:
/// the state of the adapter `name` under `seed` (FNV-1a of the name, xor
/// the seed times 0x9e3779b97f4a7c15), and the `index`-th uniform number
/// in [0, 1) from it (splitmix64 at position index + 1, its top 53 bits).
/// A's value `index` is (2u - 1) / sqrt(in), in f32.
uint64_t loraSeed(int64_t seed, StringRef name);
double loraUniform(uint64_t state, uint64_t index);

/// A zero-initialized (or `init`-filled) training state of `type` next to
/// `after`, named `name` or, when `symbols` has that name already,
/// `name_1`, `name_2`...; it joins `symbols`.
ParameterOp addTrainingState(SymbolTable &symbols, Operation *after,
                             StringRef name, RankedTensorType type,
                             StringRef role, double init = 0.0);

/// The function named `name`, or when empty the only function or `main`;
/// emits an error on the module otherwise.
FailureOr<func::FuncOp> findEntryFunction(ModuleOp module, StringRef name);

/// A kernel that copies `value` (its body yields its argument): an
/// offloaded activation's copy in host memory and back, a value the host's
/// update reads copied there.
KernelOp copyKernel(OpBuilder &builder, Location loc, Value value);

/// `{onnx.name = name}`: how inputs and outputs are named for the runtime.
DictionaryAttr namedValueAttrs(MLIRContext *context, StringRef name);

/// Appends an argument called `name` to `func`.
BlockArgument appendNamedArgument(func::FuncOp func, Type type, StringRef name);

/// Makes `values` the results of `func` (returned by its terminator, which
/// must exist) with the result attributes `attrs`.
void setResults(func::FuncOp func, ValueRange values,
                ArrayRef<DictionaryAttr> attrs);

/// Whether `func` returns a gradient (a result with memfit.gradient_of):
/// memfit-autodiff's function.
bool returnsGradients(func::FuncOp func);

/// Float parameters of rank >= 1: what training may update.
bool isTrainableCandidate(ParameterOp param);

/// The parameter's memfit.role, empty when it has none (a forward-only
/// module).
StringRef parameterRole(ParameterOp param);

/// Whether the parameter is kept in host memory (kMemorySpaceAttr), and
/// marking it so.
bool keptInHostMemory(ParameterOp param);
void keepInHostMemory(ParameterOp param);

/// The `memfit.*` attributes of `op`, in its order (what
/// copyMemfitAttrs copies: kernels of one kind of step carry the same).
SmallVector<NamedAttribute> memfitAttrs(Operation *op);

/// Copies the `memfit.*` attributes of `from` (what the planner and the
/// reports know of a step: backward, saved, gradient_of) onto `to`, for a
/// rewrite that replaces `from` by `to`.
void copyMemfitAttrs(Operation *from, Operation *to);

} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_TRAINING_H
