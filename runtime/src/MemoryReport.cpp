//===- MemoryReport.cpp - the memory plan as a table for people ------------===//
//
// Groups the manifest's memory categories (Manifest.h, MemoryCategory) into
// weights, gradients, optimizer states, saved activations, the loss's
// temporaries and the other temporaries,
// in bytes, MiB and bytes per trainable parameter, and compares parameters +
// gradients + optimizer states per parameter with the fp32 rule of thumb.
// Categories it does not know are listed under "other"; categories the
// manifest lacks are left out rather than shown as zero.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Bytes.h"
#include "memfit/runtime/Manifest.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace memfit::rt {

namespace {

struct Group {
  const char *title;
  /// Category names, including the forward emitter's singular ones.
  std::vector<const char *> names;
};

const std::vector<Group> &groups() {
  static const std::vector<Group> g = {
      {"weights",
       {"parameters", "parameter", "frozen_parameters", "weight_codes",
        "weight_scales", "constants", "constant"}},
      {"gradients", {"gradient_accumulators", "gradients"}},
      {"optimizer states", {"optimizer_states", "state_codes", "state_scales"}},
      {"working copies", {"working_copies"}},
      {"saved activations", {"saved_activations"}},
      {"compressed activations", {"compressed_activations"}},
      {"recomputed activations", {"recomputed"}},
      {"loss", {"loss"}},
      {"communication", {"communication"}},
      {"temporaries",
       {"temporaries", "activations", "activation", "inputs", "input",
        "outputs", "output"}},
  };
  return g;
}

bool isTotal(const std::string &name) {
  return name == "weights region" || name == "arena peak";
}

/// A category of the host region ("host optimizer_states") or its total.
bool isHost(const std::string &name) {
  return name.rfind(kHostCategoryPrefix, 0) == 0;
}

std::string label(const std::string &name) {
  std::string s = name;
  for (char &c : s)
    if (c == '_')
      c = ' ';
  return s;
}

class Table {
public:
  explicit Table(uint64_t parameters) : parameters_(parameters) {}

  void row(const std::string &name, uint64_t bytes, int indent) {
    char line[160];
    std::string text = std::string(2 + 2 * indent, ' ') + name;
    int n = std::snprintf(line, sizeof(line), "%-34s %17s %11.2f", text.c_str(),
                          groupDigits(bytes).c_str(),
                          double(bytes) / (1024.0 * 1024.0));
    out_.append(line, n);
    if (parameters_) {
      n = std::snprintf(line, sizeof(line), " %9.2f",
                        double(bytes) / double(parameters_));
      out_.append(line, n);
    }
    out_ += "\n";
  }

  void text(const std::string &line) { out_ += line + "\n"; }
  std::string str() const { return out_; }

private:
  uint64_t parameters_;
  std::string out_;
};

uint64_t categoryBytes(const Manifest &m, const char *name, bool *found) {
  uint64_t bytes = 0;
  for (const MemoryCategory &c : m.memory)
    if (c.name == name) {
      bytes += c.bytes;
      if (found)
        *found = true;
    }
  return bytes;
}

} // namespace

