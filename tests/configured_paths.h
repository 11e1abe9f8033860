// Paths the build configured for tests and benchmarks (test models, test data, the source tree, the gspo binary, the
// pinned Python), read at run time from configured_paths.txt beside the running executable, which
// tests/CMakeLists.txt and CMakeLists.txt write. They are not compiled in, so no object file depends on where the
// checkout lives and a fresh clone (CI) compiles the tests from the per-machine compiler cache.
#pragma once
#include <unistd.h>

#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

namespace gspo::test {

// The value of KEY in configured_paths.txt; throws naming the file and the key when either is missing.
inline const std::string& configured(const std::string& key) {
  static const auto values = [] {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string(".");
    dir = dir.substr(0, dir.rfind('/'));
    std::map<std::string, std::string> v;
    std::ifstream in(dir + "/configured_paths.txt");
    for (std::string line; std::getline(in, line);) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) v[line.substr(0, eq)] = line.substr(eq + 1);
    }
    v["(file)"] = dir + "/configured_paths.txt";
    return v;
  }();
  const auto it = values.find(key);
  if (it == values.end())
    throw std::runtime_error(values.at("(file)") + " has no " + key + " (re-run cmake to write it)");
  return it->second;
}

}  // namespace gspo::test

#define GSPO_TEST_MODELS (::gspo::test::configured("GSPO_TEST_MODELS").c_str())
#define GSPO_TEST_DATA (::gspo::test::configured("GSPO_TEST_DATA").c_str())
#define GSPO_SOURCE_DIR (::gspo::test::configured("GSPO_SOURCE_DIR").c_str())
#define GSPO_BINARY (::gspo::test::configured("GSPO_BINARY").c_str())
#define GSPO_PYTHON (::gspo::test::configured("GSPO_PYTHON").c_str())
