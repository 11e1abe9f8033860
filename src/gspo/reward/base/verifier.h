// What a verifier is: a response turned into a scalar reward. The small core every verifier has (score, score_episode,
// name, kind), the seam of those that score a batch at once (BatchScoring: the scorers that run models on the device,
// scorers/), and the one-line rules (exact, leading integer, tool format). The math, code and external verifiers and
// the model scorers (a reward model, an LLM judge) are in the rooms after this one; reward.components sums several.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gspo/config/choices.h"
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

class Verifier;

// The seam of the verifiers that score a whole batch at once: the scorers that run models on the device (scorers/: one
// device pass per micro-batch, not one per row) and a weighted sum holding one. The others are scored row by row
// (score_all runs them on threads).
class BatchScoring {
 public:
  virtual ~BatchScoring() = default;
  virtual std::vector<Score> score_batch(const std::vector<std::string>& responses,
                                         const std::vector<const data::Example*>& examples,
                                         const std::vector<ToolUse>* uses, int64_t workers) const = 0;
  // What its models did since they were made (summed over a weighted sum's parts).
  virtual ScoringTotals totals() const = 0;
};

// A part of a weighted sum (reward.components): the verifier and its weight.
struct WeightedPart {
  const Verifier* verifier = nullptr;
  double weight = 0;
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
  // For people (logs, summaries: "math:1.000+format:0.100" for a sum); code reads kind(), never this.
  virtual std::string name() const = 0;
  // What it is: the reward.kind it implements (kAuto: auto's choice of math or code row by row), or nullopt for a
  // weighted sum (reward.components), whose parts() say.
  virtual std::optional<config::RewardKind> kind() const = 0;
  // A weighted sum's parts, in reward.components' order; empty for the others.
  virtual std::vector<WeightedPart> parts() const { return {}; }
  // The batch seam (above); nullptr for the verifiers scored row by row.
  virtual const BatchScoring* scoring() const { return nullptr; }

  // Read from the members above: parts()' weights (empty for a single verifier), whether it scores batches, and the
  // batch seam's totals (zero for the rules).
  std::vector<double> component_weights() const;
  bool batches() const { return scoring() != nullptr; }
  ScoringTotals scoring_totals() const;
};

// exact: the response, trimmed of surrounding whitespace, equals the answer.
class ExactMatch : public Verifier {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "exact"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kExact; }
};

// leading_integer: the integer the response starts with (optional sign, then digits; leading spaces skipped)
// equals the answer's integer exactly; text after it is ignored. Built-in arithmetic task's default.
class LeadingInteger : public Verifier {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "leading_integer"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kLeadingInteger; }
};

// tool_format: 1 when the episode called a tool and none of its calls failed (no tool error, no timeout); 0 otherwise,
// and 0 for a response graded without tools. A format reward for tool use, meant as a small weighted component.
class ToolUseFormat : public Verifier {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  Score score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const override;
  std::string name() const override { return "tool_format"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kToolFormat; }
};

// `s` without leading and trailing spaces, tabs and newlines.
std::string trim(const std::string& s);

// The leading integer of `text` as written ("-0012" stays "-0012"), or "" when it does not start with one.
std::string leading_integer(const std::string& text);

// Scores responses[i] against *examples[i]: in one BatchScoring::score_batch call when the verifier batches, else on
// `workers` threads (0 = hardware threads); rethrows the first error. With `uses` (one per response: episodes with
// tools), through Verifier::score_episode.
std::vector<Score> score_all(const Verifier& v, const std::vector<std::string>& responses,
                             const std::vector<const data::Example*>& examples, int64_t workers,
                             const std::vector<ToolUse>* uses = nullptr);

}  // namespace gspo::reward
