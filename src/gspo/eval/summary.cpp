#include "gspo/eval/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gspo/reward/code/competition.h"
#include "gspo/reward/math/math.h"

namespace gspo::eval {

double pass_at_k(int64_t n, int64_t c, int64_t k) {
  if (n - c < k) return 1.0;
  double miss = 1.0;  // C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i)
  for (int64_t i = n - c + 1; i <= n; ++i) miss *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - miss;
}

std::string majority_vote(const std::vector<std::string>& votes) {
  std::map<std::string, int> count;
  std::string best;
  int best_n = 0;
  for (const auto& v : votes) {
    if (v.empty()) continue;
    int n = ++count[v];
    if (n > best_n) {
      best = v;
      best_n = n;
    }
  }
  return best;
}

std::optional<int64_t> first_accepted(const std::vector<char>& correct) {
  for (size_t i = 0; i < correct.size(); ++i)
    if (correct[i]) return static_cast<int64_t>(i);
  return std::nullopt;
}

ProblemStats stats_of(const ProblemResult& r) {
  ProblemStats s;
  s.n = static_cast<int64_t>(r.correct.size());
  s.majority_correct = r.majority_correct;
  s.difficulty = r.difficulty;
  s.source = r.source;
  for (size_t i = 0; i < r.correct.size(); ++i) {
    s.c += r.correct[i] ? 1 : 0;
    s.reward_sum += i < r.rewards.size() ? r.rewards[i] : 0.0;
    const int64_t t = i < r.tokens.size() ? r.tokens[i] : 0;
    s.tokens_sum += t;
    s.tokens_max = std::max(s.tokens_max, t);
    if (!r.correct[i]) ++s.failures[i < r.failures.size() && !r.failures[i].empty() ? r.failures[i] : "wrong answer"];
  }
  if (const auto first = first_accepted(r.correct)) s.first_accepted = *first;
  for (const auto& u : r.tool_use) {
    ++s.tool_samples;
    s.tool_calls += u.calls;
    s.tool_calling += u.calls > 0 ? 1 : 0;
    s.tool_failed += u.errors + u.timeouts > 0 ? 1 : 0;
  }
  return s;
}

std::vector<ProblemStats> stats_of(const std::vector<ProblemResult>& results) {
  std::vector<ProblemStats> stats;
  for (const auto& p : results) stats.push_back(stats_of(p));
  return stats;
}

std::vector<std::pair<std::string, double>> named_figures(const Accuracy& a) {
  std::vector<std::pair<std::string, double>> out;
  if (a.samples == 0) return out;
  const std::string K = std::to_string(a.samples);
  out.emplace_back("avg@" + K, a.avg);
  for (const auto& [k, v] : a.pass) out.emplace_back("pass@" + std::to_string(k), v);
  if (a.cons) out.emplace_back("cons@" + K, *a.cons);
  return out;
}

namespace {

std::vector<int64_t> ks_up_to(int64_t K) {
  std::vector<int64_t> ks;
  for (int64_t k = 1; k < K; k *= 2) ks.push_back(k);
  ks.push_back(K);
  return ks;
}

// avg@K, pass@k..., cons@K over `problems` (all with K samples).
Accuracy accuracy_of(const std::vector<const ProblemStats*>& problems, int64_t K, bool with_majority) {
  const auto ks = ks_up_to(K);
  double acc = 0, cons = 0;
  std::vector<double> pass(ks.size(), 0.0);
  for (const auto* p : problems) {
    acc += static_cast<double>(p->c) / static_cast<double>(K);
    for (size_t i = 0; i < ks.size(); ++i) pass[i] += pass_at_k(K, p->c, ks[i]);
    cons += p->majority_correct ? 1 : 0;
  }
  const double P = static_cast<double>(problems.size());
  Accuracy a;
  a.samples = K;
  a.avg = acc / P;
  for (size_t i = 0; i < ks.size(); ++i) a.pass.emplace_back(ks[i], pass[i] / P);
  if (with_majority) a.cons = cons / P;
  return a;
}

// The levels in report order: easy, medium, hard (LiveCodeBench's levels), any other level after them by name
// (numeric levels, competition ratings, by value: 800 before 1200).
std::vector<LevelSummary> levels_of(const std::map<std::string, std::vector<const ProblemStats*>>& by_level, int64_t K,
                                    bool with_majority) {
  auto rank = [](const std::string& l) { return l == "easy" ? 0 : l == "medium" ? 1 : l == "hard" ? 2 : 3; };
  auto number = [](const std::string& l) {
    char* end = nullptr;
    const double v = std::strtod(l.c_str(), &end);
    return !l.empty() && end == l.c_str() + l.size() ? v : 0.0;
  };
  std::vector<std::pair<std::string, std::vector<const ProblemStats*>>> ordered(by_level.begin(), by_level.end());
  std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    return rank(a.first) != rank(b.first) ? rank(a.first) < rank(b.first) : number(a.first) < number(b.first);
  });
  std::vector<LevelSummary> out;
  for (const auto& [level, ps] : ordered)
    out.push_back({level, static_cast<int64_t>(ps.size()), accuracy_of(ps, K, with_majority)});
  return out;
}

