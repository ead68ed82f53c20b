//===- Format.h - printf into a std::string (internal) ----------*- C++ -*-===//

#ifndef MEMFIT_RUNTIME_SRC_FORMAT_H
#define MEMFIT_RUNTIME_SRC_FORMAT_H

#include <cstdio>
#include <string>

namespace memfit::rt {

/// printf into a std::string, for lines of at most 255 characters.
template <typename... Args>
std::string format(const char *pattern, Args... args) {
  char text[256];
  std::snprintf(text, sizeof(text), pattern, args...);
  return text;
}

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_FORMAT_H
