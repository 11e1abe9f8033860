#include "gspo/reward/code/lcb_grade.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "gspo/reward/code/lcb_harness.h"

namespace gspo::reward {
namespace {

// Python's str.strip() / str.split() whitespace, ASCII part.
bool py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= '\x1c' && c <= '\x1f');
}

std::string py_strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && py_space(s[b])) ++b;
  while (e > b && py_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> py_split(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && py_space(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !py_space(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Python's text.split("\n").
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    const size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) return lines;
    start = nl + 1;
  }
}

std::vector<std::string> stripped_lines(const std::string& text) {
  auto lines = split_lines(py_strip(text));
  for (auto& l : lines) l = py_strip(l);
  return lines;
}

// An exact decimal: kind, sign, significant digits (no leading or trailing zeros) and the exponent of the last one.
struct Decimal {
  enum Kind { kFinite, kInfinity, kNaN } kind = kFinite;
  bool negative = false;
  std::string digits;  // "" = zero
  int64_t exponent = 0;
};

bool iequals(const std::string& a, const char* b) {
  size_t i = 0;
  for (; i < a.size() && b[i]; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return i == a.size() && !b[i];
}

// Python's Decimal(str) grammar: [sign] (digits [. [digits]] | . digits) [(e|E) [sign] digits], Inf, Infinity,
// NaN, sNaN (any case, digits after NaN allowed); '_' may group digits.
std::optional<Decimal> parse_decimal(const std::string& text) {
  Decimal d;
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) d.negative = text[i++] == '-';
  const std::string rest = text.substr(i);
  if (iequals(rest, "inf") || iequals(rest, "infinity")) {
    d.kind = Decimal::kInfinity;
    return d;
  }
  const size_t nan_len = !rest.empty() && (rest[0] == 's' || rest[0] == 'S') ? 4 : 3;  // NaN or sNaN
  if (rest.size() >= nan_len && iequals(rest.substr(nan_len - 3, 3), "nan") &&
      rest.find_first_not_of("0123456789", nan_len) == std::string::npos) {  // digits may follow (a payload)
    d.kind = Decimal::kNaN;
    return d;
  }
  std::string digits;
  int64_t frac_digits = 0;
  bool any = false;
  auto digit_run = [&](bool fraction) {
    bool prev_digit = false;
    while (i < text.size()) {
      const char c = text[i];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digits += c;
        if (fraction) ++frac_digits;
        any = prev_digit = true;
      } else if (c == '_' && prev_digit && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
        prev_digit = false;
      } else {
        break;
      }
      ++i;
    }
  };
  digit_run(false);
  if (i < text.size() && text[i] == '.') {
    ++i;
    digit_run(true);
  }
  if (!any) return std::nullopt;
  int64_t exp = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
    const size_t start = i;
    bool prev_digit = false;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        if (exp < (int64_t{1} << 50)) exp = exp * 10 + (c - '0');  // saturates far beyond any real exponent
        prev_digit = true;
      } else if (c == '_' && prev_digit && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
        prev_digit = false;
      } else {
        break;
      }
    }
    if (i == start) return std::nullopt;
    if (neg) exp = -exp;
  }
  if (i != text.size()) return std::nullopt;
  const size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos) return d;  // zero (of either sign)
  digits = digits.substr(lead);
  const size_t last = digits.find_last_not_of('0');
  d.exponent = exp - frac_digits + static_cast<int64_t>(digits.size() - 1 - last);
  d.digits = digits.substr(0, last + 1);
  return d;
}

bool same_decimal(const Decimal& a, const Decimal& b) {
  if (a.kind == Decimal::kNaN || b.kind == Decimal::kNaN) return false;
  if (a.kind != b.kind) return false;
  if (a.kind == Decimal::kInfinity) return a.negative == b.negative;
  if (a.digits.empty() || b.digits.empty()) return a.digits.empty() && b.digits.empty();
  return a.negative == b.negative && a.digits == b.digits && a.exponent == b.exponent;
}

