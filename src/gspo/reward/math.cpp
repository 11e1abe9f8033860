#include "gspo/reward/math.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <vector>

#include "gspo/reward/math_expr.h"
#include "gspo/reward/math_symbolic.h"

namespace gspo::reward {
namespace {

constexpr size_t kMaxAnswerChars = 1000;  // longer extracted answers are none (the regexes recurse per character)

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// The content of the brace group opening at s[open] == '{', or nullopt when unbalanced.
std::optional<std::string> brace_group(const std::string& s, size_t open, size_t* end = nullptr) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) {
      if (end) *end = i + 1;
      return s.substr(open + 1, i - open - 1);
    }
  }
  return std::nullopt;
}

// Replaces every \cmd{X} by X (the command's argument unwrapped).
void unwrap(std::string& s, const std::string& cmd) {
  size_t pos;
  while ((pos = s.find(cmd + "{")) != std::string::npos) {
    size_t end = 0;
    auto inner = brace_group(s, pos + cmd.size(), &end);
    if (!inner) break;
    s = s.substr(0, pos) + *inner + s.substr(end);
  }
}

std::optional<std::string> last_boxed(const std::string& r) {
  for (const std::string cmd : {"\\boxed", "\\fbox"}) {
    size_t pos = r.rfind(cmd + "{");
    if (pos == std::string::npos) {
      pos = r.rfind(cmd + " ");  // \boxed 5
      if (pos != std::string::npos) {
        std::string rest = trim(r.substr(pos + cmd.size() + 1));
        size_t stop = rest.find_first_of(" $\n");
        return rest.substr(0, stop);
      }
      continue;
    }
    if (auto inner = brace_group(r, pos + cmd.size())) return *inner;
  }
  return std::nullopt;
}

// The text after the last "the answer is" / "the final answer is" (also "The final answer is $X$. I hope it is
// correct.", the Minerva format): the math in $...$, $$...$$, \(...\) or \[...\] when it opens there, else the
// rest of the sentence (up to ". " or the end of the line) with a final '.' removed.
std::optional<std::string> answer_is(const std::string& r) {
  static const std::regex kAnswerIs(R"([Tt]he (?:final )?answer is[:\s]*)");
  size_t at = std::string::npos;
  for (auto it = std::sregex_iterator(r.begin(), r.end(), kAnswerIs); it != std::sregex_iterator(); ++it)
    at = static_cast<size_t>(it->position() + it->length());
  if (at == std::string::npos) return std::nullopt;
  for (const auto& [open, close] : {std::pair<std::string, std::string>{"$$", "$$"}, {"$", "$"}, {"\\(", "\\)"},
                                    {"\\[", "\\]"}}) {
    if (r.compare(at, open.size(), open) != 0) continue;
    size_t end = r.find(close, at + open.size());
    while (close == "$" && end != std::string::npos && r[end - 1] == '\\') end = r.find(close, end + 1);  // \$18
    if (end == std::string::npos) break;
    std::string inner = trim(r.substr(at + open.size(), end - at - open.size()));
    if (!inner.empty()) return inner;
    break;
  }
  std::string rest = r.substr(at, r.find('\n', at) == std::string::npos ? std::string::npos : r.find('\n', at) - at);
  if (size_t stop = rest.find(". "); stop != std::string::npos) rest = rest.substr(0, stop);
  rest = trim(rest);
  while (!rest.empty() && rest.back() == '.') rest.pop_back();
  replace_all(rest, "$", "");
  rest = trim(rest);
  if (rest.empty()) return std::nullopt;
  return rest;
}

// The last number of the text ("1,000" and "3/4" count as one). Searched in the 2000 characters that end at the
// last digit: std::regex recurses per matched character, so it never sees an unbounded run.
std::optional<std::string> last_number(const std::string& r) {
  static const std::regex kNumber(R"(-?\d[\d,]*(?:\.\d+)?(?:/\d+)?)");
  const size_t last_digit = r.find_last_of("0123456789");
  if (last_digit == std::string::npos) return std::nullopt;
  const size_t begin = last_digit + 1 > 2000 ? last_digit + 1 - 2000 : 0;
  const std::string window = r.substr(begin, last_digit + 1 - begin + 20);
  std::optional<std::string> last;
  for (auto it = std::sregex_iterator(window.begin(), window.end(), kNumber); it != std::sregex_iterator(); ++it)
    last = it->str();
  return last;
}

// Removes trailing unit words such as "cm", "degrees", "dollars" after a number-like answer.
void drop_units(std::string& s) {
  static const std::regex kUnits(
      R"(^(.*?[0-9}])\s*(units?|cm|centimeters?|m|meters?|km|kilometers?|inches|inch|feet|foot|ft|miles?|mph|hours?|minutes?|seconds?|days?|dollars?|cents?|degrees?|sq\s*units|square\s*units|square\s*feet|square\s*inches|cm\^2|m\^2|\^\\circ)\s*$)");
  // Any single trailing word of 3+ letters after a number: "42 apples".
  static const std::regex kWord(R"(^(-?[0-9][0-9.,]*)\s+[A-Za-z]{3,}\s*$)");
  std::smatch m;
  if (std::regex_match(s, m, kUnits) || std::regex_match(s, m, kWord)) s = m[1];
}

