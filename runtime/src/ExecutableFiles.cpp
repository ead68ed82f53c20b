//===- ExecutableFiles.cpp - executables on disk ---------------------------===//
//
// saveExecutable and loadExecutable: a directory of manifest.json, the CUDA
// source, weights.bin and weights.sum, each written atomically.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Manifest.h"

#include "Files.h"
#include "Hash.h"

#include <cstdint>
#include <string>
#include <vector>

namespace memfit::rt {

namespace {

/// weights.sum: weights.bin's size and hash64, so that a truncated,
/// replaced or corrupted weights file is refused when loaded. Executables
/// saved before hash64 have "fnv1a64:" sums, still checked.
std::string weightsSum(const std::vector<uint8_t> &weights) {
  return std::to_string(weights.size()) +
         " hash64:" + hex64(hash64(weights.data(), weights.size())) + "\n";
}

/// Checks weights.bin against the weights.sum saved with it (absent from
/// executables written by hand or by older versions: then only the size
/// bound of the manifest is checked).
Status checkWeightsSum(const std::string &directory,
                       const std::vector<uint8_t> &weights) {
  std::string sumPath = directory + "/weights.sum";
  if (!fileExists(sumPath))
    return Status::ok();
  StatusOr<std::string> sum = readFile(sumPath);
  if (!sum)
    return sum.status();
  unsigned long long bytes = 0;
  char kind[9] = {0}, hex[17] = {0};
  if (std::sscanf(sum->c_str(), "%llu %8[a-z0-9]:%16[0-9a-f]", &bytes, kind,
                  hex) != 3 ||
      std::string(hex).size() != 16 ||
      (std::string(kind) != "hash64" && std::string(kind) != "fnv1a64"))
    return invalidArgument(sumPath + ": malformed (expected '<bytes> "
                                     "hash64:<16 hex digits>')");
  std::string weightsPath = directory + "/weights.bin";
  if (bytes != weights.size())
    return invalidArgument(
        weightsPath + ": has " + std::to_string(weights.size()) +
        " bytes, but the executable was saved with " + std::to_string(bytes) +
        " (weights.sum): the file was truncated or "
        "replaced; save the executable again");
  uint64_t hash = std::string(kind) == "hash64"
                      ? hash64(weights.data(), weights.size())
                      : fnv1a64(weights.data(), weights.size());
  if (hex64(hash) != hex)
    return invalidArgument(weightsPath +
                           ": the data does not match its checksum in "
                           "weights.sum: the file is corrupt or was changed "
                           "after saving; save the executable again");
  return Status::ok();
}

} // namespace

Status saveExecutable(const Executable &executable,
                      const std::string &directory) {
  const Manifest &m = executable.manifest;
  std::string where = "saveExecutable: " + directory;
  MEMFIT_RT_RETURN_IF_ERROR(m.validate().withContext(where));
  if (executable.planOnly)
    return invalidArgument(where + ": the executable was compiled to plan "
                                   "only, without its weights");
  if (executable.weights.size() > m.weightsBytes + m.initializedHostBytes)
    return invalidArgument(where + ": weights has " +
                           std::to_string(executable.weights.size()) +
                           " bytes but the manifest says weightsBytes " +
                           std::to_string(m.weightsBytes) + " and "
                           "initializedHostBytes " +
                           std::to_string(m.initializedHostBytes));
  MEMFIT_RT_RETURN_IF_ERROR(makeDirectories(directory).withContext(where));

  std::string json = manifestToJson(m);
  std::string sum = weightsSum(executable.weights);
  struct File {
    std::string name;
    const void *data;
    size_t size;
    std::string temporary;
  } files[] = {
      {"manifest.json", json.data(), json.size(), ""},
      {"kernels.cu", m.source.data(), m.source.size(), ""},
      {"weights.bin", executable.weights.data(), executable.weights.size(), ""},
      {"weights.sum", sum.data(), sum.size(), ""},
  };
  // Write every temporary first, then rename them all.
  auto removeTemporaries = [&] {
    for (File &f : files)
      if (!f.temporary.empty())
        std::remove(f.temporary.c_str());
  };
  for (File &f : files) {
    std::string temporary = temporarySibling(directory + "/" + f.name);
    Status written = writeFile(temporary, f.data, f.size);
    if (!written) {
      removeTemporaries();
      return written.withContext("saveExecutable");
    }
    f.temporary = temporary;
  }
  for (File &f : files) {
    Status renamed = renameFile(f.temporary, directory + "/" + f.name);
    if (!renamed) {
      removeTemporaries();
      return renamed.withContext("saveExecutable");
    }
    f.temporary.clear();
  }
  return Status::ok();
}

StatusOr<Executable> loadExecutable(const std::string &directory) {
  std::string manifestPath = directory + "/manifest.json";
  StatusOr<std::string> json = readFile(manifestPath);
  if (!json)
    return json.status().withContext("loadExecutable");
  StatusOr<Manifest> manifest = manifestFromJson(*json);
  if (!manifest)
    return manifest.status().withContext(manifestPath);
  Executable executable;
  executable.manifest = std::move(*manifest);

  StatusOr<std::string> source = readFile(directory + "/kernels.cu");
  if (!source)
    return source.status().withContext("loadExecutable");
  executable.manifest.source = std::move(*source);

  std::string weightsPath = directory + "/weights.bin";
  StatusOr<std::vector<uint8_t>> weights = readFileBytes(weightsPath);
  if (!weights)
    return weights.status().withContext("loadExecutable");
  const Manifest &m = executable.manifest;
  if (weights->size() > m.weightsBytes + m.initializedHostBytes)
    return invalidArgument(weightsPath + ": has " +
                           std::to_string(weights->size()) +
                           " bytes, more than the manifest's weightsBytes " +
                           std::to_string(m.weightsBytes) + " and "
                           "initializedHostBytes " +
                           std::to_string(m.initializedHostBytes));
  executable.weights = std::move(*weights);
  MEMFIT_RT_RETURN_IF_ERROR(checkWeightsSum(directory, executable.weights)
                                .withContext("loadExecutable"));
  MEMFIT_RT_RETURN_IF_ERROR(
      executable.manifest.validate().withContext(manifestPath));
  return executable;
}

} // namespace memfit::rt
