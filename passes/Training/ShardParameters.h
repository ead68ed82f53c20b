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

/// ZeRO stage 3: each of `params` keeps only this rank's rows (rows
/// [r c, (r + 1) c) of dimension 0, c = ceil(rows / shards), zero rows
/// past the end), and its reads in the module become all-gathers of the
/// ranks' rows, one for each layer pass that reads it (a run of one
/// transformer layer's ops, memfit::layerOf, in the forward or in the
/// backward), shared by the pass's readers, so that the whole parameter
/// lives only while its layer runs: the forward and the backward gather
/// again, as a recomputed layer would. A layer's gathers are placed at the
/// start of its pass, or with `prefetch` at the start of the layer's pass
/// before it (one layer of prefetch; not for the forward's and the
/// backward's first layer); outside the layers each weight is gathered
/// right before its first reader. Per-element ops between the parameter
/// and its readers (a cast to 16 bits, a transpose, a reshape) are copied
/// to each pass first, and a cast runs on the rows before the gather, which
/// then moves the 16-bit rows. Fails, naming the parameter, for a value it
/// cannot cut.
LogicalResult shardParameterRows(ModuleOp module,
                                 ArrayRef<ParameterOp> params,
                                 int64_t shards, int64_t rank, bool prefetch);

/// `type` with `rows` in dimension 0: a rank's rows of a sharded value.
RankedTensorType withRows(RankedTensorType type, int64_t rows);

} // namespace mlir::memfit

#endif // MEMFIT_PASSES_TRAINING_SHARDPARAMETERS_H
