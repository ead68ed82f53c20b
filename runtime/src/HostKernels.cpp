//===- HostKernels.cpp - the host backend's compiled kernels --------------===//
//
// Compiling an executable's CUDA C++ with the host C++ compiler against the
// emulation header, with the per-kernel cache of HostKernels.h. A
// translation unit is
//
//   #include "<cache>/host-header-<key>.h"   <emulation header, precompiled>
//   #pragma GCC visibility push(hidden)
//   #line 1 "kernels.cu"           <the source before the first kernel>
//   #line N "kernels.cu"           <a kernel, renamed memfit_k_<key>>  ...
//   extern "C" int memfit_launch_k<key>(...) { ... }                    ...
//
// so compiler errors point at lines of kernels.cu.
//
//===----------------------------------------------------------------------===//

#include "HostKernels.h"

#include "Files.h"
#include "HostCompiler.h"
#include "KernelCache.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <dlfcn.h>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unistd.h>

namespace memfit::rt {

extern const char *const kHostEmulationHeader;

namespace {

/// How every unit and the precompiled header are compiled (a unit is then
/// linked with -shared):
///  - -march=native: the kernels run where they are compiled, so they use
///    the CPU's vector instructions (the cache key has the CPU, cpuKey);
///    -ffp-contract=off keeps every rounding of the scalar code (no fused
///    multiply-adds), so that the results do not depend on the CPU;
///  - -fopenmp-simd: the thread loops are `omp simd` (memfit_cuda_host.h);
///    -fno-trapping-math lets the vectorizer compute both sides of a
///    select (floating-point exceptions are never read);
///  - -fno-math-errno: sqrtf is one instruction (errno is never read);
///  - -fwrapv: signed integer arithmetic wraps, as on a GPU.
/// -O3 compiled the 12-layer GPT's step slower and ran it no faster than
/// -O2 (docs/benchmarks.md).
constexpr const char *kCompileFlags[] = {
    "-O2",          "-march=native",      "-ffp-contract=off",
    "-fopenmp-simd", "-fno-trapping-math", "-fno-math-errno",
    "-std=c++17",   "-fPIC",              "-fwrapv",
    "-w"};
constexpr const char *kDefinition = "extern \"C\" __global__ void ";
/// What a kernel's name is replaced with in its cache key.
constexpr const char *kNamePlaceholder = "MEMFIT_KERNEL_NAME";

std::string compileFlags() {
  std::string flags;
  for (const char *flag : kCompileFlags)
    flags += std::string(" ") + flag;
  return flags;
}

/// What -march=native compiles for: the first processor's identity and
/// features in /proc/cpuinfo (x86: vendor, family, model and its name,
/// flags; Arm: implementer, architecture, part, features), part of every
/// cache key.
const std::string &cpuKey() {
  static const std::string key = [] {
    std::string text;
    if (StatusOr<std::string> info = readFile("/proc/cpuinfo"))
      text = *info;
    std::string key;
    size_t at = 0;
    while (at < text.size()) {
      size_t end = text.find('\n', at);
      end = end == std::string::npos ? text.size() : end;
      std::string line = text.substr(at, end - at);
      at = end + 1;
      if (line.empty() && !key.empty())
        break; // the first processor only
      for (const char *field :
           {"vendor_id", "cpu family", "model", "flags", "CPU implementer",
            "CPU architecture", "CPU part", "Features"})
        if (line.rfind(field, 0) == 0) {
          key += line + "\n";
          break;
        }
    }
    return key.empty() ? std::string("cpu unknown") : key;
  }();
  return key;
}

/// The first occurrence of `needle` at the start of a line of `s`, at or
/// after `from`.
size_t findAtLineStart(const std::string &s, const std::string &needle,
                       size_t from = 0) {
  size_t at = s.find(needle, from);
  while (at != std::string::npos && at != 0 && s[at - 1] != '\n')
    at = s.find(needle, at + 1);
  return at;
}

/// The start of the comment and blank lines just above the line at `at`
/// (which describe the kernel defined there), or `at` when there are none.
size_t commentBlockStart(const std::string &s, size_t at) {
  while (at > 0) {
    size_t prevStart = at >= 2 ? s.rfind('\n', at - 2) : std::string::npos;
    prevStart = prevStart == std::string::npos ? 0 : prevStart + 1;
    std::string line = s.substr(prevStart, at - 1 - prevStart);
    if (!line.empty() && line.compare(0, 2, "//") != 0)
      break;
    at = prevStart;
  }
  return at;
}

/// An executable's source cut into the part before its first kernel and
/// one piece per Manifest::kernels entry (its definition to the comments
/// of the next kernel), each with its name replaced by kNamePlaceholder.
struct SplitSource {
  std::string preamble;
  std::vector<std::string> bodies;
  /// The line of kernels.cu each body starts at.
  std::vector<size_t> lines;
};

/// Nothing when a kernel's definition is not found exactly once at the
/// start of a line (a source not written by memfit's emitter).
std::optional<SplitSource> splitSource(const Manifest &manifest) {
  const std::string &s = manifest.source;
  size_t count = manifest.kernels.size();
  if (count == 0)
    return std::nullopt;
  std::vector<std::pair<size_t, size_t>> starts; // (offset, kernel)
  for (size_t i = 0; i < count; ++i) {
    std::string definition = kDefinition + manifest.kernels[i].name + "(";
    size_t at = findAtLineStart(s, definition);
    if (at == std::string::npos ||
        findAtLineStart(s, definition, at + 1) != std::string::npos)
      return std::nullopt;
    starts.emplace_back(at, i);
  }
  std::sort(starts.begin(), starts.end());
  SplitSource split;
  split.bodies.resize(count);
  split.lines.resize(count);
  split.preamble = s.substr(0, commentBlockStart(s, starts.front().first));
  for (size_t j = 0; j < count; ++j) {
    auto [at, kernel] = starts[j];
    size_t end = j + 1 < count ? commentBlockStart(s, starts[j + 1].first)
                               : s.size();
    if (end < at)
      return std::nullopt;
    // The kernel ends at the first line that is a lone "}"; only blank
    // and comment lines may follow it (a helper function between two
    // kernels would belong to neither: the source is then one unit).
    size_t closing = s.find("\n}", at);
    if (closing == std::string::npos || closing >= end)
      return std::nullopt;
    size_t after = closing + 2;
    if (after < s.size() && s[after] != '\n')
      return std::nullopt;
    for (size_t line = after; line < end;) {
      size_t next = s.find('\n', line + 1);
      next = next == std::string::npos ? s.size() : next;
      std::string text = s.substr(line, next - line);
      size_t first = text.find_first_not_of(" \t\n");
      if (first != std::string::npos && text.compare(first, 2, "//") != 0)
        return std::nullopt;
      line = next;
    }
    std::string body = s.substr(at, end - at);
    size_t nameAt = std::string(kDefinition).size();
    body.replace(nameAt, manifest.kernels[kernel].name.size(),
                 kNamePlaceholder);
    split.bodies[kernel] = std::move(body);
    split.lines[kernel] =
        1 + static_cast<size_t>(std::count(s.begin(), s.begin() + at, '\n'));
  }
  return split;
}

/// The 16 hex digits of a cache path `<dir>/<kind>-<hex>.<ext>`.
std::string keyOf(const std::string &path) {
  size_t dot = path.rfind('.');
  return path.substr(dot - 16, 16);
}

/// Compiles `source` into a shared object in a fresh temporary directory
/// and returns its path; on failure the source is kept for the message.
StatusOr<std::string> compileSource(const std::vector<std::string> &compiler,
                                    const std::string &source,
                                    double &seconds) {
  StatusOr<std::string> directory = makeTemporaryDirectory("memfit-host-");
  if (!directory)
    return directory.status().withContext("host backend");
  std::string sourcePath = *directory + "/kernels_host.cpp";
  std::string libraryPath = *directory + "/kernels_host.so";
  MEMFIT_RT_RETURN_IF_ERROR(
      writeFile(sourcePath, source.data(), source.size())
          .withContext("host backend"));
  std::vector<std::string> argv = compiler;
  argv.insert(argv.end(), std::begin(kCompileFlags), std::end(kCompileFlags));
  argv.insert(argv.end(), {"-shared", "-o", libraryPath, sourcePath});
  auto start = std::chrono::steady_clock::now();
  StatusOr<ProcessResult> result = runProcess(argv);
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
                 .count();
  if (!result) {
    removeDirectoryAndFiles(*directory);
    return result.status().withContext("host backend");
  }
  if (result->exitCode != 0)
    return invalidArgument("host backend: compiling the kernels failed (" +
                           joinWords(argv) + ", exit code " +
                           std::to_string(result->exitCode) + "):\n" +
                           firstLines(result->output, 40) +
                           "(the source is kept at " + sourcePath + ")");
  return libraryPath;
}

/// Loads shared objects once each and finds their launchers.
class Loader {
public:
  explicit Loader(HostKernels &out) : out_(out) {}

