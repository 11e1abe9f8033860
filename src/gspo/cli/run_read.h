// A run directory read back for `gspo report` and `gspo gate` (docs/report.md): metrics.jsonl, validation.jsonl, the
// resolved config and rollouts/step_*.jsonl, as train/report/run_logs.h and rollout_log.h write them. Nothing here
// throws on what a killed run, an older gspo or a damaged disk leaves: a line that is not a JSON object is skipped and
// named in `notes` (file, line, why), a file that is missing is named, and what remains is returned. Only a directory
// that does not exist is an error.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gspo::cli {

struct RunRead {
  std::string dir;                            // as given
  std::string name;                           // the directory's last component: the run's label
  std::vector<nlohmann::json> metrics;        // metrics.jsonl's objects with an integer "step", in file order
  std::vector<nlohmann::json> validation;     // validation.jsonl's objects
  std::string config_yaml;                    // RUN/config.yaml, else the newest checkpoint's; "" when neither
  std::string config_from;                    // the file config_yaml came from
  std::map<int64_t, std::string> rollout_files;  // step -> RUN/rollouts/step_NNNNNNNN.jsonl
  std::vector<std::string> notes;             // what was skipped or missing, one sentence each, naming the file
};

// Reads `dir`. Throws IoError when it is not a directory.
RunRead read_run(const std::string& dir);

// The JSON objects of a JSONL file; every other line (torn by a crash, damaged, not an object) is skipped and named
// in `notes` as "FILE line N: why". A last line without its newline that does not parse reads as a write cut off
// by a killed run. A missing file reads as no lines (the caller says whether it matters).
std::vector<nlohmann::json> read_jsonl(const std::string& path, std::vector<std::string>& notes);

// The rollout rows of one step file (read_jsonl, keeping objects with "group" and "response").
std::vector<nlohmann::json> read_rollouts(const std::string& path, std::vector<std::string>& notes);

// The numeric fields of a metrics line flattened as TensorBoard names them (docs/metrics.md): a number as its key,
// a list as key/0, key/1, ..., an object as key/name. Booleans, strings and null are left out.
std::map<std::string, double> numeric_fields(const nlohmann::json& line);

// The metrics this gspo writes at every step (its table's `always` rows) that no line of `run` holds: a run of an
// older gspo, or no metrics at all when `run.metrics` is empty (then the list is empty: there is nothing to miss).
std::vector<std::string> missing_always_metrics(const RunRead& run);

}  // namespace gspo::cli
