// What one decode step dispatches and runs, from the LibTorch (Kineto) profiler (#53 item 3): the operators the CPU
// dispatches (aten::*, counted at every nesting level, as torch.profiler's table counts them), and on CUDA the device
// kernels with their device time, the attention kernels named apart. bench_rollout --profile N records two sampling
// calls of N and 2N decode steps and reports their difference over N, so the prompt's prefill, the warm-up and the
// per-call set-up cancel: the figures are a steady decode step's. Non-goal: a trace file (torch.profiler's
// export_chrome_trace does that from Python).
#pragma once
#include <torch/csrc/autograd/profiler_kineto.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace gspo::bench {

// One name's count and time over a profiled region.
struct ProfiledName {
  int64_t calls = 0;
  double device_us = 0;  // kernels: device time; operators: 0
};

struct Profile {
  std::map<std::string, ProfiledName> ops;      // CPU operators ("aten::mm")
  std::map<std::string, ProfiledName> kernels;  // device kernels, memcpy and memset
  double wall_ms = 0;                            // the region's wall time (profiler overhead included)
  int64_t op_calls() const {
    int64_t n = 0;
    for (const auto& [k, v] : ops) n += v.calls;
    return n;
  }
  int64_t kernel_calls() const {
    int64_t n = 0;
    for (const auto& [k, v] : kernels) n += v.calls;
    return n;
  }
  double device_us() const {
    double t = 0;
    for (const auto& [k, v] : kernels) t += v.device_us;
    return t;
  }
};

// Runs `region` under the profiler: CPU operators always, CUDA kernels when `cuda` (CUPTI; when it cannot be had the
// kernel map stays empty and the operators are still counted).
inline Profile profile(const std::function<void()>& region, bool cuda) {
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig cfg(torch::profiler::impl::ProfilerState::KINETO);
  std::set<ActivityType> acts{ActivityType::CPU};
  if (cuda) acts.insert(ActivityType::CUDA);
  else setenv("KINETO_LOG_LEVEL", "5", 0);  // a CUDA build on a machine without a GPU: Kineto's "gpuGetDeviceCount failed"
  prof::prepareProfiler(cfg, acts);
  prof::enableProfiler(cfg, acts);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    region();
  } catch (...) {
    prof::disableProfiler();
    throw;
  }
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto result = prof::disableProfiler();
  Profile p;
  p.wall_ms = wall_ms;
  for (const auto& e : result->events()) {
    const std::string name = e.name();
    if (e.deviceType() == c10::DeviceType::CPU) {
      if (name.rfind("aten::", 0) == 0) p.ops[name].calls += 1;
    } else if (e.deviceType() == c10::DeviceType::CUDA) {
      auto& k = p.kernels[name];
      k.calls += 1;
      k.device_us += static_cast<double>(e.durationNs()) / 1000.0;
    }
  }
  return p;
}

// b - a, name by name: what the extra decode steps of `b` added (totals; profile_markdown divides by their number).
inline Profile difference(const Profile& a, const Profile& b) {
  Profile d;
  auto diff = [](const std::map<std::string, ProfiledName>& x, const std::map<std::string, ProfiledName>& y,
                  std::map<std::string, ProfiledName>& out) {
    for (const auto& [name, v] : y) {
      const auto it = x.find(name);
      ProfiledName s{v.calls - (it == x.end() ? 0 : it->second.calls),
                     v.device_us - (it == x.end() ? 0 : it->second.device_us)};
      if (s.calls <= 0 && s.device_us <= 0) continue;
      out[name] = s;
    }
  };
  diff(a.ops, b.ops, d.ops);
  diff(a.kernels, b.kernels, d.kernels);
  d.wall_ms = b.wall_ms - a.wall_ms;
  return d;
}

// Kernels whose names say they compute attention (flash, memory-efficient, cuDNN fused, or the math path's softmax).
inline bool attention_kernel(const std::string& name) {
  static const std::regex re("flash|fmha|attention|mem_eff|efficient|sdpa|softmax", std::regex::icase);
  return std::regex_search(name, re);
}

// A name cut to `n` characters for a table cell, with '|' (a markdown cell's end) replaced.
inline std::string cell_name(std::string s, size_t n = 90) {
  std::replace(s.begin(), s.end(), '|', '/');
  return s.size() > n ? s.substr(0, n - 3) + "..." : s;
}

// Markdown from the difference `step` of `n` decode steps: the per-step totals, then the `top` kernels by device time
// (CUDA) and the `top` operators by count, each a step.
inline std::string profile_markdown(const Profile& step, int64_t n, const std::string& title, size_t top = 15) {
  std::string out = "#### " + title + "\n\n";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "per decode step: %.1f operators dispatched, %.1f device kernels, %.3f ms of device time\n\n",
                static_cast<double>(step.op_calls()) / n, static_cast<double>(step.kernel_calls()) / n,
                step.device_us() / 1000.0 / n);
  out += buf;
  if (!step.kernels.empty()) {
    std::vector<std::pair<std::string, ProfiledName>> ks(step.kernels.begin(), step.kernels.end());
    std::sort(ks.begin(), ks.end(), [](const auto& x, const auto& y) { return x.second.device_us > y.second.device_us; });
    const double total = std::max(step.device_us(), 1e-9);
    out += "| kernel | calls a step | us a step | share | attention |\n|---|---|---|---|---|\n";
    for (size_t i = 0; i < std::min(top, ks.size()); ++i) {
      std::snprintf(buf, sizeof buf, "| %s | %.1f | %.1f | %.0f%% | %s |\n", cell_name(ks[i].first).c_str(),
                    static_cast<double>(ks[i].second.calls) / n, ks[i].second.device_us / n,
                    100 * ks[i].second.device_us / total, attention_kernel(ks[i].first) ? "yes" : "");
      out += buf;
    }
    out += "\n";
  }
  std::vector<std::pair<std::string, ProfiledName>> os(step.ops.begin(), step.ops.end());
  std::sort(os.begin(), os.end(), [](const auto& x, const auto& y) { return x.second.calls > y.second.calls; });
  out += "| operator | calls a step |\n|---|---|\n";
  for (size_t i = 0; i < std::min(top, os.size()); ++i) {
    std::snprintf(buf, sizeof buf, "| %s | %.1f |\n", cell_name(os[i].first).c_str(),
                  static_cast<double>(os[i].second.calls) / n);
    out += buf;
  }
  return out + "\n";
}

}  // namespace gspo::bench