  /// The handle of `path`, loading it (and noting its release) the first
  /// time.
  StatusOr<void *> open(const std::string &path) {
    auto it = handles_.find(path);
    if (it != handles_.end())
      return it->second;
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      return internalError("host backend: cannot load " + path + ": " +
                           (why ? why : "dlopen failed"));
    }
    out_.libraries.push_back(handle);
    auto release = reinterpret_cast<memfit_host_release>(
        dlsym(handle, MEMFIT_HOST_RELEASE_SYMBOL));
    if (!release)
      return internalError("host backend: " + path + " lacks " +
                           MEMFIT_HOST_RELEASE_SYMBOL);
    out_.releases.push_back(release);
    handles_[path] = handle;
    return handle;
  }

  static memfit_host_launcher find(void *handle, const std::string &symbol) {
    return reinterpret_cast<memfit_host_launcher>(
        dlsym(handle, symbol.c_str()));
  }

private:
  HostKernels &out_;
  std::map<std::string, void *> handles_;
};

/// The emulation header as a file of the cache, `host-header-<key>.h`, with
/// its precompiled form beside it (`.h.gch`, made once per header, compiler
/// and flags): a translation unit includes the file, and GCC loads the
/// precompiled header instead of parsing the emulation header and the C++
/// library's <cmath> again (0.4 s of the 0.5 s a one-kernel batch took). A
/// compiler that cannot use it (not GCC, or other flags) reads the header.
/// "" when there is no cache or the file cannot be written: the unit then
/// carries the header's text.
std::string cachedHeader(const std::vector<std::string> &compiler,
                         const KernelCache &cache,
                         const std::string &compilerId, double &seconds) {
  // (A directory that an #include cannot name: the text, inlined.)
  if (!cache.enabled() ||
      cache.directory().find_first_of("\"\\\n") != std::string::npos)
    return "";
  size_t size = std::char_traits<char>::length(kHostEmulationHeader);
  std::string path = cache.path("host-header", kHostEmulationHeader,
                                compileFlags(), compilerId, "h");
  std::string precompiled = path + ".gch";
  if (fileExists(path) && fileExists(precompiled))
    return path;
  if (!fileExists(path) && !writeFileAtomic(path, kHostEmulationHeader, size))
    return "";
  // Another process may precompile it too; each renames its own temporary.
  std::string temporary =
      precompiled + "." + std::to_string(getpid()) + ".tmp";
  std::vector<std::string> argv = compiler;
  argv.insert(argv.end(), std::begin(kCompileFlags), std::end(kCompileFlags));
  argv.insert(argv.end(), {"-x", "c++-header", path, "-o", temporary});
  auto start = std::chrono::steady_clock::now();
  StatusOr<ProcessResult> result = runProcess(argv);
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
                 .count();
  if (!result || result->exitCode != 0 || !renameFile(temporary, precompiled))
    std::remove(temporary.c_str());
  return path;
}

/// The start of a translation unit: the header (its text, or an include of
/// the cache's file from cachedHeader), then the kernels' symbols hidden
/// inside the library (so that launchers can inline them; the launchers
/// pop this), then kernels.cu's line numbers.
std::string headerText(const std::string &header) {
  std::string s = header.empty() ? "#line 1 \"memfit_cuda_host.h\"\n" +
                                       std::string(kHostEmulationHeader)
                                 : "#include \"" + header + "\"";
  s += "\n#pragma GCC visibility push(hidden)\n#line 1 \"kernels.cu\"\n";
  return s;
}

/// The launcher's symbol of the kernel whose cache key is `key`.
std::string launcherOf(const std::string &key) {
  return MEMFIT_HOST_LAUNCHER_PREFIX + std::string("k") + key;
}

/// The translation unit of `kernels` (indices into the manifest, one per
/// distinct key), each renamed after its key.
std::string batchSource(const Manifest &manifest, const SplitSource &split,
                        const std::vector<size_t> &kernels,
                        const std::vector<std::string> &keys,
                        const std::string &header) {
  std::string s = headerText(header);
  s += split.preamble;
  for (size_t i : kernels) {
    std::string body = split.bodies[i];
    body.replace(std::string(kDefinition).size(),
                 std::string(kNamePlaceholder).size(), "memfit_k_" + keys[i]);
    s += "\n#line " + std::to_string(split.lines[i]) + " \"kernels.cu\"\n";
    s += body;
  }
  s += "\n#line 1 \"memfit-host-launchers\"\n";
  s += "#pragma GCC visibility pop\n";
  for (size_t i : kernels) {
    s += "// " + manifest.kernels[i].name + "\n";
    s += "extern \"C\" int " + launcherOf(keys[i]) +
         "(const memfit_host_launch *launch, void **args) {\n";
    s += "  return memfit_host::launch<&memfit_k_" + keys[i] +
         ">(launch, args, " +
         (manifest.kernels[i].usesBarriers ? "true" : "false") + ", " +
         (manifest.kernels[i].threadLoops ? "true" : "false") + ");\n}\n";
  }
  return s;
}

/// The whole source as one translation unit, launchers by kernel index
/// (for a source splitSource does not recognize).
std::string wholeSource(const Manifest &manifest, const std::string &header) {
  std::string s = headerText(header);
  s += manifest.source;
  s += "\n#line 1 \"memfit-host-launchers\"\n";
  s += "#pragma GCC visibility pop\n";
  for (size_t i = 0; i < manifest.kernels.size(); ++i) {
    const Kernel &k = manifest.kernels[i];
    s += "extern \"C\" int " MEMFIT_HOST_LAUNCHER_PREFIX + std::to_string(i) +
         "(const memfit_host_launch *launch, void **args) {\n";
    s += "  return memfit_host::launch<&" + k.name + ">(launch, args, " +
         (k.usesBarriers ? "true" : "false") + ", " +
         (k.threadLoops ? "true" : "false") + ");\n}\n";
  }
  return s;
}

/// Moves the shared object at `compiled` (in compileSource's temporary
/// directory) into the cache at `cachePath` (or uses it where it is when the
/// cache cannot take it), loads it and removes the temporary directory.
StatusOr<void *> openCompiled(const std::string &compiled,
                              const KernelCache &cache,
                              const std::string &cachePath, Loader &loader) {
  std::string libraryPath = compiled;
  if (!cachePath.empty()) {
    if (StatusOr<std::string> bytes = readFile(compiled))
      cache.store(cachePath, std::vector<char>(bytes->begin(), bytes->end()));
    if (fileExists(cachePath))
      libraryPath = cachePath;
  }
  StatusOr<void *> handle = loader.open(libraryPath);
  removeDirectoryAndFiles(compiled.substr(0, compiled.rfind('/')));
  return handle;
}

/// Compiles `source` into the cache at `cachePath` (or privately when the
/// cache cannot take it) and loads it.
StatusOr<void *> compileAndOpen(const std::vector<std::string> &compiler,
                                const std::string &source,
                                const KernelCache &cache,
                                const std::string &cachePath, Loader &loader,
                                double &seconds) {
  StatusOr<std::string> compiled = compileSource(compiler, source, seconds);
  if (!compiled)
    return compiled.status();
  return openCompiled(*compiled, cache, cachePath, loader);
}

/// Kernels per translation unit below which a compile is not split
/// further: each unit reads the precompiled header and starts a compiler.
constexpr size_t kMinKernelsPerUnit = 4;

/// `kernels` (indices of split.bodies) in at most `units` groups of about
/// the same length of source (the longest first, each to the shortest
/// group so far), each group in the executable's order.
std::vector<std::vector<size_t>> balanceUnits(const SplitSource &split,
                                              const std::vector<size_t> &kernels,
                                              unsigned units) {
  size_t count = std::max<size_t>(
      1, std::min<size_t>(units, (kernels.size() + kMinKernelsPerUnit - 1) /
                                     kMinKernelsPerUnit));
  std::vector<size_t> order = kernels;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return split.bodies[a].size() > split.bodies[b].size();
  });
  std::vector<std::vector<size_t>> groups(count);
  std::vector<size_t> lengths(count, 0);
  for (size_t i : order) {
    size_t g = std::min_element(lengths.begin(), lengths.end()) -
               lengths.begin();
    groups[g].push_back(i);
    lengths[g] += split.bodies[i].size();
  }
  for (std::vector<size_t> &group : groups)
    std::sort(group.begin(), group.end());
  return groups;
}

