//===- MemoryPlanner.cpp - schedule, liveness and arena offsets ------------===//

#include "memfit/Analysis/Epilogues.h"
#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::memfit;

StringRef mlir::memfit::stringifyBufferCategory(BufferCategory category) {
  switch (category) {
  case BufferCategory::Parameter:
    return "parameters";
  case BufferCategory::Constant:
    return "constants";
  case BufferCategory::Input:
    return "inputs";
  case BufferCategory::Output:
    return "outputs";
  case BufferCategory::Activation:
    return "activations";
  case BufferCategory::FrozenParameter:
    return "frozen_parameters";
  case BufferCategory::OptimizerState:
    return "optimizer_states";
  case BufferCategory::GradientAccumulator:
    return "gradient_accumulators";
  case BufferCategory::Gradient:
    return "gradients";
  case BufferCategory::SavedActivation:
    return "saved_activations";
  case BufferCategory::Recomputed:
    return "recomputed";
  case BufferCategory::Temporary:
    return "temporaries";
  case BufferCategory::WorkingCopy:
    return "working_copies";
  case BufferCategory::StateCodes:
    return "state_codes";
  case BufferCategory::StateScales:
    return "state_scales";
  case BufferCategory::CompressedActivation:
    return "compressed_activations";
  case BufferCategory::WeightCodes:
    return "weight_codes";
  case BufferCategory::WeightScales:
    return "weight_scales";
  case BufferCategory::Loss:
    return "loss";
  case BufferCategory::OffloadedActivation:
    return "offloaded_activations";
  case BufferCategory::Communication:
    return "communication";
  case BufferCategory::HostTransfer:
    return "host_transfers";
  }
  return "?";
}

BufferCategory mlir::memfit::parameterCategory(ParameterOp param) {
  StringRef role = parameterRole(param);
  auto quantized = param->getAttrOfType<StringAttr>(kQuantizedAttr);
  if (quantized && quantized.getValue() == "weight_codes")
    return BufferCategory::WeightCodes;
  if (quantized && quantized.getValue() == "weight_absmax")
    return BufferCategory::WeightScales;
  if (role == kRoleFrozen)
    return BufferCategory::FrozenParameter;
  if (role == kRoleOptimizerState) {
    if (quantized)
      return quantized.getValue() == "codes" ? BufferCategory::StateCodes
                                             : BufferCategory::StateScales;
    return BufferCategory::OptimizerState;
  }
  if (role == kRoleCounter)
    return BufferCategory::OptimizerState;
  if (role == kRoleGradientAccumulator)
    return BufferCategory::GradientAccumulator;
  // A working copy is what the device holds of a parameter whose master
  // is in host memory (the master counts as a host parameter).
  return BufferCategory::Parameter;
}

/// Whether a parameter is a training state that starts as zeros, which
/// need not be stored (a loss scale starts elsewhere).
static bool isZeroState(ParameterOp param) {
  StringRef role = parameterRole(param);
  if (role != kRoleOptimizerState && role != kRoleCounter &&
      role != kRoleGradientAccumulator && role != kRoleWorkingCopy)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(param.getValue());
  if (!dense || !dense.isSplat())
    return false;
  Attribute zero = dense.getSplatValue<Attribute>();
  if (auto f = dyn_cast<FloatAttr>(zero))
    return f.getValue().isPosZero();
  if (auto i = dyn_cast<IntegerAttr>(zero))
    return i.getValue().isZero();
  return false;
}

namespace {

/// Weights offsets shared by the functions of a module plan.
struct WeightsLayout {
  llvm::StringMap<int64_t> parameters;
  DenseMap<Value, int64_t> constants;
  int64_t bytes = 0;
  /// The parameters kept in host memory, with offsets in the host region.
  llvm::StringMap<int64_t> host;
  int64_t hostBytes = 0;
};

class Planner {
public:
  Planner(func::FuncOp func, const WeightsLayout &layout)
      : func(func), layout(layout) {}

  FailureOr<MemoryPlan> run() {
    if (failed(collect()))
      return failure();
    computeLiveRanges();
    if (failed(checkAccumulations()) || failed(placeUpdates()))
      return failure();
    classifyTraining();
    layoutWeights();
    placeArena();
    computePeak();
    return std::move(plan);
  }

private:
  LogicalResult checkStatic(Value value, Operation *op) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      return op->emitError() << "memory plan needs static tensor types, got "
                             << value.getType();
    if (!type.getElementType().isIntOrFloat())
      return op->emitError() << "memory plan needs integer or float "
                                "elements, got "
                             << value.getType();
    return success();
  }

