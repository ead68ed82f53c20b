//===- TrainingData.cpp - where each input of a micro-batch comes from ----===//

#include "memfit/runtime/TrainingData.h"

#include "Files.h"

#include <algorithm>
#include <cstdio>

namespace memfit::rt {

StatusOr<std::vector<int64_t>> encodeCorpus(const std::string &text,
                                            const std::string &fileName) {
  std::vector<int64_t> tokens;
  tokens.reserve(text.size());
  size_t line = 1, column = 1;
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      tokens.push_back(0);
      ++line;
      column = 1;
      continue;
    }
    if (c < ' ' || c > '~') {
      char where[96];
      std::snprintf(where, sizeof(where), ":%zu:%zu: byte 0x%02x", line, column,
                    unsigned(c));
      return invalidArgument(fileName + where +
                             " is not in the character vocabulary ('\\n' "
                             "and ' '..'~')");
    }
    tokens.push_back(int64_t(c) - 31);
    ++column;
  }
  return tokens;
}

StatusOr<std::vector<int64_t>> readCorpus(const std::string &path) {
  StatusOr<std::string> text = readFile(path);
  if (!text)
    return text.status().withContext("--corpus");
  return encodeCorpus(*text, path);
}

uint64_t corpusOffset(uint64_t microBatch, uint64_t row, uint64_t batch,
                      uint64_t length, uint64_t tokens) {
  uint64_t idx = microBatch * batch + row;
  return (idx * length) % (tokens - length - 1);
}

namespace {

/// "'input_ids' 2x8xi64, 'labels' 2x8xi64", or "none".
std::string bindingList(const Manifest &m, const std::vector<Binding> &inputs) {
  std::string s;
  for (const Binding &b : inputs) {
    const Buffer &buffer = m.buffers[b.buffer];
    s += (s.empty() ? "'" : ", '") + b.name + "' " +
         rt::describe(buffer.dtype, buffer.shape);
  }
  return s.empty() ? "none" : s;
}

/// The shape of the global batch of which `shape` is one rank's slice:
/// the first dimension times the ranks (a scalar is the same everywhere).
std::vector<int64_t> globalShape(std::vector<int64_t> shape, int world) {
  if (!shape.empty())
    shape[0] *= world;
  return shape;
}

/// Rank `rank`'s rows of `global` (a tensor of the global batch) into `t`.
void copySlice(const Tensor &global, int rank, Tensor &t) {
  size_t bytes = t.data.size();
  size_t start = global.data.size() == bytes ? 0 : rank * bytes;
  std::copy_n(global.data.begin() + start, bytes, t.data.begin());
}

} // namespace

StatusOr<TrainingData>
TrainingData::create(const Manifest &m, const std::vector<Binding> &inputs,
                     const TrainingDataOptions &options) {
  if (options.accumulationSteps < 1)
    return invalidArgument("training data: accumulation steps must be at "
                           "least 1, got " +
                           std::to_string(options.accumulationSteps));
  const auto &fixed = options.fixed, &data = options.data;
  for (const auto *paths : {&fixed, &data})
    for (const auto &[name, path] : *paths) {
      bool known =
          std::any_of(inputs.begin(), inputs.end(),
                      [&](const Binding &b) { return b.name == name; });
      if (!known)
        return invalidArgument(
            std::string(paths == &fixed ? "--input=" : "--data=") + name + "=" +
            path + ": the training step has no input named '" + name +
            "' (inputs: " + bindingList(m, inputs) + ")");
      if (paths == &data && fixed.count(name))
        return invalidArgument("--data=" + name + " and --input=" + name +
                               ": give one of them");
    }

  if (options.worldSize < 1 || options.rank < 0 ||
      options.rank >= options.worldSize)
    return invalidArgument("training data: rank " +
                           std::to_string(options.rank) + " of " +
                           std::to_string(options.worldSize));
  TrainingData result;
  result.k_ = options.accumulationSteps;
  result.intHigh_ = options.intHigh;
  result.rank_ = options.rank;
  result.world_ = options.worldSize;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Input input;
    input.name = inputs[i].name;
    input.buffer = m.buffers[inputs[i].buffer];
    input.seed = options.seed + i;
    const Buffer &buffer = input.buffer;
    // The files hold the global batch.
    std::vector<int64_t> shape = globalShape(buffer.shape, options.worldSize);
    std::string expected = rt::describe(buffer.dtype, shape);
    if (auto it = fixed.find(input.name); it != fixed.end()) {
      StatusOr<Tensor> read = readNpy(it->second, buffer.dtype);
      if (!read)
        return read.status().withContext("--input=" + input.name);
      if (read->dtype != buffer.dtype || read->shape != shape)
        return invalidArgument("--input=" + input.name + "=" + it->second +
                               ": expected " + expected + ", got " +
                               rt::describe(read->dtype, read->shape));
      input.source = Input::Fixed;
      input.origin = it->second;
      input.tensor = std::move(*read);
    } else if (auto it = data.find(input.name); it != data.end()) {
      StatusOr<Tensor> read = readNpy(it->second, buffer.dtype);
      if (!read)
        return read.status().withContext("--data=" + input.name);
      std::vector<int64_t> rest;
      if (!read->shape.empty())
        rest.assign(read->shape.begin() + 1, read->shape.end());
      if (read->dtype != buffer.dtype || read->shape.empty() ||
          read->shape[0] < 1 || rest != shape)
        return invalidArgument(
            "--data=" + input.name + "=" + it->second + ": expected " +
            expected + " micro-batches along a first dimension (Nx" + expected +
            "), got " + rt::describe(read->dtype, read->shape));
      input.source = Input::Data;
      input.origin = it->second;
      input.count = read->shape[0];
      input.tensor = std::move(*read);
    }
    result.inputs_.push_back(std::move(input));
  }
  if (!options.corpus.empty())
    MEMFIT_RT_RETURN_IF_ERROR(result.useCorpus(m, inputs, options.corpus));
  return result;
}

