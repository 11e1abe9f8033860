// Math answer verifier: the final answer of a response against the reference, graded as Math-Verify 0.9.0 grades
// (the grader TRL, open-r1 and verl's math_verify reward use); docs/verifiers.md, "Math", lists every rule, the
// conventions and the measured agreement. The parts:
//   extraction (math_extract.h): \boxed{} (adjacent boxes, or boxes one sentence lists, as a list), "final answer
//     is", the math after "answer", else the last math span or number (decimal commas read);
//   normalisation (math_normalize.h): one spelling for LaTeX variants, units, relations, matrices, thousands, ';'
//     lists, approximations (the exact value kept);
//   equivalence (here): equal strings (words in any case); integers exactly; numbers within a relative tolerance;
//     expressions with variables and functions by a random-point identity test (math_symbolic.h); relations and
//     equations (math_relation.h); matrices element by element; tuples / intervals (same brackets), sets and lists
//     (any order), a bare list against a tuple (in order), unions, a \pm b; percent; "x = 5" against 5 (an
//     equation's last side against a plain reference; a labelled reference "PQ = 6" or "(m,n) = (4,1)" by its value).
// The reference: the answer field, or (reward.math_gold) an answer extracted from it as from a response.
#pragma once
#include <optional>
#include <string>

#include "gspo/reward/base/verifier.h"
#include "gspo/reward/math/math_normalize.h"

namespace gspo::config { struct Config; }

namespace gspo::reward {

// Where the reference answer comes from.
enum class GoldMode {
  kAuto,     // extracted when the field holds \boxed, \fbox, $, \(, \[ or "answer is"/"answer:"; else as it is
  kAnswer,   // the field as it is (after a GSM8K "####")
  kExtract,  // always extracted, as from a response
};

struct MathOptions {
  bool answer_is_fallback = true;    // the math after "answer" when there is no \boxed{}
  bool last_number_fallback = true;  // the last math span or number when nothing else matched
  double rel_tol = 1e-6;
  GoldMode gold = GoldMode::kAuto;
};

// The raw final answer of a response, or nullopt when none could be found.
std::optional<std::string> extract_answer(const std::string& response, const MathOptions& opts);
// Whether two raw answers are equivalent; `gold` is the reference, `pred` the response's answer (the rules are
// not symmetric: an equation's last side answers a plain reference, a relation reference accepts its interval).
bool answers_equivalent(const std::string& pred, const std::string& gold, double rel_tol = 1e-6);
// The reference answer of a dataset row's answer field, or nullopt when the field needs extraction and holds none.
std::optional<std::string> reference_answer(const std::string& answer_field, GoldMode mode = GoldMode::kAuto);

class MathVerifier : public Verifier {
 public:
  explicit MathVerifier(MathOptions o = {}) : opts_(o) {}
  // failure "reference has no answer" when the reference could not be extracted (counted by gspo score / eval).
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "math"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kMath; }
  // Normalised extracted answer (for majority voting); "" when none.
  std::string voting_key(const std::string& response) const;
  const MathOptions& options() const { return opts_; }

 private:
  MathOptions opts_;
};

// The math options config.reward describes (reward.math_*).
MathOptions math_options(const config::Config& cfg);

// The failure text of a score whose reference held no answer.
inline constexpr const char* kNoReferenceAnswer = "reference has no answer";

// Format reward: 1 when the response gives its answer in \boxed{...}.
class BoxedFormat : public Verifier {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "format"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kFormat; }
};

}  // namespace gspo::reward
