// `gspo eval` and `gspo score`: sample (or read) K responses per problem, grade them with the dataset's verifier,
// write per-sample JSONL and a summary JSON, and print a table.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/config/options.h"
#include "gspo/eval/summary.h"

namespace gspo::eval {

// K (eval.samples), the problem window (eval.max_problems, eval.since, eval.until) and the sampling settings
// (eval.*, else rollout.*) come from the config.
struct EvalRequest {
  std::string model;                  // policy file; "" = cfg.model.path
  std::vector<std::string> datasets;  // JSONL files; empty = cfg.eval.datasets, else cfg.data.path
  std::string out_dir;                // samples.jsonl, eval_state.json and summary.json go here
  bool progress = true;               // progress bar with ETA on stderr
  bool overwrite = false;             // start over in an out_dir that holds a finished or unfinished eval
  std::string standings;              // CodeElo standings pack (eval/standings.h): "codeelo" in competition sets'
                                      // summaries; "" = none
};

// Returns one summary per dataset (also written to out_dir/summary.json, with the provenance: model, gspo and
// LibTorch versions, sampling settings, and each dataset's source: path, rows and FNV-1a 64 hash of its bytes).
// An out_dir holding a finished eval (summary.json) is refused unless `overwrite`. One holding an unfinished eval
// of the same model, datasets and settings (eval_state.json) is resumed after its last complete problem; of other
// settings, refused naming the first difference.
std::vector<SetSummary> run_eval(const config::Config& cfg, const EvalRequest& req);

struct ScoreRequest {
  std::string dataset;    // JSONL problems
  std::string responses;  // JSONL: {"index": row, "response": text}, {"index": row, "responses": [texts]} (placed by
                          // "index"; another generator's "id" is ignored, a gspo "file.jsonl:LINE" id must agree), or
                          // gspo eval's samples.jsonl (placed by "id"; "dataset" must be -d's set)
  std::string out_dir;    // "" = do not write files
  std::string standings;  // CodeElo standings pack (eval/standings.h); "" = none
};

// Grades responses produced elsewhere; returns the summary (and writes scored.jsonl + summary.json when asked).
SetSummary run_score(const config::Config& cfg, const ScoreRequest& req);

}  // namespace gspo::eval
