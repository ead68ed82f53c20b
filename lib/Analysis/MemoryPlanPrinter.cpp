//===- MemoryPlanPrinter.cpp - a memory plan as text ----------------------===//
//
// printMemoryPlan (MemoryPlan.h): what memfit-opt --memfit-memory-plan
// prints of a function's plan: its regions, the training categories, what
// is live at the peak, and with listBuffers every buffer.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::memfit;

static std::string valueName(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return llvm::formatv("%arg{0}", arg.getArgNumber()).str();
  Location loc = value.getDefiningOp()->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (auto meta = dyn_cast_or_null<DictionaryAttr>(fused.getMetadata());
        meta && meta.contains(kOnnxScopeKey))
      loc = fused.getLocations().front(); // an imported node with its scope
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
  int64_t unshared = 0;
  for (const PlannedBuffer &buffer : plan.buffers)
    if (buffer.region == BufferRegion::Arena)
      unshared += buffer.bytes;
  os << llvm::formatv("  arena peak: {0} bytes (inputs {1}, outputs {2}, "
                      "activations {3}; {4} bytes if nothing were shared)\n",
                      plan.arenaBytes,
                      plan.categoryBytes(BufferCategory::Input),
                      plan.categoryBytes(BufferCategory::Output),
                      plan.categoryBytes(BufferCategory::Activation), unshared);
  int64_t training = plan.categoryBytes(BufferCategory::Gradient) +
                     plan.categoryBytes(BufferCategory::SavedActivation) +
                     plan.categoryBytes(BufferCategory::CompressedActivation) +
                     plan.categoryBytes(BufferCategory::Temporary) +
                     plan.categoryBytes(BufferCategory::Loss) +
                     plan.categoryBytes(BufferCategory::WorkingCopy);
  if (training) {
    os << llvm::formatv("  training: gradients {0}, saved activations {1}, "
                        "temporaries {2}, loss {3} bytes in all\n",
                        plan.categoryBytes(BufferCategory::Gradient),
                        plan.categoryBytes(BufferCategory::SavedActivation),
                        plan.categoryBytes(BufferCategory::Temporary),
                        plan.categoryBytes(BufferCategory::Loss));
    if (int64_t copies = plan.categoryBytes(BufferCategory::WorkingCopy))
      os << llvm::formatv("  mixed precision: parameter working copies {0} "
                          "bytes in all\n",
                          copies);
    if (int64_t received = plan.categoryBytes(BufferCategory::Communication))
      os << llvm::formatv("  data parallel: received by collectives {0} "
                          "bytes in all\n",
                          received);
    os << "  live at the peak (step " << plan.peakStep << "):";
    for (unsigned c = 0; c < kNumBufferCategories; ++c)
      if (plan.peakBytes[c])
        os << " " << stringifyBufferCategory(BufferCategory(c)) << " "
           << plan.peakBytes[c];
    os << "\n";
  }
  os << llvm::formatv("  total: {0} bytes\n",
                      alignToPlan(plan.weightsBytes) + plan.arenaBytes);
  if (plan.hostBytes)
    os << llvm::formatv("  host region: {0} bytes (kept in host memory, not "
                        "in the device's total)\n",
                        plan.hostBytes);
  if (!listBuffers)
    return;
  for (auto [index, buffer] : llvm::enumerate(plan.buffers))
    os << llvm::formatv("  buffer {0}: {1} {2} offset {3} bytes {4} steps "
                        "{5}..{6} {7}\n",
                        index,
                        buffer.region == BufferRegion::Weights ? "weights"
                        : buffer.region == BufferRegion::Host  ? "host"
                                                               : "arena",
                        stringifyBufferCategory(buffer.category),
                        buffer.offset, buffer.bytes, buffer.firstStep,
                        buffer.lastStep, valueName(buffer.value));
}
