//===- QuantizationOps.cpp - quantize and dequantize ----------------------===//
//
// Their verifiers, with the shape rules of memfit/Dialect/Quantization.h.
//
// The ops are defined in include/memfit/Dialect/Ops/QuantizationOps.td.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/Quantization.h"

using namespace mlir;
using namespace mlir::memfit;

LogicalResult QuantizeOp::verify() {
  return verifyQuantized([&] { return emitOpError(); }, getScheme(),
                         getBlockSize(),
                         cast<RankedTensorType>(getInput().getType()),
                         cast<RankedTensorType>(getCodes().getType()),
                         cast<RankedTensorType>(getAbsmax().getType()));
}

LogicalResult DequantizeOp::verify() {
  return verifyQuantized([&] { return emitOpError(); }, getScheme(),
                         getBlockSize(), cast<RankedTensorType>(getType()),
                         cast<RankedTensorType>(getCodes().getType()),
                         cast<RankedTensorType>(getAbsmax().getType()));
}
