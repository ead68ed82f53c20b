//===- Roofline.h - predicted step times on named GPUs ----------*- C++ -*-===//
//
// Where the time of a step would go on a GPU one does not have: each kernel
// and contraction of the manifest is priced from its cost (StepCost: bytes
// moved and FLOPs, from the compiler's model) against a GPU's memory
// bandwidth and peak arithmetic rate, the roofline model:
//
//   time = max(bytes / (bandwidth * memoryEfficiency),
//              flops / (peak * computeEfficiency)) + launch
//
// The peak is the tensor cores' for a contraction in f16 or bf16 (and in
// f32 with TF32), the CUDA cores' f32 (or f64) rate otherwise. The
// efficiencies are what well-tuned kernels reach (STREAM-like copies reach
// about 90% of HBM bandwidth, cuBLAS large GEMMs about 75% of the tensor
// cores' peak), and `launch` the gap between two dependent kernels. The
// floor is the entry's lower-bound bytes (Entry::boundBytes) at the full
// bandwidth against its FLOPs at the full peaks, whichever is longer: no
// schedule can go below it.
//
// The table is in GpuSpec::all(); figures are NVIDIA's data sheets for the
// SXM parts, dense (no sparsity).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_ROOFLINE_H
#define MEMFIT_RUNTIME_ROOFLINE_H

#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Session.h"

#include <string>
#include <vector>

namespace memfit::rt {

struct GpuSpec {
  const char *key;               // "a100", "h100", "h200"
  const char *name;              // "NVIDIA A100-SXM4-80GB"
  const char *arch;              // "sm_80"
  double bandwidth;              // bytes per second of device memory
  double fp32, fp64, tf32, half; // FLOP/s: CUDA cores; tensor cores
  double memoryEfficiency = 0.9, computeEfficiency = 0.75;
  double launchSeconds = 2e-6;
  /// Bytes per second between pinned host memory and the device (the host
  /// region of --offload=optimizer, which kernels read over the bus): a
  /// PCIe 4 x16 link's 25 GB/s on the A100, PCIe 5's 50 GB/s on the H100
  /// and H200, as measured pinned copies reach.
  double hostBandwidth = 25e9;

  /// The parts in the table.
  static const std::vector<GpuSpec> &all();
  /// The part `key` names ("h100"), or a device name that contains its
  /// model ("NVIDIA H100 80GB HBM3"); null when none matches.
  static const GpuSpec *find(const std::string &keyOrName);
  /// "a100, h100, h200".
  static std::string keys();

  /// The peak rate for a contraction of `dtype` (tensor cores for halves,
  /// and for f32 when `tf32`), or for other kernels' arithmetic (f32).
  double peak(DType dtype, bool contraction, bool tf32) const;
};

/// Groups of steps in profiles and predictions.
enum class StepGroup {
  Contractions,
  ElementWise,
  Rows,
  Optimizer,
  Attention,
  Collectives,
  HostTasks // Kernel::onHost: on the host's cores, beside the device
};
constexpr int kStepGroups = 7;
/// "contractions", "element-wise", "rows", "optimizer", "attention",
/// "collectives", "host tasks".
const char *stepGroupName(StepGroup group);
/// The group of step `step` of an entry.
StepGroup stepGroup(const Manifest &manifest, const Step &step);

/// One step priced on a GPU.
struct PredictedStep {
  StepGroup group;
  StepCost cost;
  double seconds = 0;
  bool memoryBound = true;
};

struct EntryPrediction {
  std::vector<PredictedStep> steps; // in the entry's order
  double seconds = 0;               // the sum of the steps' times
  double floorSeconds = 0;          // the roofline floor (see the top)
  bool complete = true;             // every kernel and contraction had a cost
};

/// Prices entry `entry` of `manifest` on `gpu`. Collectives are priced at 0
/// (their time is the interconnect's, not the device's), and so are host
/// tasks (the host's cores run them beside the device; the copies to and
/// from the host region that feed them are device steps, priced at the
/// bus's rate).
EntryPrediction predictEntry(const Manifest &manifest, size_t entry,
                             const GpuSpec &gpu, bool tf32 = false);

/// The table memfit-run --predict prints for each entry: by group the
/// steps, bytes, FLOPs, predicted milliseconds and share, the total with
/// launches, and the floor.
std::string formatPrediction(const Manifest &manifest, const GpuSpec &gpu,
                             bool tf32 = false);

/// A profile (Session::stepProfile, each step timed alone) next to the
/// prediction for `gpu`, by group: measured and predicted milliseconds a
/// run and their ratio, for each entry that ran.
std::string formatMeasuredAgainstPredicted(const Manifest &manifest,
                                           const std::vector<StepTime> &times,
                                           const GpuSpec &gpu,
                                           bool tf32 = false);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_ROOFLINE_H
