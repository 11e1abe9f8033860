// Finding the final answer in a response (or in a reference that is a whole solution), the way Math-Verify 0.9.0
// does (docs/verifiers.md, "Math"). Candidates, by priority; within one, the one that ends last wins:
//   1. \boxed{...} / \fbox{...} (the last one, with the boxes just before it when only a short separator such as
//      ", ", " and " lies between them: "\boxed{2} and \boxed{3}" gives "2,3"), and the math after
//      "final answer ... is" (the Minerva format "The final answer is $X$. I hope it is correct.");
//   2. the math or number after "answer" ("The answer is 18.", "**Answer:** $x = 5$", "answer: ... = 42");
//   3. the last math of the text: $...$, $$...$$, \(...\), \[...\], a bare \frac{a}{b}, or a number standing
//      alone (not inside a word: "XDY2K" holds no answer); math spans joined by "and" / "or" / "," form a list.
// Candidates of 2 and 3 must read as math (a number, an expression, a list, a relation, a matrix) or be a word in a
// LaTeX text command ("$\text{Carla}$ ran farther"); a span of prose between two currency signs is skipped. A bare box
// also takes the boxes one sentence lists before it ("\boxed{2} apples and \boxed{5} pears"), and a number in prose
// may have a decimal comma ("2,5"; "1,500" is a thousand and a half). Answers over 1000 characters are none.
#pragma once
#include <optional>
#include <string>

namespace gspo::reward {

struct ExtractOptions {
  bool answer_phrase = true;  // candidates of kind 2 (and a "the answer is <words>" sentence when nothing else)
  bool plain = true;          // candidates of kind 3
};

// The raw final answer of `text`, or nullopt when none could be found.
std::optional<std::string> extract_final_answer(const std::string& text, const ExtractOptions& opts);

// The last \boxed{...} or \fbox{...} of `text` (also "\boxed 5"), or nullopt.
std::optional<std::string> last_boxed(const std::string& text);

}  // namespace gspo::reward
