#include "gspo/eval/resume.h"

#include <fstream>

namespace gspo::eval {

DoneSamples read_done_samples(const std::string& samples_path, int64_t K) {
  DoneSamples done;
  std::ifstream in(samples_path);
  if (!in) return done;
  // set -> index -> sample -> line
  std::map<std::string, std::map<int64_t, std::map<int64_t, nlohmann::ordered_json>>> seen;
  int64_t lines = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++lines;
    auto j = nlohmann::ordered_json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("dataset") || !j.contains("index") || !j.contains("sample") ||
        !j["index"].is_number_integer() || !j["sample"].is_number_integer())
      continue;  // a line cut off by the interruption
    const int64_t s = j["sample"];
    if (s < 0 || s >= K) continue;
    const std::string set = j["dataset"].get<std::string>();  // read before the move below (C++17 assigns right first)
    const int64_t index = j["index"];
    seen[set][index][s] = std::move(j);
  }
  int64_t kept = 0;
  for (auto& [set, problems] : seen) {
    auto& out = done.sets[set];
    for (int64_t i = 0;; ++i) {
      auto it = problems.find(i);
      if (it == problems.end() || static_cast<int64_t>(it->second.size()) != K) break;
      std::vector<nlohmann::ordered_json> samples;
      for (auto& [s, l] : it->second) samples.push_back(std::move(l));
      out.push_back(std::move(samples));
      kept += K;
    }
  }
  done.dropped_lines = lines - kept;
  return done;
}

ProblemResult result_from_lines(const std::vector<nlohmann::ordered_json>& lines, const Grader& grader,
                                const data::Example& problem) {
  ProblemResult p;
  std::vector<std::string> responses;
  for (const auto& l : lines) {
    const bool ok = l.value("correct", false);
    p.correct.push_back(ok);
    p.rewards.push_back(l.value("reward", 0.0));
    p.tokens.push_back(l.value("tokens", int64_t{0}));
    p.details.push_back(l.value("detail", std::string()));
    p.failures.push_back(ok ? "" : l.value("failure", std::string("wrong answer")));
    if (l.contains("tool_calls"))  // an episode's line (tools)
      p.tool_use.push_back({l.value("tool_turns", int64_t{0}), l.value("tool_calls", int64_t{0}),
                            l.value("tool_errors", int64_t{0}), l.value("tool_timeouts", int64_t{0})});
    // With tools the final turn was graded and voted on; the response holds the whole episode.
    responses.push_back(l.value("final_turn", l.value("response", std::string())));
  }
  p.difficulty = problem.difficulty;
  p.source = problem.source;
  grader.vote(p, responses, problem);
  return p;
}

std::string first_difference(const nlohmann::json& before, const nlohmann::json& now, const std::string& prefix) {
  if (before.is_object() && now.is_object()) {
    for (const auto& [k, v] : now.items()) {
      const std::string key = prefix.empty() ? k : prefix + "." + k;
      if (!before.contains(k)) return key + " (not recorded before; now " + v.dump() + ")";
      auto d = first_difference(before[k], v, key);
      if (!d.empty()) return d;
    }
    for (const auto& [k, v] : before.items())
      if (!now.contains(k)) return (prefix.empty() ? k : prefix + "." + k) + " (was " + v.dump() + ")";
    return "";
  }
  if (before == now) return "";
  return prefix + " (was " + before.dump() + ", now " + now.dump() + ")";
}

}  // namespace gspo::eval
