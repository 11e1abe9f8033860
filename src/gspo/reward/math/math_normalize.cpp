#include "gspo/reward/math/math_normalize.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <regex>
#include <utility>

#include "gspo/reward/base/verifier.h"
#include "gspo/reward/math/math_structure.h"
#include "gspo/reward/math/math_text.h"

namespace gspo::reward {
namespace {

bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Replaces the command `cmd` (not followed by a letter: "\le" is not "\left") by `to`.
void replace_command(std::string& s, const std::string& cmd, const std::string& to) {
  size_t pos = 0;
  while ((pos = s.find(cmd, pos)) != std::string::npos) {
    if (pos + cmd.size() < s.size() && is_alpha(s[pos + cmd.size()])) {
      pos += cmd.size();
      continue;
    }
    s.replace(pos, cmd.size(), to);
    pos += to.size();
  }
}

// Replaces every \cmd{X} by X (the command's argument unwrapped).
void unwrap(std::string& s, const std::string& cmd) {
  size_t pos = 0;
  while ((pos = s.find(cmd + "{", pos)) != std::string::npos) {
    size_t end = 0;
    auto inner = brace_group(s, pos + cmd.size(), &end);
    if (!inner) break;
    s = s.substr(0, pos) + *inner + s.substr(end);
  }
}

// "\\frac" (JSON-escaped text read as is) -> "\frac"; not in matrices, whose rows end in \\.
void undouble_backslashes(std::string& s) {
  if (s.find("matrix") != std::string::npos || s.find("array") != std::string::npos) return;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 2 < s.size() && s[i + 1] == '\\' && is_alpha(s[i + 2])) continue;
    out += s[i];
  }
  s = std::move(out);
}

// A unit in text after a number: "125\text{ miles}", "6\mbox{ cm}^2", "3\textnormal{ square units}" -> the number.
void drop_text_units(std::string& s) {
  static const std::regex kTextUnit(
      R"(^(.*[0-9}.])\s*\\(?:text|textnormal|textrm|textit|mbox|mathrm)\s*\{\s*[A-Za-z][A-Za-z ./^0-9]*\}\s*(?:\^\s*\{?\d\}?)?\s*$)");
  std::smatch m;
  if (std::regex_match(s, m, kTextUnit)) s = m[1];
}

// Removes trailing unit words such as "cm", "degrees", "dollars" after a number-like answer.
void drop_units(std::string& s) {
  static const std::regex kUnits(
      R"(^(.*?[0-9}])\s*(units?|cm|centimeters?|m|meters?|km|kilometers?|inches|inch|feet|foot|ft|miles?|mph|hours?|minutes?|seconds?|days?|dollars?|cents?|degrees?|sq\s*units|square\s*units|square\s*feet|square\s*inches|square\s*meters|cm\^2|m\^2|\^\\circ)\s*$)");
  // Any single trailing word of 3+ letters after a number: "42 apples".
  static const std::regex kWord(R"(^(-?[0-9][0-9.,]*)\s+[A-Za-z]{3,}\s*$)");
  std::smatch m;
  if (std::regex_match(s, m, kUnits) || std::regex_match(s, m, kWord)) s = m[1];
}

// Relation symbols in one spelling: <= >= != < > = (and ≈ as \approx, which drop_approximation reads).
void canonical_relations(std::string& s) {
  for (const char* c : {"\\leqslant", "\\leqq", "\\leq", "\\le"}) replace_command(s, c, "<=");
  for (const char* c : {"\\geqslant", "\\geqq", "\\geq", "\\ge"}) replace_command(s, c, ">=");
  for (const char* c : {"\\neq", "\\ne"}) replace_command(s, c, "!=");
  replace_command(s, "\\lt", "<");
  replace_command(s, "\\gt", ">");
  replace_all(s, "\\not=", "!=");
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"≤", "<="}, {"≥", ">="}, {"≠", "!="},
                                 {"≈", "\\approx"}, {"−", "-"}, {"=<", "<="}, {"=>", ">="}})
    replace_all(s, from, to);
}

// "a \approx b": the exact value a, the approximation dropped ("x = 3/5 \approx 0.6" -> "x = 3/5", "2\sqrt{2} \approx
// 2.83" -> "2\sqrt{2}"); when only a name stands before it ("x \approx 11", "p = q \approx 3") it reads as "=". Per
// element of a comma list.
std::string drop_approximation(const std::string& s) {
  if (s.find("\\approx") == std::string::npos) return s;
  std::string out;
  for (const auto& part : split_top(s)) {
    std::string e = part;
    size_t at = e.find("\\approx");
    while (at != std::string::npos && at + 7 < e.size() && is_alpha(e[at + 7])) at = e.find("\\approx", at + 7);
    if (at != std::string::npos) {
      const std::string before = trim(e.substr(0, at));
      const auto sides = split_top(before, '=');
      if (before.empty() || names_quantity(trim(sides.back())))
        e.replace(at, 7, "=");
      else
        e = before;
    }
    out += (out.empty() ? "" : ",") + e;
  }
  return out;
}

