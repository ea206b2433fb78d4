// What loom's small libmtmd golden tools (mtmd-embeddings.cpp, mtmd-generate.cpp) share: the
// base64 of raw bytes their JSON carries floats in, and one way to fail.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mtmd_tool {

inline std::string base64(const void* data, size_t n) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const unsigned v = p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += t[v >> 18 & 63];
    out += t[v >> 12 & 63];
    out += i + 1 < n ? t[v >> 6 & 63] : '=';
    out += i + 2 < n ? t[v & 63] : '=';
  }
  return out;
}

// the tool's name, for its error lines (set once in main)
inline const char* tool_name = "mtmd-tool";

[[noreturn]] inline void die(const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", tool_name, why.c_str());
  std::exit(1);
}

}  // namespace mtmd_tool
