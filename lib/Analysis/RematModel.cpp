//===- RematModel.cpp - the memory model of a remat plan ------------------===//
//
// See RematProblem.h for the model and RematModel.h for the interface.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/RematModel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>

using namespace mlir::memfit;
using llvm::ArrayRef;
using llvm::formatv;
using llvm::SmallVector;

/// Byte sizes beyond this are rejected so that exact sums cannot overflow.
static constexpr int64_t kMaxBytes = int64_t(1) << 52;


RematModel::RematModel(const RematProblem &problem, Slots slots)
    : p(&problem), slots(slots) {
  reads.assign(problem.numBackwardSteps, {});
  for (auto [c, candidate] : llvm::enumerate(problem.candidates))
    for (int b : candidate.backwardReads)
      reads[b].push_back(c);
}

bool RematModel::readsAt(int b, int c) const {
  return llvm::is_contained(reads[b], c);
}

bool RematModel::fits(const RematEvaluation &ev) const {
  return (p->arenaCap < 0 || ev.peakArena <= p->arenaCap) &&
         (p->activationCap < 0 || ev.peakActivation <= p->activationCap);
}

RematEvaluation RematModel::evaluate(ArrayRef<char> choice) const {
  const auto &candidates = p->candidates;
  int nC = candidates.size();
  int nF = p->numForwardSteps, nB = p->numBackwardSteps;
  RematEvaluation ev;
  ev.recomputedAt.assign(nC, -1);
  ev.firstNeed.assign(nC, -1);
  ev.lastNeed.assign(nC, -1);
  ev.recomputeAt.assign(nB, {});
  ev.decompressAt.assign(nB, {});
  ev.compressed.assign(nC, 0);
  // Marks `c` as needed at backward step b, recomputing it (and what it
  // reads) first when it is dropped; a compressed one is dequantized once
  // per step that needs it.
  std::function<void(int, int)> need = [&](int c, int b) {
    if (choice[c] == kCompress && ev.lastNeed[c] != b)
      ev.decompressAt[b].push_back(c);
    if (ev.firstNeed[c] < 0)
      ev.firstNeed[c] = b;
    ev.lastNeed[c] = std::max(ev.lastNeed[c], b);
    if (choice[c] != kRecompute || ev.recomputedAt[c] >= 0)
      return;
    for (int input : candidates[c].inputs)
      need(input, b);
    ev.recomputedAt[c] = b;
    ev.recomputeAt[b].push_back(c);
  };
  for (int b = 0; b < nB; ++b)
    for (int c : reads[b])
      need(c, b);

  SmallVector<int64_t> fwd(nF + 1, 0), bwd(nB + 1, 0), fwdAct(nF + 1, 0),
      bwdAct(nB + 1, 0);
  // The recomputations before step b run one after another: a value that
  // only later recomputations of the same slot read is freed after its last
  // reader there (transient); the others stay live through step b and on.
  SmallVector<char> transient(nC, 0);
  SmallVector<int64_t> slotExtra(nB, 0);
  for (int b = 0; b < nB && slots == Slots::FreeInsideSlot; ++b) {
    ArrayRef<int> slot = ev.recomputeAt[b];
    if (slot.empty())
      continue;
    llvm::DenseMap<int, int> position;
    for (auto [k, c] : llvm::enumerate(slot))
      position[c] = k;
    SmallVector<int> lastReader(slot.size(), -1);
    for (auto [k, c] : llvm::enumerate(slot))
      for (int input : candidates[c].inputs)
        if (auto it = position.find(input); it != position.end())
          lastReader[it->second] = std::max<int>(lastReader[it->second], k);
    int64_t persistent = 0, worst = 0;
    SmallVector<int64_t> delta(slot.size() + 1, 0);
    for (auto [k, c] : llvm::enumerate(slot)) {
      if (!readsAt(b, c) && ev.lastNeed[c] == b && lastReader[k] >= 0) {
        transient[c] = 1;
        delta[k] += candidates[c].bytes;
        delta[lastReader[k] + 1] -= candidates[c].bytes;
      } else {
        delta[k] += candidates[c].bytes;
        persistent += candidates[c].bytes;
      }
    }
    int64_t live = 0;
    for (size_t k = 0; k < slot.size(); ++k) {
      live += delta[k];
      worst = std::max(worst, live);
    }
    slotExtra[b] = std::max<int64_t>(0, worst - persistent);
  }
  for (int c = 0; c < nC; ++c) {
    const RematCandidate &cand = candidates[c];
    if (ev.lastNeed[c] < 0)
      continue;
    if (ev.recomputedAt[c] >= 0 && transient[c]) {
      ev.cost += cand.cost;
      continue;
    }
    if (choice[c] == kCompress) {
      assert(cand.compressedBytes >= 0 && "compressing what cannot be");
      // Compressed from its last forward use to its last need; whole again
      // at each step that needs it.
      ev.compressed[c] = 1;
      int64_t small = cand.compressedBytes;
      fwd[cand.lastForwardUse] += small;
      fwd[nF] -= small;
      fwdAct[cand.forwardStep] += small;
      fwdAct[nF] -= small;
      bwd[0] += small;
      bwd[ev.lastNeed[c] + 1] -= small;
      bwdAct[0] += small;
      bwdAct[ev.lastNeed[c] + 1] -= small;
      ev.cost += cand.compressCost;
      continue;
    }
    if (ev.recomputedAt[c] >= 0) {
      bwd[ev.recomputedAt[c]] += cand.bytes;
      bwd[ev.lastNeed[c] + 1] -= cand.bytes;
      bwdAct[ev.recomputedAt[c]] += cand.bytes;
      bwdAct[ev.lastNeed[c] + 1] -= cand.bytes;
      ev.cost += cand.cost;
      continue;
    }
    // Kept: held past its forward uses into the backward.
    if (cand.lastForwardUse + 1 < nF) {
      fwd[cand.lastForwardUse + 1] += cand.bytes;
      fwd[nF] -= cand.bytes;
    }
    fwdAct[cand.forwardStep] += cand.bytes;
    fwdAct[nF] -= cand.bytes;
    bwd[0] += cand.bytes;
    bwd[ev.lastNeed[c] + 1] -= cand.bytes;
    bwdAct[0] += cand.bytes;
    bwdAct[ev.lastNeed[c] + 1] -= cand.bytes;
  }
  for (int b = 0; b < nB; ++b)
    for (int c : ev.decompressAt[b]) {
      int from = std::max(0, b - p->fetchAhead);
      bwd[from] += candidates[c].bytes;
      bwd[b + 1] -= candidates[c].bytes;
      bwdAct[from] += candidates[c].bytes;
      bwdAct[b + 1] -= candidates[c].bytes;
      ev.cost += candidates[c].decompressCost;
    }
  ev.forwardBytes.resize(nF);
  ev.forwardActivation.resize(nF);
  ev.backwardBytes.resize(nB);
  ev.backwardActivation.resize(nB);
  int64_t run = 0, act = 0;
  for (int t = 0; t < nF; ++t) {
    run += fwd[t];
    act += fwdAct[t];
    ev.forwardBytes[t] = p->fixedForward[t] + run;
    ev.forwardActivation[t] = act;
    if (ev.forwardBytes[t] > ev.peakArena) {
      ev.peakArena = ev.forwardBytes[t];
      ev.peakStep = t;
    }
    ev.peakActivation = std::max(ev.peakActivation, act);
  }
  run = act = 0;
  for (int b = 0; b < nB; ++b) {
    run += bwd[b];
    act += bwdAct[b];
    ev.backwardBytes[b] = p->fixedBackward[b] + run + slotExtra[b];
    ev.backwardActivation[b] = act + slotExtra[b];
    if (ev.backwardBytes[b] > ev.peakArena) {
      ev.peakArena = ev.backwardBytes[b];
      ev.peakStep = nF + b;
    }
    // The limit counts resident candidates only (RematProblem.h).
    ev.peakActivation = std::max(ev.peakActivation, act);
  }
  return ev;
}