  unsigned addBuffer(Value value, BufferRegion region,
                     BufferCategory category) {
    PlannedBuffer buffer;
    buffer.value = value;
    buffer.region = region;
    buffer.category = category;
    buffer.bytes = tensorBytes(cast<RankedTensorType>(value.getType()));
    plan.buffers.push_back(buffer);
    unsigned index = plan.buffers.size() - 1;
    plan.bufferOf[value] = index;
    return index;
  }

  /// Assigns a buffer to every value and builds the schedule.
  LogicalResult collect() {
    Block &body = func.getBody().front();
    for (BlockArgument arg : body.getArguments()) {
      if (failed(checkStatic(arg, func)))
        return failure();
      addBuffer(arg, BufferRegion::Arena, BufferCategory::Input);
    }
    llvm::StringMap<unsigned> parameters;
    for (Operation &op : body) {
      for (Value result : op.getResults())
        if (failed(checkStatic(result, &op)))
          return failure();
      if (auto load = dyn_cast<LoadParameterOp>(op)) {
        auto [it, inserted] = parameters.try_emplace(load.getName(), 0);
        if (inserted) {
          auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
              func, load.getNameAttr());
          it->second = addBuffer(load.getResult(),
                                 layout.host.count(load.getName())
                                     ? BufferRegion::Host
                                     : BufferRegion::Weights,
                                 param ? parameterCategory(param)
                                       : BufferCategory::Parameter);
        } else {
          plan.bufferOf[load.getResult()] = it->second;
        }
        loads[load.getName()].push_back(load.getResult());
      } else if (auto assign = dyn_cast<AssignOp>(op)) {
        if (!assigned.insert(assign.getName()).second)
          return assign.emitError()
                 << "@" << assign.getName() << " is assigned twice";
        assigns.push_back(assign);
      } else if (auto constant = dyn_cast<ConstantOp>(op)) {
        addBuffer(constant.getResult(), BufferRegion::Weights,
                  BufferCategory::Constant);
      } else if (isBufferView(&op)) {
        plan.bufferOf[op.getResult(0)] = plan.bufferOf.lookup(op.getOperand(0));
      } else if (isScheduledStep(&op)) {
        plan.schedule.push_back(&op);
        for (OpResult result : op.getResults()) {
          // A result accumulated in place lives in its input's buffer.
          if (Value tied = tiedInputOf(result)) {
            plan.bufferOf[result] = plan.bufferOf.lookup(tied);
            accumulations.push_back({cast<KernelOp>(op), tied});
          } else {
            addBuffer(result, BufferRegion::Arena, BufferCategory::Activation);
          }
        }
      } else if (isa<func::ReturnOp>(op)) {
        for (Value operand : op.getOperands()) {
          PlannedBuffer &buffer = plan.buffers[plan.bufferOf.lookup(operand)];
          if (buffer.category == BufferCategory::Activation)
            buffer.category = BufferCategory::Output;
        }
      } else {
        return op.emitError()
               << "'" << op.getName()
               << "' has no place in a memory plan: run memfit-form-kernels "
                  "first";
      }
    }
    return success();
  }

  /// Each scheduled step's number (from 1; 0 is before the first).
  DenseMap<Operation *, int64_t> stepNumbers() const {
    DenseMap<Operation *, int64_t> stepOf;
    for (auto [index, op] : llvm::enumerate(plan.schedule))
      stepOf[op] = index + 1;
    return stepOf;
  }

  void computeLiveRanges() {
    DenseMap<Operation *, int64_t> stepOf = stepNumbers();
    int64_t end = plan.schedule.size() + 1;
    for (PlannedBuffer &buffer : plan.buffers) {
      Operation *def = buffer.value.getDefiningOp();
      buffer.firstStep = def ? stepOf.lookup(def) : 0;
      // A GELU the gemm before it writes as its epilogue (Epilogues.h)
      // lives from the gemm's step.
      if (auto kernel = dyn_cast_or_null<KernelOp>(def);
          kernel && buffer.firstStep > 1 &&
          activatesGemm(kernel, plan.schedule[buffer.firstStep - 2]))
        --buffer.firstStep;
      // Inputs stay intact for the whole step, so that a session can run
      // again on the inputs it was given.
      buffer.lastStep =
          buffer.category == BufferCategory::Input ? end : buffer.firstStep;
    }
    // Every use of a value (or of a view of it) keeps its buffer live until
    // the step that reads it; returned values stay live to the end.
    func.walk([&](Operation *op) {
      if (op->getParentOp() != func)
        return;
      int64_t step;
      if (isa<func::ReturnOp>(op))
        step = end;
      else if (auto it = stepOf.find(op); it != stepOf.end())
        step = it->second;
      else
        return;
      for (Value operand : op->getOperands()) {
        PlannedBuffer &buffer = plan.buffers[plan.bufferOf.lookup(operand)];
        buffer.lastStep = std::max(buffer.lastStep, step);
      }
    });
  }

  /// Steps that read `value`, through views.
  void readers(Value value, DenseMap<Operation *, int64_t> &stepOf,
               SmallVectorImpl<std::pair<Operation *, int64_t>> &out) {
    SmallVector<Operation *> users;
    collectViewReaders(value, users);
    for (Operation *user : users)
      if (auto it = stepOf.find(user); it != stepOf.end())
        out.push_back({user, it->second});
  }

  /// Whether a kernel reads and writes element by element at the same
  /// index, so that a result may overwrite an input in place. Not a kernel
  /// of several segments: each reads at its own segment's index.
  static bool isPointwise(Operation *op) {
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel || kernel->hasAttr(kSegmentsAttr))
      return false;
    // Quantize and dequantize of one block size keep to each quantization
    // block: a thread block reads a block's codes and absmax before the
    // barrier of its absmax reduction and writes them after it.
    std::optional<uint64_t> blockSize;
    for (Operation &inner : kernel.getBodyOps()) {
      auto opClass = dyn_cast<OpClassInterface>(&inner);
      if (!opClass)
        return false;
      OpClass c = opClass.getOpClass();
      bool splatExpand = isa<ExpandOp>(inner) &&
                         inner.getOperand(0).getDefiningOp<ConstantOp>();
      if (c == OpClass::Quantization) {
        uint64_t size = isa<QuantizeOp>(inner)
                            ? cast<QuantizeOp>(inner).getBlockSize()
                            : cast<DequantizeOp>(inner).getBlockSize();
        if (blockSize && *blockSize != size)
          return false;
        blockSize = size;
        continue;
      }
      if (c != OpClass::ElementWise && c != OpClass::Constant && !splatExpand)
        return false;
    }
    return true;
  }

  /// Whether `kernel`, which writes `written`, reads the old value (`loaded`
  /// or a view of it) only through element-wise ops of `written`'s shape in
  /// `written`'s segment, so that each element is read by the thread that
  /// overwrites it, and no other segment of a multi-tensor kernel reads it. A
  /// fused kernel can hold transposes or rows elsewhere in its body: the
  /// optimizer's multi-tensor kernel transposes the tied LM head's gradient
  /// before it adds it to the embedding's and updates the weight.
  static bool readsAtWrittenIndex(KernelOp kernel, ArrayRef<Value> loaded,
                                  Value written) {
    if (!kernel)
      return false;
    auto shape = cast<ShapedType>(written.getType()).getShape();
    Block &body = kernel.getBodyBlock();
    // The body's ops that compute `written`'s segment (every result
    // without kSegmentsAttr).
    unsigned result = cast<OpResult>(written).getResultNumber();
    unsigned first = 0, last = kernel->getNumResults();
    if (auto sizes = kernel->getAttrOfType<DenseI64ArrayAttr>(kSegmentsAttr))
      for (int64_t size : sizes.asArrayRef()) {
        if (result < first + size) {
          last = first + size;
          break;
        }
        first += size;
      }
    DenseSet<Operation *> computesWritten;
    SmallVector<Value> work(
        body.getTerminator()->getOperands().slice(first, last - first));
    while (!work.empty())
      if (Operation *def = work.pop_back_val().getDefiningOp())
        if (computesWritten.insert(def).second)
          llvm::append_range(work, def->getOperands());
    auto fromLoaded = [&](Value v) {
      while (!llvm::is_contained(loaded, v)) {
        Operation *def = v.getDefiningOp();
        if (!def || !isBufferView(def))
          return false;
        v = def->getOperand(0);
      }
      return true;
    };
    for (auto [index, operand] : llvm::enumerate(kernel->getOperands()))
      if (fromLoaded(operand))
        work.push_back(body.getArgument(index));
    DenseSet<Operation *> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (cast<ShapedType>(v.getType()).getShape() != shape)
        return false;
      for (Operation *user : v.getUsers()) {
        if (user->hasTrait<OpTrait::IsTerminator>() ||
            !seen.insert(user).second)
          continue;
        auto opClass = dyn_cast<OpClassInterface>(user);
        if (!opClass || opClass.getOpClass() != OpClass::ElementWise ||
            !computesWritten.contains(user))
          return false;
        llvm::append_range(work, user->getResults());
      }
    }
    return true;
  }

  /// Checks that each result accumulated in place may overwrite its
  /// input: a step's result in the arena that no other step reads at or
  /// after the accumulation (through views).
  LogicalResult checkAccumulations() {
    if (accumulations.empty())
      return success();
    DenseMap<Operation *, int64_t> stepOf = stepNumbers();
    for (auto [kernel, init] : accumulations) {
      Value root = bufferRoot(init);
      const PlannedBuffer &buffer = plan.buffers[plan.bufferOf.lookup(root)];
      // (The sum may be the function's result: an output.)
      if (buffer.region != BufferRegion::Arena ||
          buffer.category == BufferCategory::Input ||
          !stepOf.count(root.getDefiningOp()))
        return kernel.emitError()
               << "cannot accumulate in place into a value that is not a "
                  "step's result in the arena (an argument, a parameter or "
                  "a constant)";
      // The value written over, with the views of it (an earlier value of
      // the buffer that it was accumulated into is checked with that
      // accumulation).
      int64_t step = stepOf.lookup(kernel);
      SmallVector<std::pair<Operation *, int64_t>> reads;
      readers(viewRoot(init), stepOf, reads);
      for (auto [reader, readStep] : reads)
        if (reader != kernel.getOperation() && readStep >= step)
          return kernel.emitError()
                 << "cannot accumulate in place: step " << readStep
                 << " reads the value that step " << step << " adds to";
    }
    return success();
  }

  /// Puts each value that a memfit.assign stores into the parameter's own
  /// bytes, after checking that nothing reads the old value later.
  LogicalResult placeUpdates() {
    if (assigns.empty())
      return success();
    DenseMap<Operation *, int64_t> stepOf = stepNumbers();
    for (AssignOp assign : assigns) {
      Value value = assign.getValue();
      Operation *producer = value.getDefiningOp();
      if (!producer || !stepOf.count(producer) || !value.hasOneUse() ||
          plan.buffers[plan.bufferOf.lookup(value)].value != value)
        return assign.emitError()
               << "cannot update @" << assign.getName()
               << " in place: its new value must be a kernel result in a "
                  "buffer of its own, used only by the assignment";
      int64_t step = stepOf.lookup(producer);
      SmallVector<std::pair<Operation *, int64_t>> reads;
      for (Value loaded : loads.lookup(assign.getName()))
        readers(loaded, stepOf, reads);
      for (auto [reader, readStep] : reads)
        if (readStep > step ||
            (readStep == step && !isPointwise(reader) &&
             !readsAtWrittenIndex(dyn_cast<KernelOp>(producer),
                                  loads.lookup(assign.getName()), value)))
          return assign.emitError()
                 << "cannot update @" << assign.getName()
                 << " in place: step " << readStep
                 << " reads the old value after step " << step
                 << " writes the new one";
      PlannedBuffer &buffer = plan.buffers[plan.bufferOf.lookup(value)];
      auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
          func, assign.getNameAttr());
      buffer.region = layout.host.count(assign.getName())
                          ? BufferRegion::Host
                          : BufferRegion::Weights;
      buffer.category = parameterCategory(param);
      updates[plan.bufferOf.lookup(value)] = assign.getName();
    }
    return success();
  }

  /// In a training function, splits the arena's activations into
  /// gradients, saved activations and temporaries.
  void classifyTraining() {
    int64_t &firstBackward = plan.firstBackwardStep;
    bool training = !assigns.empty();
    for (auto [index, op] : llvm::enumerate(plan.schedule))
      if (isBackwardStep(op)) {
        training = true;
        if (!firstBackward)
          firstBackward = index + 1;
      }
    if (!training)
      return;
    // The op inside a memfit.kernel that computes one of its results.
    auto innerOp = [](Value value) -> Operation * {
      auto kernel = value.getDefiningOp<KernelOp>();
      if (!kernel)
        return nullptr;
      return kernel.getBodyBlock()
          .getTerminator()
          ->getOperand(cast<OpResult>(value).getResultNumber())
          .getDefiningOp();
    };
    auto isGradient = [&](Value value) {
      Operation *def = value.getDefiningOp();
      Operation *inner = innerOp(value);
      return (def && def->hasAttr(kGradientOfAttr)) ||
             (inner && inner->hasAttr(kGradientOfAttr));
    };
    auto isRecomputed = [](Value value) {
      Operation *def = value.getDefiningOp();
      return def && def->hasAttr(kRecomputedFromAttr);
    };
    // The loss's own ops: the losses and their gradients (class Loss), and
    // memfit-chunk-loss's chunks.
    auto isLoss = [&](Value value) {
      Operation *op = innerOp(value);
      if (!op)
        op = value.getDefiningOp();
      if (!op)
        return false;
      auto opClass = dyn_cast<OpClassInterface>(op);
      return op->hasAttr(kLossAttr) ||
             (opClass && opClass.getOpClass() == OpClass::Loss);
    };
    auto isCommunication = [](Value value) {
      auto opClass = dyn_cast_or_null<OpClassInterface>(value.getDefiningOp());
      return opClass && opClass.getOpClass() == OpClass::Collective;
    };
    auto isCompressed = [](Value value) {
      Operation *def = value.getDefiningOp();
      return def && def->hasAttr(kCompressedAttr);
    };
    // A kernel's result that is a parameter's low-precision working copy.
    auto isWorkingCopy = [&](Value value) {
      auto cast = dyn_cast_or_null<CastOp>(innerOp(value));
      return cast && cast.getReason() == "working-copy";
    };
    for (PlannedBuffer &buffer : plan.buffers) {
      if (buffer.region != BufferRegion::Arena ||
          buffer.category != BufferCategory::Activation)
        continue;
      // What the host's update kernels read: the host may run them after
      // the device has gone on, to the step's end, so what the device
      // wrote for them stays. What they write (the new working copies)
      // only the host tasks' queue touches, in order: those keep their
      // live ranges, in bytes of their own (placeArena).
      if (Operation *def = buffer.value.getDefiningOp();
          def && (def->hasAttr(kToHostAttr) || def->hasAttr(kOnHostAttr))) {
        buffer.region = BufferRegion::Host;
        buffer.category = BufferCategory::HostTransfer;
        if (!def->hasAttr(kOnHostAttr))
          buffer.lastStep = int64_t(plan.schedule.size()) + 1;
        continue;
      }
      // memfit-remat's copy of a saved value in host memory.
      if (Operation *def = buffer.value.getDefiningOp();
          def && def->hasAttr(kOffloadedAttr)) {
        buffer.region = BufferRegion::Host;
        buffer.category = BufferCategory::OffloadedActivation;
        continue;
      }
      if (isWorkingCopy(buffer.value))
        buffer.category = BufferCategory::WorkingCopy;
      else if (isCommunication(buffer.value))
        buffer.category = BufferCategory::Communication;
      else if (isGradient(buffer.value))
        buffer.category = BufferCategory::Gradient;
      else if (isRecomputed(buffer.value))
        buffer.category = BufferCategory::Recomputed;
      else if (isCompressed(buffer.value))
        buffer.category = BufferCategory::CompressedActivation;
      else if (firstBackward && buffer.firstStep < firstBackward &&
               buffer.lastStep >= firstBackward)
        buffer.category = BufferCategory::SavedActivation;
      else if (isLoss(buffer.value))
        buffer.category = BufferCategory::Loss;
      else
        buffer.category = BufferCategory::Temporary;
    }
  }

  void layoutWeights() {
    for (auto [index, buffer] : llvm::enumerate(plan.buffers)) {
      if (packedInHost(buffer))
        continue; // placed by placeArena, past the states
      if (buffer.region == BufferRegion::Host) {
        auto it = updates.find(index);
        StringRef name = it != updates.end()
                             ? it->second
                             : buffer.value.getDefiningOp<LoadParameterOp>()
                                   .getName();
        buffer.offset = layout.host.lookup(name);
        continue;
      }
      if (buffer.region != BufferRegion::Weights)
        continue;
      Value value = buffer.value;
      if (auto it = updates.find(index); it != updates.end())
        buffer.offset = layout.parameters.lookup(it->second);
      else if (auto load = value.getDefiningOp<LoadParameterOp>())
        buffer.offset = layout.parameters.lookup(load.getName());
      else
        buffer.offset = layout.constants.lookup(value);
    }
    plan.weightsBytes = layout.bytes;
    plan.hostBytes = layout.hostBytes;
  }

  /// The step with the most live arena bytes and its bytes by category.
  void computePeak() {
    std::vector<CategoryBytes> live = arenaLiveByStep(plan);
    int64_t peakLive = -1;
    for (auto [step, bytes] : llvm::enumerate(live)) {
      int64_t total = std::accumulate(bytes.begin(), bytes.end(), int64_t(0));
      if (total > peakLive) {
        peakLive = total;
        plan.peakStep = step;
      }
    }
    plan.peakBytes = live[plan.peakStep];
  }

  /// The arena, and in the host region past its states the host transfers
  /// (those the device writes, then those the host's kernels write: apart,
  /// so that the device never waits for the host to reuse their bytes) and
  /// then the offloaded activations: each packed by placeLive.
  void placeArena() {
    plan.arenaBytes = placeLive([](const PlannedBuffer &buffer) {
      return buffer.region == BufferRegion::Arena;
    }, 0);
    int64_t at = alignToPlan(layout.hostBytes);
    // The host-region buffers of `category` that `which` selects, packed
    // from `at` on.
    auto pack = [&](BufferCategory category, auto which) {
      int64_t end = placeLive(
          [&](const PlannedBuffer &buffer) {
            return buffer.region == BufferRegion::Host &&
                   buffer.category == category && which(buffer);
          },
          at);
      plan.hostPackedBytes[category == BufferCategory::HostTransfer] +=
          end - at;
      at = end;
    };
    auto hostWritten = [](const PlannedBuffer &buffer) {
      Operation *def = buffer.value.getDefiningOp();
      return def && def->hasAttr(kOnHostAttr);
    };
    pack(BufferCategory::HostTransfer,
         [&](const PlannedBuffer &buffer) { return !hostWritten(buffer); });
    pack(BufferCategory::HostTransfer, hostWritten);
    pack(BufferCategory::OffloadedActivation,
         [](const PlannedBuffer &) { return true; });
    plan.hostBytes = std::max(plan.hostBytes, at);
  }

  /// Greedy by size: the largest of the buffers `which` selects are placed
  /// first, each at the lowest aligned offset from `base` that no buffer
  /// with an overlapping live range occupies. Returns where they end.
  int64_t placeLive(function_ref<bool(const PlannedBuffer &)> which,
                    int64_t base) {
    SmallVector<unsigned> order;
    for (auto [index, buffer] : llvm::enumerate(plan.buffers))
      if (which(buffer))
        order.push_back(index);
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      const PlannedBuffer &x = plan.buffers[a], &y = plan.buffers[b];
      if (x.bytes != y.bytes)
        return x.bytes > y.bytes;
      return x.firstStep < y.firstStep;
    });
    SmallVector<unsigned> placed;
    int64_t peak = base;
    for (unsigned index : order) {
      PlannedBuffer &buffer = plan.buffers[index];
      SmallVector<std::pair<int64_t, int64_t>> busy;
      for (unsigned other : placed) {
        const PlannedBuffer &o = plan.buffers[other];
        if (o.firstStep <= buffer.lastStep && buffer.firstStep <= o.lastStep)
          busy.push_back({o.offset, o.offset + o.bytes});
      }
      llvm::sort(busy);
      int64_t offset = base;
      for (auto [begin, end] : busy) {
        if (offset + buffer.bytes <= begin)
          break;
        offset = std::max(offset, alignToPlan(end));
      }
      buffer.offset = offset;
      peak = std::max(peak, alignToPlan(offset + buffer.bytes));
      placed.push_back(index);
    }
    return peak;
  }

  func::FuncOp func;
  const WeightsLayout &layout;
  MemoryPlan plan;
  llvm::StringMap<SmallVector<Value>> loads;
  llvm::StringSet<> assigned;
  SmallVector<AssignOp> assigns;
  /// Kernels that accumulate a result in place, with the input written.
  SmallVector<std::pair<KernelOp, Value>> accumulations;
  DenseMap<unsigned, StringRef> updates; // buffer -> parameter it updates
};

} // namespace

