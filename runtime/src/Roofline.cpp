//===- Roofline.cpp - predicted step times on named GPUs ------------------===//

#include "memfit/runtime/Roofline.h"

#include "Format.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace memfit::rt {

const std::vector<GpuSpec> &GpuSpec::all() {
  // NVIDIA's data sheets, SXM parts, dense rates.
  static const std::vector<GpuSpec> specs = {
      {"a100", "NVIDIA A100-SXM4-80GB", "sm_80", 2.039e12, 19.5e12, 9.7e12,
       156e12, 312e12, 0.9, 0.75, 2e-6, 25e9},
      {"h100", "NVIDIA H100-SXM5-80GB", "sm_90", 3.35e12, 67e12, 34e12,
       494.7e12, 989.4e12, 0.9, 0.75, 2e-6, 50e9},
      {"h200", "NVIDIA H200-SXM-141GB", "sm_90", 4.8e12, 67e12, 34e12, 494.7e12,
       989.4e12, 0.9, 0.75, 2e-6, 50e9},
  };
  return specs;
}

const GpuSpec *GpuSpec::find(const std::string &keyOrName) {
  std::string lower = keyOrName;
  for (char &c : lower)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const GpuSpec &spec : all())
    if (lower == spec.key)
      return &spec;
  // A device name: "NVIDIA H200", "NVIDIA A100-SXM4-40GB", ...
  for (const GpuSpec &spec : all())
    if (lower.find(spec.key) != std::string::npos)
      return &spec;
  return nullptr;
}

std::string GpuSpec::keys() {
  std::string s;
  for (const GpuSpec &spec : all())
    s += (s.empty() ? "" : ", ") + std::string(spec.key);
  return s;
}

double GpuSpec::peak(DType dtype, bool contraction, bool tf32Allowed) const {
  if (dtype == DType::f64)
    return fp64;
  if (!contraction)
    return fp32;
  if (dtype == DType::f16 || dtype == DType::bf16)
    return half;
  return tf32Allowed ? tf32 : fp32;
}

const char *stepGroupName(StepGroup group) {
  switch (group) {
  case StepGroup::Contractions:
    return "contractions";
  case StepGroup::ElementWise:
    return "element-wise";
  case StepGroup::Rows:
    return "rows";
  case StepGroup::Optimizer:
    return "optimizer";
  case StepGroup::Attention:
    return "attention";
  case StepGroup::Collectives:
    return "collectives";
  case StepGroup::HostTasks:
    return "host tasks";
  }
  return "?";
}

StepGroup stepGroup(const Manifest &manifest, const Step &step) {
  switch (step.kind) {
  case StepKind::Contraction:
    return StepGroup::Contractions;
  case StepKind::Collective:
    return StepGroup::Collectives;
  case StepKind::Kernel:
    break;
  }
  if (manifest.kernels[step.index].onHost)
    return StepGroup::HostTasks;
  switch (manifest.kernels[step.index].kind) {
  case KernelKind::ElementWise:
    return StepGroup::ElementWise;
  case KernelKind::Rows:
    return StepGroup::Rows;
  case KernelKind::Optimizer:
    return StepGroup::Optimizer;
  case KernelKind::Attention:
    return StepGroup::Attention;
  }
  return StepGroup::ElementWise;
}

EntryPrediction predictEntry(const Manifest &manifest, size_t entry,
                             const GpuSpec &gpu, bool tf32) {
  EntryPrediction prediction;
  double floorCompute = 0, floorBus = 0;
  uint64_t bytes = 0;
  for (const Step &step : manifest.entries[entry].steps) {
    PredictedStep p;
    p.group = stepGroup(manifest, step);
    if (p.group == StepGroup::Collectives ||
        p.group == StepGroup::HostTasks) {
      prediction.steps.push_back(p);
      continue;
    }
    bool contraction = step.kind == StepKind::Contraction;
    p.cost = contraction ? manifest.contractions[step.index].cost
                         : manifest.kernels[step.index].cost;
    prediction.complete &= p.cost.bytes != 0;
    // What the step reads and writes of the host region crosses the bus.
    uint64_t hostBytes = 0;
    for (uint32_t buffer : step.buffers)
      if (manifest.buffers[buffer].region == Region::Host)
        hostBytes += manifest.buffers[buffer].bytes;
    hostBytes = std::min(hostBytes, p.cost.bytes);
    double peak = gpu.peak(contraction ? manifest.contractions[step.index].dtype
                                       : DType::f32,
                           contraction, tf32);
    double bus = double(hostBytes) / gpu.hostBandwidth;
    double memory =
        double(p.cost.bytes - hostBytes) / (gpu.bandwidth * gpu.memoryEfficiency) +
        bus;
    double compute = double(p.cost.flops) / (peak * gpu.computeEfficiency);
    p.memoryBound = memory >= compute;
    p.seconds = std::max(memory, compute) + gpu.launchSeconds;
    prediction.seconds += p.seconds;
    floorCompute += double(p.cost.flops) / peak;
    floorBus += bus;
    bytes += p.cost.bytes;
    prediction.steps.push_back(p);
  }
  uint64_t bound = manifest.entries[entry].boundBytes;
  // The bus is a floor of its own: the host region's bytes cross it
  // whatever the device does meanwhile.
  prediction.floorSeconds = std::max(
      {double(bound ? bound : bytes) / gpu.bandwidth, floorCompute, floorBus});
  return prediction;
}

