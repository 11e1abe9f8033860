#include "gspo/eval/standings.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/eval/competition.h"
#include "gspo/eval/eval_sets.h"

namespace gspo::eval {
namespace {
using nlohmann::json;

// A contest id or problem index as text: "2024" whether the file holds 2024 or "2024".
std::string id_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

double number_at(const json& v, const std::string& where) {
  if (!v.is_number()) throw DataError(where + " must be a number (got " + v.dump().substr(0, 40) + ")");
  return v.get<double>();
}

Contest parse_contest(const json& c, const std::string& where) {
  if (!c.is_object() || !c.contains("id") || !c.contains("problems") || !c.contains("rows"))
    throw DataError(where + ": each contest needs 'id', 'problems' and 'rows'");
  Contest out;
  out.id = id_text(c["id"]);
  const std::string at = where + ": contest " + out.id;
  if (!c["problems"].is_array() || c["problems"].empty()) throw DataError(at + ": 'problems' must be a non-empty list");
  for (const auto& p : c["problems"]) {
    if (!p.is_object() || !p.contains("index")) throw DataError(at + ": each problem needs an 'index'");
    ContestProblem cp{id_text(p["index"]), std::nullopt};
    if (p.contains("points") && !p["points"].is_null()) cp.points = number_at(p["points"], at + ": problems.points");
    out.problems.push_back(cp);
  }
  if (!c["rows"].is_array()) throw DataError(at + ": 'rows' must be a list of [points, penalty, old_rating]");
  for (const auto& r : c["rows"]) {
    if (!r.is_array() || r.size() != 3) throw DataError(at + ": each of 'rows' must be [points, penalty, old_rating]");
    out.rows.push_back({number_at(r[0], at + ": rows points"), number_at(r[1], at + ": rows penalty"),
                        number_at(r[2], at + ": rows old_rating")});
  }
  return out;
}

}  // namespace

StandingsPack load_standings(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot read standings pack '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw DataError(path + ": a standings pack must be one JSON object");
  if (!j.contains("contests") || !j["contests"].is_array() || j["contests"].empty())
    throw DataError(path + ": 'contests' must be a non-empty list");
  StandingsPack pack;
  pack.path = path;
  for (const auto& c : j["contests"]) pack.contests.push_back(parse_contest(c, path));
  if (j.contains("human_ratings")) {
    if (!j["human_ratings"].is_array()) throw DataError(path + ": 'human_ratings' must be a list of numbers");
    for (const auto& r : j["human_ratings"]) pack.human_ratings.push_back(number_at(r, path + ": human_ratings"));
    if (!std::is_sorted(pack.human_ratings.begin(), pack.human_ratings.end()))
      throw DataError(path + ": 'human_ratings' must be sorted in ascending order");
  }
  return pack;
}

nlohmann::ordered_json codeelo_summary(const StandingsPack& pack, const std::vector<const data::Example*>& rows,
                                       const std::vector<ProblemResult>& results) {
  std::vector<std::optional<int64_t>> first;
  for (const auto& r : results) first.push_back(first_accepted(r.correct));
  return codeelo_summary(pack, rows, first);
}

nlohmann::ordered_json codeelo_summary(const StandingsPack& pack, const std::vector<const data::Example*>& rows,
                                       const std::vector<std::optional<int64_t>>& accepted_at) {
  std::map<std::pair<std::string, std::string>, std::optional<int64_t>> first;  // (contest, index) -> attempt
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto row = json::parse(rows[i]->row, nullptr, false);
    if (!row.is_object() || !row.contains("contest_id") || !row.contains("index")) continue;
    first[{id_text(row["contest_id"]), id_text(row["index"])}] = accepted_at.at(i);
  }
  using ojson = nlohmann::ordered_json;
  ojson out, contests = ojson::array(), unevaluated = ojson::array(), small = ojson::array();
  double sum = 0;
  for (const auto& c : pack.contests) {
    std::vector<std::optional<int64_t>> attempts;
    int64_t evaluated = 0;
    for (const auto& p : c.problems) {
      const auto it = first.find({c.id, p.index});
      evaluated += it != first.end();
      attempts.push_back(it != first.end() ? it->second : std::nullopt);
    }
    if (evaluated == 0) {
      unevaluated.push_back(c.id);
      continue;
    }
    if (c.rows.size() < kCodeEloMinRows) {
      small.push_back(c.id);
      continue;
    }
    const auto score = contest_score(c.problems, attempts);
    const int64_t rank = contest_rank(c.rows, score);
    const int64_t rating = codeelo_rating(c.rows, rank);
    sum += static_cast<double>(rating);
    contests.push_back({{"id", c.id}, {"problems", c.problems.size()}, {"evaluated", evaluated},
                        {"points", score.points}, {"penalty", score.penalty}, {"rank", rank},
                        {"rated_rows", c.rows.size()}, {"rating", rating}});
  }
  if (contests.empty())
    throw DataError(pack.path + ": no contest of the standings pack can be rated from these problems (" +
                    std::to_string(unevaluated.size()) + " without an evaluated problem: rows need 'contest_id' and "
                    "'index'; " + std::to_string(small.size()) + " with " + std::to_string(kCodeEloMinRows - 1) +
                    " or fewer rated rows)");
  out["rating"] = sum / static_cast<double>(contests.size());
  if (!pack.human_ratings.empty())
    out["percentile"] = rating_percentile(pack.human_ratings, out["rating"].get<double>());
  out["contests"] = contests;
  out["contests_without_evaluated_problems"] = unevaluated;
  out["contests_with_too_few_rated_rows"] = small;
  out["standings"] = pack.path;
  out["what"] = "CodeElo's rating (mean over contests) from the standings pack; hidden tests differ from the set's";
  return out;
}

std::vector<const data::Example*> example_pointers(const std::vector<data::Example>& rows) {
  std::vector<const data::Example*> out;
  for (const auto& r : rows) out.push_back(&r);
  return out;
}

void check_standings(const StandingsPack& pack, const std::vector<EvalSet>& sets) {
  const std::string key = "standings pack '" + pack.path + "'";
  bool any = false;
  for (const auto& set : sets) {
    if (!is_competition_set(set.rows)) continue;
    any = true;
    try {
      codeelo_summary(pack, example_pointers(set.rows), std::vector<std::optional<int64_t>>(set.rows.size()));
    } catch (const DataError& e) {
      throw ConfigError(key + " does not rate the set '" + set.name + "': " + e.what());
    }
  }
  if (!any)
    throw ConfigError(key + ": none of the sets is made of competition rows (tests.type competition), which "
                      "CodeElo's rating needs");
}

void add_codeelo(nlohmann::ordered_json& summary, const StandingsPack& pack, bool competition, const std::string& name,
                 const std::vector<const data::Example*>& rows, const std::vector<ProblemResult>& results) {
  if (!competition)
    throw ConfigError("--standings '" + pack.path + "': the set '" + name + "' is not made of competition rows "
                      "(tests.type competition), which CodeElo's rating needs");
  summary["codeelo"] = codeelo_summary(pack, rows, results);
}

}  // namespace gspo::eval
