// Verifiers turn a response into a scalar reward. The built-in ones here check answers exactly; the math, code,
// external and tool-format verifiers, and the scorers that run models on the device (a reward model, an LLM judge),
// implement the same interface; reward.components sums several.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gspo/data/example.h"

namespace gspo::reward {

struct Score {
  double reward = 0;     // what the policy is optimised on
  bool correct = false;  // the answer part alone was right (reported as accuracy)
  std::string detail;    // for people reading samples: the extracted math answer, a code failure reason; "" = none
  std::vector<double> components;  // reward.components: each component's own (unweighted) reward; else empty
  std::string failure;   // why it is not correct, in a few words ("wrong answer", "timeout", "no answer found", ...);
                         // "" = correct, or the verifier gives no reason
};

// What the models a verifier runs on the device (reward models, judges) did since it was made: rows, rows that could
// not be scored, tokens through the models (padding included), seconds.
struct ScoringTotals {
  int64_t rows = 0, failed = 0, tokens = 0;
  double seconds = 0;
  std::string last_failure;  // the reason of the latest row that could not be scored ("" = none yet)
};

// An episode's tool use (multi-turn tools, docs/tools.md), for rewards on it.
struct ToolUse {
  int64_t turns = 0;     // assistant turns
  int64_t calls = 0;     // tool calls run (malformed ones included)
  int64_t errors = 0;    // of those, tool errors (timeouts included)
  int64_t timeouts = 0;
};

class Verifier {
 public:
  virtual ~Verifier() = default;
  // `response` is the decoded response text without EOS. Must be thread-safe (const).
  virtual Score score(const std::string& response, const data::Example& ex) const = 0;
  // With tools: `response` is the episode's final assistant turn and `use` its tool use. The verifiers that read the
  // use (tool_format, external, weighted sums of them) override this; the others grade the text alone.
  virtual Score score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const {
    (void)use;
    return score(response, ex);
  }
  virtual std::string name() const = 0;
  // reward.components: the weight of each component, in Score::components' order; empty for a single verifier.
  virtual std::vector<double> component_weights() const { return {}; }
  // Verifiers that score a whole batch at once (a reward model: one device pass per micro-batch, not one per row)
  // say so here and score it in score_batch; the others are scored row by row (score_all runs them on threads).
  virtual bool batches() const { return false; }
  virtual std::vector<Score> score_batch(const std::vector<std::string>& responses,
                                         const std::vector<const data::Example*>& examples,
                                         const std::vector<ToolUse>* uses, int64_t workers) const;
  // Whether Score::correct means something (reward.components: accuracy follows the first component that grades; a
  // learned reward model's score does not say whether the answer is right).
  virtual bool grades_correctness() const { return true; }
  // The device models' totals (model_reward.h, judge.h; summed over a weighted sum's parts); zero for the rules.
  virtual ScoringTotals scoring_totals() const { return {}; }
};

// exact: the response, trimmed of surrounding whitespace, equals the answer.
class ExactMatch : public Verifier {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "exact"; }
};

// leading_integer: the integer the response starts with (optional sign, then digits; leading spaces skipped)
// equals the answer's integer exactly; text after it is ignored. Built-in arithmetic task's default.
class LeadingInteger : public Verifier {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "leading_integer"; }
};

// tool_format: 1 when the episode called a tool and none of its calls failed (no tool error, no timeout); 0 otherwise,
// and 0 for a response graded without tools. A format reward for tool use, meant as a small weighted component.
class ToolUseFormat : public Verifier {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  Score score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const override;
  std::string name() const override { return "tool_format"; }
};

// `s` without leading and trailing spaces, tabs and newlines.
std::string trim(const std::string& s);

// The leading integer of `text` as written ("-0012" stays "-0012"), or "" when it does not start with one.
std::string leading_integer(const std::string& text);

// Scores responses[i] against *examples[i]: in one Verifier::score_batch call when the verifier batches, else on
// `workers` threads (0 = hardware threads); rethrows the first error. With `uses` (one per response: episodes with
// tools), through Verifier::score_episode.
std::vector<Score> score_all(const Verifier& v, const std::vector<std::string>& responses,
                             const std::vector<const data::Example*>& examples, int64_t workers,
                             const std::vector<ToolUse>* uses = nullptr);

}  // namespace gspo::reward
