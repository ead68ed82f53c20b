//===- MemoryTimeline.cpp - bytes live over a planned step ----------------===//

#include "memfit/Analysis/MemoryTimeline.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/runtime/Bytes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using ::memfit::formatBytes;

int64_t MemoryTimeline::arenaLive(int64_t step) const {
  int64_t live = 0;
  for (int64_t bytes : arena[step])
    live += bytes;
  return live;
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

static std::string stepLabel(Operation *op) {
  std::string label = stepOpNames(op);
  if (StringRef node = stepNodeName(op); !node.empty())
    label += (" (" + node + ")").str();
  return label;
}

MemoryTimeline
mlir::memfit::buildMemoryTimeline(const MemoryPlan &plan, func::FuncOp func,
                                  const CategoryBytes &weightsByCategory) {
  MemoryTimeline timeline;
  timeline.function = func.getSymName().str();
  timeline.weightsBytes = plan.weightsBytes;
  timeline.weightsByCategory = weightsByCategory;
  timeline.arenaBytes = plan.arenaBytes;
  timeline.arena = arenaLiveByStep(plan);
  timeline.firstBackwardStep = plan.firstBackwardStep;
  timeline.peakStep = plan.peakStep;
  timeline.stepLabels.reserve(timeline.arena.size());
  timeline.stepLabels.push_back("start");
  for (Operation *op : plan.schedule)
    timeline.stepLabels.push_back(stepLabel(op));
  timeline.stepLabels.push_back("end");
  return timeline;
}

//===----------------------------------------------------------------------===//
// CSV
//===----------------------------------------------------------------------===//

/// A CSV field, quoted when it holds a separator, a quote or a line break.
static void writeCsvField(raw_ostream &os, StringRef field) {
  if (field.find_first_of(",\"\r\n") == StringRef::npos) {
    os << field;
    return;
  }
  os << '"';
  for (char c : field) {
    if (c == '"')
      os << '"';
    os << c;
  }
  os << '"';
}

/// The arena categories live at some step, in category order.
static SmallVector<unsigned> liveArenaCategories(const MemoryTimeline &t) {
  SmallVector<unsigned> categories;
  for (unsigned c = 0; c < kNumBufferCategories; ++c)
    if (llvm::any_of(t.arena, [&](const CategoryBytes &b) { return b[c]; }))
      categories.push_back(c);
  return categories;
}

void mlir::memfit::writeMemoryTimelineCsv(const MemoryTimeline &timeline,
                                          raw_ostream &os) {
  os << "# function " << timeline.function << "\n";
  os << "# weights " << timeline.weightsBytes << "\n";
  for (unsigned c = 0; c < kNumBufferCategories; ++c)
    if (timeline.weightsByCategory[c])
      os << "# weights." << stringifyBufferCategory(BufferCategory(c)) << " "
         << timeline.weightsByCategory[c] << "\n";
  os << "# arena_planned " << timeline.arenaBytes << "\n";
  os << "# peak_step " << timeline.peakStep << "\n";
  os << "# first_backward_step " << timeline.firstBackwardStep << "\n";

  SmallVector<unsigned> categories = liveArenaCategories(timeline);
  os << "step,op";
  for (unsigned c : categories)
    os << "," << stringifyBufferCategory(BufferCategory(c));
  os << ",arena_live,total\n";
  for (int64_t s = 0; s < timeline.numSteps(); ++s) {
    os << s << ",";
    writeCsvField(os, timeline.stepLabels[s]);
    for (unsigned c : categories)
      os << "," << timeline.arena[s][c];
    int64_t live = timeline.arenaLive(s);
    os << "," << live << "," << timeline.weightsBytes + live << "\n";
  }
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

namespace {

/// A unit of bytes for axis labels.
struct ByteUnit {
  double scale;
  const char *name;
};

/// One point of the chart: steps [first, last + 1) drawn with the bytes of
/// one representative step.
struct ChartPoint {
  int64_t first, last;
  int64_t step;
};

/// One band of the stacked chart.
struct Band {
  std::string name;
  std::string color;
  /// Bytes per chart point (weights bands are constant).
  SmallVector<int64_t> bytes;
  int64_t atPeak = 0;
};

} // namespace

static ByteUnit unitFor(double bytes) {
  if (bytes >= double(1ll << 30))
    return {double(1ll << 30), "GiB"};
  if (bytes >= double(1 << 20))
    return {double(1 << 20), "MiB"};
  if (bytes >= 1024)
    return {1024, "KiB"};
  return {1, "B"};
}

/// `value` with at most `decimals` decimals, trailing zeros dropped.
static std::string formatNumber(double value, int decimals) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.*f", decimals, value);
  if (StringRef(text).contains('.')) {
    text = StringRef(text).rtrim('0').str();
    text = StringRef(text).rtrim('.').str();
  }
  return text;
}

/// 1, 2 or 5 times a power of ten, at least `rough`.
static double niceStep(double rough) {
  if (rough <= 0)
    return 1;
  double power = std::pow(10.0, std::floor(std::log10(rough)));
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * power >= rough)
      return factor * power;
  return 10 * power;
}