std::string formatPrediction(const Manifest &manifest, const GpuSpec &gpu,
                             bool tf32) {
  std::string s;
  for (size_t e = 0; e < manifest.entries.size(); ++e) {
    EntryPrediction p = predictEntry(manifest, e, gpu, tf32);
    struct Group {
      int steps = 0, memoryBound = 0;
      double bytes = 0, flops = 0, seconds = 0;
    } groups[kStepGroups];
    for (const PredictedStep &step : p.steps) {
      Group &g = groups[int(step.group)];
      ++g.steps;
      g.memoryBound += step.memoryBound;
      g.bytes += double(step.cost.bytes);
      g.flops += double(step.cost.flops);
      g.seconds += step.seconds;
    }
    s += "predicted on " + std::string(gpu.name) + " (" + gpu.arch +
         "), entry '" + manifest.entries[e].name + "'" +
         (tf32 ? ", contractions in TF32" : "") + ":\n";
    s += "  kind            steps  memory-bound       MiB    GFLOP        ms  "
         "share\n";
    for (int g = 0; g < kStepGroups; ++g) {
      const Group &group = groups[g];
      if (!group.steps || StepGroup(g) == StepGroup::Collectives ||
          StepGroup(g) == StepGroup::HostTasks)
        continue;
      s += format("  %-14s %6d  %12d %9.2f %8.2f %9.3f %5.1f%%\n",
                  stepGroupName(StepGroup(g)), group.steps, group.memoryBound,
                  group.bytes / 1048576, group.flops / 1e9,
                  group.seconds * 1e3,
                  p.seconds > 0 ? 100 * group.seconds / p.seconds : 0);
    }
    size_t launches = 0;
    for (const PredictedStep &step : p.steps)
      launches += step.group != StepGroup::Collectives &&
                  step.group != StepGroup::HostTasks;
    s +=
        format("  total %.3f ms (%.0f launches, %.3f ms of them); floor "
               "%.3f ms (%.2fx)\n",
               p.seconds * 1e3, double(launches),
               double(launches) * gpu.launchSeconds * 1e3, p.floorSeconds * 1e3,
               p.floorSeconds > 0 ? p.seconds / p.floorSeconds : 0);
    if (int collectives = groups[int(StepGroup::Collectives)].steps)
      s += "  (" + std::to_string(collectives) +
           " collectives not priced: their time is the interconnect's)\n";
    if (int tasks = groups[int(StepGroup::HostTasks)].steps)
      s += "  (" + std::to_string(tasks) +
           " host tasks not priced: the host's cores run them beside the "
           "device)\n";
    if (!p.complete)
      s += "  (some steps have no cost in the manifest: an executable from an "
           "older memfit; the times are too low)\n";
  }
  return s;
}

std::string formatMeasuredAgainstPredicted(const Manifest &manifest,
                                           const std::vector<StepTime> &times,
                                           const GpuSpec &gpu, bool tf32) {
  std::string s;
  for (size_t e = 0; e < manifest.entries.size(); ++e) {
    EntryPrediction p = predictEntry(manifest, e, gpu, tf32);
    double measured[kStepGroups] = {}, predicted[kStepGroups] = {};
    int steps[kStepGroups] = {};
    bool ran = false;
    for (const StepTime &t : times) {
      if (t.entry != e || t.calls == 0 || t.step >= p.steps.size())
        continue;
      ran = true;
      int g = int(p.steps[t.step].group);
      measured[g] += t.seconds / double(t.calls);
      predicted[g] += p.steps[t.step].seconds;
      ++steps[g];
    }
    if (!ran)
      continue;
    s += "measured against predicted on " + std::string(gpu.name) +
         ", entry '" + manifest.entries[e].name + "' (ms a run):\n";
    double totalMeasured = 0, totalPredicted = 0;
    for (int g = 0; g < kStepGroups; ++g) {
      if (!steps[g])
        continue;
      if (StepGroup(g) == StepGroup::Collectives ||
          StepGroup(g) == StepGroup::HostTasks) {
        s += format("  %-14s %6d steps  measured %9.3f  (not predicted)\n",
                    stepGroupName(StepGroup(g)), steps[g], measured[g] * 1e3);
        continue;
      }
      totalMeasured += measured[g];
      totalPredicted += predicted[g];
      s += format("  %-14s %6d steps  measured %9.3f  predicted %9.3f  "
                  "%6.2fx\n",
                  stepGroupName(StepGroup(g)), steps[g], measured[g] * 1e3,
                  predicted[g] * 1e3,
                  predicted[g] > 0 ? measured[g] / predicted[g] : 0);
    }
    s += format("  total          measured %9.3f  predicted %9.3f  %6.2fx; "
                "floor %.3f (collectives and host tasks left out)\n",
                totalMeasured * 1e3, totalPredicted * 1e3,
                totalPredicted > 0 ? totalMeasured / totalPredicted : 0,
                p.floorSeconds * 1e3);
  }
  return s;
}

} // namespace memfit::rt