/// One translation unit of a parallel compile.
struct Unit {
  std::vector<size_t> kernels;
  std::string source, cachePath;
  StatusOr<std::string> compiled = notFound("not compiled");
};

/// Compiles every unit, side by side, each on a thread of its own that
/// waits for the compiler's process. `progress` (if set) hears, once the
/// compile took more than two seconds, how many units are done.
void compileUnits(const std::vector<std::string> &compiler,
                  std::vector<Unit> &units, size_t kernels,
                  const std::function<void(const std::string &)> &progress) {
  std::mutex mutex;
  std::condition_variable finished;
  size_t done = 0;
  std::vector<std::thread> threads;
  threads.reserve(units.size());
  for (Unit &unit : units)
    threads.emplace_back([&, u = &unit] {
      double seconds = 0; // the caller times the units together
      u->compiled = compileSource(compiler, u->source, seconds);
      std::lock_guard<std::mutex> lock(mutex);
      ++done;
      finished.notify_all();
    });
  auto start = std::chrono::steady_clock::now();
  {
    // Quiet for two seconds; after, a line at first and at each unit done.
    std::unique_lock<std::mutex> lock(mutex);
    bool quiet = finished.wait_until(lock, start + std::chrono::seconds(2),
                                     [&] { return done == units.size(); });
    size_t told = units.size() + 1;
    while (!quiet) {
      if (progress && done != told) {
        double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        char line[160];
        std::snprintf(line, sizeof(line),
                      "compiling %zu kernels for the host: %zu of %zu units "
                      "done, %.0f s",
                      kernels, done, units.size(), seconds);
        progress(line);
      }
      told = done;
      if (done == units.size())
        break;
      finished.wait(lock, [&] { return done != told; });
    }
  }
  for (std::thread &t : threads)
    t.join();
}

} // namespace

