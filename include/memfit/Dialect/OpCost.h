//===- OpCost.h - FLOPs and bytes of an op ----------------------*- C++ -*-===//
//
// The cost model behind CostOpInterface (see its description in
// MemfitInterfaces.td): what running an op once costs in floating-point
// operations and in bytes moved between memory and the processor.
// memfit-op-cost prints it; memfit-remat prices recomputation with it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPCOST_H
#define MEMFIT_DIALECT_OPCOST_H

#include <cstdint>

namespace mlir {
class Operation;

namespace memfit {

struct OpCost {
  int64_t flops = 0;
  int64_t bytes = 0;
  /// Bytes a rank sends to the others (collectives; ring algorithms, as
  /// NCCL's): what the interconnect, not the memory, limits.
  int64_t wireBytes = 0;

  OpCost &operator+=(const OpCost &other) {
    flops += other.flops;
    bytes += other.bytes;
    wireBytes += other.wireBytes;
    return *this;
  }
};

/// Ops that run nothing (the RunsNothing trait): a view shares its source's
/// buffer, weights and constants sit in the weights region, an assign is
/// planned in place.
bool isFreeOp(Operation *op);

/// The class-based model, CostOpInterface's default: FLOPs from the op's
/// OpClass and its per-element factor (getFlopsPerElement), bytes from its
/// tensor operands and results. Ops that move nothing (views, parameters,
/// constants, assign) cost zero.
OpCost defaultOpCost(Operation *op);

/// The cost of any op: CostOpInterface's when the op has it, else no FLOPs
/// and the bytes of its ranked-tensor operands and results.
OpCost estimateCost(Operation *op);

} // namespace memfit
} // namespace mlir

#endif // MEMFIT_DIALECT_OPCOST_H
