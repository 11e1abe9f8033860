#include <fstream>
#include <map>

#include "gspo/core/error.h"
#include "gspo/core/json_line.h"
#include "gspo/data/dataset.h"
#include "gspo/eval/eval.h"
#include "gspo/eval/grade.h"
#include "gspo/core/fs.h"

namespace gspo::eval {
namespace {

// index -> responses, from {"index": i, "response": s} or {"index": i, "responses": [s...]} lines.
std::map<int64_t, std::vector<std::string>> read_responses(const std::string& path, size_t num_rows) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot read responses '" + path + "': " + std::strerror(errno));
  std::map<int64_t, std::vector<std::string>> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    auto j = core::parse_json_object(line, where);
    if (!j.contains("index") || !j["index"].is_number_integer())
      throw DataError(where + ": needs an integer 'index' (the problem's 0-based row in the dataset)");
    const int64_t idx = j["index"];
    if (idx < 0 || static_cast<size_t>(idx) >= num_rows)
      throw DataError(where + ": index " + std::to_string(idx) + " is outside the dataset (" + std::to_string(num_rows) +
                      " rows)");
    if (j.contains("response") && j["response"].is_string()) {
      out[idx].push_back(j["response"]);
    } else if (j.contains("responses") && j["responses"].is_array()) {
      for (const auto& r : j["responses"]) {
        if (!r.is_string()) throw DataError(where + ": 'responses' must hold strings");
        out[idx].push_back(r);
      }
    } else {
      throw DataError(where + ": needs 'response' (a string) or 'responses' (a list of strings)");
    }
  }
  if (out.empty()) throw DataError("responses '" + path + "' holds no responses");
  return out;
}

}  // namespace

nlohmann::ordered_json run_score(const config::Config& cfg, const ScoreRequest& req) {
  auto rows = data::load_jsonl(req.dataset, cfg.data.prompt_key, cfg.data.answer_key, /*need_prompt=*/false);
  if (rows.empty()) throw DataError("dataset '" + req.dataset + "' has no examples");
  auto responses = read_responses(req.responses, rows.size());
  // avg@K, pass@k and maj@K compare problems at one K: uneven counts are refused, never cut to the smallest.
  const auto& [first_index, first] = *responses.begin();
  const size_t K = first.size();
  for (const auto& [i, r] : responses)
    if (r.size() != K)
      throw DataError("responses '" + req.responses + "': problem " + std::to_string(first_index) + " has " +
                      std::to_string(K) + " responses but problem " + std::to_string(i) + " has " +
                      std::to_string(r.size()) + "; gspo score needs the same number of responses for every "
                      "problem (avg@K and pass@k are defined at one K)");
  Grader grader(cfg, rows);
  std::vector<const data::Example*> exs;
  std::vector<std::vector<std::string>> texts;
  std::vector<int64_t> indices;
  for (const auto& [i, r] : responses) {
    exs.push_back(&rows[i]);
    texts.push_back(r);
    indices.push_back(i);
  }
  auto results = grader.grade(exs, texts, std::vector<std::vector<int64_t>>(exs.size()));
  std::string name = req.dataset.substr(req.dataset.find_last_of('/') + 1);
  auto summary = summarize(name, results, grader.math);
  summary["verifier"] = grader.verifier->name();
  // Rows of the dataset no response line names: not in the statistics; the table says how many (format_table).
  summary["dataset_rows"] = rows.size();
  summary["problems_without_responses"] = rows.size() - responses.size();
  if (!req.out_dir.empty()) {
    core::ensure_dir(req.out_dir);
    std::string scored;
    for (size_t p = 0; p < exs.size(); ++p)
      for (size_t s = 0; s < K; ++s) {
        nlohmann::ordered_json line{{"index", indices[p]}, {"sample", s}, {"reward", results[p].rewards[s]},
                                    {"correct", static_cast<bool>(results[p].correct[s])},
                                    {"detail", results[p].details[s]}};
        scored += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      }
    core::atomic_write(req.out_dir + "/scored.jsonl", scored);
    core::atomic_write(req.out_dir + "/summary.json", summary.dump(1) + "\n");
  }
  return summary;
}

}  // namespace gspo::eval
