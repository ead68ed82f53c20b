//===- KernelEmitterInterface.td - CUDA emission per op ----*- tablegen -*-===//
//
// How each memfit op becomes CUDA C++ inside a generated kernel. The
// interface is the CUDA target's, not the dialect's, and private to it:
// its methods write through the target's KernelWriter. Its models live in
// this directory and are attached to the memfit ops as external models by
// registerKernelEmitterInterfaces, which emitExecutable calls itself.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_KERNELEMITTERINTERFACE_TD
#define MEMFIT_LIB_TARGET_CUDA_KERNELEMITTERINTERFACE_TD

include "mlir/IR/OpBase.td"

def KernelEmitterOpInterface : OpInterface<"KernelEmitterOpInterface"> {
  let cppNamespace = "::mlir::memfit::cuda";
  let description = [{
    The CUDA C++ of one op in a `memfit.kernel`, written through the
    target's KernelWriter (KernelWriter.h). An op emits in one of four
    styles (EmitStyle):

    - `ElementWise`: a scalar expression of its operands' scalar
      expressions, at the kernel's index (one thread per element of the
      kernel's result); any chain of such ops composes into one kernel.
    - `IndexMapping`: data movement that reads its operands at a mapped
      index (`writer.load`), at the kernel's index; it may declare
      variables before returning its expression.
    - `Template`: a kernel template of its own (a row of a softmax or a
      normalization, a reduction, a loss, split, gather_grad), written
      whole by `emitTemplate` from the template's parameters; it is the
      kernel's anchor.
    - `Blockwise`: a block-wise reduction that ends a pointwise kernel
      (quantize: one block maximum per block of values, then a code per
      value). The kernel runs one thread block per quantization block; the
      element-wise ops before it compose as in a pointwise kernel
      (KernelWriter::emitBlockwise, QuantEmitters.cpp).

    The row ops (isRowOp: the reductions, the normalizations and the
    softmaxes) also compose in a fused row kernel (rowFrameOf), one block
    per row: `emitRowReduction` writes their reductions over the row and
    `emitRowElement` a normalization's or softmax's elements from them
    (RowProgram.cpp).

    Methods that do not apply to the op fail with a diagnostic.
  }];
  let methods = [
    InterfaceMethod<"Returns how the op is emitted.",
      "::mlir::memfit::cuda::EmitStyle", "getEmitStyle", (ins)>,
    InterfaceMethod<[{
        Returns the C expression of the op's (single) result at the
        kernel's index. `operands` are the C expressions of the operands
        for `ElementWise` ops and empty for `IndexMapping` ops, which read
        theirs through the writer. Fails with a diagnostic on the op.
      }],
      "::mlir::FailureOr<std::string>", "emitScalar",
      (ins "::mlir::memfit::cuda::KernelWriter &":$writer,
           "::llvm::ArrayRef<std::string>":$operands)>,
    InterfaceMethod<[{
        Writes the body of a kernel whose anchor is this op (its operands
        are the kernel's inputs) and sets its launch dimensions. Fails with
        a diagnostic on the op.
      }],
      "::mlir::LogicalResult", "emitTemplate",
      (ins "::mlir::memfit::cuda::KernelWriter &":$writer)>,
    InterfaceMethod<[{
        In a fused row kernel, writes the op's block-wide reductions over
        the row (`writer.reduceRow`): a reduction defines its value per row
        (`writer.defineRowValue`), a normalization or a softmax records the
        row statistics its elements are computed from
        (`writer.setRowStats`). Fails with a diagnostic on the op.
      }],
      "::mlir::LogicalResult", "emitRowReduction",
      (ins "::mlir::memfit::cuda::KernelWriter &":$writer)>,
    InterfaceMethod<[{
        In a fused row kernel, returns the C expression, in the row's
        accumulator type, of a normalization's or softmax's element at the
        kernel's index from its row statistics (`writer.rowStatsOf`) and
        `operands`, the C expressions of its operands there. Fails with a
        diagnostic on the op.
      }],
      "::mlir::FailureOr<std::string>", "emitRowElement",
      (ins "::mlir::memfit::cuda::KernelWriter &":$writer,
           "::llvm::ArrayRef<std::string>":$operands)>,
  ];
}

#endif // MEMFIT_LIB_TARGET_CUDA_KERNELEMITTERINTERFACE_TD