static std::string escapeXml(StringRef text) {
  std::string escaped;
  for (char c : text) {
    switch (c) {
    case '&':
      escaped += "&amp;";
      break;
    case '<':
      escaped += "&lt;";
      break;
    case '>':
      escaped += "&gt;";
      break;
    case '"':
      escaped += "&quot;";
      break;
    case '\'':
      escaped += "&apos;";
      break;
    default:
      // Control characters other than tab and line breaks are not XML.
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' &&
          c != '\r')
        escaped += ' ';
      else
        escaped += c;
    }
  }
  return escaped;
}

/// A fixed color per category, so that charts compare at a glance.
static const char *categoryColor(BufferCategory category) {
  // In BufferCategory's order.
  static const char *colors[] = {
      "#4e79a7", // parameters
      "#a0cbe8", // frozen_parameters
      "#9c755f", // constants
      "#76b7b2", // optimizer_states
      "#b07aa1", // gradient_accumulators
      "#bab0ac", // inputs
      "#59a14f", // outputs
      "#f28e2b", // activations
      "#e15759", // gradients
      "#edc948", // saved_activations
      "#8cd17d", // recomputed
      "#ff9da7", // temporaries
      "#9c755f", // working_copies
      "#499894", // state_codes
      "#86bcb6", // state_scales
      "#b6992d", // compressed_activations
      "#d4a6c8", // weight_codes
      "#fabfd2", // weight_scales
      "#79706e", // loss
      "#59a14f", // communication
      "#d37295", // offloaded_activations
      "#9d7660", // host_transfers
  };
  static_assert(std::size(colors) == kNumBufferCategories,
                "a color for every buffer category");
  return colors[unsigned(category)];
}

/// Emits an SVG `points` list of an outline, without repeated vertices and
/// without those in the middle of a horizontal or vertical run.
static void writePoints(raw_ostream &os,
                        ArrayRef<std::pair<double, double>> points) {
  SmallVector<std::pair<double, double>> kept;
  for (auto point : points) {
    if (!kept.empty() && kept.back() == point)
      continue;
    if (kept.size() >= 2) {
      auto [px, py] = kept[kept.size() - 2];
      auto [x, y] = kept.back();
      if ((py == y && y == point.second) || (px == x && x == point.first))
        kept.pop_back();
    }
    kept.push_back(point);
  }
  for (auto [index, point] : llvm::enumerate(kept))
    os << (index ? " " : "")
       << llvm::format("%.1f,%.1f", point.first, point.second);
}