// A difficulty that is a number ("1600"), else nullopt ("hard", "").
std::optional<double> numeric_difficulty(const std::string& d) {
  if (d.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(d.c_str(), &end);
  if (end != d.c_str() + d.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

CompetitionSummary competition_of(const std::vector<ProblemStats>& problems) {
  CompetitionSummary out;
  std::vector<RatedProblem> rated;
  for (const auto& p : problems) {
    if (const auto d = numeric_difficulty(p.difficulty)) rated.push_back({*d, p.n, p.c});
    if (p.first_accepted >= 0) ++out.solved_at_attempt[p.first_accepted];
    const auto it = p.failures.find(reward::kCheckerFailure);
    if (it != p.failures.end()) out.checker_failures += it->second;
  }
  if (!rated.empty()) {
    out.difficulty_rating = difficulty_rating(rated);
    out.unrated_problems = static_cast<int64_t>(problems.size()) - out.difficulty_rating->problems;
  }
  return out;
}

// "problem" or "problems" for n of them; count: "1 problem", "2 problems".
std::string noun(int64_t n, const std::string& singular) { return n == 1 ? singular : singular + "s"; }
std::string count(int64_t n, const std::string& singular) { return std::to_string(n) + " " + noun(n, singular); }

}  // namespace

SetSummary summarize(const std::string& name, const std::vector<ProblemStats>& problems, bool with_majority,
                     bool competition) {
  SetSummary s;
  s.dataset = name;
  s.problems = static_cast<int64_t>(problems.size());
  int64_t K = problems.empty() ? 0 : problems[0].n;
  for (const auto& p : problems) K = std::min(K, p.n);
  s.samples_per_problem = K;
  if (problems.empty() || K == 0) return s;
  std::vector<const ProblemStats*> all;
  std::map<std::string, std::vector<const ProblemStats*>> by_level, by_source;
  double reward = 0;
  int64_t tool_samples = 0, tool_calls = 0, tool_calling = 0, tool_failed = 0;
  for (const auto& p : problems) {
    tool_samples += p.tool_samples, tool_calls += p.tool_calls;
    tool_calling += p.tool_calling, tool_failed += p.tool_failed;
    all.push_back(&p);
    s.references_without_answer += p.failures.count(reward::kNoReferenceAnswer) ? 1 : 0;
    if (!p.difficulty.empty()) by_level[p.difficulty].push_back(&p);
    if (!p.source.empty()) by_source[p.source].push_back(&p);
    reward += p.reward_sum;
    s.response_tokens_total += p.tokens_sum;
    s.response_tokens_max = std::max(s.response_tokens_max, p.tokens_max);
    for (const auto& [why, n] : p.failures) s.failures[why] += n;
  }
  s.accuracy = accuracy_of(all, K, with_majority);
  const double samples = static_cast<double>(K) * static_cast<double>(problems.size());
  s.reward_mean = reward / samples;
  s.response_tokens_mean = static_cast<double>(s.response_tokens_total) / samples;
  if (tool_samples > 0) {
    const double n = static_cast<double>(tool_samples);
    s.tools = ToolsSummary{static_cast<double>(tool_calls) / n, tool_calling / n, tool_failed / n};
  }
  s.by_difficulty = levels_of(by_level, K, with_majority);
  s.by_source = levels_of(by_source, K, with_majority);  // (names sort as levels other than easy/medium/hard)
  if (competition) s.competition = competition_of(problems);
  return s;
}

SetSummary summarize(const std::string& name, const std::vector<ProblemResult>& problems, bool with_majority,
                     bool competition) {
  return summarize(name, stats_of(problems), with_majority, competition);
}

namespace {

using ojson = nlohmann::ordered_json;

void put_accuracy(ojson& j, const Accuracy& a) {
  for (const auto& [key, v] : named_figures(a)) j[key] = v;
}

void put_competition(ojson& j, const CompetitionSummary& c) {
  if (const auto& r = c.difficulty_rating) {
    ojson d;
    d["rating"] = r->rating;
    d["stderr"] = r->kind == DifficultyRating::Kind::kEstimate ? ojson(r->stderr_) : ojson(nullptr);
    d["kind"] = rating_kind_name(r->kind);
    d["problems"] = r->problems;
    d["unrated_problems"] = c.unrated_problems;
    d["what"] = "Elo rating against the problems' difficulty ratings alone; not CodeElo's contest rating";
    j["difficulty_rating"] = d;
  }
  ojson at = ojson::object();
  for (const auto& [attempt, n] : c.solved_at_attempt) at[std::to_string(attempt)] = n;
  j["solved_at_attempt"] = at;
  j["checker_failures"] = c.checker_failures;
}

// The figures after samples_per_problem (a set with problems and samples).
// A split of a set's figures (by difficulty, by source) as {name: {problems, accuracy...}}; nothing when empty.
void put_levels(ojson& j, const char* key, const std::vector<LevelSummary>& levels) {
  if (levels.empty()) return;
  ojson out;
  for (const auto& l : levels) {
    ojson one;
    one["problems"] = l.problems;
    put_accuracy(one, l.accuracy);
    out[l.level] = one;
  }
  j[key] = out;
}

void put_figures(ojson& j, const SetSummary& s) {
  put_accuracy(j, s.accuracy);
  j["reward_mean"] = s.reward_mean;
  j["response_tokens_mean"] = s.response_tokens_mean;
  j["response_tokens_max"] = s.response_tokens_max;
  j["response_tokens_total"] = s.response_tokens_total;
  j["failures"] = s.failures;
  if (const auto& t = s.tools)
    j["tools"] = {{"calls_mean", t->calls_mean}, {"calling_frac", t->calling_frac}, {"failed_frac", t->failed_frac}};
  if (s.references_without_answer > 0) j["references_without_answer"] = s.references_without_answer;
  put_levels(j, "by_difficulty", s.by_difficulty);
  put_levels(j, "by_source", s.by_source);
  if (s.competition) put_competition(j, *s.competition);
}

}  // namespace

void to_json(nlohmann::ordered_json& j, const CodeEloSummary& c) {
  ojson contests = ojson::array();
  for (const auto& r : c.contests)
    contests.push_back({{"id", r.id}, {"problems", r.problems}, {"evaluated", r.evaluated}, {"points", r.points},
                        {"penalty", r.penalty}, {"rank", r.rank}, {"rated_rows", r.rated_rows}, {"rating", r.rating}});
  j = ojson();
  j["rating"] = c.rating;
  if (c.percentile) j["percentile"] = *c.percentile;
  j["contests"] = contests;
  j["contests_without_evaluated_problems"] = c.contests_without_evaluated_problems;
  j["contests_with_too_few_rated_rows"] = c.contests_with_too_few_rated_rows;
  j["standings"] = c.standings;
  j["what"] = "CodeElo's rating (mean over contests) from the standings pack; hidden tests differ from the set's";
}

void to_json(nlohmann::ordered_json& j, const SetSummary& s) {
  j = ojson();
  j["dataset"] = s.dataset;
  j["problems"] = s.problems;
  j["samples_per_problem"] = s.samples_per_problem;
  if (s.accuracy.samples > 0) put_figures(j, s);
  if (s.codeelo) j["codeelo"] = *s.codeelo;
  if (s.verifier) j["verifier"] = *s.verifier;
  if (s.skipped_prompts) j["skipped_prompts"] = *s.skipped_prompts;
  if (s.outside_dates) j["outside_dates"] = *s.outside_dates;
  if (const auto& src = s.source)
    j["source"] = {{"path", src->path}, {"rows", src->rows}, {"file_rows", src->file_rows}, {"fnv1a64", src->fnv1a64}};
  if (const auto& c = s.coverage) {
    j["dataset_rows"] = c->dataset_rows;
    j["problems_without_responses"] = c->problems_without_responses;
  }
}

std::string accuracy_cells(const Accuracy& a) {
  std::string out;
  char buf[64];
  for (const auto& [k, v] : named_figures(a)) {
    std::snprintf(buf, sizeof buf, "%s%s %.3f", out.empty() ? "" : "  ", k.c_str(), v);
    out += buf;
  }
  return out;
}

namespace {

// The competition figures' and CodeElo's lines of the table ("" when the summary has none).
std::string competition_lines(const SetSummary& s) {
  std::string out;
  char buf[256];
  if (s.competition && s.competition->difficulty_rating) {
    const auto& r = *s.competition->difficulty_rating;
    const std::string kind = rating_kind_name(r.kind);
    if (r.kind == DifficultyRating::Kind::kEstimate)
      std::snprintf(buf, sizeof buf, "  difficulty rating %.0f +- %.0f over %lld rated problems (not CodeElo's)\n",
                    r.rating, r.stderr_, static_cast<long long>(r.problems));
    else
      std::snprintf(buf, sizeof buf, "  difficulty rating: %s %s %.0f over %lld rated problems (not CodeElo's)\n",
                    kind.c_str(), r.kind == DifficultyRating::Kind::kAllSolved ? ">=" : "<=", r.rating,
                    static_cast<long long>(r.problems));
    out += buf;
  }
  if (s.competition && !s.competition->solved_at_attempt.empty()) {
    out += "  solved at attempt:";
    for (const auto& [attempt, n] : s.competition->solved_at_attempt)
      out += " #" + std::to_string(attempt + 1) + " " + std::to_string(n) + ",";
    out.back() = '\n';
  }
  if (s.competition && s.competition->checker_failures > 0)
    out += "  checker failures (not verdicts): " + std::to_string(s.competition->checker_failures) + " samples\n";
  if (const auto& c = s.codeelo) {
    std::snprintf(buf, sizeof buf, "  CodeElo rating %.1f over %lld contests", c->rating,
                  static_cast<long long>(c->contests.size()));
    out += buf;
    if (c->percentile) out += ", percentile " + ojson(*c->percentile).dump();
    out += "\n";
  }
  return out;
}

// The lines after the competition figures: failures, tools, references, skipped prompts, gspo score's note.
std::string note_lines(const SetSummary& s) {
  std::string out;
  char buf[256];
  if (!s.failures.empty()) {
    out += "  failed samples:";
    for (const auto& [why, n] : s.failures) out += " " + why + " " + std::to_string(n) + ",";
    out.back() = '\n';
  }
  if (const auto& t = s.tools) {
    std::snprintf(buf, sizeof buf, "  tools: %.2f calls per sample, %.0f%% of samples called, %.0f%% had a call fail\n",
                  t->calls_mean, 100 * t->calling_frac, 100 * t->failed_frac);
    out += buf;
  }
  if (s.references_without_answer > 0)
    out += "  references without an extractable answer: " + count(s.references_without_answer, "problem") +
           " (graded wrong; reward.math_gold)\n";
  if (s.skipped_prompts && *s.skipped_prompts > 0)
    out += "  skipped (prompt too long): " + count(*s.skipped_prompts, "problem") + "\n";
  if (s.coverage && s.coverage->problems_without_responses > 0) {
    const int64_t missing = s.coverage->problems_without_responses;
    out += "  note: " + std::to_string(missing) + " of " + count(s.coverage->dataset_rows, "problem") + " in " +
           s.dataset + (missing == 1 ? " has" : " have") + " no responses; scored " + count(s.problems, "problem") +
           " x " + count(s.samples_per_problem, "sample") + "\n";
  }
  return out;
}

}  // namespace

std::string format_table(const std::vector<SetSummary>& summaries) {
  std::string out;
  char buf[256];
  for (const auto& s : summaries) {
    std::snprintf(buf, sizeof buf, "%-24s %5lld %s x %s  ", s.dataset.c_str(), static_cast<long long>(s.problems),
                  noun(s.problems, "problem").c_str(), count(s.samples_per_problem, "sample").c_str());
    out += buf + accuracy_cells(s.accuracy);
    if (s.response_tokens_total > 0) {
      std::snprintf(buf, sizeof buf, "  len %.0f", s.response_tokens_mean);
      out += buf;
    }
    out += "\n";
    for (const auto* group : {&s.by_difficulty, &s.by_source})
      for (const auto& l : *group) {
        std::snprintf(buf, sizeof buf, "  %-22s %5lld %-8s               ", l.level.c_str(),
                      static_cast<long long>(l.problems), noun(l.problems, "problem").c_str());
        out += buf + accuracy_cells(l.accuracy) + "\n";
      }
    out += competition_lines(s) + note_lines(s);
  }
  return out;
}

}  // namespace gspo::eval