std::string formatMemoryReport(const Manifest &m) {
  uint64_t params = m.trainableParameters;
  Table table(params);
  std::string title = "memory report";
  if (!m.model.empty())
    title += " (" + m.model + ")";
  if (params)
    title += ": " + groupDigits(params) + " trainable parameters";
  if (params && m.frozenParameters) {
    // As PEFT's print_trainable_parameters.
    uint64_t all = params + m.frozenParameters;
    char share[96];
    std::snprintf(share, sizeof(share), " of %s (%.2f%%)",
                  groupDigits(all).c_str(), 100.0 * params / all);
    title += share;
  }
  table.text(title);
  char head[160];
  std::snprintf(head, sizeof(head), "%-34s %17s %11s%s", "", "bytes", "MiB",
                params ? "   B/param" : "");
  table.text(head);

  std::set<std::string> known;
  for (const Group &g : groups()) {
    std::vector<const MemoryCategory *> members;
    uint64_t total = 0;
    for (const char *name : g.names) {
      known.insert(name);
      for (const MemoryCategory &c : m.memory)
        if (c.name == name) {
          members.push_back(&c);
          total += c.bytes;
        }
    }
    if (members.empty())
      continue;
    table.row(g.title, total, 0);
    if (members.size() > 1 || label(members[0]->name) != g.title)
      for (const MemoryCategory *c : members)
        table.row(label(c->name), c->bytes, 1);
  }
  bool otherTitle = false;
  for (const MemoryCategory &c : m.memory) {
    if (known.count(c.name) || isTotal(c.name) || isHost(c.name))
      continue;
    if (!otherTitle)
      table.text("  other");
    otherTitle = true;
    table.row(c.name, c.bytes, 1);
  }
  table.row("weights region", m.weightsBytes, 0);
  table.row("arena peak", m.arenaBytes, 0);
  table.row("one allocation", m.totalBytes(), 0);
  // What --offload=optimizer keeps in host memory, apart from the device's.
  if (m.hostBytes) {
    table.row("host memory (pinned)", m.hostBytes, 0);
    for (const MemoryCategory &c : m.memory)
      if (isHost(c.name) && c.name != kHostRegionCategory)
        table.row(label(c.name.substr(sizeof kHostCategoryPrefix - 1)),
                  c.bytes, 1);
  }
  table.text("(arena categories count the bytes live at the arena's peak)");

  if (params) {
    double p = double(params);
    bool hasGradients = false, hasStates = false;
    double weights = categoryBytes(m, "parameters", nullptr) / p;
    double gradients =
        (categoryBytes(m, "gradient_accumulators", &hasGradients) +
         categoryBytes(m, "gradients", &hasGradients)) /
        p;
    bool quantized = false;
    double codes = categoryBytes(m, "state_codes", &quantized) / p;
    // Offloaded states, in 8 bits too.
    double hostStates = 0;
    for (const char *name : {"optimizer_states", "state_codes", "state_scales"})
      hostStates += categoryBytes(
                        m, (std::string(kHostCategoryPrefix) + name).c_str(),
                        &hasStates) /
                    p;
    double states = (categoryBytes(m, "optimizer_states", &hasStates) +
                     categoryBytes(m, "state_codes", &hasStates) +
                     categoryBytes(m, "state_scales", &hasStates)) /
                        p +
                    hostStates;
    bool mixed = false;
    double copies = categoryBytes(m, "working_copies", &mixed) / p;
    char line[256];
    if (mixed)
      std::snprintf(line, sizeof(line),
                    "parameters + working copies + gradients + optimizer "
                    "states: %.2f + %.2f + %.2f + %.2f = %.2f bytes per "
                    "trainable parameter",
                    weights, copies, gradients, states,
                    weights + copies + gradients + states);
    else
      std::snprintf(line, sizeof(line),
                    "parameters + gradients + optimizer states: %.2f + %.2f + "
                    "%.2f = %.2f bytes per trainable parameter",
                    weights, gradients, states, weights + gradients + states);
    // ZeRO-Offload: the masters are in host memory with the states; the
    // device holds working copies.
    const std::string hostMasters =
        std::string(kHostCategoryPrefix) + "parameters";
    double masters = categoryBytes(m, hostMasters.c_str(), nullptr) / p;
    if (masters > 0) {
      std::snprintf(line, sizeof(line),
                    "on the device: working copies + gradients: %.2f + %.2f "
                    "= %.2f bytes per trainable parameter; in host memory: "
                    "fp32 masters + optimizer states: %.2f + %.2f = %.2f "
                    "(--offload=optimizer)",
                    weights, gradients, weights + gradients, masters,
                    hostStates, masters + hostStates);
      table.text(line);
      table.text("  rule of thumb for ZeRO-Offload with mixed-precision "
                 "AdamW: 2 (16-bit parameters) + 2 (16-bit gradients) "
                 "B/param on the device, 4 (fp32 masters) + 8 (states) = 12 "
                 "in host memory");
      return table.str();
    }
    table.text(line);
    if (hostStates > 0) {
      std::snprintf(line, sizeof(line),
                    "  of the optimizer states, %.2f bytes per trainable "
                    "parameter in host memory (--offload=optimizer)",
                    hostStates);
      table.text(line);
    }
    if (uint64_t q = m.quantizedParameters) {
      std::snprintf(line, sizeof(line),
                    "quantized frozen weights: %s values in %.2f B/value of "
                    "codes + %.2f of scales",
                    groupDigits(q).c_str(),
                    categoryBytes(m, "weight_codes", nullptr) / double(q),
                    categoryBytes(m, "weight_scales", nullptr) / double(q));
      table.text(line);
    }
    if (quantized) {
      std::snprintf(line, sizeof(line),
                    "  optimizer states: %.2f 8-bit codes + %.2f absmax + "
                    "%.2f fp32 (small tensors, counters)",
                    codes, categoryBytes(m, "state_scales", nullptr) / p,
                    categoryBytes(m, "optimizer_states", nullptr) / p);
      table.text(line);
    }
    const char *rule = nullptr;
    // ZeRO stages 1 and 2 keep 1/N of the states on each rank: the rule is
    // the unsharded optimizer's.
    bool sharded = m.zeroStage >= 1 && m.worldSize > 1;
    if (sharded)
      states *= double(m.worldSize);
    if (quantized)
      rule = "AdamW with 8-bit states: 4 weights + 4 gradients + 2 states "
             "(8-bit m and v, one fp32 absmax per 256) = 10 B/param, plus "
             "activations";
    else if (mixed && std::fabs(states - 8) < 0.5)
      rule = "mixed-precision AdamW: 4 master weights + 2 working copy + 4 "
             "gradients + 8 states = 18 B/param, plus activations";
    else if (std::fabs(states - 8) < 0.5)
      rule = "fp32 AdamW: 4 weights + 4 gradients + 8 states = 16 B/param, "
             "plus activations";
    else if (std::fabs(states - 4) < 0.5)
      rule = "fp32 SGD with momentum: 4 weights + 4 gradients + 4 states = "
             "12 B/param, plus activations";
    else if (std::fabs(states) < 0.5)
      rule = "fp32 plain SGD: 4 weights + 4 gradients = 8 B/param, plus "
             "activations";
    if (rule)
      table.text(std::string("  rule of thumb for ") + rule);
    if (rule && sharded)
      table.text("  ZeRO stage " + std::to_string(m.zeroStage) +
                 ": each of the " + std::to_string(m.worldSize) +
                 " ranks keeps 1/" + std::to_string(m.worldSize) +
                 (m.zeroStage >= 3 ? " of the parameters and the states"
                                   : " of the states"));
    if (!hasGradients || !hasStates)
      table.text("  (the manifest lists no gradient or optimizer-state "
                 "category: counted as 0)");
  }
  return table.str();
}

} // namespace memfit::rt
