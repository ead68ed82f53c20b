//===- QuantizationOps.td - block-wise quantization --------*- tablegen -*-===//
//
// Ops of class Quantization: quantize and dequantize, whose schemes and
// shape rules are in memfit/Dialect/Quantization.h.
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). Their verifiers are in
// lib/Dialect/Ops/QuantizationOps.cpp; they have no gradient rules.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_QUANTIZATIONOPS_TD
#define MEMFIT_DIALECT_OPS_QUANTIZATIONOPS_TD

def Memfit_QuantizeOp : Memfit_Op<"quantize", "Quantization", [Pure]> {
  // |x| for the block maximum, the division, the code search.
  let flopsPerElement = 10;
  let precision = "Fp32";
  let summary = "block-wise quantization: codes and one absmax per block";
  let description = [{
    Splits the input, flattened in row-major order, into blocks of
    `block_size` elements (the last one may be shorter) and returns, per
    block, its largest absolute value (`absmax`, f32) and, per element, the
    code whose value is nearest to `x / absmax` (QuantScheme, see
    include/memfit/Support/Quantization.h):

    - `linear`: i8 codes, round(127 x / absmax), one code per byte;
    - `dynamic` / `dynamic_unsigned`: ui8 indices into the 256-entry
      dynamic map of Dettmers et al. (bitsandbytes' `create_dynamic_map`,
      signed or unsigned), one per byte;
    - `nf4` / `fp4`: 4-bit indices into a 16-entry table (QLoRA's
      NormalFloat, bitsandbytes' FP4), two per byte, the first element in
      the high nibble.

    A block whose absmax is 0 gets code values that dequantize to 0. Per
    tensor is a block of the whole tensor; per row, a block of one row.

    ```mlir
    %q, %absmax = memfit.quantize dynamic %m {block_size = 256 : i64} : tensor<64x80xf32> -> tensor<5120xui8>, tensor<20xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input, Memfit_QuantScheme:$scheme,
                       I64Attr:$block_size);
  let results = (outs StaticShapeTensorOf<[I8, UI8]>:$codes,
                      StaticShapeTensorOf<[F32]>:$absmax);
  let assemblyFormat = [{
    $scheme $input attr-dict `:` type($input) `->` type($codes) `,`
    type($absmax)
  }];
  let hasVerifier = 1;
}

def Memfit_DequantizeOp : Memfit_Op<"dequantize", "Quantization", [Pure]> {
  let flopsPerElement = 1;
  let precision = "Fp32";
  let summary = "the values of block-wise quantized codes";
  let description = [{
    The inverse of `memfit.quantize`: element `i` of the result (row-major)
    is the value of its code times the absmax of its block,
    `absmax[i / block_size]`. The result's shape is the quantized tensor's;
    its element type may be any float type (the product is rounded once).

    ```mlir
    %m = memfit.dequantize dynamic %q, %absmax {block_size = 256 : i64} : (tensor<5120xui8>, tensor<20xf32>) -> tensor<64x80xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I8, UI8]>:$codes,
                       StaticShapeTensorOf<[F32]>:$absmax,
                       Memfit_QuantScheme:$scheme, I64Attr:$block_size);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $scheme $codes `,` $absmax attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MEMFIT_DIALECT_OPS_QUANTIZATIONOPS_TD