CodeResult run_stdin(const std::string& source, const CodeTests& t, const CodeOptions& o) {
  CodeResult res;
  res.total = static_cast<int>(t.cases.size());
  SandboxLimits limits = o.limits;
  limits.cpu_seconds = o.lcb_timeout_s;
  limits.wall_seconds = o.lcb_timeout_s;
  for (size_t i = 0; i < t.cases.size(); ++i) {
    const auto r = run_sandboxed({o.python, "-I", "solution.py"}, {{"solution.py", source}}, t.cases[i].input, limits);
    const std::string where = "test " + std::to_string(i + 1) + ": ";
    if (!r.ok()) {
      res.first_failure = where + describe_failure(r);
      res.category = failure_category(r);
      return res;
    }
    if (!lcb_output_matches(r.out, t.cases[i].outputs.at(0))) {
      res.first_failure = where + "wrong answer";
      res.category = "wrong answer";
      return res;
    }
    ++res.passed;
  }
  return res;
}

CodeResult run_call(const std::string& source, const CodeTests& t, const CodeOptions& o) {
  CodeResult res;
  res.total = static_cast<int>(t.cases.size());
  nlohmann::json spec{{"timeout", o.lcb_timeout_s}, {"func_name", t.entry_point}, {"tests", nlohmann::json::array()}};
  for (const auto& c : t.cases) spec["tests"].push_back({c.input, c.outputs.at(0)});
  std::random_device rd;
  char marker[40];
  std::snprintf(marker, sizeof marker, "__gspo_verdict_%08x%08x__", rd(), rd());
  SandboxLimits limits = o.limits;
  limits.wall_seconds = o.lcb_timeout_s * static_cast<double>(t.cases.size() + 1) + 2;
  limits.cpu_seconds = limits.wall_seconds;
  const auto r = run_sandboxed({o.python, "-I", "harness.py"},
                               {{"solution.py", source}, {"harness.py", kLcbCallHarness},
                                {"tests.json", spec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)}},
                               std::string(marker) + "\n", limits);
  const size_t at = r.out.rfind(std::string("\n") + marker + " ");
  if (at == std::string::npos) {  // died without a verdict: killed, out of memory, os._exit in the candidate code
    res.first_failure = describe_failure(r);
    res.category = failure_category(r);
    return res;
  }
  const auto v = nlohmann::json::parse(r.out.substr(at + std::strlen(marker) + 2), nullptr, false);
  if (v.is_discarded() || !v.is_object()) {
    res.first_failure = "the verdict line was damaged";
    res.category = "runtime error";
    return res;
  }
  res.passed = v.value("passed", 0);
  res.category = v.value("failure", std::string("runtime error"));
  if (!res.category.empty()) {
    const int test = v.value("test", 0);
    const std::string msg = v.value("message", std::string());
    res.first_failure = (test > 0 ? "test " + std::to_string(test) + ": " : std::string()) + res.category +
                        (msg.empty() ? "" : " (" + msg + ")");
  }
  return res;
}

}  // namespace

std::optional<std::string> lcb_extract_code(const std::string& response) {
  const auto lines = split_lines(response);
  std::vector<size_t> fences;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("```") != std::string::npos) fences.push_back(i);
  if (fences.size() < 2) return std::nullopt;
  std::string code;
  for (size_t i = fences[fences.size() - 2] + 1; i < fences.back(); ++i) {
    if (i > fences[fences.size() - 2] + 1) code += '\n';
    code += lines[i];
  }
  return code;
}

std::optional<bool> decimal_equal(const std::string& a, const std::string& b) {
  const auto x = parse_decimal(a), y = parse_decimal(b);
  if (!x || !y) return std::nullopt;
  return same_decimal(*x, *y);
}

bool lcb_output_matches(const std::string& got, const std::string& want) {
  const auto g = stripped_lines(got), w = stripped_lines(want);
  if (g.size() != w.size()) return false;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] == w[i]) continue;
    const auto gt = py_split(g[i]), wt = py_split(w[i]);
    if (gt.size() != wt.size()) return false;
    for (size_t k = 0; k < gt.size(); ++k) {
      const auto eq = decimal_equal(gt[k], wt[k]);
      if (!eq || !*eq) return false;
    }
  }
  return true;
}

CodeResult run_lcb_tests(const std::string& program, const CodeTests& t, const CodeOptions& o) {
  const std::string source = std::string(kLcbImports) + "\n" + program + "\n";
  return t.kind == CodeTests::Kind::kLcbCall ? run_call(source, t, o) : run_stdin(source, t, o);
}

}  // namespace gspo::reward