HostKernels::~HostKernels() {
  for (void *library : libraries)
    dlclose(library);
}

Status loadHostKernels(const Manifest &manifest,
                       const std::vector<std::string> &compiler,
                       const std::string &version,
                       const SessionOptions &options, unsigned jobs,
                       SessionTimings &timings, HostKernels &out,
                       bool onHostOnly) {
  auto wanted = [&](size_t i) {
    return !onHostOnly || manifest.kernels[i].onHost;
  };
  KernelCache cache(options);
  std::string compilerId = joinWords(compiler) + "\n" + version + "\n" + cpuKey();
  std::string flags = "host" + compileFlags();
  Loader loader(out);
  timings.cacheHit = false;
  timings.compileSeconds = 0;
  out.launchers.assign(manifest.kernels.size(), nullptr);

  std::optional<SplitSource> split = splitSource(manifest);
  if (!split) {
    // One translation unit for the whole source, cached as a whole (keyed
    // by its text with the header's).
    std::string cachePath =
        cache.enabled() ? cache.path("host", wholeSource(manifest, ""), flags,
                                     compilerId, "so")
                        : "";
    StatusOr<void *> handle = notFound("not cached");
    if (!cachePath.empty() && fileExists(cachePath))
      handle = loader.open(cachePath);
    timings.cacheHit = static_cast<bool>(handle);
    if (!handle)
      handle = compileAndOpen(
          compiler,
          wholeSource(manifest, cachedHeader(compiler, cache, compilerId,
                                             timings.compileSeconds)),
          cache, cachePath, loader, timings.compileSeconds);
    if (!handle)
      return handle.status();
    for (size_t i = 0; i < manifest.kernels.size(); ++i) {
      if (!wanted(i))
        continue;
      std::string symbol = MEMFIT_HOST_LAUNCHER_PREFIX + std::to_string(i);
      out.launchers[i] = Loader::find(*handle, symbol);
      if (!out.launchers[i])
        return internalError("host backend: the kernels' library lacks " +
                             symbol);
    }
    return Status::ok();
  }

  // Each kernel's key: its source without its name, in the context it is
  // compiled in (header, preamble, compiler, flags).
  std::string context = compilerId + "\n" +
                        std::to_string(fnv1a64(kHostEmulationHeader,
                                                 std::char_traits<char>::length(
                                                     kHostEmulationHeader))) +
                        "\n" + split->preamble;
  std::vector<std::string> keys(manifest.kernels.size()), indexPaths(keys.size());
  KernelCache keyer(SessionOptions{}); // paths only, when the cache is off
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string target =
        flags + (manifest.kernels[i].usesBarriers ? " barriers" : "") +
        (manifest.kernels[i].threadLoops ? " loops" : "");
    std::string path =
        (cache.enabled() ? cache : keyer)
            .path("host-kernel", split->bodies[i], target, context, "lib");
    keys[i] = keyOf(path);
    indexPaths[i] = cache.enabled() ? path : "";
  }

  // The kernels compiled before, from the objects their index names.
  std::vector<size_t> missing;
  std::set<std::string> missingKeys;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!wanted(i))
      continue;
    if (cache.enabled())
      if (std::optional<std::vector<char>> index = cache.load(indexPaths[i])) {
        std::string library =
            cache.directory() + "/" + std::string(index->begin(), index->end());
        if (fileExists(library))
          if (StatusOr<void *> handle = loader.open(library))
            out.launchers[i] = Loader::find(*handle, launcherOf(keys[i]));
      }
    if (!out.launchers[i] && missingKeys.insert(keys[i]).second)
      missing.push_back(i);
  }
  timings.cacheHit = missing.empty();
  if (missing.empty())
    return Status::ok();

  // The rest, in up to `jobs` translation units compiled side by side,
  // each a shared object of its own, then indexed.
  std::string header =
      cachedHeader(compiler, cache, compilerId, timings.compileSeconds);
  std::vector<Unit> units;
  for (std::vector<size_t> &group : balanceUnits(*split, missing, jobs)) {
    Unit unit;
    unit.source = batchSource(manifest, *split, group, keys, header);
    unit.cachePath =
        cache.enabled()
            ? cache.path("host-batch", unit.source, flags, compilerId, "so")
            : "";
    unit.kernels = std::move(group);
    units.push_back(std::move(unit));
  }
  auto start = std::chrono::steady_clock::now();
  compileUnits(compiler, units, missing.size(), options.progress);
  timings.compileSeconds += std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count();
  // Every unit's temporary directory goes, whichever failed.
  Status failure = Status::ok();
  std::map<std::string, void *> handleOfKey;
  for (Unit &unit : units) {
    if (!unit.compiled) {
      if (failure.isOk())
        failure = unit.compiled.status();
      continue;
    }
    StatusOr<void *> handle =
        openCompiled(*unit.compiled, cache, unit.cachePath, loader);
    if (!handle) {
      if (failure.isOk())
        failure = handle.status();
      continue;
    }
    if (cache.enabled() && fileExists(unit.cachePath)) {
      std::string name = unit.cachePath.substr(unit.cachePath.rfind('/') + 1);
      for (size_t i : unit.kernels)
        cache.store(indexPaths[i], std::vector<char>(name.begin(), name.end()));
    }
    for (size_t i : unit.kernels)
      handleOfKey[keys[i]] = *handle;
  }
  if (!failure.isOk())
    return failure;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (out.launchers[i] || !wanted(i))
      continue;
    out.launchers[i] = Loader::find(handleOfKey.at(keys[i]), launcherOf(keys[i]));
    if (!out.launchers[i])
      return internalError("host backend: the kernels' library lacks " +
                           launcherOf(keys[i]) + " (kernels[" +
                           std::to_string(i) + "] '" + manifest.kernels[i].name +
                           "')");
  }
  return Status::ok();
}

} // namespace memfit::rt
