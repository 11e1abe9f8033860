// `gspo eval` and `gspo score`: sample (or read) K responses per problem, grade them with the dataset's verifier,
// write per-sample JSONL and a summary JSON, and print a table.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/config/options.h"

namespace gspo::eval {

struct EvalRequest {
  std::string model;                  // policy file; "" = cfg.model.path
  std::vector<std::string> datasets;  // JSONL files; empty = cfg.data.path
  int64_t samples = 4;                // K responses per problem
  int64_t max_problems = 0;           // 0 = all
  std::string out_dir;                // samples.jsonl and summary.json go here
  bool progress = true;               // progress bar with ETA on stderr
  bool overwrite = false;             // false: an out_dir that holds a result (summary.json, samples) is refused
};

// Returns one summary per dataset (also written to out_dir/summary.json, with the provenance: model, gspo and
// LibTorch versions, sampling settings, and each dataset's source: path, rows and FNV-1a 64 hash of its bytes).
std::vector<nlohmann::ordered_json> run_eval(const config::Config& cfg, const EvalRequest& req);

struct ScoreRequest {
  std::string dataset;    // JSONL problems
  std::string responses;  // JSONL: {"index": row, "response": text} or {"index": row, "responses": [texts]}
  std::string out_dir;    // "" = do not write files
};

// Grades responses produced elsewhere; returns the summary (and writes scored.jsonl + summary.json when asked).
nlohmann::ordered_json run_score(const config::Config& cfg, const ScoreRequest& req);

}  // namespace gspo::eval
