// `gspo gate`: a run against a baseline's bands (gate.h), or --make-bands from several runs (docs/report.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::cli {

struct GateArgs {
  std::vector<std::string> runs;     // the run to check; with make_bands the baseline runs
  std::string baseline;              // bands.json or a baseline run directory
  bool make_bands = false;
  std::string out = "bands.json";    // with make_bands
  int64_t window = 0;                // steps per window; 0 = a tenth of the baseline's steps (rounded up)
  double k = 6;                      // band half-width in baseline spreads (gate.h)
  std::vector<std::string> metrics;  // empty = default_gate_metrics()
  bool json = false;
};
// True when the run stayed inside every band it could be compared with (and at least one window was compared); the
// failures, and what could not be compared, are printed. --make-bands: writes the file and returns true. Throws
// ConfigError on bad flags, DataError on a bad bands file or runs with no metrics.
bool gate(const GateArgs& a);

}  // namespace gspo::cli
