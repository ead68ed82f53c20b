//===- RematILP.cpp - the rematerialization problem as an ILP (GLPK) ------===//
//
// A Checkmate-style integer program over the HoldToLastNeed variant of the
// model of RematProblem.h: a recomputation happens at the first backward
// step that needs the candidate, and everything lives until its last need
// (values are not freed inside a slot).
//
// For each candidate c, the points P(c) are the backward steps that may
// need it: its reads, and the steps where a consumer may be recomputed;
// F(c) within P(c) are the steps that may be its first need (no later
// than its first read). A consumer d may be recomputed at F(d), so
// P(c) = reads(c) + the F(d), and F(c) = the points up to c's first read
// (all of them when nothing reads c).
// Candidates with no points are never needed and get no columns.
//
//   k_c      binary: kept from the forward pass;
//   R[p][c]  binary, p in F(c): recomputed just before step p;
//   S[p][c]  in [0, 1], p in P(c): resident at p from before p.
//
//   S[p0][c] <= k_c, S[p][c] <= S[p'][c] + R[p'][c]  (p' the point before p)
//   S[p][c] + R[p][c] >= 1                    p reads c
//   S[p][u] + R[p][u] >= R[p][d]              d reads u: inputs resident
//   R[p][c] <= sum of R[p][d], d reads c      p does not read c
//   k_c + sum_p R[p][c] <= 1
//   every step's bytes <= its cap
//
// The fourth row recomputes c only at a step that needs it; by continuity
// nothing needs it earlier, so it is the first need, as in the model. The
// residency the program counts (k_c before the first point, S + R at a
// point, S of the next point between two) then covers the model's, and
// the model's residency is a solution: no row is optimistic, none too
// strict. S need not be integral: rounding it down keeps every row.
// Backward steps between the same two points of all candidates share one
// memory row, as do forward steps between two changes of the kept set.
//
// Memory rows count bytes in units of the gcd of the candidates' sizes,
// scaled by a power of two, with the bound half a unit above the exact
// integer bound. The plan GLPK returns is re-checked in exact integer
// arithmetic by RematModel (HoldToLastNeed); a row its tolerances let
// through is tightened and the problem solved again. Every step's bytes
// in that variant are at least the model's, so the plan fits the model.
//
// Branch and bound starts from a greedy plan (which also answers when
// nothing needs recomputing, or when the time runs out) and the LP
// relaxation solved by the dual simplex (the primal one stalls on these
// programs).
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/RematModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <glpk.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::memfit;
using llvm::ArrayRef;
using llvm::formatv;
using llvm::SmallVector;

namespace {

using Clock = std::chrono::steady_clock;

enum class StepKind { Forward, ForwardActivation, Backward };

/// A step whose bytes exceed its cap under exact arithmetic.
struct Violation {
  StepKind kind;
  int step;
  int64_t excess;
};

} // namespace

/// Milliseconds elapsed since `start`.
static double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

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

/// The most bytes of candidates that backward step `b` holds: the arena
/// cap less its fixed bytes, and at most the activation cap if any.
static int64_t backwardCap(const RematProblem &problem, int b) {
  int64_t cap = problem.arenaCap - problem.fixedBackward[b];
  if (problem.activationCap >= 0)
    cap = std::min(cap, problem.activationCap);
  return cap;
}

/// Exact memory check of a plan, evaluated by RematModel in the ILP's
/// variant (HoldToLastNeed): the steps whose bytes exceed their caps.
static SmallVector<Violation> findViolations(const RematModel &model,
                                             const RematEvaluation &ev) {
  const RematProblem &problem = model.problem();
  SmallVector<Violation> violations;
  int numForward = problem.numForwardSteps;
  for (int t = 0; t < numForward; ++t) {
    int64_t excess = ev.forwardBytes[t] - problem.arenaCap;
    if (excess > 0)
      violations.push_back({StepKind::Forward, t, excess});
  }
  // Forward activations only grow: the last forward step holds them all.
  bool activationCap = problem.activationCap >= 0;
  if (activationCap && numForward > 0 &&
      ev.forwardActivation[numForward - 1] > problem.activationCap)
    violations.push_back(
        {StepKind::ForwardActivation, numForward - 1,
         ev.forwardActivation[numForward - 1] - problem.activationCap});
  for (int b = 0; b < problem.numBackwardSteps; ++b) {
    int64_t excess = ev.backwardBytes[b] - problem.arenaCap;
    if (activationCap)
      excess = std::max(excess,
                        ev.backwardActivation[b] - problem.activationCap);
    if (excess > 0)
      violations.push_back({StepKind::Backward, b, excess});
  }
  return violations;
}