bool is_thousands(const std::string& s) {
  static const std::regex kThousands(R"(^-?\d{1,3}(,\d{3})+(\.\d+)?$)");
  return std::regex_match(s, kThousands);
}

constexpr int kMaxNesting = 50;  // bracket depth beyond which a text is not an answer

int bracket_depth(const std::string& s) {
  int depth = 0, most = 0;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{') most = std::max(most, ++depth);
    if (c == ')' || c == ']' || c == '}') --depth;
  }
  return most;
}

// Splits on commas at bracket depth 0.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// "x = 5" -> "5", "f(x) = 2x" -> "2x", "x \in [1, 3]" -> "[1, 3]", "x = 2 or x = 3" -> "2,3": one variable (or
// f(x)) on the left of the elements of a list ("or"/"and" between elements read as commas). Only when every
// left side is the same: "a = 2, b = 3" keeps its names (else it would equal "a = 3, b = 2").
std::string strip_assignments(const std::string& in) {
  static const std::regex kJoin(R"(\s+(?:or|and)\s+)");
  static const std::regex kAssign(R"(^\s*([a-zA-Z](?:\([a-zA-Z]\))?)\s*(?:=|\\in)\s*(.+)$)");
  const std::string s = std::regex_replace(in, kJoin, ",");
  std::string out, lhs;
  for (const auto& part : split_top(s)) {
    std::smatch m;
    const bool assign = std::regex_match(part, m, kAssign);
    if (assign && !lhs.empty() && m[1].str() != lhs) return s;
    if (assign) lhs = m[1].str();
    out += (out.empty() ? "" : ",") + (assign ? m[2].str() : part);
  }
  return out;
}

bool scalar_equal(const std::string& a, const std::string& b, double tol) {
  if (a == b) return true;
  auto pct = [](const std::string& s) { return !s.empty() && s.back() == '%'; };
  std::string x = pct(a) ? a.substr(0, a.size() - 1) : a;
  std::string y = pct(b) ? b.substr(0, b.size() - 1) : b;
  static const std::regex kInteger(R"(^-?\d+$)");
  if (std::regex_match(x, kInteger) && std::regex_match(y, kInteger) && x == y) return true;
  const bool integers = std::regex_match(x, kInteger) && std::regex_match(y, kInteger) && !pct(a) && !pct(b);
  if (integers) return false;  // exact: 12345678 is not 12345687, though within the relative tolerance
  auto va = evaluate_math(x), vb = evaluate_math(y);
  if (!va || !vb) return !x.empty() && (x == y || (!va && !vb && symbolic_equal(x, y, tol)));
  auto close = [tol](double u, double v) {
    if (std::isinf(u) || std::isinf(v)) return u == v;
    return std::abs(u - v) <= std::max(1e-9, tol * std::max(std::abs(u), std::abs(v)));
  };
  if (close(*va, *vb)) return true;
  // Percent rule: p% also matches p / 100.
  if (pct(a) && close(*va / 100.0, *vb)) return true;
  if (pct(b) && close(*va, *vb / 100.0)) return true;
  return false;
}

bool equivalent_norm(const std::string& a, const std::string& b, double tol);

// Element lists: ordered for tuples/intervals, unordered for sets and bare comma lists.
bool lists_equal(const std::vector<std::string>& x, const std::vector<std::string>& y, bool ordered, double tol) {
  if (x.size() != y.size()) return false;
  if (ordered) {
    for (size_t i = 0; i < x.size(); ++i)
      if (!equivalent_norm(x[i], y[i], tol)) return false;
    return true;
  }
  std::vector<char> used(y.size(), 0);
  for (const auto& e : x) {
    bool found = false;
    for (size_t j = 0; j < y.size() && !found; ++j)
      if (!used[j] && equivalent_norm(e, y[j], tol)) used[j] = found = true;
    if (!found) return false;
  }
  return true;
}

// "a\pm b" -> "a+b,a-b" (one \pm, outside any list); other text unchanged.
std::string expand_pm(const std::string& s) {
  const size_t at = s.find("\\pm");
  if (at == std::string::npos || s.find("\\pm", at + 1) != std::string::npos || split_top(s).size() > 1 ||
      (at + 3 < s.size() && std::isalpha(static_cast<unsigned char>(s[at + 3]))))  // \pmod
    return s;
  return s.substr(0, at) + "+" + s.substr(at + 3) + "," + s.substr(0, at) + "-" + s.substr(at + 3);
}

