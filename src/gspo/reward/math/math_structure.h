// The shapes a normalised math answer can take (math_normalize.h gives the text): comma lists, relation chains
// ("x <= 5", "1 < x < 3", "y = 2x + 1"), matrices ("\begin{matrix}1&2\\3&4\end{matrix}"), and whether a text
// reads as math at all (the extractor's test for a candidate).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace gspo::reward {

// Bracket depth beyond which a text is not an answer (lists and relations recurse per level).
inline constexpr int kMaxNesting = 50;

// Splits on `sep` at bracket depth 0 ("(1,2),3" -> "(1,2)", "3").
std::vector<std::string> split_top(const std::string& s, char sep = ',');
// The deepest bracket nesting of `s`.
int bracket_depth(const std::string& s);

// A chain of relations: sides[0] ops[0] sides[1] ops[1] ... Operators, as normalised: = < > <= >= !=.
struct Relation {
  std::vector<std::string> sides;
  std::vector<std::string> ops;
  bool all_equal() const;  // an equation (or a chain of them)
  // An assignment: an equation whose first side names a quantity (names_quantity: "x = 5 + 6 = 11", "PQ = 6",
  // "(m,n) = (4,1)", "X:Y = 5:9").
  bool assignment() const;
};
// Whether `s` names a quantity rather than computes one (Math-Verify's "only symbols" left side of an assignment):
// letters, Greek letters and other commands, subscripts (digits allowed there: p_1, S_{ABC}), and those combined by
// juxtaposition (PQ), +, *, /, :, \frac, ^, |...|, a function of names (f(x), \sin A) or a tuple of names ((m,n)).
// No digit outside a subscript, no minus sign, no \sqrt, \pi or \infty: "2x", "a-b", "f(2)" compute a value.
bool names_quantity(const std::string& s);
// Whether `s` is one name: a letter or Greek letter with an optional subscript and an optional argument list of
// letters (x, \theta, a_1, f(x)), or |name| (the quantity an inequality bounds).
bool single_name(const std::string& s);

// The relation chain of `s` (operators at bracket depth 0), or nullopt when it has none or an empty side.
std::optional<Relation> split_relation(const std::string& s);

using Matrix = std::vector<std::vector<std::string>>;
// The entries of "\begin{matrix}...\end{matrix}" (rows split on \\, entries on &), or nullopt when `s` is no
// matrix or its rows differ in length.
std::optional<Matrix> parse_matrix(const std::string& s);

// Whether a normalised answer reads as math: a number, an expression over variables (no word of 4+ letters), or a
// list, tuple, interval, union, relation or matrix of those.
bool reads_as_math(const std::string& norm);

}  // namespace gspo::reward
