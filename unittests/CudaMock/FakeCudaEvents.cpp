//===- FakeCudaEvents.cpp - the FAKE driver's events and clock ------------===//
//
// Part of the fake libcuda.so.1 (see FakeCuda.cpp and MockCuda.h): events,
// timed by a fake clock that the work done on streams advances (each
// kernel and each matmul by the durations the test sets, 0 by default).
// An event records the clock when the work before it is done: at once on
// a stream that runs as it is issued, at the graph's launch inside a
// capture. cuEventElapsedTime gives the difference of two recorded events
// in milliseconds, as the real one does.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaCodes.h"
#include "MockCuda.h"

#include <map>
#include <memory>

namespace {

using namespace fakecuda;

constexpr unsigned kEventDisableTiming = 2;

struct Event {
  bool timed = true;
  bool recorded = false;
  double at = 0; // the clock when recorded, ms
};

struct EventState {
  std::map<Event *, std::unique_ptr<Event>> events;
  double clock = 0;
  double kernelMs = 0, matmulMs = 0;
};

EventState &eventState() {
  static EventState s;
  return s;
}

CUresult violation(CUresult result, const char *entry,
                   const std::string &what) {
  mockcuda::recordViolation(std::string(entry) + ": " + what);
  return result;
}

Event *findEvent(void *handle) {
  auto it = eventState().events.find(static_cast<Event *>(handle));
  return it == eventState().events.end() ? nullptr : it->second.get();
}

#define FAKE_ENTER(entry)                                                      \
  do {                                                                         \
    if (CUresult injected_ = mockcuda::enterDriver(entry))                     \
      return injected_;                                                        \
    if (!mockcuda::contextCurrent())                                           \
      return violation(201, entry, "no current context");                      \
  } while (false)

/// cuEventQuery and cuEventSynchronize: the fake's work is done when
/// issued, so a live event has always happened.
CUresult eventDone(const char *entry, void *handle) {
  FAKE_ENTER(entry);
  if (!findEvent(handle))
    return violation(kInvalidHandle, entry, "not a live event");
  return kSuccess;
}

} // namespace

namespace mockcuda {

void setDurations(double kernelMs, double matmulMs) {
  eventState().kernelMs = kernelMs;
  eventState().matmulMs = matmulMs;
}

void workDone(bool matmul) {
  EventState &s = eventState();
  s.clock += matmul ? s.matmulMs : s.kernelMs;
}

void countEvents(Live &live) { live.events += int(eventState().events.size()); }

} // namespace mockcuda

extern "C" {

CUresult cuEventCreate(void **event, unsigned int flags) {
  const char *entry = "cuEventCreate";
  FAKE_ENTER(entry);
  if (!event || (flags & ~3u))
    return violation(kInvalidValue, entry, "no event pointer, or bad flags");
  auto created = std::make_unique<Event>();
  created->timed = !(flags & kEventDisableTiming);
  *event = created.get();
  eventState().events.emplace(created.get(), std::move(created));
  return kSuccess;
}

CUresult cuEventRecord(void *handle, void *stream) {
  const char *entry = "cuEventRecord";
  FAKE_ENTER(entry);
  Event *event = findEvent(handle);
  if (!event)
    return violation(kInvalidHandle, entry, "not a live event");
  if (stream && !mockcuda::streamValid(stream))
    return violation(kInvalidHandle, entry,
                     "not a live stream of the current context");
  mockcuda::submit(stream, [handle] {
    if (Event *e = findEvent(handle)) {
      e->recorded = true;
      e->at = eventState().clock;
    }
  });
  return kSuccess;
}

/// The fake does the work when it is issued, so every event is already
/// recorded: a wait only checks its handles and counts.
CUresult cuStreamWaitEvent(void *stream, void *handle, unsigned int flags) {
  const char *entry = "cuStreamWaitEvent";
  FAKE_ENTER(entry);
  if (!findEvent(handle))
    return violation(kInvalidHandle, entry, "not a live event");
  if ((stream && !mockcuda::streamValid(stream)) || flags != 0)
    return violation(kInvalidValue, entry,
                     "not a live stream of the current context, or flags");
  if (mockcuda::capturing(stream))
    return violation(kInvalidValue, entry, "the stream is capturing");
  mockcuda::recordEvent(entry);
  return kSuccess;
}

CUresult cuEventQuery(void *handle) {
  return eventDone("cuEventQuery", handle);
}

/// The function runs when the stream's work before it is done: at once,
/// or at each launch of the graph being captured (a host node).
CUresult cuLaunchHostFunc(void *stream, void (*fn)(void *), void *userData) {
  const char *entry = "cuLaunchHostFunc";
  FAKE_ENTER(entry);
  if (!fn)
    return violation(kInvalidValue, entry, "no function");
  if (stream && !mockcuda::streamValid(stream))
    return violation(kInvalidHandle, entry,
                     "not a live stream of the current context");
  mockcuda::submit(stream, [fn, userData] {
    mockcuda::recordEvent("cuLaunchHostFunc");
    fn(userData);
  });
  return kSuccess;
}

CUresult cuEventSynchronize(void *handle) {
  return eventDone("cuEventSynchronize", handle);
}

CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
  const char *entry = "cuEventElapsedTime";
  FAKE_ENTER(entry);
  Event *a = findEvent(start), *b = findEvent(end);
  if (!ms || !a || !b)
    return violation(kInvalidHandle, entry, "not live events");
  if (!a->timed || !b->timed || !a->recorded || !b->recorded)
    return violation(kInvalidHandle, entry,
                     "an event without timing, or never recorded");
  *ms = float(b->at - a->at);
  return kSuccess;
}

CUresult cuEventDestroy_v2(void *handle) {
  const char *entry = "cuEventDestroy_v2";
  FAKE_ENTER(entry);
  if (!eventState().events.erase(static_cast<Event *>(handle)))
    return violation(kInvalidHandle, entry, "not a live event");
  return kSuccess;
}

} // extern "C"
