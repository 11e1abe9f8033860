// Canonical text of a math answer (docs/verifiers.md, "Math", lists every rule): LaTeX spacing and sizing
// dropped, fraction/binomial/text command variants unified, doubled backslashes of JSON-escaped text undone,
// units after a number dropped (\text{ miles}, "42 apples"), relation symbols written one way (\geq, \ge,
// \geqslant, >= -> ">="; \lt -> "<"; \neq, \ne, != -> "!="; \approx -> "="), matrix environments written one
// way ("\begin{matrix}a&b\\c&d\end{matrix}"), thousands separators ("7,425,000", "1 000") and ".4" -> "0.4",
// bare function names given their backslash (sin(x) -> \sin(x)), spaces removed (one kept between a command and a
// following letter: "\sin x").
#pragma once
#include <string>

namespace gspo::reward {

std::string normalize_answer(const std::string& answer);

}  // namespace gspo::reward
