//===- Launch.cpp - launch dimensions of the generated kernels ------------===//
//
// Grids and blocks (Launch.h), the KernelWriter's launch setters, and the
// scaffolding of the block reductions that row kernels share: the shared
// scratch of the prelude's memfit_block_sum and memfit_block_max, and a
// row's maximum and sum of exponentials (softmax and its gradient).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"

#include "KernelWriter.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

int64_t cuda::rowBlockSize(int64_t length) {
  int64_t block = 32;
  while (block < length && block < kMaxRowBlock)
    block *= 2;
  return block;
}

bool cuda::rowFitsWarp(int64_t length, int64_t elementBytes) {
  return length * elementBytes <= kMaxWarpRowBytes;
}

int64_t cuda::gridFor(int64_t threads, int64_t block) {
  return std::max<int64_t>(1, (threads + block - 1) / block);
}

LogicalResult cuda::checkGridLimit(Operation *op, int64_t blocks) {
  if (blocks > kMaxGridX)
    return cannotEmit(op) << blocks << " blocks exceed CUDA's grid limit of "
                          << kMaxGridX;
  return success();
}

std::string cuda::blockStrideLoop(StringRef var, int64_t count) {
  return blockStrideLoop(var, "0LL", std::to_string(count) + "LL");
}

std::string cuda::blockStrideLoop(StringRef var, StringRef first,
                                  StringRef last) {
  return llvm::formatv("  MEMFIT_BLOCK_STRIDE({0}, {1}, {2})", var, first,
                       last)
      .str();
}

std::string cuda::warpStrideLoop(StringRef var, StringRef first,
                                 StringRef last) {
  return llvm::formatv("  MEMFIT_WARP_STRIDE({0}, {1}, {2})", var, first,
                       last)
      .str();
}

std::string cuda::blockStrideVectorLoop(StringRef var, StringRef first,
                                        StringRef last, int64_t width) {
  return llvm::formatv("  MEMFIT_BLOCK_STRIDE_VEC({0}, {1}, {2}, {3})", var,
                       first, last, width)
      .str();
}

std::string cuda::warpStrideVectorLoop(StringRef var, StringRef first,
                                       StringRef last, int64_t width) {
  return llvm::formatv("  MEMFIT_WARP_STRIDE_VEC({0}, {1}, {2}, {3})", var,
                       first, last, width)
      .str();
}

void cuda::openThreadLoop(raw_ostream &os, StringRef name, int64_t count) {
  os << "  MEMFIT_THREAD_LOOP(" << name << ", " << count << "LL) {\n";
}

//===----------------------------------------------------------------------===//
// KernelWriter: launches
//===----------------------------------------------------------------------===//

void KernelWriter::setLaunch(int64_t block, int64_t blocks, bool barriers,
                             bool threadLoops) {
  info.block = {static_cast<uint32_t>(block), 1, 1};
  gridBlocks = blocks;
  info.usesBarriers = barriers;
  info.threadLoops = threadLoops;
}

void KernelWriter::setPointwiseLaunch(int64_t threads) {
  setLaunch(kPointwiseBlock, gridFor(threads, kPointwiseBlock),
            /*barriers=*/false, /*threadLoops=*/true);
}

void KernelWriter::setRowLaunch(int64_t rowLength, int64_t rows,
                                bool threadLoops) {
  if (warpPerRow)
    return setLaunch(32 * kWarpRowsPerBlock, gridFor(rows, kWarpRowsPerBlock),
                     /*barriers=*/true, threadLoops);
  setLaunch(rowBlockSize(rowLength), std::max<int64_t>(rows, 1),
            /*barriers=*/true, threadLoops);
}

int64_t cuda::accumulatorBytes(StringRef acc) {
  return acc == "float" || acc == "int" ? 4 : 8;
}

bool cuda::reducedTrailing(ArrayRef<int64_t> shape, ArrayRef<bool> reduced) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d] && shape[d] != 1)
      for (size_t e = d + 1; e < shape.size(); ++e)
        if (!reduced[e] && shape[e] != 1)
          return false;
  return true;
}

