// Helpers shared by the benchmarks: run the Python reference in the same run and read its figure.
#pragma once
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "configured_paths.h"

namespace gspo::bench {

// Runs `cmd` and returns the number printed after "tokens_per_s=", or -1 when the reference failed.
inline double python_tokens_per_s(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::string out;
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  auto pos = out.find("tokens_per_s=");
  if (rc != 0 || pos == std::string::npos) {
    std::fprintf(stderr, "reference failed: %s\n%s\n", cmd.c_str(), out.c_str());
    return -1;
  }
  return std::stod(out.substr(pos + 13));
}

// "1,8,32" -> {1, 8, 32} (command-line lists of sizes and thread counts).
inline std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoll(item));
  return out;
}

}  // namespace gspo::bench