FailureOr<ModulePlan> mlir::memfit::planModule(ModuleOp module,
                                               ArrayRef<func::FuncOp> funcs) {
  ModulePlan result;
  WeightsLayout layout;
  // Parameters that the functions read or assign, in module order: those
  // with data first, zero-initialized states last.
  llvm::StringSet<> used;
  for (func::FuncOp func : funcs)
    func.walk([&](Operation *op) {
      if (auto load = dyn_cast<LoadParameterOp>(op))
        used.insert(load.getName());
      else if (auto assign = dyn_cast<AssignOp>(op))
        used.insert(assign.getName());
    });
  SmallVector<ParameterOp> withData, zeroStates;
  for (auto param : module.getOps<ParameterOp>())
    if (used.contains(param.getSymName()))
      (isZeroState(param) ? zeroStates : withData).push_back(param);
  int64_t offset = 0;
  auto place = [&](ParameterOp param) {
    layout.parameters[param.getSymName()] = offset;
    int64_t bytes = tensorBytes(param.getType());
    result.weightsByCategory[unsigned(parameterCategory(param))] += bytes;
    offset = alignToPlan(offset + bytes);
  };
  // Parameters and states kept in host memory: a region of their own, its
  // masters (with data) first.
  auto placeHost = [&](ParameterOp param) {
    layout.host[param.getSymName()] = layout.hostBytes;
    int64_t bytes = tensorBytes(param.getType());
    result.hostByCategory[unsigned(parameterCategory(param))] += bytes;
    layout.hostBytes = alignToPlan(layout.hostBytes + bytes);
  };
  for (ParameterOp param : withData)
    keptInHostMemory(param) ? placeHost(param) : place(param);
  result.initializedHostBytes = layout.hostBytes;
  for (func::FuncOp func : funcs)
    for (Operation &op : func.getBody().front())
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        layout.constants[constant.getResult()] = offset;
        int64_t bytes = tensorBytes(constant.getType());
        result.weightsByCategory[unsigned(BufferCategory::Constant)] += bytes;
        offset = alignToPlan(offset + bytes);
      }
  result.initializedWeightsBytes = offset;
  // States kept in host memory follow the masters there (they start as
  // zeros, like every state placed here).
  for (ParameterOp param : zeroStates)
    keptInHostMemory(param) ? placeHost(param) : place(param);
  // The index-error word of the kernels that check indices, which the
  // session zero-fills with the states and clears after a failed run.
  bool checks = false;
  for (func::FuncOp func : funcs)
    func.walk([&](Operation *op) { checks |= checksIndices(op); });
  if (checks) {
    result.indexErrorOffset = offset;
    offset = alignToPlan(offset + kIndexErrorWordBytes);
  }
  layout.bytes = offset;
  result.weightsBytes = offset;
  result.parameterOffsets = layout.parameters;
  result.hostOffsets = layout.host;
  result.hostBytes = layout.hostBytes;

  for (auto [index, func] : llvm::enumerate(funcs)) {
    FailureOr<MemoryPlan> plan = Planner(func, layout).run();
    if (failed(plan))
      return failure();
    if (plan->arenaBytes > result.arenaBytes) {
      result.arenaBytes = plan->arenaBytes;
      result.peakFunction = index;
    }
    // Host transfers and offloaded activations past the host region's
    // states.
    if (plan->hostBytes > result.hostBytes) {
      result.hostByCategory[unsigned(BufferCategory::OffloadedActivation)] =
          plan->hostPackedBytes[0];
      result.hostByCategory[unsigned(BufferCategory::HostTransfer)] =
          plan->hostPackedBytes[1];
      result.hostBytes = plan->hostBytes;
    }
    result.functions.push_back(std::move(*plan));
  }
  return result;
}

FailureOr<MemoryPlan> mlir::memfit::planMemory(func::FuncOp func) {
  auto module = func->getParentOfType<ModuleOp>();
  FailureOr<ModulePlan> plan = planModule(module, {func});
  if (failed(plan))
    return failure();
  return std::move(plan->functions.front());
}
