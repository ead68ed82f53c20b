//===- ShardParameters.h - ZeRO stage 3: each rank holds rows -*- C++ -*-===//
//
// memfit-optimizer's part of ZeRO stage 3 (ShardParameters.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_PASSES_TRAINING_SHARDPARAMETERS_H
#define MEMFIT_PASSES_TRAINING_SHARDPARAMETERS_H

#include "memfit/Dialect/MemfitOps.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::memfit {

/// ZeRO stage 3: `param` keeps only this rank's rows (rows [r c, (r + 1) c)
/// of dimension 0, c = ceil(rows / shards), zero rows past the end), and
/// every read of it in the module becomes an all-gather of the ranks' rows
/// placed right before the op that reads it, so that the whole parameter
/// lives only while it is used: the forward and the backward gather again,
/// as a recomputed layer would. Per-element ops between the parameter and
/// its readers (a cast to 16 bits, a transpose, a reshape) are copied to
/// each reader first, and a cast runs on the rows before the gather, which
/// then moves the 16-bit rows. Fails, naming the parameter, for a value it
/// cannot cut.
LogicalResult shardParameterRows(ModuleOp module, ParameterOp param,
                                 int64_t shards, int64_t rank);

/// `type` with `rows` in dimension 0: a rank's rows of a sharded value.
RankedTensorType withRows(RankedTensorType type, int64_t rows);

} // namespace mlir::memfit

#endif // MEMFIT_PASSES_TRAINING_SHARDPARAMETERS_H
