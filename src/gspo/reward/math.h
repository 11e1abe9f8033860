// Math answer verifier: extracts the final answer of a response and decides whether it equals the reference.
// The rules (docs/verifiers.md, "Math") in short:
//   extraction: the last \boxed{...} (nested braces; also \fbox); fallbacks, each switchable: "the (final) answer
//     is X" (X the math in $...$ when it opens there: the Minerva format), then the last number in the text;
//     answers over 1000 characters are none;
//   normalisation: $ and \left/\right/spacing commands dropped, \dfrac/\tfrac -> \frac, \dbinom/\tbinom -> \binom,
//     \text{...} unwrapped and trailing units dropped, degrees, thousands separators (also {,}), trailing '.',
//     spaces, "x = 5" / "f(x) = 5" / "x \in [1, 3]" -> the right side; references "... #### 42" (GSM8K) use 42;
//   equivalence: equal normalised strings; integers exactly; numbers within a relative tolerance of 1e-6
//     (absolute 1e-9); expressions with free variables by a random-point identity test (math_symbolic.h);
//     tuples / intervals (same brackets), sets and comma lists (any order), a \pm b as the list a+b, a-b;
//     percent rule: "p%" equals p and p/100.
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
