//===- Epilogues.h - kernels a contraction can compute ----------*- C++ -*-===//
//
// Which kernels a memfit.gemm can compute as cuBLASLt's epilogues: one
// that only sums every row of an operand the gemm reads packed as op(B)
// [k, n] or op(A) [k, m] (the bias gradient), marked right before the gemm;
// one that only takes the tanh GELU of the gemm's biased result, marked
// right after it (GELU_AUX_BIAS). memfit-fuse marks them (kEpilogueAttr);
// the CUDA emitter checks the same before it runs them as epilogues, and
// the memory planner keeps a GELU's result live from the gemm's step.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_ANALYSIS_EPILOGUES_H
#define MEMFIT_ANALYSIS_EPILOGUES_H

#include "memfit/Dialect/MemfitOps.h"

namespace mlir::memfit {

/// The op of a kernel whose body is that one op, yielded alone; else null.
Operation *soleBodyOp(KernelOp kernel);

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

/// Whether `kernel`, marked kEpilogueAttr, only takes the tanh GELU of the
/// result of `gemm`, the step before it (through views), which then writes
/// both as cuBLASLt's GELU_AUX_BIAS: its result is written at `gemm`'s step,
/// so the memory plan keeps it live from there.
bool activatesGemm(KernelOp kernel, Operation *gemm);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_EPILOGUES_H