/// The tokens go to the one int64 input of rank 2 not given otherwise, the
/// next ones to 'labels'.
Status TrainingData::useCorpus(const Manifest &m,
                               const std::vector<Binding> &inputs,
                               const std::string &path) {
  Input *tokenInput = nullptr, *labels = nullptr;
  std::string candidates;
  for (Input &input : inputs_) {
    if (input.source != Input::Random)
      continue;
    if (input.name == "labels") {
      labels = &input;
      continue;
    }
    if (input.buffer.dtype != DType::i64 || input.buffer.shape.size() != 2)
      continue;
    candidates += (candidates.empty() ? "'" : ", '") + input.name + "'";
    if (tokenInput)
      return invalidArgument(
          "--corpus: the model has several int64 inputs of shape [B, T] (" +
          candidates + "): give all but the tokens with --data or --input");
    tokenInput = &input;
  }
  if (!tokenInput)
    return invalidArgument(
        "--corpus: the model has no int64 input of shape [B, T] for the "
        "tokens (inputs of the training step: " +
        bindingList(m, inputs) + ")");
  if (!labels)
    return invalidArgument(
        "--corpus: the training step has no 'labels' input (train with "
        "--loss=cross-entropy)");
  const Buffer &tokenBuffer = tokenInput->buffer;
  if (labels->buffer.dtype != DType::i64 ||
      labels->buffer.shape != tokenBuffer.shape)
    return invalidArgument(
        "--corpus: 'labels' is " +
        rt::describe(labels->buffer.dtype, labels->buffer.shape) +
        ", expected the shape of '" + tokenInput->name + "' (" +
        rt::describe(tokenBuffer.dtype, tokenBuffer.shape) + ")");
  StatusOr<std::vector<int64_t>> tokens = readCorpus(path);
  if (!tokens)
    return tokens.status();
  tokens_ = std::move(*tokens);
  int64_t T = tokenBuffer.shape[1];
  if (int64_t(tokens_.size()) <= T + 1)
    return invalidArgument("--corpus=" + path + ": " +
                           std::to_string(tokens_.size()) +
                           " tokens, but sequences of " + std::to_string(T) +
                           " need more than " + std::to_string(T + 1));
  std::string origin =
      path + " (" + std::to_string(tokens_.size()) + " tokens)";
  tokenInput->source = Input::Tokens;
  tokenInput->origin = origin;
  labels->source = Input::Labels;
  labels->origin = origin;
  return Status::ok();
}

MicroBatch TrainingData::batch(int64_t s, int64_t j) const {
  MicroBatch batch;
  uint64_t micro = uint64_t(s) * uint64_t(k_) + uint64_t(j);
  for (const Input &input : inputs_) {
    const Buffer &buffer = input.buffer;
    Tensor t = Tensor::zeros(buffer.dtype, buffer.shape);
    switch (input.source) {
    case Input::Random: {
      // Drawn for the global batch, so that the ranks' slices are what one
      // process of the whole batch draws.
      Tensor global =
          Tensor::zeros(buffer.dtype, globalShape(buffer.shape, world_));
      fillRandom(global, input.seed + micro * 1000003ull, intHigh_);
      copySlice(global, rank_, t);
      break;
    }
    case Input::Fixed:
      copySlice(input.tensor, rank_, t);
      break;
    case Input::Data: {
      uint64_t index = micro % uint64_t(input.count);
      uint64_t global = buffer.bytes * uint64_t(buffer.shape.empty() ? 1 : world_);
      uint64_t start = index * global +
                       (buffer.shape.empty() ? 0 : uint64_t(rank_) * buffer.bytes);
      std::copy_n(input.tensor.data.begin() + start, buffer.bytes,
                  t.data.begin());
      break;
    }
    case Input::Tokens:
    case Input::Labels: {
      uint64_t B = uint64_t(buffer.shape[0]), T = uint64_t(buffer.shape[1]);
      uint64_t shift = input.source == Input::Labels ? 1 : 0;
      uint64_t first = uint64_t(rank_) * B, global = B * uint64_t(world_);
      for (uint64_t r = 0; r < B; ++r)
        std::copy_n(tokens_.begin() +
                        corpusOffset(micro, first + r, global, T,
                                     tokens_.size()) +
                        shift,
                    T, t.as<int64_t>() + r * T);
      break;
    }
    }
    batch.emplace(input.name, std::move(t));
  }
  return batch;
}

std::vector<MicroBatch> TrainingData::step(int64_t s) const {
  std::vector<MicroBatch> batches;
  for (int64_t j = 0; j < k_; ++j)
    batches.push_back(batch(s, j));
  return batches;
}

std::string TrainingData::describe() const {
  static const char *prefix[] = {"random", "fixed, ", "micro-batches of ",
                                 "tokens of ", "next tokens of "};
  std::string lines;
  for (const Input &input : inputs_) {
    std::string from = prefix[input.source] + input.origin;
    if (input.source == Input::Data)
      from += " (" + std::to_string(input.count) + ")";
    lines += "input " + input.name + ": " +
             rt::describe(input.buffer.dtype, input.buffer.shape) + " (" +
             from + ")\n";
  }
  return lines;
}

} // namespace memfit::rt
