//===- Launch.h - launch dimensions of the generated kernels ----*- C++ -*-===//
//
// Internal to the CUDA target. Every kernel runs on a 1-D grid of 1-D
// blocks: pointwise kernels one thread per element in blocks of
// kPointwiseBlock; row kernels one warp per row when the row is short
// (rowFitsWarp; kWarpRowsPerBlock rows a block, lanes combining partial
// results with shuffles alone), else one block per row whose threads
// stride over it and combine partial results in shared memory. Kernels read their
// thread index through the prelude's thread loops (runtime/KERNELS.md), so
// that the host backend can run a block's threads as loops. The
// KernelWriter sets a kernel's launch with setPointwiseLaunch, setRowLaunch
// or setSingleBlockLaunch (Launch.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_LAUNCH_H
#define MEMFIT_LIB_TARGET_CUDA_LAUNCH_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::memfit::cuda {

/// Threads per block of a pointwise kernel; the most of a row kernel.
constexpr int64_t kPointwiseBlock = 256;
constexpr int64_t kMaxRowBlock = 256;
/// CUDA's limit on gridDim.x.
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;
/// A row of at most this many bytes of its accumulator type is short
/// enough for a warp: 32 elements a lane at most in float (1,024).
constexpr int64_t kMaxWarpRowBytes = 4096;
/// Warps (rows) per block of a kernel of warp rows.
constexpr int64_t kWarpRowsPerBlock = 4;
/// The bytes a thread of a row loop loads or stores at once (a vector).
constexpr int64_t kVectorBytes = 16;

/// The threads of a block that combines `length` elements: a power of two
/// from a warp (32) up to kMaxRowBlock.
int64_t rowBlockSize(int64_t length);
/// Whether rows of `length` elements of `elementBytes` bytes take a warp
/// each rather than a block.
bool rowFitsWarp(int64_t length, int64_t elementBytes);
/// The bytes of a row kernel's accumulator type (`float`, `double`,
/// `long long`).
int64_t accumulatorBytes(StringRef acc);
/// Whether the `reduced` dimensions of `shape` trail the kept ones (but
/// for dimensions of extent 1): each row is one contiguous run.
bool reducedTrailing(ArrayRef<int64_t> shape, ArrayRef<bool> reduced);
/// The blocks of `block` threads that `threads` threads take; at least one.
int64_t gridFor(int64_t threads, int64_t block);
/// Fails with a diagnostic on `op` when a grid of `blocks` exceeds CUDA's
/// limit.
LogicalResult checkGridLimit(Operation *op, int64_t blocks);
/// The header of a loop over `var` in [0, count) whose iterations the
/// threads of a block share, each striding by the block's size: the
/// prelude's `  MEMFIT_BLOCK_STRIDE(var, 0LL, countLL)`.
std::string blockStrideLoop(StringRef var, int64_t count);
/// The same over [first, last), two expressions the same for every thread.
std::string blockStrideLoop(StringRef var, StringRef first, StringRef last);
/// The same loop shared by the lanes of a warp (`MEMFIT_WARP_STRIDE`).
std::string warpStrideLoop(StringRef var, StringRef first, StringRef last);
/// The loops whose threads take `width` adjacent elements at a time
/// (`MEMFIT_BLOCK_STRIDE_VEC`, `MEMFIT_WARP_STRIDE_VEC`).
std::string blockStrideVectorLoop(StringRef var, StringRef first,
                                  StringRef last, int64_t width);
std::string warpStrideVectorLoop(StringRef var, StringRef first,
                                 StringRef last, int64_t width);
/// Writes the opening of the prelude's `MEMFIT_THREAD_LOOP(name, countLL) {`:
/// `name` is the thread's index in a grid of one thread per element, and
/// the body runs for the first `count` threads. The caller writes the
/// closing brace (KernelWriter::threadLoop does).
void openThreadLoop(raw_ostream &os, StringRef name, int64_t count);

} // namespace mlir::memfit::cuda

#endif // MEMFIT_LIB_TARGET_CUDA_LAUNCH_H
