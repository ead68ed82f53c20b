//===- ReplayMain.cpp - run a fuzz target over files ----------------------===//
//
// A main() for the fuzz targets without libFuzzer, so that the normal build
// replays the seed and regression corpora (each file, or each file of each
// folder, given on the command line) in the lit suite. It prints how many
// inputs ran; a crash or sanitizer report fails the run as it would fail
// the fuzzer. A target that defines LLVMFuzzerReplayFile is told each
// file's path before its bytes (the compile target reads a variant from
// the name).
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/// Optional: defined by the targets that want each replayed file's path.
extern "C" void LLVMFuzzerReplayFile(const char *path) __attribute__((weak));

int main(int argc, char **argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!llvm::sys::fs::is_directory(argv[i])) {
      files.push_back(argv[i]);
      continue;
    }
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(argv[i], ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::sys::fs::is_regular_file(it->path()))
        files.push_back(it->path());
    if (ec) {
      llvm::errs() << argv[0] << ": " << argv[i] << ": " << ec.message()
                   << "\n";
      return 1;
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::errs() << argv[0] << ": " << file << ": "
                   << buffer.getError().message() << "\n";
      return 1;
    }
    llvm::StringRef bytes = (*buffer)->getBuffer();
    if (LLVMFuzzerReplayFile)
      LLVMFuzzerReplayFile(file.c_str());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  llvm::outs() << "replayed " << files.size() << " inputs\n";
  return 0;
}