std::string mlir::memfit::validateRematProblem(const RematProblem &problem) {
  int numForward = problem.numForwardSteps;
  int numBackward = problem.numBackwardSteps;
  if (numForward < 0 || numBackward < 0)
    return "negative step counts";
  if ((int64_t)problem.fixedForward.size() != numForward ||
      (int64_t)problem.fixedBackward.size() != numBackward)
    return formatv("fixed bytes for {0} forward and {1} backward steps, "
                   "expected {2} and {3}",
                   problem.fixedForward.size(), problem.fixedBackward.size(),
                   numForward, numBackward);
  auto fixedOutOfRange = [](ArrayRef<int64_t> fixedBytes,
                            const char *direction) -> std::string {
    for (int64_t fixed : fixedBytes)
      if (fixed < 0 || fixed > kMaxBytes)
        return formatv("fixed {0} bytes {1} out of range", direction, fixed);
    return "";
  };
  std::string message = fixedOutOfRange(problem.fixedForward, "forward");
  if (message.empty())
    message = fixedOutOfRange(problem.fixedBackward, "backward");
  if (!message.empty())
    return message;
  int64_t total = 0;
  for (auto [index, c] : llvm::enumerate(problem.candidates)) {
    if (c.bytes < 0 || c.bytes > kMaxBytes)
      return formatv("candidate {0}: bytes {1} out of range", index, c.bytes);
    total += c.bytes;
    if (total > kMaxBytes)
      return "the candidates' bytes add up beyond 2^52";
    if (!(c.cost > 0) || !std::isfinite(c.cost))
      return formatv("candidate {0}: cost {1} is not positive", index, c.cost);
    if (c.compressedBytes > kMaxBytes ||
        (c.compressedBytes >= 0 &&
         (!(c.compressCost >= 0) || !std::isfinite(c.compressCost) ||
          !(c.decompressCost >= 0) || !std::isfinite(c.decompressCost))))
      return formatv("candidate {0}: compressed bytes {1} or costs {2}, {3} "
                     "out of range",
                     index, c.compressedBytes, c.compressCost,
                     c.decompressCost);
    if (c.forwardStep < 0 || c.lastForwardUse < c.forwardStep ||
        c.lastForwardUse >= numForward)
      return formatv("candidate {0}: forward steps {1}..{2} outside 0..{3}",
                     index, c.forwardStep, c.lastForwardUse, numForward - 1);
    for (int input : c.inputs)
      if (input < 0 || input >= (int)problem.candidates.size() ||
          problem.candidates[input].forwardStep >= c.forwardStep)
        return formatv("candidate {0}: input {1} is not an earlier candidate",
                       index, input);
    for (auto [i, step] : llvm::enumerate(c.backwardReads))
      if (step < 0 || step >= numBackward ||
          (i > 0 && c.backwardReads[i - 1] >= step))
        return formatv("candidate {0}: backward reads are not ascending "
                       "steps in 0..{1}",
                       index, numBackward - 1);
  }
  return "";
}
