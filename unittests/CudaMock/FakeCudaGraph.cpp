//===- FakeCudaGraph.cpp - the FAKE driver's stream capture and graphs ----===//
//
// Part of the fake libcuda.so.1 (see FakeCuda.cpp and MockCuda.h): stream
// capture into graphs, their instantiation and launch. Work issued to a
// capturing stream (kernels, and cuBLASLt's matmuls through the fake
// cuBLASLt) is recorded as a closure and done at each cuGraphLaunch rather
// than when issued, so a test sees that a captured step runs only when the
// graph is launched, as many times as it is launched.
//
// Emulated rules: a capture begins on a live, non-null stream that is not
// capturing; synchronizing a capturing stream, or a synchronous copy or
// memset while a capture is under way (they would wait for the legacy
// stream), fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED or _IMPLICIT
// and invalidates the capture, whose cuStreamEndCapture then fails with
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and returns no graph.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaCodes.h"
#include "MockCuda.h"

#include <map>
#include <memory>

namespace {

using namespace fakecuda;

constexpr int kCaptureModeRelaxed = 2;

struct Graph {
  std::vector<std::function<void()>> nodes;
};

struct Capture {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  bool invalidated = false;
};

struct GraphState {
  std::map<void *, Capture> captures; // by stream
  std::map<Graph *, std::unique_ptr<Graph>> graphs;
  std::map<Graph *, std::unique_ptr<Graph>> execs; // copies of the nodes
  int lastNodes = 0;
};

GraphState &graphState() {
  static GraphState s;
  return s;
}

CUresult violation(CUresult result, const char *entry,
                   const std::string &what) {
  mockcuda::recordViolation(std::string(entry) + ": " + what);
  return result;
}

CUresult requireContext(const char *entry) {
  return mockcuda::contextCurrent()
             ? kSuccess
             : violation(201, entry, "no current context");
}

#define FAKE_ENTER(entry)                                                      \
  do {                                                                         \
    if (CUresult injected_ = mockcuda::enterDriver(entry))                     \
      return injected_;                                                        \
    if (CUresult context_ = requireContext(entry))                             \
      return context_;                                                         \
  } while (false)

} // namespace

namespace mockcuda {

void submit(void *stream, std::function<void()> work) {
  auto it = graphState().captures.find(stream);
  if (it == graphState().captures.end())
    work();
  else if (!it->second.invalidated)
    it->second.graph->nodes.push_back(std::move(work));
}

bool capturing(void *stream) { return graphState().captures.count(stream); }
bool capturingAny() { return !graphState().captures.empty(); }

void invalidateCaptures() {
  for (auto &entry : graphState().captures)
    entry.second.invalidated = true;
}

void endCapture(void *stream) { graphState().captures.erase(stream); }

void countGraphs(Live &live) {
  live.graphs += int(graphState().graphs.size());
  live.graphExecs += int(graphState().execs.size());
}

int lastGraphNodes() { return graphState().lastNodes; }

} // namespace mockcuda

extern "C" {

CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  const char *entry = "cuStreamBeginCapture_v2";
  FAKE_ENTER(entry);
  if (!stream)
    return violation(kInvalidValue, entry,
                     "the legacy stream cannot be captured");
  if (!mockcuda::streamValid(stream))
    return violation(kInvalidHandle, entry,
                     "not a live stream of the current context");
  if (mode < 0 || mode > kCaptureModeRelaxed)
    return violation(kInvalidValue, entry, "unknown capture mode");
  if (mockcuda::capturing(stream))
    return violation(kInvalidValue, entry, "the stream is capturing already");
  graphState().captures[stream];
  mockcuda::recordEvent(entry);
  return kSuccess;
}

// An injected failure ends the capture too, as the real call does when it
// fails on an invalidated capture.
CUresult cuStreamEndCapture(void *stream, void **graph) {
  const char *entry = "cuStreamEndCapture";
  CUresult injected = mockcuda::enterDriver(entry);
  if (CUresult context = requireContext(entry))
    return context;
  if (!graph)
    return violation(kInvalidValue, entry, "no graph pointer");
  GraphState &s = graphState();
  auto it = s.captures.find(stream);
  if (it == s.captures.end())
    return violation(kCaptureUnmatched, entry, "the stream is not capturing");
  Capture capture = std::move(it->second);
  s.captures.erase(it);
  *graph = nullptr;
  if (injected)
    return injected;
  if (capture.invalidated) {
    mockcuda::recordEvent(std::string(entry) + " (invalidated)");
    return kCaptureInvalidated;
  }
  Graph *handle = capture.graph.get();
  mockcuda::recordEvent(std::string(entry) + " (" +
                        std::to_string(handle->nodes.size()) + " nodes)");
  s.graphs.emplace(handle, std::move(capture.graph));
  *graph = handle;
  return kSuccess;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph,
                                     unsigned long long flags) {
  const char *entry = "cuGraphInstantiateWithFlags";
  FAKE_ENTER(entry);
  GraphState &s = graphState();
  auto it = s.graphs.find(static_cast<Graph *>(graph));
  if (!exec || it == s.graphs.end())
    return violation(kInvalidValue, entry, "not a live graph");
  if (flags != 0)
    return violation(kInvalidValue, entry, "flags are not emulated");
  auto copy = std::make_unique<Graph>(*it->second);
  Graph *handle = copy.get();
  s.execs.emplace(handle, std::move(copy));
  *exec = handle;
  mockcuda::recordEvent(entry);
  return kSuccess;
}

CUresult cuGraphLaunch(void *exec, void *stream) {
  const char *entry = "cuGraphLaunch";
  FAKE_ENTER(entry);
  GraphState &s = graphState();
  auto it = s.execs.find(static_cast<Graph *>(exec));
  if (it == s.execs.end())
    return violation(kInvalidHandle, entry, "not a live executable graph");
  if (stream && !mockcuda::streamValid(stream))
    return violation(kInvalidHandle, entry,
                     "not a live stream of the current context");
  mockcuda::recordEvent(std::string(entry) + " (" +
                        std::to_string(it->second->nodes.size()) + " nodes)");
  s.lastNodes = int(it->second->nodes.size());
  for (const std::function<void()> &node : it->second->nodes)
    mockcuda::submit(stream, node); // into a capture, if the stream has one
  return kSuccess;
}

CUresult cuGraphExecDestroy(void *exec) {
  const char *entry = "cuGraphExecDestroy";
  FAKE_ENTER(entry);
  if (!graphState().execs.erase(static_cast<Graph *>(exec)))
    return violation(kInvalidHandle, entry, "not a live executable graph");
  mockcuda::recordEvent(entry);
  return kSuccess;
}

CUresult cuGraphDestroy(void *graph) {
  const char *entry = "cuGraphDestroy";
  FAKE_ENTER(entry);
  if (!graphState().graphs.erase(static_cast<Graph *>(graph)))
    return violation(kInvalidHandle, entry, "not a live graph");
  mockcuda::recordEvent(entry);
  return kSuccess;
}

} // extern "C"
