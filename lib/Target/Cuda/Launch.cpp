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
  return llvm::formatv("  for (long long {0} = threadIdx.x; {0} < {1}LL; {0} "
                       "+= blockDim.x)",
                       var, count)
      .str();
}

void cuda::writeThreadIndex(raw_ostream &os, StringRef name, int64_t count) {
  os << "  const long long " << name
     << " = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n";
  os << "  if (" << name << " >= " << count << "LL) return;\n";
}

//===----------------------------------------------------------------------===//
// KernelWriter: launches
//===----------------------------------------------------------------------===//

void KernelWriter::setLaunch(int64_t block, int64_t blocks, bool barriers) {
  info.block = {static_cast<uint32_t>(block), 1, 1};
  gridBlocks = blocks;
  info.usesBarriers = barriers;
}

void KernelWriter::setPointwiseLaunch(int64_t threads) {
  setLaunch(kPointwiseBlock, gridFor(threads, kPointwiseBlock),
            /*barriers=*/false);
}

void KernelWriter::setRowLaunch(int64_t rowLength, int64_t rows) {
  setLaunch(rowBlockSize(rowLength), std::max<int64_t>(rows, 1),
            /*barriers=*/true);
}

void KernelWriter::setSingleBlockLaunch() {
  setLaunch(kMaxRowBlock, 1, /*barriers=*/true);
}

//===----------------------------------------------------------------------===//
// KernelWriter: block reductions
//===----------------------------------------------------------------------===//

void KernelWriter::writeScratch(StringRef acc) {
  os << "  __shared__ " << acc << " scratch[32];\n";
}

void KernelWriter::writeRowMaxSum(StringRef acc, Type type, int64_t n,
                                  StringRef element) {
  std::string loop = blockStrideLoop("j", n) + "\n";
  os << "  " << acc << " m = " << floatLiteral(-INFINITY, type.isF64())
     << ";\n";
  os << loop << "    m = memfit_max(m, " << element << ");\n";
  os << "  m = memfit_block_max(m, scratch);\n";
  os << "  " << acc << " s = 0;\n";
  os << loop << "    s += " << mathFn("exp", type) << "(" << element
     << " - m);\n";
  os << "  s = memfit_block_sum(s, scratch);\n";
}
