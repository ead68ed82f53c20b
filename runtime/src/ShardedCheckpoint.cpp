//===- ShardedCheckpoint.cpp - ZeRO checkpoints at another world size -----===//
//
// reshardCheckpoint (Checkpoint.h): the rank files of a ZeRO stage >= 1 run
// put together and cut again for a rank of another world size. A sliced
// state is recognized by its name and shape: "<parameter>.<state>" of kind
// optimizer_state (or gradient_accumulator, which stage 2 slices) whose
// rows are the parameter's divided among the ranks (ceil(rows / ranks), the
// last slices padded with zero rows).
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Checkpoint.h"
#include "memfit/runtime/Communicator.h"
#include "memfit/runtime/Session.h"

#include "Files.h"
#include "Json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace memfit::rt {
namespace {

/// Rows of each of `ranks` slices of `rows` rows.
int64_t sliceRows(int64_t rows, int64_t ranks) {
  return (rows + ranks - 1) / ranks;
}

/// The parameter whose state `name` is ("h.0.w" of "h.0.w.exp_avg"): the
/// longest prefix before a '.' that is a parameter variable of `manifest`.
const Variable *ownerOf(const Manifest &manifest, const std::string &name) {
  for (size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0;
       dot = name.rfind('.', dot - 1)) {
    const Variable *v = manifest.findVariable(name.substr(0, dot));
    if (v && (v->kind == VariableKind::Parameter ||
              v->kind == VariableKind::FrozenParameter))
      return v;
  }
  return nullptr;
}

bool sameTensor(const Tensor &a, const Tensor &b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.data == b.data;
}

} // namespace

std::string rankCheckpointPath(const std::string &path, int64_t rank,
                               int64_t ranks) {
  return path + ".rank-" + std::to_string(rank) + "-of-" +
         std::to_string(ranks);
}

Status writeCheckpointIndex(const std::string &path, int64_t ranks) {
  JsonValue index = JsonValue::object();
  index.set("format", "memfit-checkpoint-index");
  index.set("ranks", ranks);
  JsonValue files = JsonValue::array();
  for (int64_t r = 0; r < ranks; ++r)
    files.push(JsonValue(rankCheckpointPath(path, r, ranks)));
  index.set("files", std::move(files));
  std::string text = writeJson(index) + "\n";
  DurableFileWriter file(path + ".index");
  MEMFIT_RT_RETURN_IF_ERROR(file.open());
  MEMFIT_RT_RETURN_IF_ERROR(file.append(text.data(), text.size()));
  return file.commit();
}

StatusOr<std::vector<std::string>> checkpointFiles(const std::string &path) {
  std::string indexPath = path + ".index";
  if (::access(indexPath.c_str(), F_OK) != 0) {
    if (::access(path.c_str(), F_OK) != 0)
      return notFound("no checkpoint at " + path + " (neither the file nor " +
                      indexPath +
                      ", which names a data-parallel run's "
                      "rank files)");
    return std::vector<std::string>{path};
  }
  // A plain file written after the index (a one-process run that resumed
  // rank files, killed before it removed their index) is the checkpoint.
  struct stat plain {}, indexed {};
  if (::stat(path.c_str(), &plain) == 0 &&
      ::stat(indexPath.c_str(), &indexed) == 0 &&
      std::make_pair(plain.st_mtim.tv_sec, plain.st_mtim.tv_nsec) >
          std::make_pair(indexed.st_mtim.tv_sec, indexed.st_mtim.tv_nsec))
    return std::vector<std::string>{path};
  StatusOr<std::string> text = readFile(indexPath);
  if (!text)
    return text.status();
  StatusOr<JsonValue> index = parseJson(*text);
  const JsonValue *ranks =
      index && index->isObject() ? index->find("ranks") : nullptr;
  if (!ranks || !ranks->isInt() || ranks->asInt() < 1)
    return invalidArgument(indexPath +
                           ": not a checkpoint index (expected "
                           "{\"format\": \"memfit-checkpoint-index\", "
                           "\"ranks\": N, ...})");
  std::vector<std::string> files;
  for (int64_t r = 0; r < ranks->asInt(); ++r)
    files.push_back(rankCheckpointPath(path, r, ranks->asInt()));
  return files;
}

