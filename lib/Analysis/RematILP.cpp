//===- RematILP.cpp - the rematerialization problem as an ILP (GLPK) ------===//
//
// A Checkmate-style integer program over memfit's remat model (see
// RematProblem.h for the semantics it must follow exactly):
//
//   k_c      binary, candidate c kept from the forward pass;
//   R[b][c]  binary, c recomputed just before backward step b;
//   X[b][c]  in [0, 1], c resident at backward step b (a recomputation at
//            b included).
//
// Let P(c) be the backward steps that may need c: its reads, and the steps
// that may need a candidate reading it. Variables exist only for candidates
// with P(c) non-empty; X[b][c] only for b in [min P(c), max P(c)] (before
// that, c is resident exactly when kept: the k_c column stands for it),
// R[b][c] only for b in P(c).
//
//   X[b][c] = 1                        b reads c
//   X[b][u] >= R[b][d]                 u an input of d (recomputed d reads u)
//   X[b][c] <= X[b-1][c] + R[b][c]     (X[b-1][c] is k_c at b = min P(c))
//   k_c + sum_b R[b][c] <= 1
//   R[b][c] <= sum_d R[b][d]           b does not read c; d reads c
//   memory of every forward and backward step <= its cap
//
// The fourth-last row says a recomputation happens only at a step that
// needs c; with the continuity row it is the first such step, which is
// when the model recomputes (so the needs of c's inputs are the model's).
// Residency is then an interval that covers the model's one, so the memory
// rows are never optimistic, and the model's residency is a solution.
// X need not be integral: rounding it down keeps every row satisfied.
//
// Memory rows count bytes in units of the gcd of the candidates' sizes,
// scaled by a power of two, with the bound half a unit above the exact
// integer bound. The plan GLPK returns is re-checked in exact integer
// arithmetic; a row its tolerances let through is tightened and the
// problem solved again.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/RematProblem.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <glpk.h>
#include <cstdlib>
#include <cstdio>

#include <algorithm>
#include <chrono>
#include <cfloat>
#include <climits>
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::memfit;
using llvm::ArrayRef;
using llvm::formatv;
using llvm::SmallVector;

namespace {

/// Byte sizes beyond this are rejected so that exact sums cannot overflow.
constexpr int64_t kMaxBytes = int64_t(1) << 52;

/// The needs of a plan under RematProblem.h's rules.
struct PlanNeeds {
  /// First and last backward step that needs each candidate (a read, or a
  /// recomputation of a candidate that reads it); -1 when none.
  std::vector<int> firstNeed, lastNeed;
};

enum class StepKind { Forward, ForwardActivation, Backward };

/// A step whose bytes exceed its cap under exact arithmetic.
struct Violation {
  StepKind kind;
  int step;
  int64_t excess;
};

} // namespace

/// Candidate indices by descending forward step: every consumer comes before
/// the candidates it reads.
static std::vector<int> consumersFirst(const RematProblem &problem) {
  std::vector<int> order(problem.candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return problem.candidates[a].forwardStep >
           problem.candidates[b].forwardStep;
  });
  return order;
}

