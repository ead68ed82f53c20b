//===- TrainingData.h - the inputs of each micro-batch ----------*- C++ -*-===//
//
// The data of a training run, as memfit-run's --corpus, --data, --input and
// random inputs give it (memfit-run --help, docs/runtime.md):
//
//   --corpus=FILE   character-level text: the one int64 input of shape
//                   [B, T] not given otherwise gets the tokens, 'labels'
//                   the next ones. Row r of micro-batch j of step s reads
//                     idx    = (s*k + j)*B + r
//                     offset = (idx*T) mod (N - T - 1)
//                     input  = tokens[offset : offset+T]
//                     labels = tokens[offset+1 : offset+T+1]
//   --data=NAME=F   micro-batches of an input along the first dimension of
//                   a .npy file: micro-batch s*k + j reads (s*k + j) mod count
//   --input=NAME=F  one tensor for every micro-batch
//   otherwise       random (seed, intHigh), different per micro-batch
//
// Errors name a source as memfit-run spells it (--corpus=FILE, --data=NAME,
// ...), so the tool and the C++ API report the same.
//
//   rt::TrainingDataOptions options;
//   options.corpus = "text.txt";
//   auto data = rt::TrainingData::create(session->manifest(),
//                                        trainer->batchInputs(), options);
//   auto loss = trainer->step(data->step(s), lr);
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_TRAININGDATA_H
#define MEMFIT_RUNTIME_TRAININGDATA_H

#include "memfit/runtime/Trainer.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace memfit::rt {

/// The character vocabulary of a corpus: '\n' -> 0, ' '..'~' -> ord(c) - 31
/// (1..95).
constexpr int64_t kCorpusVocabularySize = 96;

/// Encodes `text` with the character vocabulary; any other byte is an error
/// naming `fileName`, the line and the column (1-based).
StatusOr<std::vector<int64_t>> encodeCorpus(const std::string &text,
                                            const std::string &fileName);
/// Reads and encodes a corpus file.
StatusOr<std::vector<int64_t>> readCorpus(const std::string &path);

/// Where row `row` of micro-batch `microBatch` (s*k + j) starts in a stream
/// of `tokens` tokens, for rows of `batch` sequences of `length` tokens:
/// ((microBatch*batch + row)*length) mod (tokens - length - 1). Needs
/// tokens > length + 1.
uint64_t corpusOffset(uint64_t microBatch, uint64_t row, uint64_t batch,
                      uint64_t length, uint64_t tokens);

struct TrainingDataOptions {
  /// Input name -> .npy file of one tensor used for every micro-batch.
  std::map<std::string, std::string> fixed;
  /// Input name -> .npy file of micro-batches along its first dimension.
  std::map<std::string, std::string> data;
  /// A text file for the tokens and 'labels' (empty: none).
  std::string corpus;
  /// Random inputs: input i of micro-batch m is drawn with seed
  /// seed + i + m * 1000003; integers from [0, intHigh).
  uint64_t seed = 0;
  int64_t intHigh = 2;
  /// Micro-batches per optimizer step (k).
  int64_t accumulationSteps = 1;
  /// Data parallel: this process is rank `rank` of `worldSize`, and the
  /// model's inputs are its slice of the global batch. Every source is read
  /// as the global batch (worldSize times the input's first dimension:
  /// --input and --data files hold the global batch, random inputs are
  /// drawn for it, corpus rows are numbered over it) and the rank keeps rows
  /// [rank * B, (rank + 1) * B): so N ranks of batch B read what one
  /// process of batch N * B reads. Inputs of rank 0 are the same on every
  /// rank.
  int rank = 0;
  int worldSize = 1;
};

class TrainingData {
public:
  /// Checks the sources against `inputs` (a Trainer's batchInputs(), with
  /// their buffers in `manifest`) and reads the files.
  static StatusOr<TrainingData> create(const Manifest &manifest,
                                       const std::vector<Binding> &inputs,
                                       const TrainingDataOptions &options);

  /// Micro-batch j (0..k-1) of 0-based optimizer step s.
  MicroBatch batch(int64_t s, int64_t j) const;
  /// The k micro-batches of optimizer step s, for Trainer::step.
  std::vector<MicroBatch> step(int64_t s) const;

  /// One line per input: "input labels: 2x8xi64 (next tokens of text.txt
  /// (71 tokens))".
  std::string describe() const;

private:
  struct Input {
    enum Source { Random, Fixed, Data, Tokens, Labels };
    std::string name;
    Buffer buffer;
    Source source = Random;
    std::string origin; // the file, for describe()
    Tensor tensor;      // Fixed: the tensor; Data: all micro-batches
    int64_t count = 0;  // Data: micro-batches in `tensor`
    uint64_t seed = 0;
  };
  Status useCorpus(const Manifest &manifest, const std::vector<Binding> &inputs,
                   const std::string &path);

  std::vector<Input> inputs_;
  std::vector<int64_t> tokens_;
  int64_t k_ = 1;
  int64_t intHigh_ = 2;
  int rank_ = 0, world_ = 1;
};

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_TRAININGDATA_H
