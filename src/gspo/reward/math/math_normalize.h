// Canonical text of a math answer (docs/verifiers.md, "Math", lists every rule): LaTeX spacing and sizing
// dropped, fraction/binomial/text command variants unified, doubled backslashes of JSON-escaped text undone,
// units after a number dropped (\text{ miles}, "42 apples"), relation symbols written one way (\geq, \ge,
// \geqslant, >= -> ">="; \lt -> "<"; \neq, \ne, != -> "!="), matrix environments written one
// way ("\begin{matrix}a&b\\c&d\end{matrix}"), thousands separators ("7,425,000", "1 000") and ".4" -> "0.4",
// bare function names given their backslash (sin(x) -> \sin(x)), spaces removed (one kept between a command and a
// following letter: "\sin x"), ';' as a list separator ("-3;-2;0", "(1;2)", "m=2,n=1;m=5,n=1" -> tuples), an
// approximation dropped for the exact value before it ("3/5 \approx 0.6" -> "3/5"; "x \approx 11" -> "x=11").
#pragma once
#include <string>

namespace gspo::reward {

std::string normalize_answer(const std::string& answer);

// LaTeX whose backslash escape a JSON or Python string read as a control character, restored: form feed + "rac" ->
// "\frac", backspace + "oxed" -> "\boxed" (also \a, \v: never in math text, restored wherever they stand); a tab or
// carriage return only before the rest of a whole command name (tab + "imes" -> \times; \text, \tan, \theta, \tau,
// \tfrac; \right, \rho), since both also stand as themselves (tab + "and" stays). A backslash already before the character is kept once ("\\f" in JSON: "\<FF>rac").
// O(length); text without such characters is returned unchanged.
std::string restore_control_escapes(const std::string& text);

}  // namespace gspo::reward