/// Checks the problem's invariants; returns a message, or "" when valid.
static std::string validate(const RematProblem &problem) {
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
  for (int64_t fixed : problem.fixedForward)
    if (fixed < 0 || fixed > kMaxBytes)
      return formatv("fixed forward bytes {0} out of range", fixed);
  for (int64_t fixed : problem.fixedBackward)
    if (fixed < 0 || fixed > kMaxBytes)
      return formatv("fixed backward bytes {0} out of range", fixed);
  int64_t total = 0;
  for (auto [index, c] : llvm::enumerate(problem.candidates)) {
    if (c.bytes < 0 || c.bytes > kMaxBytes)
      return formatv("candidate {0}: bytes {1} out of range", index, c.bytes);
    total += c.bytes;
    if (total > kMaxBytes)
      return "the candidates' bytes add up beyond 2^52";
    if (!(c.cost > 0) || !std::isfinite(c.cost))
      return formatv("candidate {0}: cost {1} is not positive", index, c.cost);
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

/// Needs of every candidate given the recomputed ones; returns the index of
/// a candidate recomputed with no need (-1 when none).
static int computeNeeds(const RematProblem &problem, ArrayRef<int> order,
                        const std::vector<bool> &recomputed,
                        PlanNeeds &needs) {
  size_t n = problem.candidates.size();
  needs.firstNeed.assign(n, -1);
  needs.lastNeed.assign(n, -1);
  auto addNeed = [&](int c, int step) {
    if (needs.firstNeed[c] < 0 || step < needs.firstNeed[c])
      needs.firstNeed[c] = step;
    needs.lastNeed[c] = std::max(needs.lastNeed[c], step);
  };
  int unneeded = -1;
  for (int c : order) {
    const RematCandidate &candidate = problem.candidates[c];
    if (!candidate.backwardReads.empty()) {
      addNeed(c, candidate.backwardReads.front());
      addNeed(c, candidate.backwardReads.back());
    }
    if (!recomputed[c])
      continue;
    // Consumers come first in `order`: c's needs are final.
    if (needs.firstNeed[c] < 0) {
      unneeded = c;
      continue;
    }
    for (int input : candidate.inputs)
      addNeed(input, needs.firstNeed[c]);
  }
  return unneeded;
}

/// Exact memory check of a plan whose needs are `needs`; kept candidates
/// without a need are resident in the forward pass only.
static SmallVector<Violation> findViolations(const RematProblem &problem,
                                             const std::vector<bool> &kept,
                                             const std::vector<bool> &recomputed,
                                             const PlanNeeds &needs) {
  SmallVector<Violation> violations;
  const auto &candidates = problem.candidates;
  bool activationCap = problem.activationCap >= 0;
  int64_t activations = 0;
  for (int t = 0; t < problem.numForwardSteps; ++t) {
    int64_t lateKept = 0;
    for (auto [c, candidate] : llvm::enumerate(candidates))
      if (kept[c] && candidate.lastForwardUse < t)
        lateKept += candidate.bytes;
    int64_t excess = problem.fixedForward[t] + lateKept - problem.arenaCap;
    if (excess > 0)
      violations.push_back({StepKind::Forward, t, excess});
  }
  // Forward activations only grow: the last forward step holds them all.
  for (auto [c, candidate] : llvm::enumerate(candidates))
    if (kept[c])
      activations += candidate.bytes;
  if (activationCap && problem.numForwardSteps > 0 &&
      activations > problem.activationCap)
    violations.push_back({StepKind::ForwardActivation,
                          problem.numForwardSteps - 1,
                          activations - problem.activationCap});
  for (int b = 0; b < problem.numBackwardSteps; ++b) {
    int64_t resident = 0;
    for (auto [c, candidate] : llvm::enumerate(candidates)) {
      if (needs.lastNeed[c] < b)
        continue;
      if ((kept[c] && !recomputed[c]) ||
          (recomputed[c] && needs.firstNeed[c] <= b))
        resident += candidate.bytes;
    }
    int64_t cap = problem.arenaCap - problem.fixedBackward[b];
    if (activationCap)
      cap = std::min(cap, problem.activationCap);
    if (resident > cap)
      violations.push_back({StepKind::Backward, b, resident - cap});
  }
  return violations;
}

/// Infeasibility that shows without solving: fixed bytes over the arena, or
/// a backward step whose reads alone do not fit. "" when none.
static std::string obviousInfeasibility(const RematProblem &problem) {
  for (int t = 0; t < problem.numForwardSteps; ++t)
    if (problem.fixedForward[t] > problem.arenaCap)
      return formatv("no plan fits: forward step {0} has {1} fixed bytes, "
                     "over the arena cap of {2}",
                     t, problem.fixedForward[t], problem.arenaCap);
  std::vector<int64_t> readBytes(problem.numBackwardSteps, 0);
  for (const RematCandidate &c : problem.candidates)
    for (int b : c.backwardReads)
      readBytes[b] += c.bytes;
  for (int b = 0; b < problem.numBackwardSteps; ++b) {
    int64_t fixed = problem.fixedBackward[b];
    if (fixed + readBytes[b] > problem.arenaCap)
      return formatv("no plan fits: backward step {0} reads {1} bytes of "
                     "candidates on top of {2} fixed bytes, over the arena "
                     "cap of {3}",
                     b, readBytes[b], fixed, problem.arenaCap);
    if (problem.activationCap >= 0 && readBytes[b] > problem.activationCap)
      return formatv("no plan fits: backward step {0} reads {1} bytes of "
                     "candidates, over the activation cap of {2}",
                     b, readBytes[b], problem.activationCap);
  }
  return "";
}

namespace {

/// A memory row of the program: bytes in units of `unit`, times `scale`.
struct MemoryRow {
  int row;
  /// floor((cap - fixed bytes) / unit) at the row's tightest step.
  int64_t capUnits;
  double scale;
  /// The most, in units, that GLPK's tolerances (integrality 1e-5,
  /// feasibility 1e-7, relative) can let the row's exact sum exceed its
  /// bound by; a larger excess is a modelling error.
  double slipUnits;
  /// Units subtracted from the bound after a violation slipped through.
  double margin = 0;

  double bound() const { return (double(capUnits) + 0.5 - margin) * scale; }
};

/// The columns of one candidate. `points` are the backward steps that may
/// need it, ascending; X (resident) exists at each, R (recomputed) at
/// those that may be its first need.
struct CandidateColumns {
  int kept = 0;
  SmallVector<int, 8> points, resident, recompute;

  /// Index of `step` in `points`, or of the first point after it.
  unsigned indexOf(int step) const {
    return std::lower_bound(points.begin(), points.end(), step) -
           points.begin();
  }
};

/// The integer program of one problem.
class RematModel {
public:
  RematModel(const RematProblem &problem, ArrayRef<int> order)
      : problem(problem), order(order) {}
  ~RematModel() {
    if (lp)
      glp_delete_prob(lp);
  }

  void build();
  bool hasColumns() const { return numCols > 0; }

  /// Solves within `timeLimitMs`: the LP relaxation (dual simplex), then
  /// branch and bound. Returns the glp_simplex or glp_intopt code.
  int solve(int timeLimitMs);
  /// GLP_OPT, GLP_FEAS, GLP_NOFEAS or GLP_UNDEF.
  int status() const { return mipStatus; }

  void extract(std::vector<bool> &kept, std::vector<bool> &recomputed) const;

  /// Tightens the rows of `violations`; false when one has no row or its
  /// excess is beyond what tolerances explain.
  bool tighten(ArrayRef<Violation> violations);

private:
  int addCol(int kind, double lb, double ub, double objective) {
    colKind.push_back(kind);
    colLb.push_back(lb);
    colUb.push_back(ub);
    colObj.push_back(objective);
    return ++numCols;
  }
  int addRow(double lb, double ub) {
    rowLb.push_back(lb);
    rowUb.push_back(ub);
    return ++numRows;
  }
  void addEntry(int row, int col, double value) {
    ia.push_back(row);
    ja.push_back(col);
    ar.push_back(value);
  }
  /// Adds a memory row over `entries` (column, signed bytes) unless it can
  /// never bind; returns its index in memoryRows or -1.
  int addMemoryRow(int64_t capBytes,
                   ArrayRef<std::pair<int, int64_t>> entries);
  /// Appends candidate c's bytes at backward step b to `entries`.
  void addResidentTerms(int c, int b,
                        SmallVector<std::pair<int, int64_t>> &entries) const;
  int residentAt(int c, int step) const {
    const CandidateColumns &cols = columns[c];
    return cols.resident[cols.indexOf(step)];
  }
  int recomputeAt(int c, int step) const {
    const CandidateColumns &cols = columns[c];
    unsigned i = cols.indexOf(step);
    return i < cols.points.size() && cols.points[i] == step
               ? cols.recompute[i]
               : 0;
  }

  const RematProblem &problem;
  ArrayRef<int> order;
  glp_prob *lp = nullptr;
  int mipStatus = GLP_UNDEF;

  int64_t unit = 1;
  std::vector<CandidateColumns> columns;
  std::vector<MemoryRow> memoryRows;
  /// memoryRows index of each forward and backward step, -1 when none.
  std::vector<int> forwardRow, backwardRow;
  int activationRow = -1;

  int numCols = 0, numRows = 0;
  std::vector<int> colKind;
  std::vector<double> colLb, colUb, colObj, rowLb, rowUb;
  // glp_load_matrix's 1-based triplets (element 0 unused).
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
};

} // namespace

int RematModel::addMemoryRow(int64_t capBytes,
                             ArrayRef<std::pair<int, int64_t>> entries) {
  int64_t capUnits = capBytes / unit;
  int64_t total = 0, largest = 0;
  for (auto [col, bytes] : entries) {
    total += std::max<int64_t>(bytes, 0) / unit;
    largest = std::max(largest, std::abs(bytes) / unit);
  }
  if (total <= capUnits)
    return -1;
  MemoryRow memoryRow{0, capUnits,
                      std::ldexp(1.0, -std::ilogb(double(largest))),
                      1e-4 * double(total + capUnits) + 1};
  memoryRow.row = addRow(-DBL_MAX, memoryRow.bound());
  for (auto [col, bytes] : entries)
    if (bytes != 0)
      addEntry(memoryRow.row, col, double(bytes / unit) * memoryRow.scale);
  memoryRows.push_back(memoryRow);
  return memoryRows.size() - 1;
}

void RematModel::addResidentTerms(
    int c, int b, SmallVector<std::pair<int, int64_t>> &entries) const {
  const CandidateColumns &cols = columns[c];
  if (!cols.kept || b > cols.points.back())
    return;
  int64_t bytes = problem.candidates[c].bytes;
  unsigned i = cols.indexOf(b);
  if (i == 0 && b < cols.points[0]) {
    // Before its first possible need: resident exactly when kept.
    entries.push_back({cols.kept, bytes});
  } else if (cols.points[i] == b) {
    entries.push_back({cols.resident[i], bytes});
  } else {
    // Between two points: resident through the gap unless recomputed at
    // the next one.
    entries.push_back({cols.resident[i], bytes});
    if (cols.recompute[i])
      entries.push_back({cols.recompute[i], -bytes});
  }
}

void RematModel::build() {
  const auto &candidates = problem.candidates;
  size_t n = candidates.size();
  int numBackward = problem.numBackwardSteps;

  unit = 0;
  for (const RematCandidate &c : candidates)
    unit = std::gcd(unit, c.bytes);
  if (unit == 0)
    unit = 1;

  // Consumers (deduplicated); the steps that may be a candidate's first
  // need (its first read, or a consumer's possible recomputation before
  // it), and the steps that may need it at all.
  std::vector<SmallVector<int, 4>> consumers(n);
  for (auto [d, candidate] : llvm::enumerate(candidates)) {
    SmallVector<int, 4> inputs(candidate.inputs.begin(),
                               candidate.inputs.end());
    llvm::sort(inputs);
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    for (int u : inputs)
      consumers[u].push_back(d);
  }
  std::vector<llvm::BitVector> firstNeeds(n, llvm::BitVector(numBackward));
  std::vector<llvm::BitVector> needs(n, llvm::BitVector(numBackward));
  for (int c : order) {
    for (int d : consumers[c])
      needs[c] |= firstNeeds[d];
    firstNeeds[c] = needs[c];
    ArrayRef<int> reads = candidates[c].backwardReads;
    for (int b : reads)
      needs[c].set(b);
    if (!reads.empty()) {
      firstNeeds[c].set(reads.front());
      if (reads.front() + 1 < numBackward)
        firstNeeds[c].reset(reads.front() + 1, numBackward);
    }
  }

  double maxCost = 0;
  for (const RematCandidate &c : candidates)
    maxCost = std::max(maxCost, c.cost);

  // Columns.
  columns.assign(n, {});
  for (size_t c = 0; c < n; ++c) {
    if (needs[c].none())
      continue;
    CandidateColumns &cols = columns[c];
    cols.kept = addCol(GLP_BV, 0, 1, 0);
    double cost = candidates[c].cost / maxCost;
    ArrayRef<int> reads = candidates[c].backwardReads;
    for (int b : needs[c].set_bits()) {
      bool read = llvm::is_contained(reads, b);
      cols.points.push_back(b);
      cols.resident.push_back(addCol(GLP_CV, read ? 1 : 0, 1, 0));
      cols.recompute.push_back(
          firstNeeds[c].test(b) ? addCol(GLP_BV, 0, 1, cost) : 0);
    }
  }

  // Structure rows.
  for (size_t c = 0; c < n; ++c) {
    const CandidateColumns &cols = columns[c];
    if (!cols.kept)
      continue;
    // Continuity: resident at a point only if it was at the previous one
    // (kept, before the first) or is recomputed there; recomputed only if
    // resident; at most one of keep or recompute.
    int once = addRow(-DBL_MAX, 1);
    addEntry(once, cols.kept, 1);
    for (unsigned i = 0; i < cols.points.size(); ++i) {
      int row = addRow(-DBL_MAX, 0);
      addEntry(row, cols.resident[i], 1);
      addEntry(row, i == 0 ? cols.kept : cols.resident[i - 1], -1);
      if (int r = cols.recompute[i]) {
        addEntry(row, r, -1);
        addEntry(once, r, 1);
        int within = addRow(-DBL_MAX, 0);
        addEntry(within, r, 1);
        addEntry(within, cols.resident[i], -1);
      }
    }
    ArrayRef<int> reads = candidates[c].backwardReads;
    SmallVector<int, 4> inputs(candidates[c].inputs.begin(),
                               candidates[c].inputs.end());
    llvm::sort(inputs);
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    for (unsigned i = 0; i < cols.points.size(); ++i) {
      int r = cols.recompute[i];
      if (!r)
        continue;
      int b = cols.points[i];
      // A recomputed candidate's inputs are resident when it runs.
      for (int u : inputs) {
        int row = addRow(0, DBL_MAX);
        addEntry(row, residentAt(u, b), 1);
        addEntry(row, r, -1);
      }
      // Recomputed only at a step that needs it.
      if (llvm::is_contained(reads, b))
        continue;
      int row = addRow(-DBL_MAX, 0);
      addEntry(row, r, 1);
      for (int d : consumers[c])
        if (int rd = recomputeAt(d, b))
          addEntry(row, rd, -1);
    }
  }

  // Forward memory: a kept candidate counts from the step after its last
  // forward use; steps between two such changes share a row.
  SmallVector<std::pair<int, int64_t>> entries;
  int numForward = problem.numForwardSteps;
  llvm::BitVector changes(numForward + 1);
  for (size_t c = 0; c < n; ++c)
    if (columns[c].kept)
      changes.set(candidates[c].lastForwardUse + 1);
  forwardRow.assign(numForward, -1);
  for (int t = 0; t < numForward;) {
    int next = changes.find_next(t);
    int end = next < 0 ? numForward : std::min(next, numForward);
    int64_t fixed = 0;
    for (int s = t; s < end; ++s)
      fixed = std::max(fixed, problem.fixedForward[s]);
    entries.clear();
    for (size_t c = 0; c < n; ++c)
      if (columns[c].kept && candidates[c].lastForwardUse < t)
        entries.push_back({columns[c].kept, candidates[c].bytes});
    int row = addMemoryRow(problem.arenaCap - fixed, entries);
    std::fill(forwardRow.begin() + t, forwardRow.begin() + end, row);
    t = end;
  }
  // Forward activations only grow: the last forward step bounds them all.
  if (problem.activationCap >= 0 && problem.numForwardSteps > 0) {
    entries.clear();
    for (size_t c = 0; c < n; ++c)
      if (columns[c].kept)
        entries.push_back({columns[c].kept, candidates[c].bytes});
    activationRow = addMemoryRow(problem.activationCap, entries);
  }

  // Backward memory: every point has a row; the steps between two points
  // (of any candidate) share one.
  llvm::BitVector pointSteps(numBackward);
  for (const llvm::BitVector &stepNeeds : needs)
    pointSteps |= stepNeeds;
  backwardRow.assign(numBackward, -1);
  for (int b = 0; b < numBackward;) {
    int end = b + 1;
    if (!pointSteps.test(b)) {
      int next = pointSteps.find_next(b);
      end = next < 0 ? numBackward : next;
    }
    int64_t cap = INT64_MAX;
    for (int s = b; s < end; ++s) {
      cap = std::min(cap, problem.arenaCap - problem.fixedBackward[s]);
      if (problem.activationCap >= 0)
        cap = std::min(cap, problem.activationCap);
    }
    entries.clear();
    for (size_t c = 0; c < n; ++c)
      addResidentTerms(c, b, entries);
    int row = addMemoryRow(cap, entries);
    std::fill(backwardRow.begin() + b, backwardRow.begin() + end, row);
    b = end;
  }

  lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  if (numCols > 0)
    glp_add_cols(lp, numCols);
  for (int j = 1; j <= numCols; ++j) {
    glp_set_col_kind(lp, j, colKind[j - 1]);
    double lb = colLb[j - 1], ub = colUb[j - 1];
    glp_set_col_bnds(lp, j, lb == ub ? GLP_FX : GLP_DB, lb, ub);
    glp_set_obj_coef(lp, j, colObj[j - 1]);
  }
  if (numRows > 0)
    glp_add_rows(lp, numRows);
  for (int i = 1; i <= numRows; ++i) {
    double lb = rowLb[i - 1], ub = rowUb[i - 1];
    if (lb == -DBL_MAX)
      glp_set_row_bnds(lp, i, GLP_UP, 0, ub);
    else
      glp_set_row_bnds(lp, i, GLP_LO, lb, 0);
  }
  glp_load_matrix(lp, (int)ia.size() - 1, ia.data(), ja.data(), ar.data());
}

int RematModel::solve(int timeLimitMs) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  mipStatus = GLP_UNDEF;
  int verbose = getenv("GLPK_VERBOSE") ? GLP_MSG_ALL : GLP_MSG_OFF;
  // GLPK's primal simplex stalls on these programs; the dual simplex
  // solves the relaxation, and branch and bound starts from its basis.
  glp_smcp lpParm;
  glp_init_smcp(&lpParm);
  lpParm.msg_lev = verbose;
  lpParm.meth = getenv("PRIMAL") ? GLP_PRIMAL : GLP_DUALP;
  lpParm.presolve = getenv("NOLPPRE") ? GLP_OFF : GLP_ON;
  lpParm.tm_lim = timeLimitMs;
  int code = glp_simplex(lp, &lpParm);
  if (getenv("GLPK_VERBOSE"))
    fprintf(stderr, "lp %.3f s code %d status %d obj %g\n",
            std::chrono::duration<double>(Clock::now() - start).count(), code,
            glp_get_status(lp), glp_get_obj_val(lp));
  if (code == GLP_ENOPFS || (code == 0 && glp_get_status(lp) == GLP_NOFEAS)) {
    mipStatus = GLP_NOFEAS;
    return code;
  }
  if (code != 0 || glp_get_status(lp) != GLP_OPT)
    return code;
  // With the presolver on, glp_simplex leaves no basis to warm-start from.
  if (lpParm.presolve == GLP_ON) {
    lpParm.presolve = GLP_OFF;
    lpParm.msg_lev = GLP_MSG_OFF;
    glp_simplex(lp, &lpParm);
  }

  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = verbose;
  parm.out_frq = 2000;
  double elapsedMs =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  parm.tm_lim = std::max(1, int(double(timeLimitMs) - elapsedMs));
  parm.mip_gap = 0;
  if (getenv("CUTS")) parm.mir_cuts = parm.gmi_cuts = parm.cov_cuts = parm.clq_cuts = GLP_ON;
  if (getenv("MIR")) parm.mir_cuts = GLP_ON;
  if (getenv("COV")) parm.cov_cuts = GLP_ON;
  if (getenv("GMI")) parm.gmi_cuts = GLP_ON;
  if (getenv("FP")) parm.fp_heur = GLP_ON;
  if (getenv("PS")) parm.ps_heur = GLP_ON;
  if (getenv("BT")) parm.bt_tech = atoi(getenv("BT"));
  if (getenv("BR")) parm.br_tech = atoi(getenv("BR"));
  code = glp_intopt(lp, &parm);
  mipStatus = glp_mip_status(lp);
  return code;
}

void RematModel::extract(std::vector<bool> &kept,
                         std::vector<bool> &recomputed) const {
  size_t n = problem.candidates.size();
  kept.assign(n, false);
  recomputed.assign(n, false);
  for (size_t c = 0; c < n; ++c) {
    const CandidateColumns &cols = columns[c];
    if (!cols.kept)
      continue;
    kept[c] = glp_mip_col_val(lp, cols.kept) > 0.5;
    double times = 0;
    for (int r : cols.recompute)
      if (r)
        times += glp_mip_col_val(lp, r);
    recomputed[c] = !kept[c] && times > 0.5;
  }
}

bool RematModel::tighten(ArrayRef<Violation> violations) {
  // The largest excess per row: a row can stand for several steps.
  std::vector<int64_t> excess(memoryRows.size(), 0);
  for (const Violation &violation : violations) {
    int index = violation.kind == StepKind::Forward ? forwardRow[violation.step]
                : violation.kind == StepKind::Backward
                    ? backwardRow[violation.step]
                    : activationRow;
    if (index < 0)
      return false;
    excess[index] = std::max(excess[index], violation.excess);
  }
  for (auto [index, memoryRow] : llvm::enumerate(memoryRows)) {
    if (excess[index] == 0)
      continue;
    double excessUnits = double((excess[index] + unit - 1) / unit);
    if (excessUnits > memoryRow.slipUnits)
      return false;
    // The slip was at least the excess: widen the margin by as much again.
    memoryRow.margin += excessUnits;
    glp_set_row_bnds(lp, memoryRow.row, GLP_UP, 0, memoryRow.bound());
  }
  return true;
}

static const char *stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Forward:
    return "forward step";
  case StepKind::ForwardActivation:
    return "forward activations at step";
  case StepKind::Backward:
    return "backward step";
  }
  return "step";
}

