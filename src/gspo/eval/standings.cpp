#include "gspo/eval/standings.h"

#include <algorithm>
#include <cmath>
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

double number_at(const json& v, const std::string& where) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw DataError(where + " must be a number (got " + v.dump().substr(0, 40) + ")");
  return v.get<double>();
}

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The contest's problems: each index once; points, where given, positive.
std::vector<ContestProblem> parse_problems(const json& c, const std::string& at) {
  if (!c["problems"].is_array() || c["problems"].empty()) throw DataError(at + ": 'problems' must be a non-empty list");
  std::vector<ContestProblem> out;
  for (const auto& p : c["problems"]) {
    if (!p.is_object() || !p.contains("index")) throw DataError(at + ": each problem needs an 'index'");
    ContestProblem cp{id_text(p["index"]), std::nullopt};
    const std::string problem = at + ": problem " + cp.index;
    for (const auto& seen : out)
      if (seen.index == cp.index) throw DataError(problem + " is listed twice");
    if (p.contains("points") && !p["points"].is_null()) {
      cp.points = number_at(p["points"], problem + ": 'points'");
      if (*cp.points <= 0)
        throw DataError(problem + ": 'points' must be positive (got " + num(*cp.points) + "); leave it out for an "
                        "ICPC-style problem");
    }
    out.push_back(cp);
  }
  return out;
}

// One rated row: points and penalty not negative, a positive pre-contest rating.
StandingRow parse_row(const json& r, const std::string& row) {
  if (!r.is_array() || r.size() != 3) throw DataError(row + " must be [points, penalty, old_rating]");
  const StandingRow out{number_at(r[0], row + ": points"), number_at(r[1], row + ": penalty"),
                        number_at(r[2], row + ": old_rating")};
  if (out.points < 0 || out.penalty < 0)
    throw DataError(row + ": points and penalty must not be negative (got " + r.dump() + ")");
  if (out.old_rating <= 0)
    throw DataError(row + ": old_rating must be a positive rating (got " + num(out.old_rating) + "); Codeforces' "
                    "contest.ratingChanges gives a newcomer's oldRating as 0, which is not the rating the contest "
                    "rated them from");
  return out;
}

// The rated rows, in standings order: points not increasing, and on equal points penalty not decreasing (CodeElo's
// rank is the index of the first row strictly worse than the model, right only on sorted rows).
std::vector<StandingRow> parse_rows(const json& c, const std::string& at) {
  if (!c["rows"].is_array()) throw DataError(at + ": 'rows' must be a list of [points, penalty, old_rating]");
  std::vector<StandingRow> out;
  for (const auto& r : c["rows"]) {
    const std::string row = at + ": row " + std::to_string(out.size() + 1);
    out.push_back(parse_row(r, row));
    if (out.size() < 2) continue;
    const auto& a = out[out.size() - 2];
    const auto& b = out.back();
    if (b.points > a.points || (b.points == a.points && b.penalty < a.penalty))
      throw DataError(row + " (points " + num(b.points) + ", penalty " + num(b.penalty) + ") ranks above row " +
                      std::to_string(out.size() - 1) + " (points " + num(a.points) + ", penalty " + num(a.penalty) +
                      "): rows must be in standings order (points descending, then penalty ascending)");
  }
  return out;
}

Contest parse_contest(const json& c, const std::string& where) {
  if (!c.is_object() || !c.contains("id") || !c.contains("problems") || !c.contains("rows"))
    throw DataError(where + ": each contest needs 'id', 'problems' and 'rows'");
  Contest out;
  out.id = id_text(c["id"]);
  const std::string at = where + ": contest " + out.id;
  out.problems = parse_problems(c, at);
  out.rows = parse_rows(c, at);
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
  for (const auto& c : j["contests"]) {
    pack.contests.push_back(parse_contest(c, path));
    for (size_t k = 0; k + 1 < pack.contests.size(); ++k)
      if (pack.contests[k].id == pack.contests.back().id)
        throw DataError(path + ": contest " + pack.contests.back().id + " is listed twice (contests " +
                        std::to_string(k + 1) + " and " + std::to_string(pack.contests.size()) + ")");
  }
  if (j.contains("human_ratings")) {
    if (!j["human_ratings"].is_array()) throw DataError(path + ": 'human_ratings' must be a list of numbers");
    for (const auto& r : j["human_ratings"]) pack.human_ratings.push_back(number_at(r, path + ": human_ratings"));
    if (!std::is_sorted(pack.human_ratings.begin(), pack.human_ratings.end()))
      throw DataError(path + ": 'human_ratings' must be sorted in ascending order");
  }
  return pack;
}

