#include "gspo/eval/competition.h"

#include <map>

#include "gspo/core/error.h"
#include "gspo/reward/competition.h"

namespace gspo::eval {

bool is_competition_set(const std::vector<data::Example>& rows) {
  if (rows.empty()) return false;
  for (const auto& ex : rows)
    if (!reward::is_competition_row(nlohmann::json::parse(ex.row, nullptr, false))) return false;
  return true;
}

std::string id_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void check_competition_set(const std::vector<data::Example>& rows) {
  reward::check_competition_rows(rows);
  std::map<std::pair<std::string, std::string>, std::string> seen;  // (contest, index) -> the row that has it
  for (const auto& ex : rows) {
    const auto row = nlohmann::json::parse(ex.row, nullptr, false);
    if (!reward::is_competition_row(row) || !row.contains("contest_id") || !row.contains("index")) continue;
    const std::string contest = id_text(row["contest_id"]), index = id_text(row["index"]);
    const auto [it, fresh] = seen.emplace(std::make_pair(contest, index), ex.id);
    if (!fresh)
      throw DataError(ex.id + ": contest " + contest + " problem " + index + " is also the row " + it->second +
                      "; a competition set holds each problem once (twice, its attempts would count twice in pass@k "
                      "and the ratings, and one row's result would stand for both in CodeElo's)");
  }
}

void add_attempt_fields(nlohmann::ordered_json& line, const ProblemResult& p, size_t s) {
  line["attempt"] = s;
  if (p.correct[s]) line["verdict"] = "accepted";
  else if (p.failures[s] == reward::kCheckerFailure) line["verdict"] = nullptr;
  else line["verdict"] = p.failures[s];
  const auto first = first_accepted(p.correct);
  line["first_accepted"] = first ? nlohmann::ordered_json(*first) : nlohmann::ordered_json(nullptr);
}

}  // namespace gspo::eval
