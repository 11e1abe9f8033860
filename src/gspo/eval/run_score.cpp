#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "gspo/core/device.h"
#include "gspo/core/error.h"
#include "gspo/core/json_line.h"
#include "gspo/core/log.h"
#include "gspo/data/dataset.h"
#include "gspo/eval/eval.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/eval/competition.h"
#include "gspo/eval/grade.h"
#include "gspo/eval/set_summary.h"
#include "gspo/config/value_text.h"
#include "gspo/core/fs.h"

namespace gspo::eval {
namespace {

// A gspo row id (data::Example::id): "path:LINE" for a JSONL file, "path:row N" for a parquet file (N counted within
// that file, a shard of a directory included). Its key is the path's last component and the locator ("x.jsonl:12",
// "train-00000-of-00002.parquet:row 3"); nullopt for another generator's id.
struct RowKey {
  std::string file, key;
  std::string place;  // for messages: "line 12" or "row 3"
};
std::optional<RowKey> row_key(const std::string& id) {
  const auto colon = id.rfind(':');
  if (colon == std::string::npos || colon + 1 == id.size()) return std::nullopt;
  std::string n = id.substr(colon + 1);
  const bool row = n.rfind("row ", 0) == 0;
  if (row) n = n.substr(4);
  if (n.empty() || n.size() > 12 || n.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  RowKey k;
  k.file = id.substr(0, colon);
  k.file = k.file.substr(k.file.find_last_of('/') + 1);
  k.key = k.file + id.substr(colon);
  k.place = (row ? "row " : "line ") + n;
  return k;
}

// The dataset's rows by key, and the files they come from (one, or a directory's shards).
struct RowIndex {
  std::map<std::string, int64_t> row;
  std::set<std::string> files;
};

// A response line's "id": gspo's own (row_key; `gspo` true when it names one of -d's files or another dataset file),
// or another generator's (vLLM's "cmpl-...", a number), which places nothing.
struct IdRef {
  bool gspo = false;
  RowKey at;
};
IdRef read_id(const nlohmann::json& id, const RowIndex& index) {
  IdRef r;
  if (!id.is_string()) return r;
  const auto k = row_key(id.get<std::string>());
  if (!k) return r;
  r.at = *k;
  const auto ends = [&](const std::string& ext) {
    return k->file.size() > ext.size() && k->file.compare(k->file.size() - ext.size(), ext.size(), ext) == 0;
  };
  r.gspo = index.files.count(k->file) > 0 || ends(".jsonl") || ends(".json") || ends(".parquet");
  return r;
}

// The row a gspo id names; DataError for another set's id, a line that holds no row, or (a line without "dataset",
// so not gspo eval's, whose index counts kept problems) an "index" naming another row.
int64_t row_of_id(const nlohmann::json& j, const IdRef& ref, const std::string& where, const std::string& dataset,
                  size_t rows, const RowIndex& index) {
  const std::string id = j["id"].get<std::string>();
  if (!index.files.count(ref.at.file))
    throw DataError(where + ": id '" + id + "' is a problem of '" + ref.at.file + "', but -d is '" + dataset +
                    "': these responses answer other problems");
  const auto it = index.row.find(ref.at.key);
  if (it == index.row.end())
    throw DataError(where + ": id '" + id + "': " + ref.at.place + " of '" + dataset +
                    "' holds no problem (the file has " + std::to_string(rows) + " rows)");
  if (!j.contains("dataset") && j.contains("index") && j["index"].is_number_integer() &&
      j["index"].get<int64_t>() != it->second)
    throw DataError(where + ": id '" + id + "' names row " + std::to_string(it->second) + " of '" + dataset +
                    "' (" + ref.at.place + "), but 'index' is " + j["index"].dump() +
                    ": the two disagree (index is the 0-based row)");
  return it->second;
}

// The dataset row a response line is for. A samples.jsonl of `gspo eval` names its set ("dataset") and the problem's
// file line ("id"), and its "index" counts the problems the eval kept (after eval.since/until, eval.max_problems and
// prompts too long), not the file's rows: a gspo id decides when present, and a line of another set is refused.
// Otherwise "index" is the 0-based row of the dataset; an id that is not gspo's is counted in `foreign` and ignored.
int64_t row_of(const nlohmann::json& j, const std::string& where, const std::string& dataset,
               const std::vector<data::Example>& rows, const RowIndex& index, int64_t& foreign) {
  const std::string name = set_name(dataset);
  if (j.contains("dataset")) {
    if (!j["dataset"].is_string())
      throw DataError(where + ": 'dataset' must be a string (the eval set's name), got " + j["dataset"].dump());
    if (j["dataset"].get<std::string>() != name)
      throw DataError(where + ": a sample of dataset '" + j["dataset"].get<std::string>() + "', but -d is '" +
                      dataset + "' ('" + name + "'): these responses answer other problems");
  }
  const IdRef ref = j.contains("id") ? read_id(j["id"], index) : IdRef{};
  if (ref.gspo) return row_of_id(j, ref, where, dataset, rows.size(), index);
  if (j.contains("id")) ++foreign;
  if (!j.contains("index") || !j["index"].is_number_integer())
    throw DataError(where + ": needs an integer 'index' (the problem's 0-based row in the dataset)" +
                    (j.contains("id") ? "; its 'id' " + config::clip_for_message(j["id"].dump()) +
                                            " is not gspo's \"file.jsonl:LINE\" and places nothing"
                                      : std::string()));
  const int64_t idx = j["index"];
  if (idx < 0 || static_cast<size_t>(idx) >= rows.size())
    throw DataError(where + ": index " + std::to_string(idx) + " is outside the dataset (" +
                    std::to_string(rows.size()) + " rows)");
  return idx;
}

// row -> responses, from {"index": i, "response": s} or {"index": i, "responses": [s...]} lines (or gspo eval's
// samples, placed by their "id": row_of).
std::map<int64_t, std::vector<std::string>> read_responses(const std::string& path, const std::string& dataset,
                                                           const std::vector<data::Example>& rows) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot read responses '" + path + "': " + std::strerror(errno));
  RowIndex index;  // row key -> row
  for (size_t r = 0; r < rows.size(); ++r)
    if (const auto k = row_key(rows[r].id)) {
      index.row[k->key] = static_cast<int64_t>(r);
      index.files.insert(k->file);
    }
  std::map<int64_t, std::vector<std::string>> out;
  std::string line, first_foreign;
  int64_t foreign = 0;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    auto j = core::parse_json_object(line, where);
    const int64_t idx = row_of(j, where, dataset, rows, index, foreign);
    if (foreign == 1 && first_foreign.empty()) first_foreign = config::clip_for_message(j["id"].dump());
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
  if (foreign > 0)  // (vLLM and other generators write their own ids)
    log::warn("responses '{}': the 'id' of {} line(s) (the first {}) is not gspo's \"file.jsonl:LINE\" (or "
              "\"file.parquet:row N\") and is "
              "ignored; those lines are placed by their 'index', the 0-based row of '{}'", path, foreign,
              first_foreign, dataset);
  return out;
}

}  // namespace

SetSummary run_score(const config::Config& cfg, const ScoreRequest& req) {
  const Standings standings(req.standings);  // read first: a bad pack fails before any grading
  auto rows = data::load_jsonl(req.dataset, cfg.data.prompt_key, cfg.data.answer_key, /*need_prompt=*/false,
                               cfg.data.source_key);
  if (rows.empty()) throw DataError("dataset '" + req.dataset + "' has no examples");
  check_competition_set(rows);
  const EvalSet set(set_name(req.dataset), req.dataset, std::move(rows));
  standings.check({set});  // a pack that rates none of these rows fails before any grading, as in gspo eval
  auto responses = read_responses(req.responses, req.dataset, set.rows);
  // avg@K, pass@k and maj@K compare problems at one K: uneven counts are refused, never cut to the smallest.
  const auto& [first_index, first] = *responses.begin();
  const size_t K = first.size();
  for (const auto& [i, r] : responses)
    if (r.size() != K)
      throw DataError("responses '" + req.responses + "': problem " + std::to_string(first_index) + " has " +
                      std::to_string(K) + " responses but problem " + std::to_string(i) + " has " +
                      std::to_string(r.size()) + "; gspo score needs the same number of responses for every "
                      "problem (avg@K and pass@k are defined at one K)");
  Grader grader(cfg, set.rows, core::resolve_device(cfg.model.device, "model.device"));  // (a model reward runs there)
  std::vector<const data::Example*> exs;
  std::vector<std::vector<std::string>> texts;
  std::vector<int64_t> indices;
  for (const auto& [i, r] : responses) {
    exs.push_back(&set.rows[i]);
    texts.push_back(r);
    indices.push_back(i);
  }
  auto results = grader.grade(exs, texts, std::vector<std::vector<int64_t>>(exs.size()));
  auto summary = summarize_set(set, exs, stats_of(results), grader.math, standings);
  summary.dataset = req.dataset.substr(req.dataset.find_last_of('/') + 1);  // gspo score names the set by its file
  summary.verifier = grader.verifier->name();
  // Rows of the dataset no response line names: not in the statistics; the table says how many (format_table).
  const auto dataset_rows = static_cast<int64_t>(set.rows.size());
  summary.coverage = CoverageSummary{dataset_rows, dataset_rows - static_cast<int64_t>(responses.size())};
  if (!req.out_dir.empty()) {
    core::ensure_dir(req.out_dir);
    std::string scored;
    for (size_t p = 0; p < exs.size(); ++p)
      for (size_t s = 0; s < K; ++s) {
        nlohmann::ordered_json line{{"index", indices[p]}, {"sample", s}, {"reward", results[p].rewards[s]},
                                    {"correct", static_cast<bool>(results[p].correct[s])},
                                    {"detail", results[p].details[s]}};
        if (set.competition) add_attempt_fields(line, results[p], s);
        scored += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      }
    core::atomic_write(req.out_dir + "/scored.jsonl", scored);
    core::atomic_write(req.out_dir + "/summary.json", nlohmann::ordered_json(summary).dump(1) + "\n");
  }
  return summary;
}

}  // namespace gspo::eval
