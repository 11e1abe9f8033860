// The regression gate's bands (#67 item 3; docs/report.md "gspo gate"): per metric and per window of steps, where a
// healthy run's window mean lies, made from baseline runs (seeds of one recipe) and checked against a new run.
//
// The rule: steps are cut into windows of W (1..W, W+1..2W, ...); a run's value in a window is the mean of the metric
// over its lines there. Over n baseline runs a window's band is mean +- max(k * spread, floor, 10% of |mean|), where
// spread^2 = s_b^2 (1 + 1/n) + s_w^2 / m: s_b the sample standard deviation of the runs' values (0 for one run; the
// 1 + 1/n makes it a prediction of a new run's value, not the mean's), s_w the standard deviation of the lines around
// their own run's window mean (pooled over the runs), m the lines a window holds. floor is the metric's absolute floor
// (gate.cpp's table), so noise that the seeds never showed still passes.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "gspo/cli/run_read.h"

namespace gspo::cli {

struct Band {
  int64_t from = 0, to = 0;  // steps, inclusive
  double mean = 0, lo = 0, hi = 0;
  int64_t runs = 0;          // baseline runs with a value in the window
};

struct MetricBands {
  std::string name;          // a metrics.jsonl field
  double floor = 0;          // the metric's absolute floor on the half-width
  std::vector<Band> windows;
};

struct Bands {
  int64_t window = 0;        // steps per window
  double k = 6;
  std::vector<std::string> runs;  // the baseline runs' directories
  std::vector<MetricBands> metrics;
  std::vector<std::string> notes;  // requested metrics the baseline does not hold
};

// The metrics gated by default, in order: reward, accuracy, length, KL, clip fraction, entropy, mismatch.
const std::vector<std::string>& default_gate_metrics();
// A metric's absolute floor on the band's half-width (0.05 for fractions and rewards; see gate.cpp's table).
double gate_floor(const std::string& metric);

// Bands of `runs` for `metrics`; `window` 0 = ceil(last step / 10). Throws DataError when no run holds a metrics line.
Bands make_bands(const std::vector<RunRead>& runs, const std::vector<std::string>& metrics, int64_t window, double k);

nlohmann::ordered_json bands_to_json(const Bands& b);
// Throws DataError naming `path` and the key that is missing or of the wrong type.
Bands bands_from_json(const nlohmann::json& j, const std::string& path);

struct Verdict {
  std::vector<std::string> failures;      // "METRIC at steps A-B: value V above/below the band [lo, hi] (...)"
  std::vector<std::string> not_compared;  // what could not be compared, and why
  int64_t windows_checked = 0;
  std::vector<std::string> metrics_checked;
  bool passed() const { return failures.empty() && windows_checked > 0; }
};

// `run` against `bands`: every window of every metric both hold.
Verdict check_run(const RunRead& run, const Bands& bands);

}  // namespace gspo::cli
