//===- RooflineTest.cpp - predicted step times (Roofline.h) ---------------===//
//
// Each step priced by hand from the data sheets' figures: a kernel whose
// bytes take 1 ms at 90% of the H100's 3.35 TB/s, a bf16 contraction whose
// FLOPs take 1 ms at 75% of its 989.4 TFLOP/s tensor cores (14.77 ms as
// f32 on the CUDA cores, 2 ms as TF32), a collective priced at 0; the floor
// from the entry's lower bound; a kernel's bytes of the host region priced
// at the bus's 50 GB/s; the tables' lines; GPUs found by key and by the
// names drivers report.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Roofline.h"

#include <cmath>

namespace memfit::rt::test {
namespace {

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::fabs(b);
}

Manifest pricedManifest(DType contractionType) {
  Manifest m;
  Kernel k;
  k.name = "k0_add";
  k.kind = KernelKind::ElementWise;
  k.cost = {3015000000ull, 1000}; // 1 ms of memory on the H100
  Kernel norm = k;
  norm.name = "k1_layer_norm";
  norm.kind = KernelKind::Rows;
  m.kernels = {k, norm};
  Contraction c;
  c.name = "c0_matmul";
  c.dtype = contractionType;
  c.cost = {1000000, 742050000000ull}; // 1 ms of bf16 tensor cores
  m.contractions = {c};
  Collective all;
  all.name = "all_reduce";
  m.collectives = {all};
  Entry e;
  e.name = "train_step";
  e.steps = {{StepKind::Kernel, 0, {}},
             {StepKind::Contraction, 0, {}},
             {StepKind::Collective, 0, {}},
             {StepKind::Kernel, 1, {}}};
  e.boundBytes = 335000000; // 0.1 ms at the full 3.35 TB/s
  m.entries = {e};
  return m;
}

void testFind() {
  CHECK(GpuSpec::find("h100") &&
        std::string(GpuSpec::find("h100")->arch) == "sm_90");
  CHECK(GpuSpec::find("NVIDIA H100 80GB HBM3") == GpuSpec::find("h100"));
  CHECK(GpuSpec::find("NVIDIA H200 (sm_90, driver 13.0)") ==
        GpuSpec::find("h200"));
  CHECK(GpuSpec::find("NVIDIA A100-SXM4-40GB") == GpuSpec::find("a100"));
  CHECK(GpuSpec::find("NVIDIA GeForce RTX 4090") == nullptr);
  CHECK(GpuSpec::find("Mock GPU A") == nullptr);
  CHECK(GpuSpec::keys() == "a100, h100, h200");
}

void testPredict() {
  const GpuSpec &h100 = *GpuSpec::find("h100");
  Manifest m = pricedManifest(DType::bf16);
  EntryPrediction p = predictEntry(m, 0, h100);
  if (!CHECK(p.steps.size() == 4))
    return;
  CHECK(p.steps[0].group == StepGroup::ElementWise && p.steps[0].memoryBound);
  CHECK(near(p.steps[0].seconds, 1e-3 + 2e-6));
  CHECK(p.steps[1].group == StepGroup::Contractions && !p.steps[1].memoryBound);
  CHECK(near(p.steps[1].seconds, 1e-3 + 2e-6));
  CHECK(p.steps[2].group == StepGroup::Collectives && p.steps[2].seconds == 0);
  CHECK(p.steps[3].group == StepGroup::Rows);
  CHECK(near(p.seconds, 3 * (1e-3 + 2e-6)));
  CHECK(p.complete);
  // The floor: the FLOPs at the full peaks (0.75 ms of tensor cores and
  // 2000 / 67e12 s of CUDA cores) beat 0.1 ms of bound bytes.
  CHECK(near(p.floorSeconds, 0.75e-3 + 2000 / 67e12));

  // f32 contractions run on the CUDA cores unless TF32 is allowed.
  Manifest f32 = pricedManifest(DType::f32);
  CHECK(near(predictEntry(f32, 0, h100).steps[1].seconds,
             742.05e9 / (67e12 * 0.75) + 2e-6));
  CHECK(near(predictEntry(f32, 0, h100, /*tf32=*/true).steps[1].seconds,
             742.05e9 / (494.7e12 * 0.75) + 2e-6));

  // Without the lower bound the floor takes every step's bytes.
  m.entries[0].boundBytes = 0;
  m.contractions[0].cost.flops = 0;
  CHECK(near(predictEntry(m, 0, h100).floorSeconds,
             (2 * 3015000000.0 + 1e6) / 3.35e12));
  // A kernel that reads and writes a state in the host region
  // (--offload=optimizer): those bytes cross the bus at 50 GB/s, the rest
  // at the HBM's rate; the bus's time is a floor of its own.
  Manifest offloaded = pricedManifest(DType::bf16);
  offloaded.buffers = {{"m", Region::Host, 0, 1000000000, DType::f32,
                        {250000000}}};
  offloaded.hostBytes = 1000000000;
  offloaded.entries[0].steps[0].buffers = {0, 0}; // read, written in place
  EntryPrediction bus = predictEntry(offloaded, 0, h100);
  CHECK(near(bus.steps[0].seconds,
             1015000000.0 / (3.35e12 * 0.9) + 2e9 / 50e9 + 2e-6));
  CHECK(near(bus.floorSeconds, 2e9 / 50e9));
  // The same kernel run by the host's cores (Kernel::onHost): not the
  // device's time, and not its bus's.
  offloaded.kernels[offloaded.entries[0].steps[0].index].onHost = true;
  EntryPrediction beside = predictEntry(offloaded, 0, h100);
  CHECK(beside.steps[0].group == StepGroup::HostTasks &&
        beside.steps[0].seconds == 0);
  CHECK(beside.seconds < bus.seconds - 2e9 / 50e9);
  std::string table = formatPrediction(offloaded, h100);
  CHECK(table.find("(1 host tasks not priced: the host's cores run them "
                   "beside the device)") != std::string::npos);
  // A step without a cost (an older executable) makes it incomplete.
  m.kernels[1].cost = {};
  CHECK(!predictEntry(m, 0, h100).complete);
}

void testTables() {
  const GpuSpec &h100 = *GpuSpec::find("h100");
  Manifest m = pricedManifest(DType::bf16);
  std::string table = formatPrediction(m, h100);
  CHECK(table.find("predicted on NVIDIA H100-SXM5-80GB (sm_90), entry "
                   "'train_step':") != std::string::npos);
  CHECK(table.find("  contractions        1             0      0.95   742.05"
                   "     1.002  33.3%") != std::string::npos);
  CHECK(table.find("  rows                1             1   2875.33     0.00"
                   "     1.002  33.3%") != std::string::npos);
  CHECK(table.find("  (1 collectives not priced: their time is the "
                   "interconnect's)") != std::string::npos);
  CHECK(table.find("  total 3.006 ms (3 launches, 0.006 ms of them); floor "
                   "0.750 ms (4.01x)") != std::string::npos);

  std::vector<StepTime> times(4);
  for (size_t i = 0; i < times.size(); ++i) {
    times[i].step = i;
    times[i].calls = 2;
    times[i].seconds = 2 * 2e-3; // 2 ms a run each
  }
  std::string measured = formatMeasuredAgainstPredicted(m, times, h100);
  CHECK(measured.find("measured against predicted on NVIDIA H100-SXM5-80GB, "
                      "entry 'train_step' (ms a run):") != std::string::npos);
  CHECK(measured.find("  element-wise        1 steps  measured     2.000  "
                      "predicted     1.002    2.00x") != std::string::npos);
  CHECK(measured.find("  collectives         1 steps  measured     2.000  "
                      "(not predicted)") != std::string::npos);
  CHECK(measured.find("  total          measured     6.000  predicted     "
                      "3.006    2.00x; floor 0.750 (collectives and host tasks left out)") !=
        std::string::npos);
}

} // namespace

void runRooflineTests() {
  testFind();
  testPredict();
  testTables();
}

} // namespace memfit::rt::test
