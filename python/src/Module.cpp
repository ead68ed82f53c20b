//===- Module.cpp - memfit._memfit: the C++ API for Python ----------------===//
//
// The extension module under the `memfit` package (python/memfit): compile
// a model file with the options of memfit::CompileOptions (a dict whose
// keys are the fields' names in snake case; python/memfit/config.py builds
// it from the ecosystem's names), look at the executable (entries, memory
// report, save), and run it in a session with NumPy arrays in and out.
// Errors are memfit.MemfitError with memfit's one-line diagnostics.
//
//===----------------------------------------------------------------------===//

#include "memfit/Frontend/TrainedWeights.h"
#include "memfit/JIT/Compiler.h"
#include "memfit/Support/OptionKinds.h"
#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Safetensors.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/Summary.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>

namespace nb = nanobind;
using namespace memfit;

namespace {

/// memfit's diagnostics, raised in Python as memfit.MemfitError.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(const rt::Status &status) {
  if (!status)
    throw Error(status.message());
}

template <typename T> T check(rt::StatusOr<T> value) {
  if (!value)
    throw Error(value.status().message());
  return std::move(*value);
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// Reads a dict of options into C++ fields; a key no field takes, a value
/// of the wrong type and a choice memfit does not know are errors that
/// name the option.
class OptionReader {
public:
  OptionReader(nb::dict dict, std::string where)
      : dict_(std::move(dict)), where_(std::move(where)) {}

  template <typename T> void get(const char *key, T &out) {
    if (!dict_.contains(key))
      return;
    used_.insert(key);
    nb::handle value = dict_[key];
    if (value.is_none())
      return;
    if (!nb::try_cast(value, out))
      throw Error(where_ + ": option '" + key + "' has the wrong type (" +
                  nb::cast<std::string>(nb::str(value.type())) + ")");
  }

  template <typename Kind> void kind(const char *key, Kind &out) {
    std::string name;
    bool given = dict_.contains(key) && !dict_[key].is_none();
    get(key, name);
    if (!given)
      return;
    std::optional<Kind> parsed = parseKind<Kind>(name);
    if (!parsed)
      throw Error(where_ + ": option '" + key + "': '" + name + "' is not a " +
                  kindNames<Kind>().noun + " (" + kindList<Kind>() + ")");
    out = *parsed;
  }

  nb::dict sub(const char *key) {
    if (!dict_.contains(key) || dict_[key].is_none())
      return {};
    used_.insert(key);
    nb::dict d;
    if (!nb::try_cast(dict_[key], d))
      throw Error(where_ + ": option '" + key + "' must be a dict");
    return d;
  }

  bool has(const char *key) const {
    return dict_.contains(key) && !dict_[key].is_none();
  }

  /// Every key must have been read.
  void finish() const {
    for (auto [key, value] : dict_) {
      std::string name = nb::cast<std::string>(nb::str(key));
      if (!used_.count(name))
        throw Error(where_ + ": unknown option '" + name + "'");
    }
  }

private:
  nb::dict dict_;
  std::string where_;
  std::set<std::string> used_;
};

TrainOptions trainOptions(nb::dict dict) {
  TrainOptions t;
  OptionReader r(std::move(dict), "train");
  r.kind("loss", t.loss);
  r.get("ignore_index", t.ignoreIndex);
  r.get("chunked_loss", t.chunkedLoss);
  r.get("loss_chunk", t.lossChunk);
  r.get("trainable", t.trainable);
  r.get("frozen", t.frozen);
  r.kind("precision", t.precision);
  r.get("lora_rank", t.loraRank);
  r.get("lora_alpha", t.loraAlpha);
  r.get("lora_targets", t.loraTargets);
  r.get("lora_exclude", t.loraExclude);
  r.get("lora_rslora", t.loraRslora);
  r.get("lora_dropout", t.loraDropout);
  r.get("lora_seed", t.loraSeed);
  r.get("keep_fp32", t.keepFp32);
  r.get("loss_scale", t.lossScale);
  r.kind("optimizer", t.optimizer);
  r.kind("optimizer_states", t.optimizerStates);
  r.get("keep_fp32_states", t.keepFp32States);
  r.get("beta1", t.beta1);
  r.get("beta2", t.beta2);
  r.get("eps", t.eps);
  r.get("weight_decay", t.weightDecay);
  r.get("momentum", t.momentum);
  r.get("nesterov", t.nesterov);
  r.get("clip_norm", t.clipNorm);
  r.get("accumulate", t.accumulate);
  r.kind("remat", t.remat);
  r.get("budget", t.budget);
  r.get("activation_fraction", t.activationFraction);
  r.get("compress_activations", t.compressActivations);
  r.get("activation_block_size", t.activationBlockSize);
  r.get("remat_report", t.rematReport);
  r.get("remat_time_limit", t.rematTimeLimit);
  r.get("offload_optimizer", t.offloadOptimizer);
  r.get("offload_activations", t.offloadActivations);
  r.finish();
  return t;
}

CompileOptions compileOptions(nb::dict dict) {
  CompileOptions o;
  OptionReader r(std::move(dict), "compile");
  r.get("input_shapes", o.inputShapes);
  r.get("input_values", o.inputValues);
  r.get("entry", o.entry);
  if (r.has("train"))
    o.train = trainOptions(r.sub("train"));
  r.kind("quantize_weights", o.weights.scheme);
  r.get("weight_block_size", o.weights.blockSize);
  r.get("double_quant", o.weights.doubleQuant);
  r.get("fuse", o.fusion.enabled);
  r.get("fuse_max_ops", o.fusion.maxOps);
  r.get("fused_attention", o.fusion.attention);
  r.get("plan_only", o.planOnly);
  r.get("cache_dir", o.cacheDir);
  r.get("no_cache", o.disableCache);
  r.finish();
  return o;
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

/// An array any framework hands over through DLPack or the buffer
/// protocol (NumPy, torch, JAX...), in host memory and C order; read in
/// place.
using AnyArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

/// Where an output goes: a NumPy array, or a torch tensor (through DLPack,
/// on the same memory) when the caller passed torch tensors in.
enum class Framework { NumPy, Torch };

Framework frameworkNamed(const std::string &name) {
  if (name == "numpy")
    return Framework::NumPy;
  if (name == "torch")
    return Framework::Torch;
  throw Error("framework '" + name + "': expected numpy or torch");
}

/// The DLPack type of a runtime dtype. bf16 is DLPack's bfloat for torch;
/// for NumPy, which lacks it, it and the 8-bit floats are raw bytes of
/// their width, as memfit-run's .npy files hold them.
nb::dlpack::dtype dlpackOf(rt::DType t, Framework framework) {
  using nb::dlpack::dtype_code;
  static const struct {
    rt::DType type;
    dtype_code code;
    int bits;
  } kTypes[] = {
      {rt::DType::f32, dtype_code::Float, 32},
      {rt::DType::f64, dtype_code::Float, 64},
      {rt::DType::f16, dtype_code::Float, 16},
      {rt::DType::i64, dtype_code::Int, 64},
      {rt::DType::i32, dtype_code::Int, 32},
      {rt::DType::i16, dtype_code::Int, 16},
      {rt::DType::i8, dtype_code::Int, 8},
      {rt::DType::u64, dtype_code::UInt, 64},
      {rt::DType::u32, dtype_code::UInt, 32},
      {rt::DType::u16, dtype_code::UInt, 16},
      {rt::DType::i1, dtype_code::Bool, 8},
  };
  dtype_code code = dtype_code::UInt;
  int bits = static_cast<int>(8 * rt::dtypeSize(t));
  for (const auto &entry : kTypes)
    if (entry.type == t)
      code = entry.code, bits = entry.bits;
  if (t == rt::DType::bf16 && framework == Framework::Torch)
    code = dtype_code::Bfloat;
  return nb::dlpack::dtype{static_cast<uint8_t>(code),
                           static_cast<uint8_t>(bits), 1};
}

/// "float64", "int32", "bfloat16", ... for messages.
std::string dlpackName(nb::dlpack::dtype t) {
  using nb::dlpack::dtype_code;
  std::string kind;
  switch (static_cast<dtype_code>(t.code)) {
  case dtype_code::Int:
    kind = "int";
    break;
  case dtype_code::UInt:
    kind = "uint";
    break;
  case dtype_code::Float:
    kind = "float";
    break;
  case dtype_code::Bfloat:
    kind = "bfloat";
    break;
  case dtype_code::Bool:
    return "bool";
  case dtype_code::Complex:
    kind = "complex";
    break;
  default:
    kind = "code" + std::to_string(t.code) + "_";
    break;
  }
  return kind + std::to_string(t.bits);
}

/// A view of `value` (an array of any framework) as input `name` of
/// dtype `expected`: the element type must be that one (no silent
/// conversion; bf16 also as raw 16-bit words, which is how NumPy holds it);
/// the memory must be on the host in C order.
rt::TensorView viewOf(const std::string &name, nb::handle value,
                      rt::DType expected) {
  AnyArray array;
  if (!nb::try_cast(value, array)) {
    std::string type = nb::cast<std::string>(nb::str(value.type()));
    bool device =
        nb::hasattr(value, "device") && nb::hasattr(value, "__dlpack__");
    throw Error(
        "input '" + name + "': expected an array in host memory (" +
        "NumPy, or a torch tensor on the CPU), got " + type +
        (device ? " on " + nb::cast<std::string>(nb::str(value.attr("device")))
                : std::string()));
  }
  nb::dlpack::dtype got = array.dtype();
  if (got != dlpackOf(expected, Framework::NumPy) &&
      got != dlpackOf(expected, Framework::Torch))
    throw Error("input '" + name + "': expected " + rt::dtypeName(expected) +
                " elements, got an array of " + dlpackName(got));
  std::vector<int64_t> shape;
  for (size_t d = 0; d < array.ndim(); ++d)
    shape.push_back(static_cast<int64_t>(array.shape(d)));
  return rt::TensorView(expected, std::move(shape), array.data(),
                        array.nbytes());
}

/// A copy of a view the runtime keeps.
rt::Tensor tensorOf(const rt::TensorView &view) {
  rt::Tensor t;
  t.dtype = view.dtype;
  t.shape = view.shape;
  t.data.assign(view.data, view.data + view.bytes);
  return t;
}

/// The runtime dtype of a DLPack type, where there is one (raw unsigned
/// words are unsigned integers).
std::optional<rt::DType> dtypeOf(nb::dlpack::dtype t) {
  for (rt::DType type :
       {rt::DType::f32, rt::DType::f64, rt::DType::f16, rt::DType::bf16,
        rt::DType::i64, rt::DType::i32, rt::DType::i16, rt::DType::i8,
        rt::DType::u64, rt::DType::u32, rt::DType::u16, rt::DType::u8,
        rt::DType::i1})
    if (t == dlpackOf(type, Framework::Torch) ||
        (type != rt::DType::bf16 && t == dlpackOf(type, Framework::NumPy)))
      return type;
  return std::nullopt;
}

/// An array of `framework` that owns the tensor's bytes (moved, not
/// copied).
nb::object arrayOf(rt::Tensor tensor, Framework framework) {
  auto *owned = new std::vector<uint8_t>(std::move(tensor.data));
  nb::capsule owner(owned, [](void *p) noexcept {
    delete static_cast<std::vector<uint8_t> *>(p);
  });
  std::vector<size_t> shape(tensor.shape.begin(), tensor.shape.end());
  nb::dlpack::dtype type = dlpackOf(tensor.dtype, framework);
  if (framework == Framework::Torch)
    return nb::ndarray<nb::pytorch, nb::c_contig>(
               owned->data(), shape.size(), shape.data(), owner, nullptr, type)
        .cast();
  return nb::ndarray<nb::numpy, nb::c_contig>(
             owned->data(), shape.size(), shape.data(), owner, nullptr, type)
      .cast();
}

//===----------------------------------------------------------------------===//
// Executables and sessions
//===----------------------------------------------------------------------===//

struct Executable {
  std::shared_ptr<rt::Executable> exe;

  const rt::Manifest &manifest() const { return exe->manifest; }
};

struct Session {
  std::unique_ptr<rt::Session> session;

  const rt::Buffer &bufferOf(const std::string &name, bool input) const {
    const rt::Manifest &m = session->manifest();
    for (const rt::Entry &e : m.entries)
      for (const rt::Binding &b : input ? e.inputs : e.outputs)
        if (b.name == name)
          return m.buffers[b.buffer];
    throw Error(std::string("no ") + (input ? "input" : "output") + " named '" +
                name + "'");
  }
};

/// (name, [(input, dtype, shape)], [(output, dtype, shape)]) per entry.
using BindingInfo = std::tuple<std::string, std::string, std::vector<int64_t>>;
using EntryInfo =
    std::tuple<std::string, std::vector<BindingInfo>, std::vector<BindingInfo>>;

std::vector<EntryInfo> entriesOf(const rt::Manifest &m) {
  std::vector<EntryInfo> entries;
  auto bindings = [&](const std::vector<rt::Binding> &list) {
    std::vector<BindingInfo> out;
    for (const rt::Binding &b : list) {
      const rt::Buffer &buffer = m.buffers[b.buffer];
      out.emplace_back(b.name, rt::dtypeName(buffer.dtype), buffer.shape);
    }
    return out;
  };
  for (const rt::Entry &e : m.entries)
    entries.emplace_back(e.name, bindings(e.inputs), bindings(e.outputs));
  return entries;
}

} // namespace

NB_MODULE(_memfit, m) {
  m.doc() = "memfit's C++ API (memfit/JIT/Compiler.h, memfit/runtime): the "
            "memfit package wraps it.";
  nb::exception<Error>(m, "MemfitError", PyExc_RuntimeError);

  nb::class_<Executable>(m, "Executable",
                         "A compiled model: its entries, memory plan and "
                         "kernels (memfit::rt::Executable).")
      .def_prop_ro(
          "model", [](const Executable &e) { return e.manifest().model; },
          "The model file it was compiled from.")
      .def_prop_ro(
          "plan_only", [](const Executable &e) { return e.exe->planOnly; },
          "Compiled from shapes alone: it cannot run.")
      .def_prop_ro(
          "entries",
          [](const Executable &e) { return entriesOf(e.manifest()); },
          "Each entry's name, inputs and outputs (name, dtype, shape).")
      .def_prop_ro(
          "memory",
          [](const Executable &e) {
            std::vector<std::pair<std::string, uint64_t>> rows;
            for (const rt::MemoryCategory &c : e.manifest().memory)
              rows.emplace_back(c.name, c.bytes);
            return rows;
          },
          "The memory plan by category, in bytes, as memfit-run "
          "--memory-report lists it.")
      .def_prop_ro(
          "total_bytes",
          [](const Executable &e) { return e.manifest().totalBytes(); },
          "The one allocation a session makes.")
      .def_prop_ro(
          "lora_adapters",
          [](const Executable &e) {
            std::vector<
                std::tuple<std::string, std::string, std::string, double, bool>>
                out;
            for (const rt::LoraAdapter &a : e.manifest().loraAdapters)
              out.emplace_back(a.a, a.b, a.base, a.scale, a.transposed);
            return out;
          },
          "Each LoRA adapter as (A, B, base weight, scale, base stored "
          "transposed).")
      .def(
          "memory_report_text",
          [](const Executable &e) {
            return rt::formatPlanSummary(e.manifest()) +
                   rt::formatMemoryReport(e.manifest());
          },
          "The plan and the memory report as memfit-run prints them.")
      .def(
          "save",
          [](const Executable &e, const std::string &directory) {
            check(rt::saveExecutable(*e.exe, directory));
          },
          nb::arg("directory"),
          "Writes the executable (manifest.json, kernels.cu, weights) for "
          "memfit-run or load().");

  m.def(
      "compile",
      [](const std::string &path, nb::dict options) {
        CompileOptions compile = compileOptions(std::move(options));
        rt::StatusOr<rt::Executable> exe = [&] {
          nb::gil_scoped_release release;
          return compileModelFile(path, compile);
        }();
        return Executable{
            std::make_shared<rt::Executable>(check(std::move(exe)))};
      },
      nb::arg("path"), nb::arg("options"),
      "Compiles an ONNX or MLIR file with CompileOptions given as a dict of "
      "their snake-case names.");
  m.def(
      "load",
      [](const std::string &directory) {
        return Executable{std::make_shared<rt::Executable>(
            check(rt::loadExecutable(directory)))};
      },
      nb::arg("directory"), "Loads an executable that save() wrote.");
  m.def(
      "cuda_usable",
      []() {
        std::string why;
        bool usable = rt::cudaUsable(&why);
        return std::make_pair(usable, why);
      },
      "Whether a CUDA device can be used, and if not, why.");

  nb::class_<Session>(m, "Session",
                      "An executable on a device: one allocation, weights "
                      "uploaded, kernels compiled (memfit::rt::Session).")
      .def(
          "__init__",
          [](Session *self, const Executable &e, const std::string &device,
             const std::string &cacheDir, unsigned hostThreads) {
            rt::DeviceKind kind;
            if (device == "host")
              kind = rt::DeviceKind::Host;
            else if (device == "cuda")
              kind = rt::DeviceKind::Cuda;
            else
              throw Error("device '" + device + "': expected host or cuda");
            rt::SessionOptions options;
            options.cacheDir = cacheDir;
            options.hostThreads = hostThreads;
            rt::StatusOr<std::unique_ptr<rt::Session>> session = [&] {
              nb::gil_scoped_release release;
              return rt::Session::create(*e.exe, kind, options);
            }();
            new (self) Session{check(std::move(session))};
          },
          nb::arg("executable"), nb::arg("device") = "host",
          nb::arg("cache_dir") = "", nb::arg("host_threads") = 0,
          "A session of `executable` on 'host' or 'cuda': its kernels "
          "compiled or loaded from `cache_dir`, its one allocation made, its "
          "weights uploaded; host_threads 0: $MEMFIT_HOST_THREADS, else one "
          "per CPU.")
      .def_prop_ro(
          "device",
          [](const Session &s) { return s.session->deviceDescription(); },
          "What it runs on: 'host (2 threads, g++ ...)', the GPU's name.")
      .def_prop_ro(
          "allocated_bytes",
          [](const Session &s) { return s.session->allocatedBytes(); },
          "Bytes of its one allocation: the plan's peak.")
      .def_prop_ro(
          "host_bytes",
          [](const Session &s) { return s.session->hostBytes(); },
          "Bytes it holds in host memory apart from the device's "
          "allocation: the optimizer states under offload='optimizer'.")
      .def(
          "set_input",
          [](Session &s, const std::string &name, nb::handle array) {
            const rt::Buffer &buffer = s.bufferOf(name, /*input=*/true);
            check(s.session->setInput(name, viewOf(name, array, buffer.dtype)));
          },
          nb::arg("name"), nb::arg("array"),
          "Copies an array (NumPy, or a CPU torch tensor, read in place) to "
          "an input; its dtype and shape must be the input's.")
      .def(
          "run",
          [](Session &s, const std::string &entry) {
            nb::gil_scoped_release release;
            check(s.session->run(entry));
          },
          nb::arg("entry"),
          "Runs an entry ('main', 'train_step', 'accumulate', 'apply') on "
          "the inputs set since another entry last ran, and waits for it.")
      .def(
          "output",
          [](const Session &s, const std::string &name,
             const std::string &framework) {
            return arrayOf(check(s.session->getOutput(name)),
                           frameworkNamed(framework));
          },
          nb::arg("name"), nb::arg("framework") = "numpy",
          "An output of the entry that ran last, as a NumPy array or a "
          "torch tensor (framework='torch').")
      .def(
          "variables",
          [](const Session &s) {
            std::vector<std::pair<std::string, std::string>> out;
            for (const rt::Variable &v : s.session->variables())
              out.emplace_back(v.name, rt::variableKindName(v.kind));
            return out;
          },
          "Each persistent tensor's name and kind (parameter, "
          "frozen_parameter, optimizer_state, gradient_accumulator, counter, "
          "working_copy).")
      .def(
          "read_variable",
          [](const Session &s, const std::string &name,
             const std::string &framework) {
            return arrayOf(check(s.session->readVariable(name)),
                           frameworkNamed(framework));
          },
          nb::arg("name"), nb::arg("framework") = "numpy",
          "A copy of a variable (see variables()), as a NumPy array or a "
          "torch tensor.")
      .def(
          "write_variable",
          [](Session &s, const std::string &name, nb::handle array) {
            const rt::Manifest &m = s.session->manifest();
            const rt::Variable *v = m.findVariable(name);
            if (!v)
              throw Error("no variable named '" + name + "'");
            check(s.session->writeVariable(
                name,
                tensorOf(viewOf(name, array, m.buffers[v->buffer].dtype))));
          },
          nb::arg("name"), nb::arg("array"),
          "Overwrites a variable; the array's dtype and shape must be its.")
      .def(
          "save_checkpoint",
          [](const Session &s, const std::string &path) {
            check(s.session->saveCheckpoint(path));
          },
          nb::arg("path"),
          "Writes every variable but the frozen parameters to `path` "
          "through a temporary renamed into place.")
      .def(
          "load_checkpoint",
          [](Session &s, const std::string &path) {
            check(s.session->loadCheckpoint(path));
          },
          nb::arg("path"),
          "Reads a checkpoint of save_checkpoint(), checked whole against "
          "the executable first (on error nothing changed).")
      .def(
          "export_parameters",
          [](const Session &s, const std::string &path, bool adaptersOnly) {
            check(frontend::exportParameters(*s.session, path, adaptersOnly));
          },
          nb::arg("path"), nb::arg("adapters_only") = false,
          "Writes the trainable parameters under their ONNX names (or only "
          "the LoRA adapters, under PEFT's names) to a safetensors file, "
          "as memfit-run --export-safetensors / --export-adapters.")
      .def(
          "export_model",
          [](const Session &s, const std::string &source,
             const std::string &path, bool externalData) {
            check(
                frontend::exportModel(*s.session, source, path, externalData));
          },
          nb::arg("source"), nb::arg("path"), nb::arg("external_data") = false,
          "Writes the source ONNX model with the trained weights, LoRA "
          "merged (memfit-run --export).")
      .def(
          "load_parameters",
          [](Session &s, const std::string &path) {
            check(frontend::loadParameters(*s.session, path));
          },
          nb::arg("path"),
          "Sets trainable parameters from a safetensors file (PEFT's names "
          "or memfit's), every tensor checked first (--load-adapters).");

  m.def(
      "write_safetensors",
      [](const std::string &path, nb::dict tensors,
         std::map<std::string, std::string> metadata) {
        rt::NamedTensors named;
        for (auto [key, value] : tensors) {
          std::string name = nb::cast<std::string>(nb::str(key));
          AnyArray array;
          if (!nb::try_cast(value, array))
            throw Error(path + ": tensor '" + name +
                        "' is not an array in host memory");
          std::optional<rt::DType> type = dtypeOf(array.dtype());
          if (!type)
            throw Error(path + ": tensor '" + name + "' has elements of " +
                        dlpackName(array.dtype()) +
                        ", which safetensors files of memfit do not hold");
          named.emplace_back(name, tensorOf(viewOf(name, value, *type)));
        }
        check(rt::writeSafetensors(path, named, metadata));
      },
      nb::arg("path"), nb::arg("tensors"), nb::arg("metadata") = nb::dict(),
      "Writes arrays (NumPy or torch) to a safetensors file through a "
      "temporary renamed into place.");
}
