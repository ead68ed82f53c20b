//===- Safetensors.h - read and write safetensors files ---------*- C++ -*-===//
//
// The safetensors format that Hugging Face tools read and write: an 8-byte
// little-endian header length N, N bytes of JSON (each tensor's dtype,
// shape and [begin, end) byte offsets into the data that follows, and an
// optional "__metadata__" map of strings), padded with spaces to a multiple
// of 8, then the tensors' bytes, little-endian, C order, without gaps.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SAFETENSORS_H
#define MEMFIT_RUNTIME_SAFETENSORS_H

#include "memfit/runtime/Status.h"
#include "memfit/runtime/Tensor.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace memfit::rt {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Writes `tensors` (names unique, data in the given order) and `metadata`
/// through a temporary that is flushed and renamed over `path`.
Status
writeSafetensors(const std::string &path, const NamedTensors &tensors,
                 const std::map<std::string, std::string> &metadata = {});

/// Reads a safetensors file; the tensors in the order of their offsets.
/// Every header field is checked (dtypes memfit knows, shapes, offsets
/// within the file, covering the data without gaps or overlaps), and
/// errors name the file and the tensor.
StatusOr<NamedTensors> readSafetensors(const std::string &path);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SAFETENSORS_H
