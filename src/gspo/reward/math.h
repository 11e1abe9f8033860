// Math answer verifier: extracts the final answer of a response and decides whether it equals the reference.
// The rules (docs/math-verifier.md) in short:
//   extraction: the last \boxed{...} (nested braces; also \fbox); fallbacks, each switchable: "the answer is X",
//     then the last number in the text;
//   normalisation: $ and \left/\right/spacing commands dropped, \dfrac/\tfrac -> \frac, \text{...} unwrapped and
//     trailing units dropped, degrees, thousands separators, trailing '.', spaces, "x = 5" -> 5; references of
//     the form "... #### 42" (GSM8K) use what follows ####;
//   equivalence: equal normalised strings, or both sides evaluate to numbers within a relative tolerance of
//     1e-6 (absolute 1e-9), or both are tuples / intervals (same brackets) / sets (any order) / comma lists (any
//     order) with pairwise equivalent elements; percent rule: "p%" equals p and p/100.
#pragma once
#include <optional>
#include <string>

#include "gspo/reward/verifier.h"

namespace gspo::reward {

struct MathOptions {
  bool answer_is_fallback = true;    // "the answer is X" when there is no \boxed{}
  bool last_number_fallback = true;  // the last number in the text when nothing else matched
  double rel_tol = 1e-6;
};

// The raw final answer of a response, or nullopt when none could be found.
std::optional<std::string> extract_answer(const std::string& response, const MathOptions& opts);
// Canonical text of an answer (the normalisation above).
std::string normalize_answer(const std::string& answer);
// Whether two (raw) answers are equivalent.
bool answers_equivalent(const std::string& a, const std::string& b, double rel_tol = 1e-6);
// The reference answer of a dataset row's answer field ("#### X" handling).
std::string reference_answer(const std::string& answer_field);

class MathVerifier : public Verifier {
 public:
  explicit MathVerifier(MathOptions o = {}) : opts_(o) {}
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "math"; }
  // Normalised extracted answer (for majority voting); "" when none.
  std::string voting_key(const std::string& response) const;

 private:
  MathOptions opts_;
};

// Format reward: 1 when the response gives its answer in \boxed{...}.
class BoxedFormat : public Verifier {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "format"; }
};

}  // namespace gspo::reward
