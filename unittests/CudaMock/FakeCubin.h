//===- FakeCubin.h - the FAKE driver's CUBIN reader -------------*- C++ -*-===//
//
// FOR THE FAKE libcuda.so.1 ONLY (see MockCuda.h).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_TEST_CUDA_MOCK_FAKECUBIN_H
#define MEMFIT_RUNTIME_TEST_CUDA_MOCK_FAKECUBIN_H

#include <cstdint>
#include <string>
#include <vector>

namespace fakecuda {

using CUresult = int;

/// A kernel of a CUBIN: its entry-point name, its parameter sizes by
/// ordinal and its static shared memory.
struct CubinKernel {
  std::string name;
  std::vector<uint32_t> paramSizes;
  uint32_t staticShared = 0;
};

/// Reads the kernels of the CUBIN at `image` for a device of compute
/// capability `sm` (80 for 8.0). On failure sets `why` and returns the
/// driver's error (CUDA_ERROR_INVALID_IMAGE, or _NO_BINARY_FOR_GPU for
/// another architecture).
CUresult readCubin(const unsigned char *image, int sm,
                   std::vector<CubinKernel> &kernels, std::string &why);

} // namespace fakecuda

#endif // MEMFIT_RUNTIME_TEST_CUDA_MOCK_FAKECUBIN_H