void mlir::memfit::writeMemoryTimelineSvg(const MemoryTimeline &timeline,
                                          StringRef title, raw_ostream &os) {
  constexpr int width = 900, height = 420;
  constexpr double left = 78, right = 670, top = 48, bottom = 360;
  constexpr int64_t maxPoints = 2000;

  // Chart points: every step, or for long timelines the step with the most
  // live bytes of each bucket, so that the peak survives.
  int64_t numSteps = timeline.numSteps();
  int64_t bucket = std::max<int64_t>(1, (numSteps + maxPoints - 1) / maxPoints);
  SmallVector<ChartPoint> points;
  for (int64_t first = 0; first < numSteps; first += bucket) {
    int64_t last = std::min(numSteps, first + bucket) - 1;
    int64_t best = first;
    for (int64_t s = first + 1; s <= last; ++s)
      if (timeline.arenaLive(s) > timeline.arenaLive(best))
        best = s;
    points.push_back({first, last, best});
  }

  // Bands, bottom up: weights categories, the weights region's alignment
  // padding, then the arena categories.
  SmallVector<Band> bands;
  int64_t weightsCounted = 0;
  for (unsigned c = 0; c < kNumBufferCategories; ++c) {
    int64_t bytes = timeline.weightsByCategory[c];
    if (!bytes)
      continue;
    StringRef name = stringifyBufferCategory(BufferCategory(c));
    bands.push_back({name.str(), categoryColor(BufferCategory(c)),
                     SmallVector<int64_t>(points.size(), bytes), bytes});
    weightsCounted += bytes;
  }
  if (int64_t padding = timeline.weightsBytes - weightsCounted; padding > 0)
    bands.push_back({"weights padding", "#d9d9d9",
                     SmallVector<int64_t>(points.size(), padding), padding});
  for (unsigned c : liveArenaCategories(timeline)) {
    StringRef name = stringifyBufferCategory(BufferCategory(c));
    Band band{name.str(), categoryColor(BufferCategory(c)), {}, 0};
    for (const ChartPoint &point : points)
      band.bytes.push_back(timeline.arena[point.step][c]);
    band.atPeak = timeline.arena[timeline.peakStep][c];
    bands.push_back(std::move(band));
  }

  int64_t peakTotal =
      timeline.weightsBytes + timeline.arenaLive(timeline.peakStep);
  int64_t allocated = timeline.weightsBytes + timeline.arenaBytes;
  double maxBytes = std::max<double>({1.0, double(peakTotal),
                                      double(allocated)}) * 1.08;
  ByteUnit unit = unitFor(maxBytes);
  double yTick = niceStep(maxBytes / unit.scale / 5) * unit.scale;
  double yMax = std::ceil(maxBytes / yTick) * yTick;

  auto xOf = [&](double step) {
    return left + (right - left) * step / double(numSteps);
  };
  auto yOf = [&](double bytes) {
    return bottom - (bottom - top) * bytes / yMax;
  };
  auto num = [](double value) { return formatNumber(value, 1); };

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                      "font-family=\"sans-serif\" font-size=\"11\">\n",
                      width, height);
  os << "<title>" << escapeXml(title) << "</title>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"20\" font-size=\"14\" "
                      "font-weight=\"bold\">{1}</text>\n",
                      num(left), escapeXml(title));
  os << llvm::formatv("<text x=\"{0}\" y=\"36\" fill=\"#555\">weights {1}, "
                      "arena planned {2}, {3} steps</text>\n",
                      num(left), formatBytes(timeline.weightsBytes),
                      formatBytes(timeline.arenaBytes), numSteps - 2);

  // Y grid and tick labels.
  os << "<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (double tick = 0; tick <= yMax + yTick / 2; tick += yTick)
    os << "<line x1=\"" << num(left) << "\" x2=\"" << num(right)
       << "\" y1=\"" << num(yOf(tick)) << "\" y2=\"" << num(yOf(tick))
       << "\"/>\n";
  os << "</g>\n<g text-anchor=\"end\" fill=\"#333\">\n";
  for (double tick = 0; tick <= yMax + yTick / 2; tick += yTick)
    os << "<text x=\"" << num(left - 6) << "\" y=\"" << num(yOf(tick) + 4)
       << "\">"
       << (tick ? formatNumber(tick / unit.scale, 2) + " " + unit.name : "0")
       << "</text>\n";
  os << "</g>\n";

  // The stacked bands.
  SmallVector<int64_t> base(points.size(), 0);
  for (const Band &band : bands) {
    SmallVector<std::pair<double, double>> outline;
    for (auto [index, point] : llvm::enumerate(points)) {
      double y = yOf(base[index] + band.bytes[index]);
      outline.push_back({xOf(point.first), y});
      outline.push_back({xOf(point.last + 1), y});
    }
    for (int64_t index = points.size() - 1; index >= 0; --index) {
      double y = yOf(base[index]);
      outline.push_back({xOf(points[index].last + 1), y});
      outline.push_back({xOf(points[index].first), y});
    }
    os << "<polygon fill=\"" << band.color << "\" points=\"";
    writePoints(os, outline);
    os << "\"><title>" << escapeXml(band.name) << "</title></polygon>\n";
    for (auto [index, bytes] : llvm::enumerate(band.bytes))
      base[index] += bytes;
  }

  // Axes and step ticks (at the middle of each step).
  os << llvm::formatv("<g stroke=\"#333\" stroke-width=\"1\">\n"
                      "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>\n"
                      "<line x1=\"{0}\" x2=\"{3}\" y1=\"{2}\" y2=\"{2}\"/>\n",
                      num(left), num(top), num(bottom), num(right));
  int64_t xTick = std::max<int64_t>(1, niceStep(double(numSteps) / 10));
  for (int64_t s = 0; s < numSteps; s += xTick)
    os << "<line x1=\"" << num(xOf(s + 0.5)) << "\" x2=\""
       << num(xOf(s + 0.5)) << "\" y1=\"" << num(bottom) << "\" y2=\""
       << num(bottom + 4) << "\"/>\n";
  os << "</g>\n<g text-anchor=\"middle\" fill=\"#333\">\n";
  for (int64_t s = 0; s < numSteps; s += xTick)
    os << "<text x=\"" << num(xOf(s + 0.5)) << "\" y=\"" << num(bottom + 16)
       << "\">" << s << "</text>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">step</text>\n</g>\n",
                      num((left + right) / 2), num(bottom + 34));

  // The allocated total: the weights region and the planned arena.
  os << llvm::formatv("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" "
                      "stroke=\"#333\" stroke-dasharray=\"6 4\"/>\n"
                      "<text x=\"{1}\" y=\"{3}\" text-anchor=\"end\" "
                      "fill=\"#333\">allocated {4}</text>\n",
                      num(left), num(right), num(yOf(allocated)),
                      num(yOf(allocated) - 4), escapeXml(formatBytes(allocated)));

  // The first backward step.
  if (timeline.firstBackwardStep) {
    double x = xOf(timeline.firstBackwardStep);
    os << llvm::formatv("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" "
                        "stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n"
                        "<text x=\"{3}\" y=\"{4}\" fill=\"#555\">backward"
                        "</text>\n",
                        num(x), num(top), num(bottom), num(x + 4),
                        num(top + 12));
  }

  // The peak and its total.
  {
    double x = xOf(timeline.peakStep + 0.5), y = yOf(peakTotal);
    bool leftHalf = x < (left + right) / 2;
    os << llvm::formatv("<circle cx=\"{0}\" cy=\"{1}\" r=\"4\" fill=\"black\"/>\n"
                        "<text x=\"{2}\" y=\"{3}\" text-anchor=\"{4}\" "
                        "font-weight=\"bold\">peak {5} (step {6})</text>\n",
                        num(x), num(y), num(leftHalf ? x + 7 : x - 7),
                        num(y - 7), leftHalf ? "start" : "end",
                        escapeXml(formatBytes(peakTotal)), timeline.peakStep);
  }

  // The legend, top of the stack first, with each band's bytes at the peak.
  double legendX = right + 22, legendY = top;
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" font-weight=\"bold\">at the "
                      "peak (step {2})</text>\n",
                      num(legendX), num(legendY), timeline.peakStep);
  for (const Band &band : llvm::reverse(bands)) {
    legendY += 18;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" "
                        "height=\"12\" fill=\"{2}\"/>\n"
                        "<text x=\"{3}\" y=\"{4}\">{5} {6}</text>\n",
                        num(legendX), num(legendY - 10), band.color,
                        num(legendX + 18), num(legendY),
                        escapeXml(band.name),
                        escapeXml(formatBytes(band.atPeak)));
  }
  legendY += 22;
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" font-weight=\"bold\">total "
                      "{2}</text>\n",
                      num(legendX), num(legendY),
                      escapeXml(formatBytes(peakTotal)));
  os << "</svg>\n";
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

