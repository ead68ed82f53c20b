//===- memfit-run.cpp - compile a model and run it on a device -------------===//
//
//   memfit-run model.onnx --input-shape=batch=2,seq=16 [--device=host|cuda]
//              [--input=input_ids=ids.npy ...] [--output-dir=out]
//
// Compiles the model (or loads an executable directory written by
// --save-executable), prints the memory plan, runs the forward pass on the
// chosen device with inputs from .npy files or random ones, and prints a
// summary of every output and the time taken.
//
//===----------------------------------------------------------------------===//

#include "memfit/JIT/Compiler.h"
#include "memfit/runtime/Nvrtc.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/Tensor.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <map>

namespace cl = llvm::cl;
namespace rt = memfit::rt;

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx | model.mlir | "
                                               "executable directory>"));
static cl::opt<std::string> inputShapes(
    "input-shape", cl::desc("ONNX input shapes (name=2x16) or symbolic "
                            "dimension sizes (batch=2,seq=16)"));
static cl::list<std::string> inputFiles(
    "input", cl::desc("An input from a .npy file: name=path (repeatable); "
                      "inputs not given are random"));
static cl::opt<std::string> device("device", cl::init("auto"),
                                   cl::desc("host, cuda, or auto (cuda where "
                                            "a GPU is usable, else host)"));
static cl::opt<std::string> outputDir(
    "output-dir", cl::desc("Write every output as <dir>/<name>.npy"));
static cl::opt<std::string> saveDir(
    "save-executable", cl::desc("Write the compiled executable (manifest, "
                                "kernels.cu, weights.bin) to this directory"));
static cl::opt<bool> compileOnly(
    "compile-only", cl::desc("Stop after compiling (and after NVRTC for each "
                             "--arch)"));
static cl::list<std::string> archs(
    "arch", cl::desc("With --compile-only: compile the kernels with NVRTC to "
                     "CUBIN for this architecture (sm_80, sm_90, ...)"));
static cl::opt<uint64_t> seed("seed", cl::init(0),
                              cl::desc("Seed of the random inputs"));
static cl::opt<int64_t> intHigh(
    "int-high", cl::init(2),
    cl::desc("Random integer inputs are drawn from [0, int-high)"));
static cl::opt<unsigned> repeat("repeat", cl::init(1),
                                cl::desc("Run the forward pass this many times "
                                         "and report the best time"));
static cl::opt<std::string> cacheDir(
    "cache-dir", cl::desc("Kernel cache directory (default: $MEMFIT_CACHE_DIR "
                          "or ~/.cache/memfit)"));
static cl::opt<bool> noCache("no-cache", cl::desc("Do not use the kernel cache"));
static cl::opt<bool> quiet("quiet", cl::desc("Print only errors"));

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int fail(const std::string &message) {
  llvm::errs() << "memfit-run: " << message << "\n";
  return 1;
}

std::string grouped(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(i, ",");
  return s;
}

double elementAsDouble(const rt::Tensor &t, int64_t i) {
  switch (t.dtype) {
  case rt::DType::f32:
    return t.as<float>()[i];
  case rt::DType::f64:
    return t.as<double>()[i];
  case rt::DType::i64:
    return static_cast<double>(t.as<int64_t>()[i]);
  case rt::DType::i32:
    return t.as<int32_t>()[i];
  case rt::DType::i8:
    return t.as<int8_t>()[i];
  case rt::DType::u8:
  case rt::DType::i1:
    return t.as<uint8_t>()[i];
  case rt::DType::f16:
  case rt::DType::bf16:
    return NAN; // summaries of half types are not printed element-wise
  }
  return NAN;
}

void printSummary(llvm::raw_ostream &os, const std::string &name,
                  const rt::Tensor &t) {
  int64_t n = t.numElements();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nonFinite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = elementAsDouble(t, i);
    if (!std::isfinite(v)) {
      ++nonFinite;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  os << llvm::formatv("  {0}: {1}", name, rt::describe(t.dtype, t.shape));
  if (n > nonFinite)
    os << llvm::formatv("  min {0:g} max {1:g} mean {2:g}", lo, hi,
                        sum / (n - nonFinite));
  if (nonFinite)
    os << "  non-finite " << nonFinite;
  os << "\n    [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
    os << (i ? ", " : "") << llvm::formatv("{0:g}", elementAsDouble(t, i));
  os << (n > 6 ? ", ...]\n" : "]\n");
}

std::string fileNameFor(const std::string &tensorName) {
  std::string name = tensorName;
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' &&
        c != '.')
      c = '_';
  return name;
}

