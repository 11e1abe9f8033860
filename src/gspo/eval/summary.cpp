#include "gspo/eval/summary.h"

#include <algorithm>
#include <cstdio>
#include <map>

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

nlohmann::ordered_json summarize(const std::string& name, const std::vector<ProblemResult>& problems, bool with_majority) {
  nlohmann::ordered_json j;
  j["dataset"] = name;
  j["problems"] = problems.size();
  int64_t K = problems.empty() ? 0 : static_cast<int64_t>(problems[0].correct.size());
  for (const auto& p : problems) K = std::min<int64_t>(K, p.correct.size());
  j["samples_per_problem"] = K;
  if (problems.empty() || K == 0) return j;
  double acc = 0, reward = 0, maj = 0;
  int64_t tokens = 0, samples = 0, max_tokens = 0;
  std::vector<int64_t> ks;
  for (int64_t k = 1; k < K; k *= 2) ks.push_back(k);
  ks.push_back(K);
  std::vector<double> pass(ks.size(), 0.0);
  for (const auto& p : problems) {
    int64_t c = 0;
    for (int64_t s = 0; s < K; ++s) {
      c += p.correct[s];
      reward += p.rewards[s];
      const int64_t t = s < static_cast<int64_t>(p.tokens.size()) ? p.tokens[s] : 0;
      tokens += t;
      max_tokens = std::max(max_tokens, t);
      ++samples;
    }
    acc += static_cast<double>(c) / K;
    for (size_t i = 0; i < ks.size(); ++i) pass[i] += pass_at_k(K, c, ks[i]);
    maj += p.majority_correct;
  }
  const double P = static_cast<double>(problems.size());
  j["avg@" + std::to_string(K)] = acc / P;
  for (size_t i = 0; i < ks.size(); ++i) j["pass@" + std::to_string(ks[i])] = pass[i] / P;
  if (with_majority) j["maj@" + std::to_string(K)] = maj / P;
  j["reward_mean"] = reward / static_cast<double>(samples);
  j["response_tokens_mean"] = static_cast<double>(tokens) / static_cast<double>(samples);
  j["response_tokens_max"] = max_tokens;
  j["response_tokens_total"] = tokens;
  return j;
}

std::string format_table(const std::vector<nlohmann::ordered_json>& summaries) {
  std::string out;
  char buf[256];
  for (const auto& s : summaries) {
    std::snprintf(buf, sizeof buf, "%-24s %5lld problems x %lld samples", s["dataset"].get<std::string>().c_str(),
                  static_cast<long long>(s["problems"].get<int64_t>()),
                  static_cast<long long>(s["samples_per_problem"].get<int64_t>()));
    out += buf;
    for (const auto& [k, v] : s.items()) {
      if (k.find('@') == std::string::npos) continue;
      std::snprintf(buf, sizeof buf, "  %s %.3f", k.c_str(), v.get<double>());
      out += buf;
    }
    if (s.contains("response_tokens_total") && s["response_tokens_total"].get<int64_t>() > 0) {
      std::snprintf(buf, sizeof buf, "  len %.0f", s["response_tokens_mean"].get<double>());
      out += buf;
    }
    out += "\n";
  }
  return out;
}

}  // namespace gspo::eval
