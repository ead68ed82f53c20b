//===- MemoryPlan.cpp - schedule, liveness and arena offsets ---------------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

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
  }
  return "?";
}

int64_t mlir::memfit::tensorBytes(RankedTensorType type) {
  Type elt = type.getElementType();
  int64_t width = elt.isInteger(1) ? 8 : elt.getIntOrFloatBitWidth();
  return type.getNumElements() * ((width + 7) / 8);
}

int64_t MemoryPlan::categoryBytes(BufferCategory category) const {
  int64_t total = 0;
  for (const PlannedBuffer &buffer : buffers)
    if (buffer.category == category)
      total += buffer.bytes;
  return total;
}

static int64_t alignTo(int64_t value) {
  return (value + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}

bool mlir::memfit::isBufferView(Operation *op) {
  return isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(op);
}

namespace {

class Planner {
public:
  explicit Planner(func::FuncOp func) : func(func) {}

  FailureOr<MemoryPlan> run() {
    if (failed(collect()))
      return failure();
    computeLiveRanges();
    layoutWeights();
    placeArena();
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
        if (inserted)
          it->second = addBuffer(load.getResult(), BufferRegion::Weights,
                                 BufferCategory::Parameter);
        else
          plan.bufferOf[load.getResult()] = it->second;
      } else if (auto constant = dyn_cast<ConstantOp>(op)) {
        addBuffer(constant.getResult(), BufferRegion::Weights,
                  BufferCategory::Constant);
      } else if (isBufferView(&op)) {
        plan.bufferOf[op.getResult(0)] = plan.bufferOf.lookup(op.getOperand(0));
      } else if (isa<KernelOp, MatMulOp, GemmOp>(op)) {
        plan.schedule.push_back(&op);
        for (Value result : op.getResults())
          addBuffer(result, BufferRegion::Arena, BufferCategory::Activation);
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

  void computeLiveRanges() {
    DenseMap<Operation *, int64_t> stepOf;
    for (auto [index, op] : llvm::enumerate(plan.schedule))
      stepOf[op] = index + 1;
    int64_t end = plan.schedule.size() + 1;
    for (PlannedBuffer &buffer : plan.buffers) {
      Operation *def = buffer.value.getDefiningOp();
      buffer.firstStep = def ? stepOf.lookup(def) : 0;
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

  void layoutWeights() {
    int64_t offset = 0;
    for (PlannedBuffer &buffer : plan.buffers) {
      if (buffer.region != BufferRegion::Weights)
        continue;
      buffer.offset = offset;
      offset = alignTo(offset + buffer.bytes);
    }
    plan.weightsBytes = offset;
  }

  /// Greedy by size: the largest buffers are placed first, each at the
  /// lowest aligned offset that no buffer with an overlapping live range
  /// occupies.
  void placeArena() {
    SmallVector<unsigned> order;
    for (auto [index, buffer] : llvm::enumerate(plan.buffers))
      if (buffer.region == BufferRegion::Arena)
        order.push_back(index);
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      const PlannedBuffer &x = plan.buffers[a], &y = plan.buffers[b];
      if (x.bytes != y.bytes)
        return x.bytes > y.bytes;
      return x.firstStep < y.firstStep;
    });
    SmallVector<unsigned> placed;
    int64_t peak = 0;
    for (unsigned index : order) {
      PlannedBuffer &buffer = plan.buffers[index];
      SmallVector<std::pair<int64_t, int64_t>> busy;
      for (unsigned other : placed) {
        const PlannedBuffer &o = plan.buffers[other];
        if (o.firstStep <= buffer.lastStep && buffer.firstStep <= o.lastStep)
          busy.push_back({o.offset, o.offset + o.bytes});
      }
      llvm::sort(busy);
      int64_t offset = 0;
      for (auto [begin, end] : busy) {
        if (offset + buffer.bytes <= begin)
          break;
        offset = std::max(offset, alignTo(end));
      }
      buffer.offset = offset;
      peak = std::max(peak, alignTo(offset + buffer.bytes));
      placed.push_back(index);
    }
    plan.arenaBytes = peak;
  }

  func::FuncOp func;
  MemoryPlan plan;
};

} // namespace

FailureOr<MemoryPlan> mlir::memfit::planMemory(func::FuncOp func) {
  return Planner(func).run();
}

static std::string valueName(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return llvm::formatv("%arg{0}", arg.getArgNumber()).str();
  Location loc = value.getDefiningOp()->getLoc();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto load = value.getDefiningOp<LoadParameterOp>())
    return load.getName().str();
  return value.getDefiningOp()->getName().getStringRef().str();
}

void mlir::memfit::printMemoryPlan(const MemoryPlan &plan, func::FuncOp func,
                                   raw_ostream &os, bool listBuffers) {
  os << "memory plan for @" << func.getSymName() << ": "
     << plan.schedule.size() << " steps, " << plan.buffers.size()
     << " buffers\n";
  os << llvm::formatv("  weights region: {0} bytes (parameters {1}, "
                      "constants {2})\n",
                      plan.weightsBytes,
                      plan.categoryBytes(BufferCategory::Parameter),
                      plan.categoryBytes(BufferCategory::Constant));
  int64_t unshared = plan.categoryBytes(BufferCategory::Input) +
                     plan.categoryBytes(BufferCategory::Output) +
                     plan.categoryBytes(BufferCategory::Activation);
  os << llvm::formatv("  arena peak: {0} bytes (inputs {1}, outputs {2}, "
                      "activations {3}; {4} bytes if nothing were shared)\n",
                      plan.arenaBytes,
                      plan.categoryBytes(BufferCategory::Input),
                      plan.categoryBytes(BufferCategory::Output),
                      plan.categoryBytes(BufferCategory::Activation), unshared);
  os << llvm::formatv("  total: {0} bytes\n",
                      alignTo(plan.weightsBytes) + plan.arenaBytes);
  if (!listBuffers)
    return;
  for (auto [index, buffer] : llvm::enumerate(plan.buffers))
    os << llvm::formatv("  buffer {0}: {1} {2} offset {3} bytes {4} steps "
                        "{5}..{6} {7}\n",
                        index,
                        buffer.region == BufferRegion::Weights ? "weights"
                                                               : "arena",
                        stringifyBufferCategory(buffer.category),
                        buffer.offset, buffer.bytes, buffer.firstStep,
                        buffer.lastStep, valueName(buffer.value));
}
