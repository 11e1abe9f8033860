#include "gspo/cli/gate_cmd.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "gspo/cli/gate.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"

namespace gspo::cli {
namespace {

std::vector<RunRead> read_runs(const std::vector<std::string>& dirs) {
  std::vector<RunRead> runs;
  for (const auto& d : dirs) {
    runs.push_back(read_run(d));
    for (const auto& n : runs.back().notes) std::cerr << "gate: skipped: " << n << "\n";
  }
  return runs;
}

Bands baseline_bands(const GateArgs& a, const std::vector<std::string>& metrics) {
  if (std::filesystem::is_directory(a.baseline)) return make_bands(read_runs({a.baseline}), metrics, a.window, a.k);
  if (!core::exists(a.baseline))
    throw IoError("--baseline '" + a.baseline + "' is neither a bands file nor a run directory");
  auto j = nlohmann::json::parse(core::read_text(a.baseline), nullptr, false);
  if (j.is_discarded()) throw DataError(a.baseline + ": not JSON (a bands file is written by gspo gate --make-bands)");
  auto b = bands_from_json(j, a.baseline);
  if (a.window > 0 && a.window != b.window)
    throw ConfigError("--window " + std::to_string(a.window) + " differs from " + a.baseline + "'s window " +
                      std::to_string(b.window) + " (a bands file keeps its own)");
  std::vector<MetricBands> kept;
  for (const auto& m : metrics) {
    const auto it = std::find_if(b.metrics.begin(), b.metrics.end(), [&](const MetricBands& x) { return x.name == m; });
    if (it == b.metrics.end()) b.notes.push_back(m + ": " + a.baseline + " has no band for it");
    else kept.push_back(*it);
  }
  b.metrics = kept;
  return b;
}

void print_verdict(const std::string& run, const Bands& b, const Verdict& v, bool json) {
  std::vector<std::string> not_compared = b.notes;
  not_compared.insert(not_compared.end(), v.not_compared.begin(), v.not_compared.end());
  if (json) {
    nlohmann::ordered_json j{{"run", run}, {"passed", v.passed()}, {"metrics", v.metrics_checked},
                             {"windows_checked", v.windows_checked}, {"window", b.window}, {"failures", v.failures},
                             {"not_compared", not_compared}};
    std::cout << j.dump(1) << "\n";
    return;
  }
  for (const auto& n : not_compared) std::cout << "not compared: " << n << "\n";
  for (const auto& f : v.failures) std::cout << "FAIL " << f << "\n";
  if (v.windows_checked == 0)
    std::cout << "gate FAILED: " << run << ": nothing could be compared with the baseline\n";
  else if (v.passed())
    std::cout << "gate passed: " << run << " inside the baseline's bands (" << v.windows_checked << " windows of "
              << b.window << " steps over " << v.metrics_checked.size() << " metrics)\n";
  else
    std::cout << "gate FAILED: " << run << ": " << v.failures.size() << " of " << v.windows_checked
              << " windows outside the baseline's bands\n";
}

}  // namespace

bool gate(const GateArgs& a) {
  if (!(a.k > 0)) throw ConfigError("--k must be > 0 (got " + std::to_string(a.k) + ")");
  const auto& metrics = a.metrics.empty() ? default_gate_metrics() : a.metrics;
  if (a.make_bands) {
    if (!a.baseline.empty()) throw ConfigError("--make-bands takes the baseline runs as arguments, not --baseline");
    const auto b = make_bands(read_runs(a.runs), metrics, a.window, a.k);
    for (const auto& n : b.notes) std::cout << "no band: " << n << "\n";
    const auto parent = std::filesystem::path(a.out).parent_path();
    if (!parent.empty()) core::ensure_dir(parent.string());
    core::atomic_write(a.out, bands_to_json(b).dump(1) + "\n");
    std::cout << "wrote " << a.out << ": " << b.metrics.size() << " metrics, windows of " << b.window << " steps, from "
              << a.runs.size() << " runs\n";
    return true;
  }
  if (a.baseline.empty()) throw ConfigError("gspo gate RUN needs --baseline (a bands file or a run directory)");
  if (a.runs.size() != 1)
    throw ConfigError("gspo gate checks one run (got " + std::to_string(a.runs.size()) + "); --make-bands takes several");
  const auto bands = baseline_bands(a, metrics);
  const auto run = read_runs(a.runs).front();
  const auto v = check_run(run, bands);
  print_verdict(a.runs.front(), bands, v, a.json);
  return v.passed();
}

}  // namespace gspo::cli