// Matrix environments written one way: pmatrix, bmatrix, Bmatrix, smallmatrix, matrix and array (its column
// specification dropped) -> "\begin{matrix}...\end{matrix}", the brackets around it dropped.
void canonical_matrices(std::string& s) {
  if (s.find("\\begin{") == std::string::npos) return;
  static const std::regex kArray(R"(\\begin\{array\}\{[^}]*\})");
  s = std::regex_replace(s, kArray, "\\begin{matrix}");
  for (const char* env : {"pmatrix", "bmatrix", "Bmatrix", "smallmatrix", "array"}) {
    replace_all(s, std::string("\\begin{") + env + "}", "\\begin{matrix}");
    replace_all(s, std::string("\\end{") + env + "}", "\\end{matrix}");
  }
  const std::string b = "\\begin{matrix}", e = "\\end{matrix}";
  if (s.size() > b.size() + e.size() + 2 && (s[0] == '(' || s[0] == '[') && s.compare(1, b.size(), b) == 0 &&
      (s.back() == ')' || s.back() == ']') && s.compare(s.size() - 1 - e.size(), e.size(), e) == 0)
    s = s.substr(1, s.size() - 2);
  // Row separators in one spelling: "\\[4pt]" and "\\ " -> "\\".
  static const std::regex kRowSkip(R"(\\\\\[[^\]]*\])");
  s = std::regex_replace(s, kRowSkip, "\\\\");
}

// sin(x), \operatorname{sin} -> \sin: a function name not after a letter or a backslash gets its backslash.
void bare_functions(std::string& s) {
  static const char* const kNames[] = {"arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "sin", "cos", "tan",
                                       "sec",    "csc",    "cot",    "exp",  "ln",   "log",  "sqrt"};
  for (const char* name : kNames) replace_all(s, std::string("\\operatorname{") + name + "}", std::string("\\") + name);
  std::string out;
  for (size_t i = 0; i < s.size();) {
    bool done = false;
    if (is_alpha(s[i]) && (i == 0 || (!is_alpha(s[i - 1]) && s[i - 1] != '\\'))) {
      for (const char* name : kNames) {
        const size_t n = std::char_traits<char>::length(name);
        if (s.compare(i, n, name) == 0 && i + n < s.size() && (s[i + n] == '(' || s[i + n] == '{')) {
          out += '\\';
          out += name;
          i += n;
          done = true;
          break;
        }
      }
    }
    if (!done) out += s[i++];
  }
  s = std::move(out);
}

// ";" as a list separator: inside brackets it separates a tuple's entries ("(1;2)" -> "(1,2)"); at the top level it
// separates elements, each a tuple when it holds a comma ("m=2,n=1;m=5,n=1" -> "(m=2,n=1),(m=5,n=1)", "-3;-2;0" ->
// "-3,-2,0"). Empty elements are dropped.
std::string semicolon_lists(const std::string& s) {
  if (s.find(';') == std::string::npos) return s;
  const auto parts = split_top(s, ';');
  std::string out;
  for (std::string p : parts) {
    if (p.empty()) continue;
    replace_all(p, ";", ",");
    if (parts.size() > 1 && split_top(p).size() > 1) p = "(" + p + ")";
    out += (out.empty() ? "" : ",") + p;
  }
  return out;
}

// ",\!" and the spaces after it -> "," (thousands written "12,\! 345,\! 678"): the spaces must not split the groups.
void thin_space_thousands(std::string& s) {
  size_t pos = 0;
  while ((pos = s.find(",\\!", pos)) != std::string::npos) {
    size_t end = pos + 3;
    while (end < s.size() && s[end] == ' ') ++end;
    s.erase(pos + 1, end - pos - 1);
    ++pos;
  }
}

// Spaces removed, except one between a command and a letter after it ("\sin x" must not become "\sinx").
std::string drop_spaces(const std::string& s) {
  std::string out;
  bool in_command = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_command && i + 1 < s.size() && is_alpha(s[i + 1]) && !out.empty() && out.back() != ' ') out += ' ';
      continue;
    }
    if (c == '\\') in_command = true;
    else if (!is_alpha(c)) in_command = false;
    out += c;
  }
  return out;
}

// A whole answer that is one number with separators: thousands "1,234,567" (a first group of 1-3 digits, not
// starting with 0) or "1 234 567" -> "1234567"; "0,ddd" (one group of three after a 0: no thousands) is a decimal
// comma, as Math-Verify reads it: "0,125" -> "0.125". Any other comma is a list ("0,5" is 0 and 5, "1,22" 1 and 22).
void whole_number_separators(std::string& s) {
  static const std::regex kThousands(R"(^-?[1-9]\d{0,2}(,\d{3})+(\.\d+)?$)");
  static const std::regex kSpaceThousands(R"(^-?\d{1,3}( \d{3})+(\.\d+)?$)");
  static const std::regex kZeroComma(R"(^(-?0),(\d{3})$)");
  if (std::regex_match(s, kThousands)) replace_all(s, ",", "");
  if (std::regex_match(s, kSpaceThousands)) replace_all(s, " ", "");
  if (std::regex_match(s, kZeroComma)) s[s.find(',')] = '.';
}

}  // namespace

