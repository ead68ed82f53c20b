//===- Checkpoint.h - checkpoint files, and ZeRO's resharded ----*- C++ -*-===//
//
// A checkpoint file as read from disk (Session::saveCheckpoint writes them;
// format in docs/runtime.md), and the ZeRO case: from stage 1 each rank of
// a data-parallel run saves its own file, holding its slices of the
// optimizer states (the rows [r c, (r + 1) c) of each state padded with
// zero rows to N c, c = ceil(rows / N)), and under stage 3 of the trained
// parameters too. reshardCheckpoint puts those slices together and cuts
// them again for a rank of another world size, so a run saved by N ranks
// resumes on M (one process included).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_CHECKPOINT_H
#define MEMFIT_RUNTIME_CHECKPOINT_H

#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Status.h"
#include "memfit/runtime/Tensor.h"

#include <string>
#include <vector>

namespace memfit::rt {

class Communicator;
class Session;

struct CheckpointVariable {
  std::string name;
  std::string kind; // variableKindName
  Tensor tensor;
};

struct CheckpointFile {
  std::string path; // for messages
  std::string model;
  std::vector<CheckpointVariable> variables;

  const CheckpointVariable *find(const std::string &name) const;
};

/// Whether checkpoints hold `v`: not a frozen weight (the executable's) nor
/// a working copy (its master's).
bool isCheckpointed(const Variable &v);

/// Reads and checks a checkpoint file: its magic line, header, sizes and
/// every variable's checksum. Errors name the file and what is wrong.
StatusOr<CheckpointFile> readCheckpoint(const std::string &path);

/// The variables of `manifest`'s rank `rank` (of manifest.worldSize, the
/// states sliced from ZeRO stage 1) from a checkpoint saved by
/// `files.size()` ranks, in rank order: one file of a run that did not
/// slice its states (stage 0, or one process), or a file per rank of a
/// run that did. A sliced state is put together from every file's rows and
/// cut again; everything else comes from the first file, and must be the
/// same in every file (the weights, the step counters: a file that differs
/// is of another step). The result is checked against `manifest` by
/// Session::loadCheckpoint.
/// `path`'s rank files, "<path>.rank-<r>-of-<n>": each rank of a ZeRO
/// stage >= 1 run of n ranks saves its own.
std::string rankCheckpointPath(const std::string &path, int64_t rank,
                               int64_t ranks);

/// Writes "<path>.index" (atomically): the number of ranks whose files make
/// the checkpoint at `path`. Rank 0 of a run that saves rank files writes
/// it, so that a run of another world size finds them.
Status writeCheckpointIndex(const std::string &path, int64_t ranks);

/// The files of the checkpoint at `path`: the rank files that
/// "<path>.index" names, else `path` itself. Fails with what is missing.
StatusOr<std::vector<std::string>> checkpointFiles(const std::string &path);

/// Reads every file of a checkpoint, taking "<file>.prev" (the save before,
/// which rank files keep) for a file whose "step" counter is ahead of the
/// others': a kill between two ranks' saves leaves them a save apart.
/// Fails when the files cannot agree on a step.
StatusOr<std::vector<CheckpointFile>>
readCheckpointFiles(const std::vector<std::string> &files);

StatusOr<CheckpointFile>
reshardCheckpoint(const std::vector<CheckpointFile> &files,
                  const Manifest &manifest, int64_t rank);

/// ZeRO stage 3: the whole value of variable `name`, which holds this
/// rank's rows (Variable::wholeRows), from every rank's rows gathered
/// through `comm` (every rank calls it, for the same variables in the same
/// order); a variable held whole is read as it is.
StatusOr<Tensor> gatherWholeVariable(const Session &session,
                                     Communicator &comm,
                                     const std::string &name);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_CHECKPOINT_H
