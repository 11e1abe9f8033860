#include "gspo/cli/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "gspo/core/error.h"

namespace gspo::cli {
namespace {

// One row a gated metric: its absolute floor on the band's half-width (what seeds' noise may add beyond the baseline).
struct GateRow {
  const char* name;
  double floor;
};
constexpr GateRow kGateTable[] = {
    {"reward_mean", 0.05},                 // rewards of verifiers in [0, 1]
    {"accuracy", 0.05},
    {"response_len_mean", 0.25},           // tokens
    {"kl", 1e-3},
    {"clip_seq_frac", 0.02},
    {"entropy", 0.05},                     // nats
    {"mismatch_logprob_diff_mean", 0.01},  // nats a token: bf16 rollouts sit well under it
};
constexpr double kDefaultFloor = 0.01;
constexpr double kRelativeFloor = 0.10;  // entropy's seeds drift apart by ~5% late in the demo

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Per window index: the values of `metric` in the window's lines of one run.
std::map<int64_t, std::vector<double>> window_values(const RunRead& r, const std::string& metric, int64_t window) {
  std::map<int64_t, std::vector<double>> out;
  for (const auto& line : r.metrics) {
    const auto fields = numeric_fields(line);
    const auto it = fields.find(metric);
    if (it == fields.end() || !std::isfinite(it->second)) continue;
    out[(line["step"].get<int64_t>() - 1) / window].push_back(it->second);
  }
  return out;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double std_of(const std::vector<double>& v, bool sample) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - (sample ? 1 : 0)));
}

// One window's band from each baseline run's lines in it (`lines[i]`: run i's values there).
Band window_band(const std::vector<std::vector<double>>& lines, double k, double floor) {
  Band b;
  std::vector<double> means;
  double within = 0, dof = 0, count = 0;
  for (const auto& v : lines) {
    means.push_back(mean_of(v));
    for (double x : v) within += (x - means.back()) * (x - means.back());
    dof += static_cast<double>(v.size()) - 1;
    count += static_cast<double>(v.size());
  }
  const double n = static_cast<double>(means.size());
  const double s_b = std_of(means, true), s_w = dof > 0 ? std::sqrt(within / dof) : 0.0;
  const double spread = std::sqrt(s_b * s_b * (1 + 1 / n) + s_w * s_w / (count / n));
  b.runs = static_cast<int64_t>(means.size());
  b.mean = mean_of(means);
  const double half = std::max({k * spread, floor, kRelativeFloor * std::abs(b.mean)});
  b.lo = b.mean - half;
  b.hi = b.mean + half;
  return b;
}

MetricBands metric_bands(const std::vector<RunRead>& runs, const std::string& metric, int64_t window, double k) {
  MetricBands mb{metric, gate_floor(metric), {}};
  std::map<int64_t, std::vector<std::vector<double>>> lines;  // window -> each run's values there
  for (const auto& r : runs)
    for (auto& [w, vals] : window_values(r, metric, window)) lines[w].push_back(std::move(vals));
  for (const auto& [w, per_run] : lines) {
    Band b = window_band(per_run, k, mb.floor);
    b.from = w * window + 1;
    b.to = (w + 1) * window;
    mb.windows.push_back(b);
  }
  return mb;
}

template <class T>
T need(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw DataError(where + ": missing \"" + key + "\" (not a bands file written by gspo gate --make-bands?)");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw DataError(where + ": \"" + key + "\" has the wrong type (" + j.at(key).dump().substr(0, 40) + ")");
  }
}

}  // namespace

const std::vector<std::string>& default_gate_metrics() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& row : kGateTable) v.push_back(row.name);
    return v;
  }();
  return names;
}

double gate_floor(const std::string& metric) {
  for (const auto& row : kGateTable)
    if (metric == row.name) return row.floor;
  return kDefaultFloor;
}

Bands make_bands(const std::vector<RunRead>& runs, const std::vector<std::string>& metrics, int64_t window, double k) {
  int64_t last = 0;
  for (const auto& r : runs)
    if (!r.metrics.empty()) last = std::max(last, r.metrics.back()["step"].get<int64_t>());
  if (last == 0) throw DataError("no baseline run holds a metrics line: no bands to make");
  Bands b;
  b.window = window > 0 ? window : std::max<int64_t>(1, (last + 9) / 10);
  b.k = k;
  for (const auto& r : runs) b.runs.push_back(r.dir);
  for (const auto& m : metrics) {
    auto mb = metric_bands(runs, m, b.window, k);
    if (mb.windows.empty()) b.notes.push_back(m + ": no baseline run wrote it: no band");
    else b.metrics.push_back(std::move(mb));
  }
  return b;
}

