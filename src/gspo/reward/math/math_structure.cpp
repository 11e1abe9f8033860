#include "gspo/reward/math/math_structure.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "gspo/reward/math/math_expr.h"
#include "gspo/reward/math/math_symbolic.h"
#include "gspo/reward/math/math_text.h"

namespace gspo::reward {
namespace {

bool opens(char c) { return c == '(' || c == '[' || c == '{'; }
bool closes(char c) { return c == ')' || c == ']' || c == '}'; }

bool replace_prefix(std::string& s, const std::string& prefix) {
  if (s.compare(0, prefix.size(), prefix) != 0) return false;
  s = s.substr(prefix.size());
  return true;
}

}  // namespace

std::vector<std::string> split_top(const std::string& s, char sep) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (opens(c)) ++depth;
    if (closes(c)) --depth;
    if (c == sep && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

int bracket_depth(const std::string& s) {
  int depth = 0, most = 0;
  for (char c : s) {
    if (opens(c)) most = std::max(most, ++depth);
    if (closes(c)) --depth;
  }
  return most;
}

bool Relation::all_equal() const {
  return std::all_of(ops.begin(), ops.end(), [](const std::string& o) { return o == "="; });
}

bool Relation::assignment() const { return all_equal() && names_quantity(sides.front()); }

bool names_quantity(const std::string& s) {
  bool letter = false;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '_') {  // a subscript: one character or a brace group, anything inside
      size_t end = i + 2;
      if (i + 1 < s.size() && s[i + 1] == '{' && !brace_group(s, i + 1, &end)) return false;
      i = std::min(end, s.size());
    } else if (c == '\\') {
      size_t k = i + 1;
      while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
      const std::string cmd = s.substr(i, k - i);
      if (k == i + 1 || cmd == "\\sqrt" || cmd == "\\pi" || cmd == "\\infty") return false;
      letter = letter || (cmd != "\\frac" && cmd != "\\cdot");
      i = k;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      letter = true;
      ++i;
    } else if (std::string("()[]{},|:+*/^' ").find(c) != std::string::npos) {
      ++i;
    } else {
      return false;  // a digit, a sign, a relation, a point
    }
  }
  return letter;
}

bool single_name(const std::string& in) {
  static const std::regex kName(R"(^(?:[a-zA-Z]|\\[a-zA-Z]+)(?:_\{?[a-zA-Z0-9]+\}?)?(?:\([a-zA-Z,]+\))?$)");
  std::string s = in;
  if (s.size() > 2 && s.front() == '|' && s.back() == '|') s = s.substr(1, s.size() - 2);
  return std::regex_match(s, kName) && s.rfind("\\frac", 0) != 0 && s.rfind("\\sqrt", 0) != 0 &&
         s != "\\pi" && s != "\\infty" && s != "e";
}

std::optional<Relation> split_relation(const std::string& s) {
  Relation r;
  int depth = 0;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (opens(c)) ++depth;
    if (closes(c)) --depth;
    std::string op;
    if (depth == 0) {
      const char n = i + 1 < s.size() ? s[i + 1] : '\0';
      if ((c == '<' || c == '>' || c == '!') && n == '=') op = std::string{c, n};
      else if (c == '<' || c == '>' || c == '=') op = std::string(1, c);
    }
    if (op.empty()) {
      cur += c;
      continue;
    }
    r.sides.push_back(cur);
    r.ops.push_back(op);
    cur.clear();
    i += op.size() - 1;
  }
  r.sides.push_back(cur);
  if (r.ops.empty()) return std::nullopt;
  for (const auto& side : r.sides)
    if (side.empty()) return std::nullopt;
  return r;
}

std::optional<Matrix> parse_matrix(const std::string& in) {
  // A scalar before the matrix multiplies every entry: "\\frac{1}{2}\\begin{matrix}1&0\\\\0&1\\end{matrix}".
  const size_t at = in.find("\\begin{matrix}");
  if (at == std::string::npos) return std::nullopt;
  std::string scale = in.substr(0, at);
  if (scale == "-") scale = "-1";
  if (!scale.empty() && (scale.find("\\begin") != std::string::npos || !reads_as_math(scale) ||
                         split_top(scale).size() > 1 || split_relation(scale)))
    return std::nullopt;
  std::string s = in.substr(at);
  if (!replace_prefix(s, "\\begin{matrix}")) return std::nullopt;
  const std::string end = "\\end{matrix}";
  if (s.size() < end.size() || s.compare(s.size() - end.size(), end.size(), end) != 0) return std::nullopt;
  s = s.substr(0, s.size() - end.size());
  Matrix m;
  size_t pos = 0;
  while (true) {
    const size_t next = s.find("\\\\", pos);
    std::string row = s.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!row.empty() || next != std::string::npos) m.push_back(split_top(row, '&'));
    if (next == std::string::npos) break;
    pos = next + 2;
  }
  while (!m.empty() && m.back().size() == 1 && m.back()[0].empty()) m.pop_back();  // a trailing \\ .
  if (m.empty()) return std::nullopt;
  for (auto& row : m) {
    if (row.size() != m[0].size()) return std::nullopt;
    if (!scale.empty())
      for (auto& e : row) e = "(" + scale + ")(" + e + ")";
  }
  return m;
}

bool reads_as_math(const std::string& in) {
  if (in.empty() || in.size() > kMaxAnswerChars || bracket_depth(in) > kMaxNesting) return false;
  if (auto m = parse_matrix(in)) {
    for (const auto& row : *m)
      for (const auto& e : row)
        if (!reads_as_math(e)) return false;
    return true;
  }
  std::string s = in;
  replace_all(s, "\\cup", ",");
  for (const char* sign : {"\\pm", "\\mp"}) replace_all(s, sign, "+");  // also inside a group: \frac{-1\pm\sqrt{13}}{4}
  if (auto parts = split_top(s); parts.size() > 1) {
    return std::all_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty() || reads_as_math(p); });
  }
  if (auto r = split_relation(s)) {
    return std::all_of(r->sides.begin(), r->sides.end(), [](const std::string& p) { return reads_as_math(p); });
  }
  if (s.size() >= 2 && opens(s.front()) && closes(s.back()) && split_top(s.substr(1, s.size() - 2)).size() > 1)
    return reads_as_math(s.substr(1, s.size() - 2));
  if (s.back() == '%') s.pop_back();
  if (s.empty()) return false;
  if (evaluate_math(s)) return true;
  return !has_word(s) && math_variables(s).has_value();
}

}  // namespace gspo::reward
