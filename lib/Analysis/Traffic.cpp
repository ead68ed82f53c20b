//===- Traffic.cpp - bytes a step moves, and the least it could -----------===//

#include "memfit/Analysis/Traffic.h"

#include "memfit/Dialect/OpCost.h"
#include "memfit/runtime/Bytes.h"

#include "llvm/Support/FormatVariadic.h"

#include "llvm/ADT/DenseSet.h"

#include <optional>

using namespace mlir;
using namespace mlir::memfit;

StepTraffic mlir::memfit::stepTraffic(const MemoryPlan &plan) {
  StepTraffic traffic;
  // Weights-region buffers by offset: an update lives in its parameter's
  // bytes, and a parameter may be loaded more than once.
  llvm::DenseSet<int64_t> read, written;
  llvm::DenseSet<unsigned> arenaRead;
  // A buffer that persists across steps (weights, host-region states), by
  // its place: host-region offsets are keyed apart from the weights
  // region's. Offloaded activations share host offsets over time and are
  // not weights.
  auto persistentKey =
      [](const PlannedBuffer &buffer) -> std::optional<int64_t> {
    if (buffer.region == BufferRegion::Arena ||
        buffer.category == BufferCategory::OffloadedActivation)
      return std::nullopt;
    return buffer.region == BufferRegion::Host ? -1 - buffer.offset
                                               : buffer.offset;
  };
  for (Operation *step : plan.schedule) {
    (isa<KernelOp>(step) ? traffic.kernels : traffic.contractions) += 1;
    OpCost cost = estimateCost(step);
    traffic.flops += cost.flops;
    traffic.bytesMoved += cost.bytes;
    if (!isa<KernelOp>(step))
      traffic.contractionBytes += cost.bytes;
    for (Value operand : step->getOperands()) {
      if (!plan.bufferOf.count(operand))
        continue;
      unsigned index = plan.bufferOf.lookup(operand);
      const PlannedBuffer &buffer = plan.buffers[index];
      if (std::optional<int64_t> key = persistentKey(buffer)) {
        if (read.insert(*key).second)
          traffic.weightsRead += buffer.bytes;
      } else if (buffer.category == BufferCategory::Input &&
                 arenaRead.insert(index).second) {
        traffic.inputs += buffer.bytes;
      }
    }
    for (Value result : step->getResults()) {
      const PlannedBuffer &buffer = plan.bufferFor(result);
      std::optional<int64_t> key = persistentKey(buffer);
      if (key && written.insert(*key).second)
        traffic.updates += buffer.bytes;
    }
  }
  for (const PlannedBuffer &buffer : plan.buffers) {
    if (persistentKey(buffer))
      continue;
    if (buffer.category == BufferCategory::Output)
      traffic.outputs += buffer.bytes;
    else if (buffer.category == BufferCategory::SavedActivation ||
             buffer.category == BufferCategory::CompressedActivation ||
             buffer.category == BufferCategory::OffloadedActivation)
      traffic.savedActivations += buffer.bytes;
  }
  return traffic;
}

void mlir::memfit::writeTraffic(const StepTraffic &traffic, StringRef label,
                                raw_ostream &os) {
  using ::memfit::groupDigits;
  os << label << ": " << traffic.kernels + traffic.contractions << " steps ("
     << traffic.kernels << " kernels, " << traffic.contractions
     << " contractions), " << groupDigits(traffic.flops) << " FLOPs, "
     << groupDigits(traffic.bytesMoved) << " bytes moved ("
     << groupDigits(traffic.contractionBytes) << " by contractions)\n";
  int64_t bound = traffic.lowerBound();
  os << label << ": lower bound " << groupDigits(bound) << " bytes (inputs "
     << groupDigits(traffic.inputs) << ", weights and states read "
     << groupDigits(traffic.weightsRead) << ", outputs "
     << groupDigits(traffic.outputs) << ", updates "
     << groupDigits(traffic.updates) << ", saved activations "
     << groupDigits(traffic.savedActivations)
     << " written and read); moved / lower bound = "
     << (bound
             ? llvm::formatv("{0:F2}", static_cast<double>(traffic.bytesMoved) /
                                           static_cast<double>(bound))
                   .str()
             : std::string("-"))
     << "\n";
}
