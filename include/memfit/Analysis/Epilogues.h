//===- Epilogues.h - kernels a contraction can compute ----------*- C++ -*-===//
//
// Which kernel a memfit.gemm can compute as cuBLASLt's bias-gradient
// epilogue: one that only sums every row of an operand the gemm reads
// packed as op(B) [k, n] or op(A) [k, m]. memfit-fuse marks such a kernel
// (kEpilogueAttr) right before its gemm; the CUDA emitter checks the same
// before it runs the kernel as the gemm's epilogue.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_ANALYSIS_EPILOGUES_H
#define MEMFIT_ANALYSIS_EPILOGUES_H

#include "memfit/Dialect/MemfitOps.h"

namespace mlir::memfit {

/// The gemm operand whose rows a kernel sums.
enum class SummedOperand { None, A, B };

/// Whether `kernel` only sums all but the last dimension of its one input
/// (a memfit.reduce_sum of the same element type over every leading axis
/// not of extent 1, to as many elements as the last dimension has).
bool sumsRows(KernelOp kernel);

/// Which operand of `gemm` is the input `kernel` sums (sumsRows), the same
/// buffer read packed: B [k, n] untransposed, or A stored [k, m] and
/// transposed, k being the rows summed. None where it is neither, or where
/// the gemm has a `c`.
SummedOperand summedOperand(KernelOp kernel, GemmOp gemm);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_EPILOGUES_H