bool mlir::memfit::solveRematILP(const RematProblem &problem,
                                 const SolverOptions &options,
                                 RematSolution &solution, std::string &error) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  solution = RematSolution();
  size_t n = problem.candidates.size();
  solution.kept.assign(n, false);
  solution.recomputed.assign(n, false);

  error = validate(problem);
  if (!error.empty()) {
    error = "invalid remat problem: " + error;
    return false;
  }
  error = obviousInfeasibility(problem);
  if (!error.empty())
    return false;

  std::vector<int> order = consumersFirst(problem);
  RematModel model(problem, order);
  model.build();

  // Non-positive or huge limits mean no limit.
  double limitMs = options.timeLimitSeconds * 1000;
  bool limited = limitMs > 0 && limitMs < double(INT_MAX);

  std::string capText = formatv("the arena cap of {0} bytes", problem.arenaCap);
  if (problem.activationCap >= 0)
    capText += formatv(" and the activation cap of {0} bytes",
                       problem.activationCap)
                   .str();

  std::vector<bool> kept(n, false), recomputed(n, false);
  bool optimal = true;
  constexpr int kMaxAttempts = 4;
  for (int attempt = 0;; ++attempt) {
    if (model.hasColumns()) {
      int limit = INT_MAX;
      if (limited) {
        double elapsed = std::chrono::duration<double, std::milli>(
                             Clock::now() - start)
                             .count();
        limit = std::max(1, int(limitMs - elapsed));
      }
      int code = model.solve(limit);
      int status = model.status();
      if (code == GLP_ENOPFS || status == GLP_NOFEAS) {
        error = "no plan fits: no choice of kept and recomputed candidates "
                "keeps every step within " +
                capText;
        return false;
      }
      if (status != GLP_OPT && status != GLP_FEAS) {
        if (code == GLP_ETMLIM)
          error = formatv("no plan found within the time limit of {0} s",
                          options.timeLimitSeconds);
        else
          error = formatv("GLPK failed to solve the remat program (glp_intopt "
                          "code {0}, status {1})",
                          code, status);
        return false;
      }
      optimal = status == GLP_OPT;
      model.extract(kept, recomputed);
    }

    PlanNeeds needs;
    int unneeded = computeNeeds(problem, order, recomputed, needs);
    if (unneeded >= 0) {
      error = formatv("internal error: the remat program recomputes "
                      "candidate {0}, which no backward step needs",
                      unneeded);
      return false;
    }
    for (size_t c = 0; c < n; ++c) {
      // Keeping a candidate nothing needs only costs forward memory.
      if (needs.lastNeed[c] < 0)
        kept[c] = false;
      if (needs.lastNeed[c] >= 0 && !kept[c] && !recomputed[c]) {
        error = formatv("internal error: the remat program drops candidate "
                        "{0} but backward step {1} needs it",
                        c, needs.firstNeed[c]);
        return false;
      }
    }
    SmallVector<Violation> violations =
        findViolations(problem, kept, recomputed, needs);
    if (violations.empty())
      break;
    bool tightened = attempt + 1 < kMaxAttempts && model.tighten(violations);
    if (!tightened) {
      const Violation &first = violations.front();
      error = formatv("internal error: the remat program's plan exceeds {0} "
                      "at {1} {2} by {3} bytes",
                      capText, stepKindName(first.kind), first.step,
                      first.excess);
      return false;
    }
  }

  solution.kept = std::move(kept);
  solution.recomputed = std::move(recomputed);
  for (size_t c = 0; c < n; ++c)
    if (solution.recomputed[c])
      solution.cost += problem.candidates[c].cost;
  solution.optimal = optimal;
  return true;
}
