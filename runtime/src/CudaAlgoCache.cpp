//===- CudaAlgoCache.cpp - cuBLASLt's algorithm choices, kept on disk -----===//
//
// The algorithm cuBLASLt's heuristic picks for a contraction's plan (its
// shape, layouts, alignments, epilogue and workspace: the plan's key) is
// kept in the session's cache directory, in a file per GPU, driver and
// cuBLASLt version, so that a later session of the executable takes it
// without asking the heuristic again; a choice of no algorithm (an
// epilogue cuBLASLt lacks for the shape) is kept as well. Each line is
// `<key> <usable> <workspace bytes> <the algorithm's 8 words in hex>`;
// lines that do not parse are ignored, and the file is rewritten whole
// (atomically) once a run that added plans has ended (synchronize) and when
// the backend closes, so ranks that share the directory lose at most each
// other's latest additions.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "Files.h"
#include "Hash.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace memfit::rt::cuda {

void CudaBackend::openAlgoCache(const SessionOptions &options) {
  algoCachePath_.clear();
  cachedAlgos_.clear();
  if (options.disableCache || options.cacheDir.empty() || !lt_)
    return;
  std::string identity = name_ + "|" + std::to_string(driverVersion_) + "|" +
                         std::to_string(lt_->cublasLtGetVersion());
  algoCachePath_ = options.cacheDir + "/cublaslt-" +
                   hex64(hash64(identity.data(), identity.size())) + ".algos";
  StatusOr<std::string> text = readFile(algoCachePath_);
  if (!text)
    return; // none yet
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string key, hex;
    CachedAlgo cached;
    int usable = 0;
    if (!(fields >> key >> usable >> cached.workspace >> hex) ||
        hex.size() != 2 * sizeof cached.algo || (usable != 0 && usable != 1))
      continue;
    cached.usable = usable == 1;
    // The algorithm's 8 words, each as hex64 writes it.
    bool parsed = true;
    for (size_t i = 0; i < 8 && parsed; ++i) {
      std::string word = hex.substr(16 * i, 16);
      char *end = nullptr;
      cached.algo.data[i] = std::strtoull(word.c_str(), &end, 16);
      parsed = end == word.c_str() + word.size();
    }
    if (parsed)
      cachedAlgos_[key] = cached;
  }
}

void CudaBackend::rememberAlgo(const std::string &key, const MatmulPlan &plan) {
  if (algoCachePath_.empty())
    return;
  CachedAlgo &cached = cachedAlgos_[key];
  cached.usable = plan.usable;
  cached.workspace = plan.workspace;
  cached.algo = plan.algo;
  algoCacheDirty_ = true;
}

void CudaBackend::flushAlgoCache() {
  if (!algoCacheDirty_)
    return;
  algoCacheDirty_ = false;
  std::string text;
  for (const auto &[k, entry] : cachedAlgos_) {
    text += k + " " + (entry.usable ? "1 " : "0 ") +
            std::to_string(entry.workspace) + " ";
    for (uint64_t word : entry.algo.data)
      text += hex64(word);
    text += "\n";
  }
  // A cache: a directory that cannot be written only costs the heuristic.
  (void)makeDirectories(algoCachePath_.substr(0, algoCachePath_.rfind('/')));
  (void)writeFileAtomic(algoCachePath_, text.data(), text.size());
}

} // namespace memfit::rt::cuda