void KernelWriter::beginRows(int64_t rowLength, int64_t rows, bool contiguous,
                             StringRef acc) {
  // Both choices depend on the row and its accumulator alone, so that a
  // reduction sums in the same order in its template and fused with other
  // ops (whose operands may be wider or narrower).
  int64_t bytes = accumulatorBytes(acc);
  warpPerRow = rowFitsWarp(rowLength, bytes);
  int64_t width = kVectorBytes / bytes;
  rowWidth = contiguous && width > 1 && rowLength % width == 0 ? width : 1;
  if (warpPerRow) {
    os << "  MEMFIT_WARP_ROWS(row, " << rows << "LL) {\n";
    closings += "  }\n";
    return;
  }
  writeScratch(acc);
  os << "  const long long row = blockIdx.x;\n";
}

std::string KernelWriter::rowStrideLoop(StringRef var, int64_t count) const {
  return rowStrideLoop(var, "0LL", std::to_string(count) + "LL");
}

std::string KernelWriter::rowStrideLoop(StringRef var, StringRef first,
                                        StringRef last, int64_t width) const {
  if (width > 1)
    return warpPerRow ? warpStrideVectorLoop(var, first, last, width)
                      : blockStrideVectorLoop(var, first, last, width);
  return warpPerRow ? warpStrideLoop(var, first, last)
                    : blockStrideLoop(var, first, last);
}

StringRef KernelWriter::rowLeader() const {
  return warpPerRow ? "MEMFIT_LANE0" : "threadIdx.x == 0";
}

void KernelWriter::setSingleBlockLaunch() {
  setLaunch(kMaxRowBlock, 1, /*barriers=*/true, /*threadLoops=*/true);
}

void KernelWriter::threadLoop(StringRef name, int64_t count) {
  openThreadLoop(os, name, count);
  closings += "  }\n";
}

//===----------------------------------------------------------------------===//
// KernelWriter: block reductions
//===----------------------------------------------------------------------===//

void KernelWriter::writeScratch(StringRef acc) {
  os << "  __shared__ " << acc << " scratch[32];\n";
}

std::string KernelWriter::openPartial(StringRef acc, bool isMax,
                                      StringRef init) {
  std::string partial = freshName(isMax ? "pm" : "ps");
  os << "  MEMFIT_PARTIAL(" << acc << ", " << partial << ", " << init
     << ");\n";
  return partial;
}

std::string KernelWriter::foldPartial(StringRef partial, StringRef var,
                                      bool isMax, StringRef term) {
  std::string lane = ("MEMFIT_LANE(" + partial + ", " + var + ")").str();
  return "    " + lane + " = " +
         (isMax ? "memfit_max(" + lane + ", " + term.str() + ")"
                : lane + " + " + term.str()) +
         ";\n";
}

std::string KernelWriter::partialResult(StringRef partial, bool isMax) {
  if (warpPerRow)
    return ((isMax ? "memfit_warp_max(" : "memfit_warp_sum(") + partial + ")")
        .str();
  return ((isMax ? "memfit_block_max(" : "memfit_block_sum(") + partial +
          ", scratch)")
      .str();
}

std::string KernelWriter::writeReduction(StringRef acc, bool isMax,
                                         StringRef init, StringRef var,
                                         int64_t count, StringRef term) {
  std::string partial = openPartial(acc, isMax, init);
  if (rowWidth > 1) {
    // Each thread's vectors of adjacent elements, in order.
    std::string first = (var + "0").str();
    os << rowStrideLoop(first, "0LL", std::to_string(count) + "LL", rowWidth)
       << " {\n  for (int k = 0; k < " << rowWidth << "; ++k) {\n"
       << "    const long long " << var << " = " << first << " + k;\n"
       << foldPartial(partial, first, isMax, term) << "  }\n  }\n";
    return partialResult(partial, isMax);
  }
  os << rowStrideLoop(var, count) << "\n"
     << foldPartial(partial, var, isMax, term);
  return partialResult(partial, isMax);
}

void KernelWriter::writeRowMaxSum(StringRef acc, Type type, int64_t n,
                                  StringRef element) {
  std::string max = writeReduction(
      acc, /*isMax=*/true, floatLiteral(-INFINITY, type.isF64()), "j", n,
      element);
  os << "  const " << acc << " m = " << max << ";\n";
  std::string sum =
      writeReduction(acc, /*isMax=*/false, "0", "j", n,
                     mathFn("exp", type) + "(" + element.str() + " - m)");
  os << "  const " << acc << " s = " << sum << ";\n";
}