void printPlan(llvm::raw_ostream &os, const rt::Manifest &m) {
  os << llvm::formatv("memory plan: {0} bytes in one allocation (weights "
                      "{1}, arena peak {2})\n",
                      grouped(m.totalBytes()), grouped(m.weightsBytes),
                      grouped(m.arenaBytes));
  os << "  by category (each buffer counted once; arena buffers share space):\n";
  for (const rt::MemoryCategory &c : m.memory)
    if (c.name != "weights region" && c.name != "arena peak")
      os << llvm::formatv("    {0,-12} {1,14} bytes\n", c.name, grouped(c.bytes));
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "memfit-run: compile a model and run its "
                              "forward pass\n");
  llvm::raw_ostream &os = quiet ? llvm::nulls() : llvm::outs();

  // Parse --input before any work, so that a typo fails fast.
  std::map<std::string, std::string> inputPaths;
  for (const std::string &spec : inputFiles) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return fail("--input=" + spec + ": expected name=path.npy");
    inputPaths[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  if (device != "auto" && device != "host" && device != "cuda")
    return fail("--device=" + device + ": expected host, cuda or auto");
  if (!archs.empty() && !compileOnly)
    return fail("--arch needs --compile-only");

  // 1. The executable: compiled from a model, or loaded from a directory.
  rt::Executable executable;
  auto start = Clock::now();
  if (llvm::sys::fs::is_directory(modelPath)) {
    auto loaded = rt::loadExecutable(modelPath);
    if (!loaded)
      return fail(loaded.status().message());
    executable = std::move(loaded.value());
  } else {
    memfit::CompileOptions options;
    options.inputShapes = inputShapes;
    auto compiled = memfit::compileModelFile(modelPath, options);
    if (!compiled)
      return fail(compiled.status().message());
    executable = std::move(compiled.value());
  }
  const rt::Manifest &manifest = executable.manifest;
  os << llvm::formatv("compiled {0}: {1} kernels, {2} contractions, {3} steps "
                      "in {4:f1} ms\n",
                      llvm::sys::path::filename(modelPath), manifest.kernels.size(),
                      manifest.contractions.size(), manifest.steps.size(),
                      secondsSince(start) * 1e3);
  printPlan(os, manifest);

  if (!saveDir.empty()) {
    rt::Status saved = rt::saveExecutable(executable, saveDir);
    if (!saved.isOk())
      return fail(saved.message());
    os << "saved executable to " << saveDir << "\n";
  }

  rt::SessionOptions sessionOptions;
  sessionOptions.cacheDir = cacheDir;
  sessionOptions.disableCache = noCache;

  if (compileOnly) {
    // NVRTC through the CUDA backend's kernel cache: compiling ahead of
    // time warms it for later sessions on GPUs of these architectures.
    for (const std::string &arch : archs) {
      auto nvrtcStart = Clock::now();
      bool hit = false;
      auto cubin =
          rt::compileToCubinCached(manifest.source, arch, sessionOptions, &hit);
      if (!cubin)
        return fail(arch + ": " + cubin.status().message());
      os << llvm::formatv("{0}: {1} kernels, {2} bytes of CUBIN {3} in {4:f3} "
                          "s\n",
                          arch, manifest.kernels.size(),
                          grouped(cubin->cubin.size()),
                          hit ? "from the cache" : "compiled",
                          secondsSince(nvrtcStart));
    }
    return 0;
  }
  // 2. The device.
  rt::DeviceKind kind = rt::DeviceKind::Host;
  std::string whyNot;
  if (device == "cuda") {
    if (!rt::cudaUsable(&whyNot))
      return fail("--device=cuda: " + whyNot);
    kind = rt::DeviceKind::Cuda;
  } else if (device == "auto") {
    if (rt::cudaUsable(&whyNot))
      kind = rt::DeviceKind::Cuda;
    else
      os << "no usable GPU (" << whyNot << "); running on the host backend\n";
  }

  auto created = rt::Session::create(executable, kind, sessionOptions);
  if (!created)
    return fail(created.status().message());
  rt::Session &session = *created.value();
  os << "device: " << session.deviceDescription() << "\n";
  const rt::SessionTimings &timings = session.timings();
  os << llvm::formatv("kernels: {0}\n",
                      timings.cacheHit
                          ? std::string("loaded from the cache")
                          : llvm::formatv("compiled in {0:f2} s",
                                          timings.compileSeconds)
                                .str());
  os << llvm::formatv("allocated: {0} bytes (plan: {1})\n",
                      grouped(session.allocatedBytes()),
                      grouped(manifest.totalBytes()));

  // 3. Inputs.
  for (const auto &[name, path] : inputPaths) {
    bool known = false;
    for (const rt::Binding &input : manifest.inputs)
      known |= input.name == name;
    if (!known)
      return fail("--input=" + name + "=" + path +
                  ": the model has no input named '" + name + "'");
  }
  for (auto [i, input] : llvm::enumerate(manifest.inputs)) {
    const rt::Buffer &buffer = manifest.buffers[input.buffer];
    rt::Tensor tensor;
    std::string origin;
    if (auto it = inputPaths.find(input.name); it != inputPaths.end()) {
      auto read = rt::readNpy(it->second);
      if (!read)
        return fail(read.status().message());
      tensor = std::move(read.value());
      origin = it->second;
    } else {
      tensor = rt::Tensor::zeros(buffer.dtype, buffer.shape);
      rt::fillRandom(tensor, seed + i, intHigh);
      origin = "random";
    }
    rt::Status set = session.setInput(input.name, tensor);
    if (!set.isOk())
      return fail(set.message());
    os << "input " << input.name << ": "
       << rt::describe(tensor.dtype, tensor.shape) << " (" << origin << ")\n";
  }

  // 4. Run.
  double best = INFINITY;
  for (unsigned r = 0; r < std::max(1u, unsigned(repeat)); ++r) {
    rt::Status ran = session.run();
    if (!ran.isOk())
      return fail(ran.message());
    best = std::min(best, session.timings().runSeconds);
  }
  os << llvm::formatv("forward pass: {0:f3} ms{1}\n", best * 1e3,
                      repeat > 1 ? llvm::formatv(" (best of {0})", repeat.getValue()).str()
                                 : std::string());

  // 5. Outputs.
  os << "outputs:\n";
  if (!outputDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      return fail("--output-dir=" + outputDir + ": " + ec.message());
  for (const rt::Binding &output : manifest.outputs) {
    auto tensor = session.getOutput(output.name);
    if (!tensor)
      return fail(tensor.status().message());
    printSummary(os, output.name, tensor.value());
    if (!outputDir.empty()) {
      llvm::SmallString<256> path(outputDir);
      llvm::sys::path::append(path, fileNameFor(output.name) + ".npy");
      rt::Status written = rt::writeNpy(std::string(path), tensor.value());
      if (!written.isOk())
        return fail(written.message());
    }
  }
  return 0;
}
