//===- ExternalData.cpp - tensor data in files next to the model ----------===//
//
// readExternalData: the bytes of a tensor whose data_location is EXTERNAL,
// confined to the model's folder (a relative location without '..' whose
// real path, symbolic links followed, is still inside it) and to the file
// (offset and length checked against its size before anything is read).
// The importer's TensorLoader and OnnxExport (which copies a model's weights)
// read external data through it.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

/// Whether `path` names `dir` or something inside it.
static bool isWithin(StringRef path, StringRef dir) {
  if (!path.starts_with(dir))
    return false;
  StringRef rest = path.drop_front(dir.size());
  return rest.empty() || llvm::sys::path::is_separator(rest.front()) ||
         llvm::sys::path::is_separator(dir.back());
}

llvm::Expected<std::string> mlir::memfit::onnx_import::readExternalData(
    const onnx::TensorProto &t, StringRef modelDir,
    std::optional<uint64_t> expectedBytes, std::string *readPath) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &kv : t.external_data()) {
    uint64_t *field = kv.key() == "offset"   ? &offset
                      : kv.key() == "length" ? &length.emplace()
                                             : nullptr;
    if (kv.key() == "location")
      location = kv.value();
    else if (field && StringRef(kv.value()).getAsInteger(10, *field))
      return llvm::createStringError("its " + kv.key() + " '" + kv.value() +
                                     "' is not a byte count");
  }
  if (location.empty())
    return llvm::createStringError("it has no location");
  // The data must stay inside the model's folder: a relative path without
  // '..' whose real path (symbolic links followed) is still inside it.
  if (llvm::sys::path::is_absolute(location) ||
      llvm::sys::path::has_root_name(location) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                          llvm::sys::path::end(location)),
                         ".."))
    return llvm::createStringError("location '" + location +
                                   "' is outside the model's folder (it must "
                                   "be a relative path without '..')");
  SmallString<256> dir(modelDir.empty() ? StringRef(".") : modelDir);
  SmallString<256> path(dir);
  llvm::sys::path::append(path, location);
  SmallString<256> realDir, realPath;
  if (std::error_code ec = llvm::sys::fs::real_path(dir, realDir))
    return llvm::createStringError("'" + dir.str().str() +
                                   "': " + ec.message());
  if (std::error_code ec = llvm::sys::fs::real_path(path, realPath))
    return llvm::createStringError(ec, "'" + path.str().str() +
                                           "': " + ec.message());
  if (!isWithin(realPath, realDir))
    return llvm::createStringError("location '" + location +
                                   "' leads outside the model's folder (to '" +
                                   realPath.str().str() + "')");
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(realPath, status))
    return llvm::createStringError("'" + path.str().str() +
                                   "': " + ec.message());
  if (!llvm::sys::fs::is_regular_file(status))
    return llvm::createStringError("'" + path.str().str() +
                                   "' is not a regular file");
  uint64_t size = status.getSize();
  // Overflow-safe: offset + length <= size, written without the sum.
  if (offset > size || (length && *length > size - offset))
    return llvm::createStringError(
        "'" + path.str().str() + "' has " + std::to_string(size) +
        " bytes, the tensor's data is at offset " + std::to_string(offset) +
        (length ? ", length " + std::to_string(*length) : std::string()));
  uint64_t bytes = length.value_or(size - offset);
  if (expectedBytes && bytes != *expectedBytes)
    return llvm::createStringError(
        "'" + path.str().str() + "' holds " + std::to_string(bytes) +
        " bytes for it" +
        (offset ? " from offset " + std::to_string(offset) : std::string()) +
        " but its shape needs " + std::to_string(*expectedBytes));
  auto buffer = llvm::MemoryBuffer::getFileSlice(realPath, bytes, offset,
                                                 /*IsVolatile=*/false);
  if (!buffer)
    return llvm::createStringError("'" + path.str().str() +
                                   "': " + buffer.getError().message());
  if (readPath)
    *readPath = realPath.str().str();
  return (*buffer)->getBuffer().str();
}