CodeEloSummary codeelo_summary(const StandingsPack& pack, const std::vector<const data::Example*>& rows,
                               const std::vector<ProblemResult>& results) {
  std::vector<std::optional<int64_t>> first;
  for (const auto& r : results) first.push_back(first_accepted(r.correct));
  return codeelo_summary(pack, rows, first);
}

CodeEloSummary codeelo_summary(const StandingsPack& pack, const std::vector<const data::Example*>& rows,
                               const std::vector<std::optional<int64_t>>& accepted_at) {
  std::map<std::pair<std::string, std::string>, std::optional<int64_t>> first;  // (contest, index) -> attempt
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto row = json::parse(rows[i]->row, nullptr, false);
    if (!row.is_object() || !row.contains("contest_id") || !row.contains("index")) continue;
    first[{id_text(row["contest_id"]), id_text(row["index"])}] = accepted_at.at(i);
  }
  CodeEloSummary out;
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
      out.contests_without_evaluated_problems.push_back(c.id);
      continue;
    }
    if (c.rows.size() < kCodeEloMinRows) {
      out.contests_with_too_few_rated_rows.push_back(c.id);
      continue;
    }
    const auto score = contest_score(c.problems, attempts);
    const int64_t rank = contest_rank(c.rows, score);
    const int64_t rating = codeelo_rating(c.rows, rank);
    sum += static_cast<double>(rating);
    out.contests.push_back({c.id, static_cast<int64_t>(c.problems.size()), evaluated, score.points, score.penalty,
                            rank, static_cast<int64_t>(c.rows.size()), rating});
  }
  const size_t unevaluated = out.contests_without_evaluated_problems.size();
  const size_t small = out.contests_with_too_few_rated_rows.size();
  if (out.contests.empty())
    throw DataError(pack.path + ": no contest of the standings pack can be rated from these problems (" +
                    std::to_string(unevaluated) + " without an evaluated problem: rows need 'contest_id' and "
                    "'index'; " + std::to_string(small) + " with " + std::to_string(kCodeEloMinRows - 1) +
                    " or fewer rated rows)");
  out.rating = sum / static_cast<double>(out.contests.size());
  if (!pack.human_ratings.empty()) out.percentile = rating_percentile(pack.human_ratings, out.rating);
  out.standings = pack.path;
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
    if (!set.competition) continue;
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

void add_codeelo(SetSummary& summary, const StandingsPack& pack, const EvalSet& set,
                 const std::vector<const data::Example*>& rows, const std::vector<ProblemStats>& problems) {
  if (!set.competition)
    throw ConfigError("--standings '" + pack.path + "': the set '" + set.name + "' is not made of competition rows "
                      "(tests.type competition), which CodeElo's rating needs");
  std::vector<std::optional<int64_t>> accepted_at;
  for (const auto& p : problems)
    accepted_at.push_back(p.first_accepted >= 0 ? std::optional<int64_t>(p.first_accepted) : std::nullopt);
  summary.codeelo = codeelo_summary(pack, rows, accepted_at);
}

Standings::Standings(const std::string& path) {
  if (!path.empty()) pack_ = load_standings(path);
}

void Standings::check(const std::vector<EvalSet>& sets) const {
  if (pack_) check_standings(*pack_, sets);
}

}  // namespace gspo::eval