StatusOr<std::vector<CheckpointFile>>
readCheckpointFiles(const std::vector<std::string> &paths) {
  auto stepOf = [](const CheckpointFile &f) -> StatusOr<int64_t> {
    const CheckpointVariable *step = f.find("step");
    if (!step || step->tensor.dtype != DType::f32 ||
        step->tensor.data.size() != 4)
      return invalidArgument(f.path + ": no f32 'step' counter");
    return static_cast<int64_t>(*step->tensor.as<float>());
  };
  auto readOne = [](const std::string &path) -> StatusOr<CheckpointFile> {
    // The rank's newest save, else the one before (a kill between the
    // rename of the two).
    if (::access(path.c_str(), F_OK) == 0 ||
        ::access((path + ".prev").c_str(), F_OK) != 0)
      return readCheckpoint(path);
    return readCheckpoint(path + ".prev");
  };
  std::vector<CheckpointFile> files;
  std::vector<int64_t> steps;
  for (const std::string &path : paths) {
    StatusOr<CheckpointFile> f = readOne(path);
    if (!f)
      return f.status();
    StatusOr<int64_t> step = stepOf(*f);
    if (!step)
      return step.status();
    files.push_back(std::move(*f));
    steps.push_back(*step);
  }
  int64_t agreed = *std::min_element(steps.begin(), steps.end());
  for (size_t i = 0; i < files.size(); ++i) {
    if (steps[i] == agreed)
      continue;
    StatusOr<CheckpointFile> older = readCheckpoint(paths[i] + ".prev");
    StatusOr<int64_t> step = older ? stepOf(*older) : older.status();
    if (!step || *step != agreed)
      return invalidArgument("the checkpoint's files are of steps " +
                             std::to_string(agreed) + " and " +
                             std::to_string(steps[i]) + ", and " + paths[i] +
                             ".prev is not of step " + std::to_string(agreed));
    files[i] = std::move(*older);
  }
  return files;
}

