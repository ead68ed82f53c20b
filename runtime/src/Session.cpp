//===- Session.cpp - an executable loaded on a device ---------------------===//
//
// A session owns the manifest and drives the call sequence; the backend
// only moves bytes and runs kernels and contractions at offsets of its one
// allocation: weights at 0, the arena at manifest.arenaOffset().
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Session.h"

#include "Backend.h"

#include <chrono>
#include <cstdio>

namespace memfit::rt {

Backend::~Backend() = default;

const char *deviceKindName(DeviceKind kind) {
  return kind == DeviceKind::Host ? "host" : "cuda";
}

struct Session::Impl {
  Manifest manifest;
  DeviceKind device = DeviceKind::Host;
  std::unique_ptr<Backend> backend;
  SessionTimings timings;

  /// Offset of a buffer in the one allocation.
  uint64_t offsetOf(uint32_t id) const {
    const Buffer &b = manifest.buffers[id];
    return (b.region == Region::Weights ? 0 : manifest.arenaOffset()) +
           b.offset;
  }

  const Binding *findBinding(const std::vector<Binding> &bindings,
                             const std::string &name) const {
    for (const Binding &b : bindings)
      if (b.name == name)
        return &b;
    return nullptr;
  }

  static std::string bindingNames(const std::vector<Binding> &bindings) {
    std::string s;
    for (const Binding &b : bindings)
      s += (s.empty() ? "'" : ", '") + b.name + "'";
    return s.empty() ? "none" : s;
  }
};

namespace {

std::string formatBytes(uint64_t bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0)
    return std::to_string(bytes) + " bytes";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  return text;
}

/// "memory plan: weights 1.00 MiB, activations 3.50 MiB; 4.51 MiB in one
/// allocation", for a device that lacks the memory.
std::string planBreakdown(const Manifest &m) {
  std::string s = "memory plan: ";
  if (m.memory.empty())
    s += "weights " + formatBytes(m.weightsBytes) + ", arena " +
         formatBytes(m.arenaBytes);
  for (size_t i = 0; i < m.memory.size(); ++i)
    s += (i ? ", " : "") + m.memory[i].name + " " +
         formatBytes(m.memory[i].bytes);
  return s + "; " + formatBytes(m.totalBytes()) + " in one allocation";
}

} // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

StatusOr<std::unique_ptr<Session>>
Session::create(const Executable &executable, DeviceKind device,
                const SessionOptions &options) {
  const Manifest &manifest = executable.manifest;
  MEMFIT_RT_RETURN_IF_ERROR(manifest.validate());
  if (executable.weights.size() != manifest.weightsBytes)
    return invalidArgument("executable: weights has " +
                           std::to_string(executable.weights.size()) +
                           " bytes but the manifest says weightsBytes " +
                           std::to_string(manifest.weightsBytes));
  auto impl = std::make_unique<Impl>();
  impl->manifest = manifest;
  impl->device = device;
  StatusOr<std::unique_ptr<Backend>> backend = device == DeviceKind::Host
                                                   ? createHostBackend(options)
                                                   : createCudaBackend(options);
  if (!backend)
    return backend.status();
  impl->backend = std::move(*backend);
  Backend &b = *impl->backend;
  Status allocated = b.allocate(manifest.totalBytes());
  if (allocated.code() == StatusCode::ResourceExhausted)
    return Status::error(allocated.code(), allocated.message() + " (" +
                                               planBreakdown(manifest) + ")");
  MEMFIT_RT_RETURN_IF_ERROR(allocated);
  MEMFIT_RT_RETURN_IF_ERROR(
      b.upload(0, executable.weights.data(), executable.weights.size()));
  MEMFIT_RT_RETURN_IF_ERROR(
      b.prepareKernels(impl->manifest, options, impl->timings));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const Manifest &Session::manifest() const { return impl_->manifest; }
DeviceKind Session::device() const { return impl_->device; }
std::string Session::deviceDescription() const {
  return impl_->backend->description();
}
uint64_t Session::allocatedBytes() const {
  return impl_->backend->allocatedBytes();
}
const SessionTimings &Session::timings() const { return impl_->timings; }

Status Session::setInput(const std::string &name, const Tensor &tensor) {
  const Manifest &m = impl_->manifest;
  const Binding *binding = impl_->findBinding(m.inputs, name);
  if (!binding)
    return notFound("no input named '" + name +
                    "' (inputs: " + Impl::bindingNames(m.inputs) + ")");
  const Buffer &buffer = m.buffers[binding->buffer];
  if (tensor.dtype != buffer.dtype || tensor.shape != buffer.shape)
    return invalidArgument("input '" + name + "': expected " +
                           describe(buffer.dtype, buffer.shape) + ", got " +
                           describe(tensor.dtype, tensor.shape));
  if (tensor.data.size() != buffer.bytes)
    return invalidArgument(
        "input '" + name + "': tensor " + describe(tensor.dtype, tensor.shape) +
        " has " + std::to_string(tensor.data.size()) +
        " bytes of data, expected " + std::to_string(buffer.bytes));
  return impl_->backend
      ->upload(impl_->offsetOf(binding->buffer), tensor.data.data(),
               buffer.bytes)
      .withContext("input '" + name + "'");
}

Status Session::run() {
  const Manifest &m = impl_->manifest;
  Backend &backend = *impl_->backend;
  auto start = std::chrono::steady_clock::now();
  std::vector<uint64_t> offsets;
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const Step &step = m.steps[i];
    offsets.clear();
    for (uint32_t id : step.buffers)
      offsets.push_back(impl_->offsetOf(id));
    if (step.kind == StepKind::Kernel) {
      MEMFIT_RT_RETURN_IF_ERROR(
          backend.launchKernel(step.index, offsets)
              .withContext("step " + std::to_string(i) + " (kernel '" +
                           m.kernels[step.index].name + "')"));
    } else {
      const Contraction &c = m.contractions[step.index];
      MEMFIT_RT_RETURN_IF_ERROR(
          backend.runContraction(c, offsets[0], offsets[1], offsets[2])
              .withContext("step " + std::to_string(i) + " (contraction '" +
                           c.name + "')"));
    }
  }
  MEMFIT_RT_RETURN_IF_ERROR(backend.synchronize());
  impl_->timings.runSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return Status::ok();
}

StatusOr<Tensor> Session::getOutput(const std::string &name) const {
  const Manifest &m = impl_->manifest;
  const Binding *binding = impl_->findBinding(m.outputs, name);
  if (!binding)
    return notFound("no output named '" + name +
                    "' (outputs: " + Impl::bindingNames(m.outputs) + ")");
  const Buffer &buffer = m.buffers[binding->buffer];
  Tensor tensor = Tensor::zeros(buffer.dtype, buffer.shape);
  MEMFIT_RT_RETURN_IF_ERROR(impl_->backend
                                ->download(impl_->offsetOf(binding->buffer),
                                           tensor.data.data(), buffer.bytes)
                                .withContext("output '" + name + "'"));
  return tensor;
}

} // namespace memfit::rt