/// Writes `path` through a temporary file in the same directory that
/// replaces it once complete ('-' is standard output); emits an error on
/// `module` and leaves no file otherwise.
static LogicalResult writeAtomically(ModuleOp module, StringRef path,
                                     function_ref<void(raw_ostream &)> write) {
  auto fail = [&](std::error_code code) {
    return module.emitError() << "cannot write the memory timeline to '"
                              << path << "': " << code.message();
  };
  if (path == "-") {
    write(llvm::outs());
    return success();
  }
  llvm::Expected<llvm::sys::fs::TempFile> temp =
      llvm::sys::fs::TempFile::create(path + ".tmp-%%%%%%");
  if (!temp)
    return fail(llvm::errorToErrorCode(temp.takeError()));
  std::error_code writeError;
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    write(os);
    os.flush();
    if (os.has_error()) {
      writeError = os.error();
      os.clear_error();
    }
  }
  if (writeError) {
    llvm::consumeError(temp->discard());
    return fail(writeError);
  }
  if (llvm::Error error = temp->keep(path))
    return fail(llvm::errorToErrorCode(std::move(error)));
  return success();
}

LogicalResult mlir::memfit::writeMemoryTimelineFiles(const ModulePlan &plan,
                                                     ModuleOp module,
                                                     ArrayRef<func::FuncOp> funcs,
                                                     StringRef svgPath,
                                                     StringRef csvPath) {
  if (svgPath.empty() && csvPath.empty())
    return success();
  if (plan.functions.empty())
    return module.emitError()
           << "no function to draw a memory timeline of: the module has no "
              "function with a body";
  unsigned index = plan.peakFunction;
  func::FuncOp func = funcs[index];
  MemoryTimeline timeline =
      buildMemoryTimeline(plan.functions[index], func, plan.weightsByCategory);
  if (!svgPath.empty()) {
    std::string title = ("memory timeline of @" + func.getSymName()).str();
    if (failed(writeAtomically(module, svgPath, [&](raw_ostream &os) {
          writeMemoryTimelineSvg(timeline, title, os);
        })))
      return failure();
  }
  if (!csvPath.empty() &&
      failed(writeAtomically(module, csvPath, [&](raw_ostream &os) {
        writeMemoryTimelineCsv(timeline, os);
      })))
    return failure();
  return success();
}