bool equivalent_norm(const std::string& in_a, const std::string& in_b, double tol) {
  if (in_a.empty() || in_b.empty()) return false;
  if (in_a == in_b) return true;
  const std::string a = expand_pm(in_a), b = expand_pm(in_b);
  // Unions of intervals.
  if (a.find("\\cup") != std::string::npos || b.find("\\cup") != std::string::npos) {
    std::string x = a, y = b;
    replace_all(x, "\\cup", ",");
    replace_all(y, "\\cup", ",");
    return lists_equal(split_top(x), split_top(y), false, tol);
  }
  auto brackets = [](const std::string& s) -> std::pair<char, char> {
    if (s.size() >= 2 && std::string("([{").find(s.front()) != std::string::npos &&
        std::string(")]}").find(s.back()) != std::string::npos)
      return {s.front(), s.back()};
    return {0, 0};
  };
  auto [ao, ac] = brackets(a);
  auto [bo, bc] = brackets(b);
  const bool a_list = ao && split_top(a.substr(1, a.size() - 2)).size() > 1;
  const bool b_list = bo && split_top(b.substr(1, b.size() - 2)).size() > 1;
  const auto inner = [](const std::string& s) { return split_top(s.substr(1, s.size() - 2)); };
  // A set {a, b} equals the bare list a, b (any order).
  if (a_list && ao == '{' && !bo && split_top(b).size() > 1) return lists_equal(inner(a), split_top(b), false, tol);
  if (b_list && bo == '{' && !ao && split_top(a).size() > 1) return lists_equal(split_top(a), inner(b), false, tol);
  if (a_list || b_list) {
    if (!(a_list && b_list)) return false;
    const bool set = ao == '{' && bo == '{';
    if (!set && (ao != bo || ac != bc)) return false;  // (1,2] is not [1,2]
    return lists_equal(inner(a), inner(b), !set, tol);
  }
  auto pa = split_top(a), pb = split_top(b);
  if (pa.size() > 1 || pb.size() > 1) return lists_equal(pa, pb, false, tol);
  return scalar_equal(a, b, tol);
}

}  // namespace

std::string reference_answer(const std::string& field) {
  auto pos = field.rfind("####");
  if (pos == std::string::npos) return field;
  return trim(field.substr(pos + 4));
}

std::optional<std::string> extract_answer(const std::string& response, const MathOptions& o) {
  std::optional<std::string> got = last_boxed(response);
  if (got) got = trim(*got);
  if (!got && o.answer_is_fallback) got = answer_is(response);
  if (!got && o.last_number_fallback) got = last_number(response);
  if (got && got->size() > kMaxAnswerChars) return std::nullopt;  // not an answer (and would exhaust std::regex)
  return got;
}

std::string normalize_answer(const std::string& in) {
  std::string s = trim(in);
  for (const char* drop : {"\\$", "\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ", "\\displaystyle", "$", "~"})
    replace_all(s, drop, "");
  replace_all(s, "{,}", ",");
  replace_all(s, "\\dfrac", "\\frac");
  replace_all(s, "\\dbinom", "\\binom");
  replace_all(s, "\\tbinom", "\\binom");
  replace_all(s, "\\tfrac", "\\frac");
  replace_all(s, "\\%", "%");
  replace_all(s, "\\{", "{");
  replace_all(s, "\\}", "}");
  replace_all(s, "^{\\circ}", "");
  replace_all(s, "^\\circ", "");
  replace_all(s, "°", "");
  for (const char* cmd : {"\\text", "\\textbf", "\\mathrm", "\\mbox", "\\mathbf"}) unwrap(s, cmd);
  s = trim(s);
  drop_units(s);
  s = strip_assignments(s);
  while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
  if (is_thousands(s)) replace_all(s, ",", "");
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  // leading zeros of a plain integer ("007" -> "7"), keeping "0" and decimals like "0.5"
  static const std::regex kLeadingZeros(R"(^(-?)0+(\d))");
  if (std::regex_search(out, std::regex(R"(^-?\d+$)"))) out = std::regex_replace(out, kLeadingZeros, "$1$2");
  return out;
}

bool answers_equivalent(const std::string& a, const std::string& b, double rel_tol) {
  if (a.size() > kMaxAnswerChars || b.size() > kMaxAnswerChars) return false;
  const std::string x = normalize_answer(a), y = normalize_answer(b);
  if (x == y) return !x.empty();
  // Lists recurse per bracket level: text nested deeper than any answer is not one (and must not exhaust the stack).
  if (bracket_depth(x) > kMaxNesting || bracket_depth(y) > kMaxNesting) return false;
  return equivalent_norm(x, y, rel_tol);
}

Score MathVerifier::score(const std::string& response, const data::Example& ex) const {
  auto got = extract_answer(response, opts_);
  const bool ok = got && answers_equivalent(*got, reference_answer(ex.answer), opts_.rel_tol);
  return {ok ? 1.0 : 0.0, ok, got ? "answer: " + got->substr(0, 200) : "no answer found", {},
          ok ? "" : got ? "wrong answer" : "no answer found"};
}

std::string MathVerifier::voting_key(const std::string& response) const {
  auto got = extract_answer(response, opts_);
  return got ? normalize_answer(*got) : "";
}

Score BoxedFormat::score(const std::string& response, const data::Example&) const {
  const bool ok = last_boxed(response).has_value();
  return {ok ? 1.0 : 0.0, ok, "", {}, ok ? "" : "no \\boxed{} answer"};
}

}  // namespace gspo::reward
