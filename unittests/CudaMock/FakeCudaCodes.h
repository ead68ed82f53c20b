//===- FakeCudaCodes.h - what the fake driver's files share ------*- C++ -*-===//
//
// FAKES FOR TESTING ONLY (MockCuda.h). Internal to the fake libcuda.so.1
// (FakeCuda.cpp, FakeCudaEvents.cpp, FakeCudaGraph.cpp, FakeCudaHost.cpp):
// the CUresult values it returns (cuda.h's) and the hexadecimal text of an
// address for its violations.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_TEST_CUDA_MOCK_FAKECUDACODES_H
#define MEMFIT_RUNTIME_TEST_CUDA_MOCK_FAKECUDACODES_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace fakecuda {

using CUresult = int;

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kNotFound = 500;
constexpr CUresult kCaptureUnsupported = 900;
constexpr CUresult kCaptureInvalidated = 901;
constexpr CUresult kCaptureUnmatched = 903;
constexpr CUresult kCaptureImplicit = 906;

/// `value` as 0x... text.
inline std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

} // namespace fakecuda

#endif // MEMFIT_RUNTIME_TEST_CUDA_MOCK_FAKECUDACODES_H
