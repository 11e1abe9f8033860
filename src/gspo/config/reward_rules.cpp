#include "gspo/config/reward_rules.h"

#include <algorithm>
#include <cctype>

#include "gspo/config/origin.h"
#include "gspo/config/suggest.h"

namespace gspo::config {
namespace {

// A `{word}` in judge_template that is not a placeholder but within two edits of one ({answr}, {Answer}, {respone})
// would reach the judge as literal text: the placeholder it resembles, else "". Other braces ({}, \boxed{score}, JSON)
// are text.
std::string misspelt_placeholder(const std::string& tmpl, std::string& word) {
  static const std::vector<std::string> kNames{"prompt", "response", "answer"};
  for (size_t open = tmpl.find('{'); open != std::string::npos; open = tmpl.find('{', open + 1)) {
    const size_t close = tmpl.find('}', open + 1);
    if (close == std::string::npos) break;
    word = tmpl.substr(open + 1, close - open - 1);
    if (word.empty() || word.size() > 16 || std::find(kNames.begin(), kNames.end(), word) != kNames.end()) continue;
    if (!std::all_of(word.begin(), word.end(), [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_'; }))
      continue;
    std::string lower = word;
    for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (const auto& name : kNames)
      if (edit_distance(lower, name) <= 2) return name;
  }
  return "";
}

}  // namespace

void external_rules(const Config& c, bool used, std::vector<std::string>& e) {
  if (used && c.reward.external.command.empty())
    e.push_back(where_set(c, "reward.kind") + ": the external verifier needs reward.external_command");
}

void model_reward_rules(const Config& c, bool used, std::vector<std::string>& e) {
  const auto& m = c.reward.model;
  if (used && m.path.empty())
    e.push_back(where_set(c, "reward.kind") + ": the model reward needs reward.model_path (a reward model exported by "
                "scripts/export_hf.py --reward)");
}

void judge_rules(const Config& c, bool used, std::vector<std::string>& e) {
  const auto& j = c.reward.judge;
  if (!used) return;
  if (j.path.empty())
    e.push_back(where_set(c, "reward.kind") + ": the judge reward needs reward.judge_path (a policy export: the judge)");
  if (j.question.find("{response}") == std::string::npos)
    e.push_back(where_set(c, "reward.judge_template") + ": reward.judge_template must show the judge the response "
                "({response})");
  std::string word;
  if (const auto meant = misspelt_placeholder(j.question, word); !meant.empty())
    e.push_back(where_set(c, "reward.judge_template") + ": '{" + word + "}' in reward.judge_template is not a placeholder "
                "(did you mean {" + meant + "}?); it takes {prompt}, {response} and {answer}, other text goes to the "
                "judge as written");
  if (j.mode == JudgeMode::kVerdict && (j.yes.empty() || j.no.empty() || j.yes == j.no))
    e.push_back(where_set(c, "reward.judge_yes") + ": the verdicts reward.judge_yes ('" + j.yes +
                "') and reward.judge_no ('" + j.no + "') must be two different, non-empty texts");
}

}  // namespace gspo::config
