//===- Indexing.h - index arithmetic of the generated kernels ---*- C++ -*-===//
//
// Internal to the CUDA target. Shapes are static, so a kernel's index
// arithmetic is written with its sizes and strides as constants: a linear
// index decomposed into coordinates, and the offset of an element of a
// row-major tensor at coordinates (as they are, broadcast, shifted or
// replaced along an axis). Coordinates are variables `<prefix><d>`, one
// per dimension; `c<d>` are a kernel's own.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_INDEXING_H
#define MEMFIT_LIB_TARGET_CUDA_INDEXING_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::memfit::cuda {

/// Writes `const long long <prefix><d> = ...;` coordinates of `index` (an
/// expression never negative) in `shape`, one per dimension, by unsigned
/// division.
void emitCoords(raw_ostream &os, ArrayRef<int64_t> shape, StringRef index,
                StringRef prefix, StringRef indent = "  ");
/// The same for the index of a thread loop (openThreadLoop) over `shape`
/// in blocks of `block` threads. When the innermost dimension is a multiple
/// of the block, a block never crosses it: every coordinate but the last is
/// the block's first element's, and the last is that one's plus the
/// thread's distance from it. The host compiler then reads an operand
/// broadcast along the outer dimensions (a bias) as a vector, where the
/// remainder of a division made it gather element by element.
void emitThreadLoopCoords(raw_ostream &os, ArrayRef<int64_t> shape,
                          StringRef index, StringRef prefix, int64_t block);
/// The offset `<prefix>0 * strides[0] + <prefix>1 * strides[1] + ...` of
/// the element at coordinates `<prefix><d>`; "0" for rank 0.
std::string offsetAt(StringRef prefix, ArrayRef<int64_t> strides);
/// The strides, in a result of rank `outRank`, of a row-major tensor of
/// shape `in` that broadcasts to it: 0 along the dimensions it lacks or
/// has of extent 1.
SmallVector<int64_t, 4> broadcastStrides(ArrayRef<int64_t> in, size_t outRank);
/// The offset into a row-major tensor of shape `in` that broadcasts to a
/// result of rank `outRank` whose coordinates are `<prefix><d>`.
std::string broadcastOffset(ArrayRef<int64_t> in, size_t outRank,
                            StringRef prefix);
/// The offset at the kernel's coordinates `c<d>` in a tensor of `strides`,
/// with coordinate `axis` replaced by the expression `along`.
std::string offsetAlong(ArrayRef<int64_t> strides, int64_t axis,
                        StringRef along);
/// The offset into a row-major tensor of shape `shape` at coordinates
/// `c<d>`, with the coordinate along `axis` shifted down by `begin` (a part
/// of a concat or a split).
std::string shiftedOffset(ArrayRef<int64_t> shape, int64_t axis,
                          int64_t begin);

} // namespace mlir::memfit::cuda

#endif // MEMFIT_LIB_TARGET_CUDA_INDEXING_H
