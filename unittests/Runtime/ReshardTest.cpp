//===- ReshardTest.cpp - ZeRO checkpoints at another world size -----------===//
//
// reshardCheckpoint (Checkpoint.h) on hand-made files: a parameter of 5
// rows with a momentum buffer, saved by 2 ranks (rows 0-2 and 3-4 plus a
// zero row), cut for each rank of 3 and put together for 1 process; a
// plain file cut for 2 ranks; the files that cannot be one checkpoint; and
// ZeRO stage 3's parameters, which are rows too.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Checkpoint.h"

#include <cstring>

namespace memfit::rt::test {
namespace {

Tensor rows(int64_t first, int64_t count, int64_t total) {
  Tensor t = Tensor::zeros(DType::f32, {count, 2});
  for (int64_t r = 0; r < count; ++r)
    for (int64_t c = 0; c < 2; ++c)
      t.as<float>()[r * 2 + c] =
          first + r < total ? float(10 * (first + r) + c) : 0.0f;
  return t;
}

Tensor scalar(float value) {
  Tensor t = Tensor::zeros(DType::f32, {});
  *t.as<float>() = value;
  return t;
}

/// The executable of rank `rank` of `ranks` (ZeRO stage 1 when more than
/// one): w [5, 2], its momentum buffer sliced, the step counter.
Manifest manifestFor(int64_t ranks) {
  Manifest m;
  int64_t slice = (5 + ranks - 1) / ranks;
  m.buffers = {{"w", Region::Weights, 0, 40, DType::f32, {5, 2}},
               {"w.momentum_buffer",
                Region::Weights,
                256,
                uint64_t(slice * 8),
                DType::f32,
                {slice, 2}},
               {"step", Region::Weights, 512, 4, DType::f32, {}}};
  m.variables = {{"w", 0, VariableKind::Parameter},
                 {"w.momentum_buffer", 1, VariableKind::OptimizerState},
                 {"step", 2, VariableKind::Counter}};
  m.worldSize = ranks;
  m.zeroStage = ranks > 1 ? 1 : 0;
  return m;
}

CheckpointFile fileOf(int64_t rank, int64_t ranks, float step = 7) {
  int64_t slice = (5 + ranks - 1) / ranks;
  CheckpointFile f;
  f.path = "ckpt.rank-" + std::to_string(rank) + "-of-" + std::to_string(ranks);
  f.variables = {
      {"w", "parameter", rows(0, 5, 5)},
      {"w.momentum_buffer", "optimizer_state", rows(rank * slice, slice, 5)},
      {"step", "counter", scalar(step)}};
  return f;
}

bool sameData(const Tensor &a, const Tensor &b) {
  return a.shape == b.shape && a.data == b.data;
}

void testReshard() {
  std::vector<CheckpointFile> two = {fileOf(0, 2), fileOf(1, 2)};
  // 2 ranks' files to each rank of 3: rows 0-1, 2-3, 4 and a zero row.
  for (int64_t rank = 0; rank < 3; ++rank) {
    StatusOr<CheckpointFile> cut = reshardCheckpoint(two, manifestFor(3), rank);
    if (!CHECK_OK(cut.status()))
      continue;
    const CheckpointVariable *m = cut->find("w.momentum_buffer");
    CHECK(m && sameData(m->tensor, rows(2 * rank, 2, 5)));
    CHECK(sameData(cut->find("w")->tensor, rows(0, 5, 5)));
    CHECK(*cut->find("step")->tensor.as<float>() == 7);
  }
  // To one process: the whole buffer, without the padding row.
  StatusOr<CheckpointFile> whole = reshardCheckpoint(two, manifestFor(1), 0);
  if (CHECK_OK(whole.status()))
    CHECK(sameData(whole->find("w.momentum_buffer")->tensor, rows(0, 5, 5)));
  // A plain file (one process) to rank 1 of 2: rows 3-4 and a zero row.
  StatusOr<CheckpointFile> cut =
      reshardCheckpoint({fileOf(0, 1)}, manifestFor(2), 1);
  if (CHECK_OK(cut.status()))
    CHECK(sameData(cut->find("w.momentum_buffer")->tensor, rows(3, 3, 5)));

  // Files of two steps; a state whose rows fit neither layout; a rank out
  // of range.
  CHECK_ERROR(
      reshardCheckpoint({fileOf(0, 2), fileOf(1, 2, 8)}, manifestFor(3), 0)
          .status(),
      "variable 'step' differs between ckpt.rank-0-of-2 and ckpt.rank-1-of-2: "
      "the files are not of one step");
  CHECK_ERROR(reshardCheckpoint({fileOf(0, 3), fileOf(1, 3)}, manifestFor(1), 0)
                  .status(),
              "variable 'w.momentum_buffer' has 2 rows in ckpt.rank-0-of-3, "
              "which is neither its parameter's 5 nor their share of 2 ranks");
  CHECK_ERROR(reshardCheckpoint(two, manifestFor(3), 3).status(),
              "reshardCheckpoint: rank 3 of 3");
  CHECK(rankCheckpointPath("run/ckpt", 1, 4) == "run/ckpt.rank-1-of-4");

  // A gradient accumulator: whole in every rank's file (stage 1), cut into
  // rows for stage 2's ranks; and sliced (stage 2) put together for one
  // process.
  Manifest accumulating = manifestFor(3);
  accumulating.buffers.push_back(
      {"w.grad", Region::Weights, 768, 16, DType::f32, {2, 2}});
  accumulating.variables.push_back(
      {"w.grad", 3, VariableKind::GradientAccumulator});
  std::vector<CheckpointFile> alike = two;
  for (CheckpointFile &f : alike)
    f.variables.push_back({"w.grad", "gradient_accumulator", rows(0, 5, 5)});
  StatusOr<CheckpointFile> sliced = reshardCheckpoint(alike, accumulating, 2);
  if (CHECK_OK(sliced.status()))
    CHECK(sameData(sliced->find("w.grad")->tensor, rows(4, 2, 5)));
  std::vector<CheckpointFile> slices = two;
  for (int64_t r = 0; r < 2; ++r)
    slices[r].variables.push_back(
        {"w.grad", "gradient_accumulator", rows(3 * r, 3, 5)});
  Manifest single = manifestFor(1);
  single.buffers.push_back(
      {"w.grad", Region::Weights, 768, 40, DType::f32, {5, 2}});
  single.variables.push_back({"w.grad", 3, VariableKind::GradientAccumulator});
  StatusOr<CheckpointFile> joined = reshardCheckpoint(slices, single, 0);
  if (CHECK_OK(joined.status()))
    CHECK(sameData(joined->find("w.grad")->tensor, rows(0, 5, 5)));
  // Stage 1 keeps whole accumulators on each rank: cut to what this
  // executable's buffer holds, the whole, not a rank's rows.
  Manifest wholeAccumulators = manifestFor(3);
  wholeAccumulators.buffers.push_back(
      {"w.grad", Region::Weights, 768, 40, DType::f32, {5, 2}});
  wholeAccumulators.variables.push_back(
      {"w.grad", 3, VariableKind::GradientAccumulator});
  StatusOr<CheckpointFile> kept =
      reshardCheckpoint(alike, wholeAccumulators, 2);
  if (CHECK_OK(kept.status()))
    CHECK(sameData(kept->find("w.grad")->tensor, rows(0, 5, 5)));

  // A state of one row, sliced over 2 ranks: rank 0's row and rank 1's
  // zero padding row, put together as the row.
  Manifest oneRow = manifestFor(1);
  oneRow.buffers[0].shape = {1, 2};
  oneRow.buffers[0].bytes = 8;
  oneRow.buffers[1].shape = {1, 2};
  oneRow.buffers[1].bytes = 8;
  std::vector<CheckpointFile> padded = {fileOf(0, 2), fileOf(1, 2)};
  for (int64_t r = 0; r < 2; ++r) {
    padded[r].variables[0].tensor = rows(0, 1, 1);
    padded[r].variables[1].tensor = rows(r, 1, 1); // row 1: past the end
  }
  StatusOr<CheckpointFile> joinedRow = reshardCheckpoint(padded, oneRow, 0);
  if (CHECK_OK(joinedRow.status()))
    CHECK(sameData(joinedRow->find("w.momentum_buffer")->tensor,
                   rows(0, 1, 1)));
}

/// ZeRO stage 3: the parameter itself is the rank's rows (its variable
/// records the whole's 5), put together and cut like its states.
void testReshardParameters() {
  auto stage3 = [](int64_t ranks) {
    Manifest m = manifestFor(ranks);
    int64_t slice = (5 + ranks - 1) / ranks;
    m.buffers[0].shape = {slice, 2};
    m.buffers[0].bytes = uint64_t(slice * 8);
    m.variables[0].wholeRows = 5;
    m.zeroStage = 3;
    return m;
  };
  std::vector<CheckpointFile> two = {fileOf(0, 2), fileOf(1, 2)};
  for (int64_t r = 0; r < 2; ++r)
    two[r].variables[0].tensor = rows(3 * r, 3, 5);
  for (int64_t rank = 0; rank < 3; ++rank) {
    StatusOr<CheckpointFile> cut = reshardCheckpoint(two, stage3(3), rank);
    if (CHECK_OK(cut.status())) {
      CHECK(sameData(cut->find("w")->tensor, rows(2 * rank, 2, 5)));
      CHECK(sameData(cut->find("w.momentum_buffer")->tensor,
                     rows(2 * rank, 2, 5)));
    }
  }
  StatusOr<CheckpointFile> whole = reshardCheckpoint(two, manifestFor(1), 0);
  if (CHECK_OK(whole.status()))
    CHECK(sameData(whole->find("w")->tensor, rows(0, 5, 5)));
  // One process's whole weight, cut for rank 1 of stage 3's 2.
  StatusOr<CheckpointFile> mine =
      reshardCheckpoint({fileOf(0, 1)}, stage3(2), 1);
  if (CHECK_OK(mine.status()))
    CHECK(sameData(mine->find("w")->tensor, rows(3, 3, 5)));
}

} // namespace

void runReshardTests() {
  testReshard();
  testReshardParameters();
}

} // namespace memfit::rt::test