/// Makes a plan valid from its recomputed set: drops what nothing needs,
/// keeps exactly what is needed and not recomputed (`kept` is only
/// written); `ev` receives its evaluation. Returns its cost.
static double normalizePlan(const RematModel &model, ArrayRef<int> order,
                            std::vector<bool> &kept,
                            std::vector<bool> &recomputed,
                            RematEvaluation &ev) {
  size_t n = model.numCandidates();
  SmallVector<char> dropped(recomputed.begin(), recomputed.end());
  ev = model.evaluate(dropped);
  kept.assign(n, false);
  double cost = 0;
  for (int c : order) {
    if (!ev.isNeeded(c)) {
      recomputed[c] = false;
      continue;
    }
    kept[c] = !recomputed[c];
    if (recomputed[c])
      cost += model.problem().candidates[c].cost;
  }
  return cost;
}

static int64_t overflowBytes(const RematModel &model,
                             const RematEvaluation &ev) {
  int64_t total = 0;
  for (const Violation &violation : findViolations(model, ev))
    total += violation.excess;
  return total;
}

/// A feasible plan by greed, for a first incumbent: from keeping all,
/// recompute the candidate that relieves the most overflowing bytes per
/// cost until everything fits, then keep again what can be. Returns false
/// when it gets stuck.
static bool greedyPlan(const RematModel &model, ArrayRef<int> order,
                       std::vector<bool> &kept, std::vector<bool> &recomputed,
                       RematEvaluation &ev, double &cost) {
  const RematProblem &problem = model.problem();
  size_t n = problem.candidates.size();
  kept.assign(n, false);
  recomputed.assign(n, false);
  cost = normalizePlan(model, order, kept, recomputed, ev);
  int64_t overflow = overflowBytes(model, ev);
  std::vector<bool> tryKept, tryRecomputed;
  RematEvaluation tryEv;
  while (overflow > 0) {
    double bestScore = 0;
    int best = -1;
    for (size_t c = 0; c < n; ++c) {
      if (!kept[c])
        continue;
      tryRecomputed = recomputed;
      tryRecomputed[c] = true;
      normalizePlan(model, order, tryKept, tryRecomputed, tryEv);
      int64_t relief = overflow - overflowBytes(model, tryEv);
      double score = double(relief) / problem.candidates[c].cost;
      if (relief > 0 && score > bestScore) {
        bestScore = score;
        best = c;
      }
    }
    if (best < 0)
      return false;
    recomputed[best] = true;
    cost = normalizePlan(model, order, kept, recomputed, ev);
    overflow = overflowBytes(model, ev);
  }
  // Keep again, most expensive first, what still fits.
  std::vector<int> byCost;
  for (size_t c = 0; c < n; ++c)
    if (recomputed[c])
      byCost.push_back(c);
  llvm::stable_sort(byCost, [&](int a, int b) {
    return problem.candidates[a].cost > problem.candidates[b].cost;
  });
  for (int c : byCost) {
    if (!recomputed[c])
      continue;
    tryRecomputed = recomputed;
    tryRecomputed[c] = false;
    double tryCost = normalizePlan(model, order, tryKept, tryRecomputed, tryEv);
    if (tryCost < cost && overflowBytes(model, tryEv) == 0) {
      kept = std::move(tryKept);
      recomputed = std::move(tryRecomputed);
      ev = std::move(tryEv);
      cost = tryCost;
    }
  }
  return true;
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
/// need it, ascending; S (resident from before) exists at each, R
/// (recomputed there) at those that may be its first need.
struct CandidateColumns {
  int kept = 0;
  SmallVector<int, 8> points, stay, recompute;

  /// Index of `step` in `points`, or of the first point after it.
  unsigned indexOf(int step) const {
    return std::lower_bound(points.begin(), points.end(), step) -
           points.begin();
  }
};

/// The integer program of one problem.
class IntegerProgram {
public:
  IntegerProgram(const RematProblem &problem, ArrayRef<int> order)
      : problem(problem), order(order) {}
  ~IntegerProgram() {
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

  /// A feasible plan for branch and bound to start from.
  void setIncumbent(const std::vector<bool> &kept,
                    const std::vector<bool> &recomputed,
                    const RematEvaluation &needs);

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
  /// Adds a memory row over `entries` (column, bytes) unless it can
  /// never bind; returns its index in memoryRows or -1.
  int addMemoryRow(int64_t capBytes, ArrayRef<std::pair<int, int64_t>> entries);
  /// Appends candidate c's bytes at backward step b to `entries`.
  void addResidentTerms(int c, int b,
                        SmallVector<std::pair<int, int64_t>> &entries) const;
  int stayAt(int c, int step) const {
    const CandidateColumns &cols = columns[c];
    return cols.stay[cols.indexOf(step)];
  }
  int recomputeAt(int c, int step) const {
    const CandidateColumns &cols = columns[c];
    unsigned i = cols.indexOf(step);
    return i < cols.points.size() && cols.points[i] == step ? cols.recompute[i]
                                                            : 0;
  }

  static void callback(glp_tree *tree, void *info);

  const RematProblem &problem;
  ArrayRef<int> order;
  glp_prob *lp = nullptr;
  int mipStatus = GLP_UNDEF;
  /// Column values of a known plan (1-based), empty when none.
  std::vector<double> incumbent;

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

int IntegerProgram::addMemoryRow(int64_t capBytes,
                             ArrayRef<std::pair<int, int64_t>> entries) {
  int64_t capUnits = llvm::divideFloorSigned(capBytes, unit);
  int64_t total = 0, largest = 0;
  for (auto [col, bytes] : entries) {
    total += bytes / unit;
    largest = std::max(largest, bytes / unit);
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

void IntegerProgram::addResidentTerms(
    int c, int b, SmallVector<std::pair<int, int64_t>> &entries) const {
  const CandidateColumns &cols = columns[c];
  if (!cols.kept || b > cols.points.back())
    return;
  int64_t bytes = problem.candidates[c].bytes;
  unsigned i = cols.indexOf(b);
  if (i == 0 && b < cols.points[0]) {
    // Before its first possible need: resident exactly when kept.
    entries.push_back({cols.kept, bytes});
  } else {
    // At a point, or between two: resident from before the next point
    // (and recomputed at a point).
    entries.push_back({cols.stay[i], bytes});
    if (cols.points[i] == b && cols.recompute[i])
      entries.push_back({cols.recompute[i], bytes});
  }
}

void IntegerProgram::build() {
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
  std::vector<SmallVector<int, 4>> inputsOf(n), consumers(n);
  for (auto [d, candidate] : llvm::enumerate(candidates)) {
    SmallVector<int, 4> &inputs = inputsOf[d];
    inputs.assign(candidate.inputs.begin(), candidate.inputs.end());
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
      // A read where it cannot be recomputed: resident from before.
      bool staysForRead =
          llvm::is_contained(reads, b) && !firstNeeds[c].test(b);
      cols.points.push_back(b);
      cols.stay.push_back(addCol(GLP_CV, staysForRead ? 1 : 0, 1, 0));
      cols.recompute.push_back(
          firstNeeds[c].test(b) ? addCol(GLP_BV, 0, 1, cost) : 0);
    }
  }

  // Structure rows.
  for (size_t c = 0; c < n; ++c) {
    const CandidateColumns &cols = columns[c];
    if (!cols.kept)
      continue;
    // Continuity: resident from before a point only if kept (the first)
    // or resident at the previous one; at most one of keep or recompute;
    // resident at its reads.
    ArrayRef<int> reads = candidates[c].backwardReads;
    int once = addRow(-DBL_MAX, 1);
    addEntry(once, cols.kept, 1);
    for (unsigned i = 0; i < cols.points.size(); ++i) {
      int row = addRow(-DBL_MAX, 0);
      addEntry(row, cols.stay[i], 1);
      addEntry(row, i == 0 ? cols.kept : cols.stay[i - 1], -1);
      if (i > 0 && cols.recompute[i - 1])
        addEntry(row, cols.recompute[i - 1], -1);
      int r = cols.recompute[i];
      if (!r)
        continue;
      addEntry(once, r, 1);
      if (llvm::is_contained(reads, cols.points[i])) {
        int read = addRow(1, DBL_MAX);
        addEntry(read, cols.stay[i], 1);
        addEntry(read, r, 1);
      }
    }
    for (unsigned i = 0; i < cols.points.size(); ++i) {
      int r = cols.recompute[i];
      if (!r)
        continue;
      int b = cols.points[i];
      // A recomputed candidate's inputs are resident when it runs.
      for (int u : inputsOf[c]) {
        int row = addRow(0, DBL_MAX);
        addEntry(row, stayAt(u, b), 1);
        if (int ru = recomputeAt(u, b))
          addEntry(row, ru, 1);
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
    for (int s = b; s < end; ++s)
      cap = std::min(cap, backwardCap(problem, s));
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

void IntegerProgram::setIncumbent(const std::vector<bool> &kept,
                              const std::vector<bool> &recomputed,
                              const RematEvaluation &needs) {
  incumbent.assign(numCols + 1, 0);
  for (auto [c, cols] : llvm::enumerate(columns)) {
    if (!cols.kept || (!kept[c] && !recomputed[c]))
      continue;
    incumbent[cols.kept] = kept[c];
    int start = kept[c] ? -1 : needs.firstNeed[c];
    for (auto [i, step] : llvm::enumerate(cols.points)) {
      if (step == start) {
        if (!cols.recompute[i]) {
          incumbent.clear(); // not a plan of this program
          return;
        }
        incumbent[cols.recompute[i]] = 1;
      } else if (step > start && step <= needs.lastNeed[c]) {
        incumbent[cols.stay[i]] = 1;
      }
    }
  }
}

void IntegerProgram::callback(glp_tree *tree, void *info) {
  auto *model = static_cast<IntegerProgram *>(info);
  if (glp_ios_reason(tree) != GLP_IHEUR || model->incumbent.empty())
    return;
  glp_ios_heur_sol(tree, model->incumbent.data());
  model->incumbent.clear(); // once is enough
}

int IntegerProgram::solve(int timeLimitMs) {
  Clock::time_point start = Clock::now();
  mipStatus = GLP_UNDEF;

  // GLPK's primal simplex stalls on these programs; the dual simplex
  // solves the relaxation, and branch and bound starts from its basis.
  glp_smcp lpParm;
  glp_init_smcp(&lpParm);
  lpParm.msg_lev = GLP_MSG_OFF;
  lpParm.meth = GLP_DUALP;
  lpParm.presolve = GLP_ON;
  lpParm.tm_lim = timeLimitMs;
  int code = glp_simplex(lp, &lpParm);
  if (code == GLP_ENOPFS || (code == 0 && glp_get_status(lp) == GLP_NOFEAS)) {
    mipStatus = GLP_NOFEAS;
    return code;
  }
  if (code != 0 || glp_get_status(lp) != GLP_OPT)
    return code;
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.tm_lim = std::max(1, int(double(timeLimitMs) - msSince(start)));
  parm.mip_gap = 0;
  // The feasibility pump finds better plans early on these programs.
  parm.fp_heur = GLP_ON;
  if (!incumbent.empty()) {
    parm.cb_func = callback;
    parm.cb_info = this;
  }
  code = glp_intopt(lp, &parm);
  mipStatus = glp_mip_status(lp);
  return code;
}

void IntegerProgram::extract(std::vector<bool> &kept,
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

bool IntegerProgram::tighten(ArrayRef<Violation> violations) {
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
    double excessUnits = double(llvm::divideCeil(excess[index], unit));
    if (excessUnits > memoryRow.slipUnits)
      return false;
    // The slip was at least the excess: widen the margin by as much again.
    memoryRow.margin += excessUnits;
    glp_set_row_bnds(lp, memoryRow.row, GLP_UP, 0, memoryRow.bound());
  }
  return true;
}

static double planCost(const RematProblem &problem,
                       const std::vector<bool> &recomputed) {
  double cost = 0;
  for (auto [c, candidate] : llvm::enumerate(problem.candidates))
    if (recomputed[c])
      cost += candidate.cost;
  return cost;
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
  if (problem.arenaCap < 0) {
    // No arena cap: one that no sum of bytes reaches.
    RematProblem capped = problem;
    capped.arenaCap = std::numeric_limits<int64_t>::max() / 4;
    return solveRematILP(capped, options, solution, error);
  }
  Clock::time_point start = Clock::now();
  solution = RematSolution();
  size_t n = problem.candidates.size();
  solution.kept.assign(n, false);
  solution.recomputed.assign(n, false);

  error = validateRematProblem(problem);
  if (!error.empty()) {
    error = "invalid remat problem: " + error;
    return false;
  }
  error = obviousInfeasibility(problem);
  if (!error.empty())
    return false;

  std::vector<int> order = consumersFirst(problem);
  auto finish = [&](std::vector<bool> kept, std::vector<bool> recomputed,
                    bool optimal) {
    solution.cost = planCost(problem, recomputed);
    solution.kept = std::move(kept);
    solution.recomputed = std::move(recomputed);
    solution.optimal = optimal;
    return true;
  };

  // A greedy plan: optimal when it recomputes nothing, else where branch
  // and bound starts, and the answer when it runs out of time.
  std::vector<bool> greedyKept, greedyRecomputed;
  // Plans are checked in the variant of the model that the program
  // formulates.
  RematModel model(problem, RematModel::Slots::HoldToLastNeed);
  RematEvaluation greedyNeeds;
  double greedyCost = 0;
  bool haveGreedy = greedyPlan(model, order, greedyKept, greedyRecomputed,
                               greedyNeeds, greedyCost);
  if (haveGreedy && greedyCost == 0)
    return finish(greedyKept, greedyRecomputed, /*optimal=*/true);

  IntegerProgram program(problem, order);
  program.build();

  // Non-positive or huge limits mean no limit.
  double limitMs = options.timeLimitSeconds * 1000;
  bool limited = limitMs > 0 && limitMs < double(INT_MAX);

  std::string capText = formatv("the arena cap of {0} bytes", problem.arenaCap);
  if (problem.activationCap >= 0)
    capText +=
        formatv(" and the activation cap of {0} bytes", problem.activationCap)
            .str();

  std::vector<bool> kept(n, false), recomputed(n, false);
  bool optimal = true;
  constexpr int kMaxAttempts = 4;
  for (int attempt = 0;; ++attempt) {
    if (program.hasColumns()) {
      int limit = INT_MAX;
      if (limited)
        limit = std::max(1, int(limitMs - msSince(start)));
      if (haveGreedy)
        program.setIncumbent(greedyKept, greedyRecomputed, greedyNeeds);
      int code = program.solve(limit);
      int status = program.status();
      if (code == GLP_ENOPFS || status == GLP_NOFEAS) {
        if (haveGreedy) {
          // Rows tightened after a slip may cut off every plan.
          if (attempt > 0)
            return finish(greedyKept, greedyRecomputed, /*optimal=*/false);
          error = "internal error: the remat program has no solution, but "
                  "a greedy plan fits";
          return false;
        }
        error = "no plan fits: no choice of kept and recomputed candidates "
                "keeps every step within " +
                capText;
        return false;
      }
      if (status != GLP_OPT && status != GLP_FEAS) {
        if (code == GLP_ETMLIM && haveGreedy)
          return finish(greedyKept, greedyRecomputed, /*optimal=*/false);
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
      program.extract(kept, recomputed);
    }
    if (!optimal && haveGreedy && greedyCost < planCost(problem, recomputed))
      return finish(greedyKept, greedyRecomputed, /*optimal=*/false);

    // The program recomputes only what is needed and keeps what it does
    // not recompute; keeping what nothing needs only costs forward memory.
    RematEvaluation needs;
    std::vector<bool> validKept, validRecomputed = recomputed;
    normalizePlan(model, order, validKept, validRecomputed, needs);
    for (size_t c = 0; c < n; ++c) {
      if (recomputed[c] && !validRecomputed[c]) {
        error = formatv("internal error: the remat program recomputes "
                        "candidate {0}, which no backward step needs",
                        c);
        return false;
      }
      if (validKept[c] && !kept[c] && !recomputed[c]) {
        error = formatv("internal error: the remat program drops candidate "
                        "{0} but backward step {1} needs it",
                        c, needs.firstNeed[c]);
        return false;
      }
    }
    kept = std::move(validKept);
    SmallVector<Violation> violations =
        findViolations(model, needs);
    if (violations.empty())
      break;
    bool tightened = attempt + 1 < kMaxAttempts && program.tighten(violations);
    if (!tightened) {
      const Violation &first = violations.front();
      error =
          formatv("internal error: the remat program's plan exceeds {0} "
                  "at {1} {2} by {3} bytes",
                  capText, stepKindName(first.kind), first.step, first.excess);
      return false;
    }
  }

  return finish(std::move(kept), std::move(recomputed), optimal);
}