StatusOr<CheckpointFile>
reshardCheckpoint(const std::vector<CheckpointFile> &files,
                  const Manifest &manifest, int64_t rank) {
  if (files.empty())
    return invalidArgument("reshardCheckpoint: no files");
  const int64_t saved = static_cast<int64_t>(files.size());
  const int64_t ranks = manifest.zeroStage >= 1 ? manifest.worldSize : 1;
  if (rank < 0 || rank >= std::max<int64_t>(manifest.worldSize, 1))
    return invalidArgument("reshardCheckpoint: rank " + std::to_string(rank) +
                           " of " + std::to_string(manifest.worldSize));
  const CheckpointFile &first = files[0];
  for (const CheckpointFile &f : files)
    if (f.variables.size() != first.variables.size())
      return invalidArgument(f.path + " holds " +
                             std::to_string(f.variables.size()) +
                             " variables but " + first.path + " " +
                             std::to_string(first.variables.size()) +
                             ": not the files of one checkpoint");

  CheckpointFile out;
  out.path =
      first.path + (saved > 1 ? " (and the other " + std::to_string(saved - 1) +
                                    " ranks' files)"
                              : std::string());
  out.model = first.model;
  for (const CheckpointVariable &v : first.variables) {
    std::string label = "variable '" + v.name + "'";
    const Variable *mine = manifest.findVariable(v.name);
    // Optimizer states are sliced from stage 1, gradient accumulators
    // under stage 2, trained parameters under stage 3 (their own rows).
    bool isParameter = mine && mine->kind == VariableKind::Parameter;
    const Variable *owner = isParameter ? mine : ownerOf(manifest, v.name);
    const Buffer *param = owner ? &manifest.buffers[owner->buffer] : nullptr;
    bool sliceable = mine && (mine->kind == VariableKind::OptimizerState ||
                              mine->kind == VariableKind::GradientAccumulator ||
                              isParameter);
    bool state = sliceable && param && !param->shape.empty() &&
                 !v.tensor.shape.empty() &&
                 v.kind == variableKindName(mine->kind);
    std::vector<const Tensor *> parts;
    for (const CheckpointFile &f : files) {
      const CheckpointVariable *p = f.find(v.name);
      if (!p)
        return invalidArgument(label + " is in " + first.path + " but not in " +
                               f.path);
      parts.push_back(&p->tensor);
    }
    if (!state) {
      // The same in every rank's file: weights, counters.
      for (size_t i = 1; i < parts.size(); ++i)
        if (!sameTensor(*parts[i], *parts[0]))
          return invalidArgument(label + " differs between " + first.path +
                                 " and " + files[i].path +
                                 ": the files are not of one step");
      out.variables.push_back(v);
      continue;
    }
    // 8-bit states are codes and absmax of blocks of a rank's elements,
    // not rows of the parameter's shape: they cannot be cut anew.
    if (!std::equal(v.tensor.shape.begin() + 1, v.tensor.shape.end(),
                    param->shape.begin() + 1, param->shape.end()))
      return invalidArgument(
          label + " is " + describe(v.tensor.dtype, v.tensor.shape) +
          ", not rows of its parameter's " +
          describe(param->dtype, param->shape) +
          " (8-bit optimizer states: codes and absmax by blocks of each "
          "rank's rows): it resumes only at the world size that saved it, " +
          std::to_string(saved) + (saved == 1 ? " rank" : " ranks"));
    // A state (or a stage 3 parameter): the rows of the saved slices, in
    // rank order (or a whole one, which every rank holds alike: stage 1's
    // accumulators), then this rank's rows of the new division.
    const int64_t rows = owner->wholeRows > 0 ? owner->wholeRows
                                              : param->shape[0];
    const int64_t savedRows = v.tensor.shape[0];
    bool slicedBefore =
        saved > 1 && savedRows == sliceRows(rows, saved) && savedRows != rows;
    if (savedRows == rows) {
      // Whole on every rank, alike; or, where a rank's share of the rows is
      // all of them (one row), rank 0's row and the others' zero padding.
      auto zeros = [](const Tensor &t) {
        return std::all_of(t.data.begin(), t.data.end(),
                           [](uint8_t b) { return b == 0; });
      };
      bool padded = saved > 1 && sliceRows(rows, saved) == rows;
      for (size_t i = 1; i < parts.size(); ++i)
        if (!sameTensor(*parts[i], *parts[0]) &&
            !(padded && parts[i]->shape == parts[0]->shape &&
              zeros(*parts[i])))
          return invalidArgument(label + " differs between " + first.path +
                                 " and " + files[i].path +
                                 ": the files are not of one step");
      parts.resize(1);
    } else if (!slicedBefore)
      return invalidArgument(label + " has " + std::to_string(savedRows) +
                             " rows in " + first.path +
                             ", which is neither its parameter's " +
                             std::to_string(rows) + " nor their share of " +
                             std::to_string(saved) + (saved == 1 ? " rank" : " ranks"));
    uint64_t rowBytes =
        v.tensor.data.size() / uint64_t(savedRows ? savedRows : 1);
    std::vector<uint8_t> whole;
    whole.reserve(uint64_t(rows) * rowBytes);
    for (const Tensor *part : parts) {
      if (part->shape != v.tensor.shape || part->dtype != v.tensor.dtype)
        return invalidArgument(label + " has another shape or type in " +
                               "another rank's file");
      whole.insert(whole.end(), part->data.begin(), part->data.end());
    }
    whole.resize(uint64_t(rows) * rowBytes); // the padding rows go
    // This run's division is its manifest's: a slice of the rows for each
    // rank, or the whole (stage 1 keeps whole accumulators).
    const Buffer &target = manifest.buffers[mine->buffer];
    const int64_t mineRows = target.shape.empty() ? rows : target.shape[0];
    const bool slicedNow = mineRows != rows;
    if (slicedNow && (ranks <= 1 || mineRows != sliceRows(rows, ranks)))
      return invalidArgument(label + " has " + std::to_string(mineRows) +
                             " rows in this executable, which is neither its "
                             "parameter's " + std::to_string(rows) +
                             " nor their share of " + std::to_string(ranks) +
                             " ranks");
    CheckpointVariable cut{v.name, v.kind, Tensor()};
    cut.tensor.dtype = v.tensor.dtype;
    cut.tensor.shape = v.tensor.shape;
    cut.tensor.shape[0] = mineRows;
    cut.tensor.data.assign(uint64_t(mineRows) * rowBytes, 0); // padding: 0
    int64_t begin = slicedNow ? rank * mineRows : 0;
    int64_t end = std::min(rows, begin + mineRows);
    if (end > begin)
      std::memcpy(cut.tensor.data.data(), whole.data() + begin * rowBytes,
                  uint64_t(end - begin) * rowBytes);
    out.variables.push_back(std::move(cut));
  }
  return out;
}

StatusOr<Tensor> gatherWholeVariable(const Session &session,
                                     Communicator &comm,
                                     const std::string &name) {
  StatusOr<Tensor> mine = session.readVariable(name);
  const Variable *v = session.manifest().findVariable(name);
  if (!mine || !v || v->wholeRows <= 0 || comm.size() <= 1)
    return mine;
  Collective gather;
  gather.name = "the rows of '" + name + "'";
  gather.kind = Collective::Kind::AllGather;
  gather.dtype = mine->dtype;
  gather.count = static_cast<uint64_t>(mine->numElements());
  gather.groupSize = comm.size();
  Tensor whole = *mine;
  whole.shape[0] *= comm.size();
  whole.data.resize(mine->data.size() * uint64_t(comm.size()));
  MEMFIT_RT_RETURN_IF_ERROR(
      comm.run(gather, mine->data.data(), whole.data.data()));
  // Less the zero rows that pad the last rank's.
  const uint64_t rowBytes =
      mine->shape[0] > 0 ? mine->data.size() / uint64_t(mine->shape[0]) : 0;
  whole.shape[0] = std::min(whole.shape[0], v->wholeRows);
  whole.data.resize(uint64_t(whole.shape[0]) * rowBytes);
  return whole;
}

} // namespace memfit::rt
