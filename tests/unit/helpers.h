// Shared fixtures for the unit tests: paths of the exported test models (made by make_test_models.py, the
// ctest fixture "models"), data in ../shared with its skip marker, and small tensor helpers.
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "configured_paths.h"
#include "gspo/config/choices.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/model/policy.h"
#include "gspo/reward/code/sandbox.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::test {

// The message of the ConfigError that loading `yaml` (named run.yaml) with `sets` throws; "<no error>" when it loads.
inline std::string config_error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    config::load_text(yaml, "run.yaml", sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

// Sandbox limits for tests: every adversary is stopped within a few seconds.
inline reward::SandboxLimits fast_sandbox_limits() {
  reward::SandboxLimits l;
  l.cpu_seconds = 2;
  l.wall_seconds = 4;
  l.memory_mb = 512;
  l.output_bytes = 1 << 16;
  return l;
}

inline std::string model_path(const std::string& name) { return std::string(GSPO_TEST_MODELS) + "/" + name; }
inline std::string data_path(const std::string& name) { return std::string(GSPO_TEST_DATA) + "/" + name; }

// A file in ../shared, the folder beside the checkout that CI has and a bare clone may lack.
inline std::string shared_path(const std::string& rel) { return std::string(GSPO_SOURCE_DIR) + "/../shared/" + rel; }

// True when `path` exists. Otherwise prints "SKIPPED (no ../shared): PATH", which ctest's SKIP_REGULAR_EXPRESSION
// "SKIPPED \(" reports as a skipped test (not a passed one), and returns false. Call it first and return at once
// on false, before any assertion: ctest skips on the marker whatever else the test did, so a check made before it
// would be hidden.
inline bool shared_data_or_skip(const std::string& path) {
  if (core::exists(path)) return true;
  std::cout << "SKIPPED (no ../shared): " << path << std::endl;
  return false;
}

// The enum value of an option's name (as the golden JSON files spell them); throws on an unknown name.
template <class E>
E parse(const std::string& name) {
  auto v = config::parse_choice<E>(name);
  if (!v) throw std::runtime_error("not a name of this option: '" + name + "'");
  return *v;
}

// Live processes on this machine whose command line contains `marker` (a zombie's command line is empty, so it
// never counts) and, given `cwd_prefix`, whose working directory starts with it: a sandbox runs in
// /tmp/gspo-sbx-<pid of its owner>-..., so another test's sandboxes, running beside this one under ctest -j, do not
// count.
inline int processes_with(const std::string& marker, const std::string& cwd_prefix = "") {
  int n = 0;
  DIR* d = opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string proc = std::string("/proc/") + e->d_name;
    std::ifstream f(proc + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), {});
    if (cmd.find(marker) == std::string::npos) continue;
    char cwd[4096];
    const ssize_t len = cwd_prefix.empty() ? 0 : readlink((proc + "/cwd").c_str(), cwd, sizeof cwd);
    if (cwd_prefix.empty() || (len > 0 && std::string(cwd, static_cast<size_t>(len)).rfind(cwd_prefix, 0) == 0)) ++n;
  }
  closedir(d);
  return n;
}

inline model::Policy load_tiny(const std::string& name = "tiny.pt") { return model::Policy::load(model_path(name)); }

// Full-forward log-probs of the response columns of a RolloutBatch-like layout at temperature t.
inline torch::Tensor response_logprobs(model::Policy& p, const torch::Tensor& ids, const torch::Tensor& mask,
                                       int64_t prompt_len, double t) {
  torch::NoGradGuard g;
  auto logits = p.logits(ids, mask);
  const int64_t R = ids.size(1) - prompt_len;
  auto pred = logits.narrow(1, prompt_len - 1, R) / t;
  auto targets = ids.narrow(1, prompt_len, R);
  return pred.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
}

// Sends this process's stderr (file descriptor 2: the log's sink) into `path` for the object's lifetime.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::dup2(fd, 2), ::close(fd);
  }
  ~StderrToFile() {
    std::fflush(stderr);
    if (saved_ >= 0) ::dup2(saved_, 2), ::close(saved_);
  }
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

 private:
  int saved_ = -1;
};

// An empty run directory under the test models' runs/ (removed if it exists).
inline std::string fresh_dir(const std::string& name) {
  const std::string dir = std::string(GSPO_TEST_MODELS) + "/runs/" + name;
  core::remove_all(dir);
  return dir;
}

// The run's metrics lines without the fields that vary between identical runs (timings, throughput, memory peaks).
inline std::vector<nlohmann::json> read_metrics(const std::string& dir) {
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    for (auto it = j.begin(); it != j.end();) {
      const std::string k = it.key();
      if (k.rfind("time_", 0) == 0 || k.find("per_s") != std::string::npos || k.rfind("peak_", 0) == 0)
        it = j.erase(it);
      else
        ++it;
    }
    out.push_back(j);
  }
  return out;
}

}  // namespace gspo::test