nlohmann::ordered_json bands_to_json(const Bands& b) {
  nlohmann::ordered_json j{{"gspo_bands", 1}, {"window", b.window}, {"k", b.k}, {"runs", b.runs},
                           {"rule", "per window of steps: mean of the runs' window means +- max(k * spread, floor, 10% of "
                                    "|mean|), spread^2 = s_b^2 (1 + 1/n) + s_w^2 / m (docs/report.md)"}};
  nlohmann::ordered_json ms = nlohmann::ordered_json::object();
  for (const auto& m : b.metrics) {
    nlohmann::ordered_json ws = nlohmann::ordered_json::array();
    for (const auto& w : m.windows)
      ws.push_back({{"from", w.from}, {"to", w.to}, {"mean", w.mean}, {"lo", w.lo}, {"hi", w.hi}, {"runs", w.runs}});
    ms[m.name] = {{"floor", m.floor}, {"windows", ws}};
  }
  j["metrics"] = ms;
  return j;
}

Bands bands_from_json(const nlohmann::json& j, const std::string& path) {
  Bands b;
  if (need<int64_t>(j, "gspo_bands", path) != 1) throw DataError(path + ": \"gspo_bands\" version is not 1");
  b.window = need<int64_t>(j, "window", path);
  if (b.window < 1) throw DataError(path + ": \"window\" must be >= 1 (got " + std::to_string(b.window) + ")");
  b.k = need<double>(j, "k", path);
  b.runs = need<std::vector<std::string>>(j, "runs", path);
  const auto ms = need<nlohmann::json>(j, "metrics", path);
  if (!ms.is_object()) throw DataError(path + ": \"metrics\" must be an object");
  for (auto it = ms.begin(); it != ms.end(); ++it) {
    const std::string where = path + " metrics." + it.key();
    MetricBands mb{it.key(), need<double>(*it, "floor", where), {}};
    const auto ws = need<nlohmann::json>(*it, "windows", where);
    if (!ws.is_array()) throw DataError(where + ": \"windows\" must be a list");
    for (size_t i = 0; i < ws.size(); ++i) {
      const std::string wi = where + ".windows[" + std::to_string(i) + "]";
      mb.windows.push_back({need<int64_t>(ws[i], "from", wi), need<int64_t>(ws[i], "to", wi),
                            need<double>(ws[i], "mean", wi), need<double>(ws[i], "lo", wi),
                            need<double>(ws[i], "hi", wi), need<int64_t>(ws[i], "runs", wi)});
    }
    b.metrics.push_back(std::move(mb));
  }
  return b;
}

Verdict check_run(const RunRead& run, const Bands& bands) {
  Verdict v;
  const auto fields_in_run = [&] {
    std::map<std::string, bool> seen;
    for (const auto& line : run.metrics)
      for (const auto& kv : numeric_fields(line)) seen[kv.first] = true;
    return seen;
  }();
  int64_t past_end = 0;
  for (const auto& m : bands.metrics) {
    if (!fields_in_run.count(m.name)) {
      v.not_compared.push_back(m.name + ": the run wrote no " + m.name + " (the baseline did): not compared");
      continue;
    }
    v.metrics_checked.push_back(m.name);
    const auto values = window_values(run, m.name, bands.window);
    for (const auto& b : m.windows) {
      const auto it = values.find((b.from - 1) / bands.window);
      if (it == values.end()) {
        ++past_end;
        continue;
      }
      ++v.windows_checked;
      const double x = mean_of(it->second);
      if (x >= b.lo && x <= b.hi) continue;
      v.failures.push_back(m.name + " at steps " + std::to_string(b.from) + "-" + std::to_string(b.to) + ": " + num(x) +
                           (x < b.lo ? " below" : " above") + " the band [" + num(b.lo) + ", " + num(b.hi) +
                           "] (baseline mean " + num(b.mean) + " over " + std::to_string(b.runs) + " runs)");
    }
  }
  if (past_end > 0)
    v.not_compared.push_back(std::to_string(past_end) + " metric windows where the run wrote no line (it stopped "
                             "earlier than the baseline, or lost lines): not compared");
  return v;
}

}  // namespace gspo::cli
