//===- memfit-nvrtc.cpp - NVRTC and CUDA checks from the command line -----===//
//
//   memfit-nvrtc --arch=sm_80 --arch=sm_90 [-o PREFIX] [--time] file.cu
//     Compiles a CUDA C++ file with the runtime's NVRTC wrapper, once per
//     architecture, and prints "sm_80: N bytes of CUBIN" for each; with -o,
//     writes PREFIX.sm_80.cubin and so on. NVRTC's warnings go to stderr.
//     Exits 1 with NVRTC's log when a compilation fails.
//
//   memfit-nvrtc --cuda-check [--device=N]
//     Prints "cuda: usable (<device>)" or "cuda: not usable: <why>"; exits 0
//     either way (scripts and lit read the line).
//
//   memfit-nvrtc --nccl-check [--device=N]
//     Runs a step of two collectives through NCCL on the GPU, one rank (an
//     all-reduce mean and an all-gather of 1,024 floats: each the input
//     for one rank) and prints "nccl: ok (...)", "nccl: failed: <why>"
//     (exit 1) or "nccl: not run: <why>" without a GPU (exit 0).
//
//   memfit-nvrtc --version
//     Prints "nvrtc: 13.0 (<library>)" or "nvrtc: not available: <why>";
//     exits 1 when NVRTC is not available.
//
// No GPU is needed except for --cuda-check to say "usable" and for
// --nccl-check to run.
//
//===----------------------------------------------------------------------===//

#include "Backend.h" // createCudaBackend, for the device's description

#include "memfit/runtime/Nvrtc.h"
#include "memfit/runtime/Session.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace memfit::rt;

namespace {

const char *const kUsage = "usage: memfit-nvrtc --arch=sm_XX [--arch=sm_YY "
                           "...] [-o PREFIX] [--time] FILE.cu\n"
                           "       memfit-nvrtc --cuda-check [--device=N]\n"
                           "       memfit-nvrtc --nccl-check [--device=N]\n"
                           "       memfit-nvrtc --version\n";

int fail(const std::string &message) {
  std::fprintf(stderr, "memfit-nvrtc: %s\n", message.c_str());
  return 1;
}

bool readFile(const std::string &path, std::string &contents) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return false;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
    contents.append(buffer, n);
  bool ok = !std::ferror(file);
  std::fclose(file);
  return ok;
}

bool writeFile(const std::string &path, const std::vector<char> &bytes) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  return std::fclose(file) == 0 && ok;
}

int cudaCheck(int device) {
  std::string whyNot;
  if (!cudaUsable(&whyNot)) {
    std::printf("cuda: not usable: %s\n", whyNot.c_str());
    return 0;
  }
  SessionOptions options;
  options.cudaDevice = device;
  StatusOr<std::unique_ptr<Backend>> backend = createCudaBackend(options);
  if (!backend)
    std::printf("cuda: not usable: %s\n", backend.status().message().c_str());
  else
    std::printf("cuda: usable (%s)\n", (*backend)->description().c_str());
  return 0;
}

/// A hand-made executable: x [1024] f32 in the weights (0, 1, ...), its
/// mean over the ranks into y and its gather into z, one rank.
Executable ncclExecutable() {
  Executable e;
  Manifest &m = e.manifest;
  m.model = "nccl-check";
  m.buffers = {
      Buffer{"x", Region::Weights, 0, 4096, DType::f32, {1024}},
      Buffer{"y", Region::Arena, 0, 4096, DType::f32, {1024}},
      Buffer{"z", Region::Arena, 4096, 4096, DType::f32, {1024}},
  };
  m.weightsBytes = 4096;
  m.arenaBytes = 8192;
  Collective mean, gather;
  mean.name = "all_reduce_x";
  mean.reduction = Collective::Reduction::Mean;
  mean.count = 1024;
  gather.name = "all_gather_y";
  gather.kind = Collective::Kind::AllGather;
  gather.count = 1024;
  m.collectives = {mean, gather};
  m.entries = {{"main",
                {{StepKind::Collective, 0, {0, 1}},
                 {StepKind::Collective, 1, {1, 2}}},
                {},
                {{"z", 2}}}};
  m.memory = {{"weights", m.weightsBytes}, {"arena", m.arenaBytes}};
  e.weights.resize(4096);
  for (int i = 0; i < 1024; ++i) {
    float v = float(i);
    std::memcpy(&e.weights[i * 4], &v, 4);
  }
  return e;
}

