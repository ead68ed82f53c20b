//===- forward.cpp - the memfit C++ API in one page ------------------------===//
//
// Compiles an ONNX model, runs its forward pass on the host backend (or on
// CUDA with --cuda) with random inputs (integers 0 or 1), and prints the first
// values of each output.
//
//   memfit-example-forward model.onnx batch=2,seq=16 [--cuda]
//
//===----------------------------------------------------------------------===//

#include "memfit/JIT/Compiler.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/Tensor.h"

#include <cstdio>
#include <cstring>

using namespace memfit;

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s model.onnx input-shapes [--cuda]\n", argv[0]);
    return 2;
  }

  // Compile: ONNX -> memfit IR -> kernels -> CUDA C++ and a memory plan.
  CompileOptions options;
  options.inputShapes = argv[2];
  rt::StatusOr<rt::Executable> executable = compileModelFile(argv[1], options);
  if (!executable) {
    std::fprintf(stderr, "%s\n", executable.status().message().c_str());
    return 1;
  }
  std::printf("%zu kernels, %llu bytes of weights, %llu bytes of arena\n",
              executable->manifest.kernels.size(),
              (unsigned long long)executable->manifest.weightsBytes,
              (unsigned long long)executable->manifest.arenaBytes);

  // A session on a device: kernels compiled, one allocation, weights copied.
  bool cuda = argc > 3 && std::strcmp(argv[3], "--cuda") == 0;
  auto session = rt::Session::create(
      *executable, cuda ? rt::DeviceKind::Cuda : rt::DeviceKind::Host);
  if (!session) {
    std::fprintf(stderr, "%s\n", session.status().message().c_str());
    return 1;
  }

  // Inputs: reproducible random values (integer inputs drawn from {0, 1}).
  // A forward executable has one entry, its function ("main").
  const rt::Entry &entry = executable->manifest.entries.front();
  for (const rt::Binding &input : entry.inputs) {
    const rt::Buffer &buffer = executable->manifest.buffers[input.buffer];
    rt::Tensor tensor = rt::Tensor::zeros(buffer.dtype, buffer.shape);
    rt::fillRandom(tensor, /*seed=*/1, /*intHigh=*/2);
    if (rt::Status s = session.value()->setInput(input.name, tensor); !s) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
  }

  if (rt::Status s = session.value()->run(); !s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }

  for (const rt::Binding &output : entry.outputs) {
    rt::StatusOr<rt::Tensor> tensor = session.value()->getOutput(output.name);
    if (!tensor) {
      std::fprintf(stderr, "%s\n", tensor.status().message().c_str());
      return 1;
    }
    std::printf("%s: %s", output.name.c_str(),
                rt::describe(tensor->dtype, tensor->shape).c_str());
    if (tensor->dtype == rt::DType::f32)
      for (int64_t i = 0; i < std::min<int64_t>(4, tensor->numElements()); ++i)
        std::printf(" %.6f", tensor->as<float>()[i]);
    std::printf("\n");
  }
  return 0;
}
