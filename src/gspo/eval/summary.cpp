#include "gspo/eval/summary.h"

#include "gspo/eval/competition.h"
#include "gspo/reward/math/math.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

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

ProblemStats stats_of(const ProblemResult& r) {
  ProblemStats s;
  s.n = static_cast<int64_t>(r.correct.size());
  s.majority_correct = r.majority_correct;
  s.difficulty = r.difficulty;
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

namespace {

std::vector<int64_t> ks_up_to(int64_t K) {
  std::vector<int64_t> ks;
  for (int64_t k = 1; k < K; k *= 2) ks.push_back(k);
  ks.push_back(K);
  return ks;
}

// avg@K, pass@k..., cons@K over `problems` (all with K samples).
void accuracy_fields(nlohmann::ordered_json& j, const std::vector<const ProblemStats*>& problems, int64_t K,
                     bool with_majority) {
  const auto ks = ks_up_to(K);
  double acc = 0, cons = 0;
  std::vector<double> pass(ks.size(), 0.0);
  for (const auto* p : problems) {
    acc += static_cast<double>(p->c) / static_cast<double>(K);
    for (size_t i = 0; i < ks.size(); ++i) pass[i] += pass_at_k(K, p->c, ks[i]);
    cons += p->majority_correct ? 1 : 0;
  }
  const double P = static_cast<double>(problems.size());
  j["avg@" + std::to_string(K)] = acc / P;
  for (size_t i = 0; i < ks.size(); ++i) j["pass@" + std::to_string(ks[i])] = pass[i] / P;
  if (with_majority) j["cons@" + std::to_string(K)] = cons / P;
}

// "problem" or "problems" for n of them; count: "1 problem", "2 problems".
std::string noun(int64_t n, const std::string& singular) { return n == 1 ? singular : singular + "s"; }
std::string count(int64_t n, const std::string& singular) { return std::to_string(n) + " " + noun(n, singular); }

}  // namespace

nlohmann::ordered_json summarize(const std::string& name, const std::vector<ProblemStats>& problems, bool with_majority,
                                 bool competition) {
  nlohmann::ordered_json j;
  j["dataset"] = name;
  j["problems"] = problems.size();
  int64_t K = problems.empty() ? 0 : problems[0].n;
  for (const auto& p : problems) K = std::min(K, p.n);
  j["samples_per_problem"] = K;
  if (problems.empty() || K == 0) return j;
  std::vector<const ProblemStats*> all;
  std::map<std::string, std::vector<const ProblemStats*>> by_level;
  double reward = 0;
  int64_t tokens = 0, max_tokens = 0;
  std::map<std::string, int64_t> failures;
  int64_t no_reference = 0;  // problems whose reference held no answer (reward.math_gold extract/auto)
  int64_t tool_samples = 0, tool_calls = 0, tool_calling = 0, tool_failed = 0;
  for (const auto& p : problems) {
    tool_samples += p.tool_samples, tool_calls += p.tool_calls;
    tool_calling += p.tool_calling, tool_failed += p.tool_failed;
    all.push_back(&p);
    no_reference += p.failures.count(reward::kNoReferenceAnswer) ? 1 : 0;
    if (!p.difficulty.empty()) by_level[p.difficulty].push_back(&p);
    reward += p.reward_sum;
    tokens += p.tokens_sum;
    max_tokens = std::max(max_tokens, p.tokens_max);
    for (const auto& [why, n] : p.failures) failures[why] += n;
  }
  accuracy_fields(j, all, K, with_majority);
  const double samples = static_cast<double>(K) * static_cast<double>(problems.size());
  j["reward_mean"] = reward / samples;
  j["response_tokens_mean"] = static_cast<double>(tokens) / samples;
  j["response_tokens_max"] = max_tokens;
  j["response_tokens_total"] = tokens;
  j["failures"] = failures;
  if (tool_samples > 0) {
    const double n = static_cast<double>(tool_samples);
    j["tools"] = {{"calls_mean", static_cast<double>(tool_calls) / n}, {"calling_frac", tool_calling / n},
                  {"failed_frac", tool_failed / n}};
  }
  if (no_reference > 0) j["references_without_answer"] = no_reference;
  if (!by_level.empty()) {
    // easy, medium, hard (LiveCodeBench's levels) in that order, any other level after them by name
    // (numeric levels, competition ratings, by value: 800 before 1200)
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
    nlohmann::ordered_json levels;
    for (const auto& [level, ps] : ordered) {
      nlohmann::ordered_json l;
      l["problems"] = ps.size();
      accuracy_fields(l, ps, K, with_majority);
      levels[level] = l;
    }
    j["by_difficulty"] = levels;
  }
  if (competition) add_competition_summary(j, problems);
  return j;
}

nlohmann::ordered_json summarize(const std::string& name, const std::vector<ProblemResult>& problems, bool with_majority,
                                 bool competition) {
  std::vector<ProblemStats> stats;
  for (const auto& p : problems) stats.push_back(stats_of(p));
  return summarize(name, stats, with_majority, competition);
}

std::string accuracy_cells(const nlohmann::ordered_json& j) {
  std::string out;
  char buf[64];
  for (const auto& [k, v] : j.items()) {
    if (k.find('@') == std::string::npos) continue;
    std::snprintf(buf, sizeof buf, "%s%s %.3f", out.empty() ? "" : "  ", k.c_str(), v.get<double>());
    out += buf;
  }
  return out;
}

std::string format_table(const std::vector<nlohmann::ordered_json>& summaries) {
  std::string out;
  char buf[256];
  for (const auto& s : summaries) {
    const int64_t problems = s["problems"].get<int64_t>(), K = s["samples_per_problem"].get<int64_t>();
    std::snprintf(buf, sizeof buf, "%-24s %5lld %s x %s  ", s["dataset"].get<std::string>().c_str(),
                  static_cast<long long>(problems), noun(problems, "problem").c_str(), count(K, "sample").c_str());
    out += buf + accuracy_cells(s);
    if (s.contains("response_tokens_total") && s["response_tokens_total"].get<int64_t>() > 0) {
      std::snprintf(buf, sizeof buf, "  len %.0f", s["response_tokens_mean"].get<double>());
      out += buf;
    }
    out += "\n";
    if (s.contains("by_difficulty"))
      for (const auto& [level, l] : s["by_difficulty"].items()) {
        const int64_t n = l["problems"].get<int64_t>();
        std::snprintf(buf, sizeof buf, "  %-22s %5lld %-8s               ", level.c_str(), static_cast<long long>(n),
                      noun(n, "problem").c_str());
        out += buf + accuracy_cells(l) + "\n";
      }
    out += competition_table_lines(s);
    if (s.contains("failures") && !s["failures"].empty()) {
      out += "  failed samples:";
      for (const auto& [why, n] : s["failures"].items())
        out += " " + why + " " + std::to_string(n.get<int64_t>()) + ",";
      out.back() = '\n';
    }
    if (s.contains("tools")) {
      const auto& t = s["tools"];
      std::snprintf(buf, sizeof buf, "  tools: %.2f calls per sample, %.0f%% of samples called, %.0f%% had a call fail\n",
                    t["calls_mean"].get<double>(), 100 * t["calling_frac"].get<double>(),
                    100 * t["failed_frac"].get<double>());
      out += buf;
    }
    if (s.contains("references_without_answer"))
      out += "  references without an extractable answer: " +
             count(s["references_without_answer"].get<int64_t>(), "problem") + " (graded wrong; reward.math_gold)\n";
    if (s.contains("skipped_prompts") && s["skipped_prompts"].get<int64_t>() > 0)
      out += "  skipped (prompt too long): " + count(s["skipped_prompts"].get<int64_t>(), "problem") + "\n";
    if (s.contains("problems_without_responses") && s["problems_without_responses"].get<int64_t>() > 0) {
      const int64_t missing = s["problems_without_responses"].get<int64_t>();
      out += "  note: " + std::to_string(missing) + " of " + count(s["dataset_rows"].get<int64_t>(), "problem") +
             " in " + s["dataset"].get<std::string>() + (missing == 1 ? " has" : " have") + " no responses; scored " +
             count(problems, "problem") + " x " + count(K, "sample") + "\n";
    }
  }
  return out;
}

}  // namespace gspo::eval
