// `gspo report RUN [RUN ...] -o FILE.html`: one self-contained HTML page of one or more runs, overlaid (#67 item 2;
// docs/report.md): the curves (plotly.js, inlined), a step cursor and smoothing, the rollout browser (a step's group
// side by side, tokens coloured by log-prob, mismatch or entropy), each run's config and summary, and what was skipped
// reading them. Opens from disk with no server and no network.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/cli/run_read.h"

namespace gspo::cli {

struct ReportArgs {
  std::vector<std::string> runs;  // run directories (train.output_dir)
  std::string out;                // "" = RUN/report.html of the first run
  double rollout_mb = 8;          // rollout rows kept in the page: past it, steps are thinned evenly (first, last kept)
  int64_t max_tokens = 2048;      // per response, token detail (log-probs, pieces) kept for its first N tokens
};
int report(const ReportArgs& a);

// What the page is built from besides the runs.
struct ReportLimits {
  double rollout_mb = 8;
  int64_t max_tokens = 2048;
};

// The page of `runs` (read_run). Appends to `notes` what was left out for size. Throws IoError when this gspo was
// built without plotly.js.
std::string report_html(const std::vector<RunRead>& runs, const ReportLimits& limits, std::vector<std::string>& notes);

// `json` made safe inside <script type="application/json">: '<', '>' and '&' written as \u escapes (valid JSON, so
// JSON.parse gives the same value; no "</script>" or "<!--" a model wrote can end the element).
std::string script_safe_json(const std::string& json);

}  // namespace gspo::cli