std::string restore_control_escapes(const std::string& s) {
  // What follows the character, the command's first letter consumed ("\times" -> tab + "imes"), then no letter.
  static const char* const kTab[] = {"imes", "extbf", "extit", "extrm", "ext", "frac", "an", "heta", "au"};
  static const char* const kReturn[] = {"ight", "ho"};
  if (std::none_of(s.begin(), s.end(), [](char c) { return c == '\a' || c == '\b' || c == '\t' || c == '\v' ||
                                                           c == '\f' || c == '\r'; }))
    return s;
  const auto before = [&](size_t i, const char* const* names, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      const size_t len = std::char_traits<char>::length(names[k]), end = i + 1 + len;
      if (s.compare(i + 1, len, names[k]) == 0 && (end >= s.size() || !is_alpha(s[end]))) return true;
    }
    return false;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    char letter = 0;
    if (c == '\a') letter = 'a';
    if (c == '\b') letter = 'b';
    if (c == '\v') letter = 'v';
    if (c == '\f') letter = 'f';
    if (c == '\t' && before(i, kTab, std::size(kTab))) letter = 't';
    if (c == '\r' && before(i, kReturn, std::size(kReturn))) letter = 'r';
    if (!letter) {
      out += c;
      continue;
    }
    if (out.empty() || out.back() != '\\') out += '\\';
    out += letter;
  }
  return out;
}

std::string normalize_answer(const std::string& in) {
  std::string s = trim(restore_control_escapes(in));
  undouble_backslashes(s);
  replace_all(s, "\\\\", "\x01");  // a row break \\ is not "\ " followed by a space
  thin_space_thousands(s);
  for (const char* drop : {"\\$", "\\displaystyle", "\\!", "\\,", "\\;", "\\:", "\\ ", "$", "~"}) replace_all(s, drop, "");
  for (const char* drop : {"\\left", "\\right", "\\bigl", "\\bigr", "\\Bigl", "\\Bigr", "\\big", "\\Big"})
    replace_command(s, drop, "");
  for (const char* space : {"\\qquad", "\\quad"}) replace_all(s, space, "");  // also "\quadx_2": no command starts so
  replace_all(s, "\x01", "\\\\");
  replace_all(s, "{,}", ",");
  for (const char* reals : {"\\mathbb{R}", "\\mathbbR", "\\mathbb R", "ℝ"}) replace_all(s, reals, "(-\\infty,\\infty)");
  for (const char* frac : {"\\dfrac", "\\tfrac", "\\cfrac"}) replace_all(s, frac, "\\frac");
  replace_all(s, "\\dbinom", "\\binom");
  replace_all(s, "\\tbinom", "\\binom");
  replace_all(s, "\\%", "%");
  replace_all(s, "\\{", "{");
  replace_all(s, "\\}", "}");
  for (const char* deg : {"^{\\circ}", "^\\circ", "°", "\\degree"}) replace_all(s, deg, "");
  static const std::regex kTextJoin(R"(,?\s*\\(?:text|textnormal|mbox|textrm)\{\s*(?:and|or)\s*\}\s*)");
  s = std::regex_replace(s, kTextJoin, ",");
  drop_text_units(s);
  for (const char* cmd : {"\\textnormal", "\\textbf", "\\textrm", "\\textit", "\\text", "\\mathrm", "\\mathbf",
                          "\\mathit", "\\mbox"})
    unwrap(s, cmd);
  canonical_relations(s);
  s = drop_approximation(trim(s));
  drop_units(s);
  static const std::regex kJoin(R"(,?\s+(?:or|and)\s+)");  // "4, 7, and 9" is "4, 7, 9"
  s = std::regex_replace(s, kJoin, ",");
  static const std::regex kBracketJoin(R"(([)\]}])\s*(?:or|and)\s*([(\[{]))");  // "(11,7)or(7,11)" is a list
  s = std::regex_replace(s, kBracketJoin, "$1,$2");
  while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
  whole_number_separators(s);
  bare_functions(s);
  std::string out = semicolon_lists(drop_spaces(s));
  canonical_matrices(out);
  // ".4" -> "0.4" (a point not after a digit, before one).
  std::string dec;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '.' && i + 1 < out.size() && is_digit(out[i + 1]) && (i == 0 || !is_digit(out[i - 1]))) dec += '0';
    dec += out[i];
  }
  out = std::move(dec);
  // \in: "x \in [1, 3]" -> "[1, 3]".
  static const std::regex kIn(R"(^[a-zA-Z]\\in(?![a-zA-Z])(.+)$)");
  std::smatch m;
  if (std::regex_match(out, m, kIn)) out = m[1];
  // leading zeros of a plain integer ("007" -> "7"), keeping "0" and decimals like "0.5"
  static const std::regex kInteger(R"(^-?\d+$)");
  static const std::regex kLeadingZeros(R"(^(-?)0+(\d))");
  if (std::regex_match(out, kInteger)) out = std::regex_replace(out, kLeadingZeros, "$1$2");
  return out;
}

}  // namespace gspo::reward