int ncclCheck(int device) {
  std::string whyNot;
  if (!cudaUsable(&whyNot)) {
    std::printf("nccl: not run: %s\n", whyNot.c_str());
    return 0;
  }
  SessionOptions options;
  options.cudaDevice = device;
  Executable e = ncclExecutable();
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(e, DeviceKind::Cuda, options);
  Status ran = session ? (*session)->run() : session.status();
  StatusOr<Tensor> z = ran ? (*session)->getOutput("z") : StatusOr<Tensor>(ran);
  if (!z) {
    std::printf("nccl: failed: %s\n", z.status().message().c_str());
    return 1;
  }
  for (int i = 0; i < 1024; ++i)
    if (z->as<float>()[i] != float(i)) {
      std::printf("nccl: failed: element %d is %g, not %d\n", i,
                  double(z->as<float>()[i]), i);
      return 1;
    }
  std::printf("nccl: ok (an all-reduce mean and an all-gather of 1,024 "
              "floats, one rank, on %s)\n",
              (*session)->deviceDescription().c_str());
  return 0;
}

int version() {
  std::string whyNot;
  if (!nvrtcAvailable(&whyNot)) {
    std::printf("nvrtc: not available: %s\n", whyNot.c_str());
    return 1;
  }
  StatusOr<std::string> v = nvrtcVersion();
  if (!v)
    return fail(v.status().message());
  std::printf("nvrtc: %s\n", v->c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> archs;
  std::string input, outputPrefix;
  bool check = false, ncclChecked = false, showVersion = false, time = false;
  int device = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--arch=", 0) == 0) {
      archs.push_back(arg.substr(7));
    } else if (arg == "-o") {
      if (i + 1 == argc)
        return fail("-o needs an output prefix");
      outputPrefix = argv[++i];
    } else if (arg == "--time") {
      time = true;
    } else if (arg == "--cuda-check") {
      check = true;
    } else if (arg == "--nccl-check") {
      ncclChecked = true;
    } else if (arg.rfind("--device=", 0) == 0) {
      char *end = nullptr;
      long value = std::strtol(arg.c_str() + 9, &end, 10);
      if (end == arg.c_str() + 9 || *end || value < 0 || value > 1 << 20)
        return fail("--device: expected a device ordinal, got '" +
                    arg.substr(9) + "'");
      device = static_cast<int>(value);
    } else if (arg == "--version") {
      showVersion = true;
    } else if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fputs(kUsage, stderr);
      return fail("unknown option '" + arg + "'");
    } else if (input.empty()) {
      input = arg;
    } else {
      return fail("more than one input file ('" + input + "', '" + arg + "')");
    }
  }
  if (check)
    return cudaCheck(device);
  if (ncclChecked)
    return ncclCheck(device);
  if (showVersion)
    return version();
  if (input.empty() || archs.empty()) {
    std::fputs(kUsage, stderr);
    return fail(input.empty() ? "no input file" : "no --arch given");
  }

  std::string source;
  if (!readFile(input, source))
    return fail(input + ": " + std::strerror(errno));
  // NVRTC names the program in its diagnostics: "file.cu(3): error: ...".
  std::string name = input.substr(input.find_last_of('/') + 1);

  int status = 0;
  for (const std::string &arch : archs) {
    auto start = std::chrono::steady_clock::now();
    StatusOr<NvrtcResult> result = compileToCubin(source, arch, name);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!result) {
      status = fail(input + ": " + result.status().message());
      continue;
    }
    if (!result->log.empty())
      std::fprintf(stderr, "%s\n", result->log.c_str());
    std::printf("%s: %zu bytes of CUBIN", arch.c_str(), result->cubin.size());
    if (time)
      std::printf(" in %.3f s", seconds);
    std::printf("\n");
    if (!outputPrefix.empty()) {
      std::string path = outputPrefix + "." + arch + ".cubin";
      if (!writeFile(path, result->cubin))
        status = fail(path + ": " + std::strerror(errno));
    }
  }
  return status;
}
