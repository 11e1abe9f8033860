#include "gspo/eval/competition.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "gspo/core/error.h"
#include "gspo/eval/rating.h"
#include "gspo/reward/code/competition.h"

namespace gspo::eval {
namespace {

// A difficulty that is a number ("1600"), else nullopt ("hard", "").
std::optional<double> numeric_difficulty(const std::string& d) {
  if (d.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(d.c_str(), &end);
  if (end != d.c_str() + d.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

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

std::optional<int64_t> first_accepted(const std::vector<char>& correct) {
  for (size_t i = 0; i < correct.size(); ++i)
    if (correct[i]) return static_cast<int64_t>(i);
  return std::nullopt;
}

void add_attempt_fields(nlohmann::ordered_json& line, const ProblemResult& p, size_t s) {
  line["attempt"] = s;
  if (p.correct[s]) line["verdict"] = "accepted";
  else if (p.failures[s] == reward::kCheckerFailure) line["verdict"] = nullptr;
  else line["verdict"] = p.failures[s];
  const auto first = first_accepted(p.correct);
  line["first_accepted"] = first ? nlohmann::ordered_json(*first) : nlohmann::ordered_json(nullptr);
}

void add_competition_summary(nlohmann::ordered_json& summary, const std::vector<ProblemStats>& problems) {
  std::vector<RatedProblem> rated;
  std::map<int64_t, int64_t> solved_at;
  int64_t checker_failures = 0;
  for (const auto& p : problems) {
    if (const auto d = numeric_difficulty(p.difficulty)) rated.push_back({*d, p.n, p.c});
    if (p.first_accepted >= 0) ++solved_at[p.first_accepted];
    const auto it = p.failures.find(reward::kCheckerFailure);
    if (it != p.failures.end()) checker_failures += it->second;
  }
  if (!rated.empty()) {
    const auto r = difficulty_rating(rated);
    nlohmann::ordered_json j;
    j["rating"] = r.rating;
    j["stderr"] = r.kind == DifficultyRating::Kind::kEstimate ? nlohmann::ordered_json(r.stderr_) : nullptr;
    j["kind"] = rating_kind_name(r.kind);
    j["problems"] = r.problems;
    j["unrated_problems"] = static_cast<int64_t>(problems.size()) - r.problems;
    j["what"] = "Elo rating against the problems' difficulty ratings alone; not CodeElo's contest rating";
    summary["difficulty_rating"] = j;
  }
  nlohmann::ordered_json at = nlohmann::ordered_json::object();
  for (const auto& [attempt, n] : solved_at) at[std::to_string(attempt)] = n;
  summary["solved_at_attempt"] = at;
  summary["checker_failures"] = checker_failures;
}

std::string competition_table_lines(const nlohmann::ordered_json& s) {
  std::string out;
  char buf[256];
  if (s.contains("difficulty_rating")) {
    const auto& r = s["difficulty_rating"];
    const std::string kind = r["kind"].get<std::string>();
    if (kind == "estimate")
      std::snprintf(buf, sizeof buf, "  difficulty rating %.0f +- %.0f over %lld rated problems (not CodeElo's)\n",
                    r["rating"].get<double>(), r["stderr"].get<double>(),
                    static_cast<long long>(r["problems"].get<int64_t>()));
    else
      std::snprintf(buf, sizeof buf, "  difficulty rating: %s %s %.0f over %lld rated problems (not CodeElo's)\n",
                    kind.c_str(), kind.rfind("all", 0) == 0 ? ">=" : "<=", r["rating"].get<double>(),
                    static_cast<long long>(r["problems"].get<int64_t>()));
    out += buf;
  }
  if (s.contains("solved_at_attempt") && !s["solved_at_attempt"].empty()) {
    out += "  solved at attempt:";
    for (const auto& [attempt, n] : s["solved_at_attempt"].items())
      out += " #" + std::to_string(std::stoll(attempt) + 1) + " " + std::to_string(n.get<int64_t>()) + ",";
    out.back() = '\n';
  }
  if (s.contains("checker_failures") && s["checker_failures"].get<int64_t>() > 0)
    out += "  checker failures (not verdicts): " + std::to_string(s["checker_failures"].get<int64_t>()) + " samples\n";
  if (s.contains("codeelo")) {
    const auto& c = s["codeelo"];
    std::snprintf(buf, sizeof buf, "  CodeElo rating %.1f over %lld contests", c["rating"].get<double>(),
                  static_cast<long long>(c["contests"].size()));
    out += buf;
    if (c.contains("percentile")) out += ", percentile " + c["percentile"].dump();
    out += "\n";
  }
  return out;
}

}  // namespace gspo::eval
