#include "gspo/reward/math/math_expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace gspo::reward {
namespace {

constexpr int kMaxDepth = 200;  // recursion depth (nesting, signs, exponents) beyond which text is not an answer
constexpr double kMaxSumTerms = 200;  // a \sum with more terms is evaluated by its fingerprint (bounded work)

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// Greek letters usable as variables (\pi is the constant).
const char* const kGreek[] = {"\\alpha", "\\beta",  "\\gamma", "\\delta", "\\epsilon", "\\theta", "\\lambda",
                              "\\mu",    "\\sigma", "\\phi",   "\\omega", "\\rho",     "\\tau",   "\\psi"};

struct FunctionDef {
  const char* name;
  double (*f)(double);
  bool log;  // takes a base: \\log_2 8
};
// Longer names first where one is a prefix of another (\\sinh before \\sin). \\log without a base is the common
// logarithm (base 10), as Math-Verify reads it; \\ln is natural.
const FunctionDef kFunctions[] = {
    {"\\arcsin", [](double x) { return std::asin(x); }, false},
    {"\\arccos", [](double x) { return std::acos(x); }, false},
    {"\\arctan", [](double x) { return std::atan(x); }, false},
    {"\\sinh", [](double x) { return std::sinh(x); }, false},
    {"\\cosh", [](double x) { return std::cosh(x); }, false},
    {"\\tanh", [](double x) { return std::tanh(x); }, false},
    {"\\sin", [](double x) { return std::sin(x); }, false},
    {"\\cos", [](double x) { return std::cos(x); }, false},
    {"\\tan", [](double x) { return std::tan(x); }, false},
    {"\\sec", [](double x) { return 1 / std::cos(x); }, false},
    {"\\csc", [](double x) { return 1 / std::sin(x); }, false},
    {"\\cot", [](double x) { return std::cos(x) / std::sin(x); }, false},
    {"\\exp", [](double x) { return std::exp(x); }, false},
    {"\\ln", [](double x) { return std::log(x); }, false},
    {"\\log", [](double x) { return std::log10(x); }, true},
};

// C(n, k): exact product for integers, Gamma functions otherwise.
double binomial(double n, double k) {
  if (n == std::floor(n) && k == std::floor(k) && n >= 0) {
    if (k < 0 || k > n) return 0;
    double r = 1;
    for (double i = 1; i <= std::min(k, n - k); ++i) r = r * (n - std::min(k, n - k) + i) / i;
    return std::round(r);
  }
  return std::tgamma(n + 1) / (std::tgamma(k + 1) * std::tgamma(n - k + 1));
}

// Recursive descent: expr = term (('+'|'-') term)*; term = unary (('*'|'/') unary | implicit power)*;
// unary = ('-'|'+') unary | power; power = atom ('^' unary)?; atom = number | group | command | variable.
// Variables: none when vars_ and seen_ are null; looked up in vars_; or recorded in seen_ (value 1).
class Parser {
 public:
  // `in_sum`: the body of a \sum, where another \sum is no number (nested sums would multiply the work).
  Parser(const std::string& s, const MathVars* vars, std::set<std::string>* seen, bool in_sum = false)
      : s_(s), vars_(vars), seen_(seen), in_sum_(in_sum) {}
  std::optional<double> parse() {
    auto v = expr();
    skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  bool with_vars() const { return vars_ || seen_; }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(const std::string& t) {
    skip();
    if (s_.compare(i_, t.size(), t) == 0) {
      i_ += t.size();
      return true;
    }
    return false;
  }
  bool at_atom_start() {
    skip();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    return is_digit(c) || c == '.' || c == '(' || c == '{' || c == '\\' || (with_vars() && is_alpha(c));
  }
  bool at_frac() const { return s_.compare(i_, 5, "\\frac") == 0; }
  // r = f(a, b); a non-finite r from finite a and b is no number (x/0, 2^{1025}, 10^{400}, \ln 0): "12:00" and
  // "1:00" are not both infinite. Collecting variables (seen_: every variable 1) ignores it: 1/(x-1) has variables.
  std::optional<double> finite(double r, double a, double b) const {
    if (!seen_ && !std::isfinite(r) && std::isfinite(a) && std::isfinite(b)) return std::nullopt;
    return r;
  }
  std::optional<double> expr() {
    auto v = term();
    while (v) {
      const bool plus = eat("+");
      if (!plus && !eat("-")) break;
      auto r = term();
      if (!r) return std::nullopt;
      v = finite(plus ? *v + *r : *v - *r, *v, *r);
    }
    return v;
  }
  // Whether s_[start, i_) is an integer literal (digits and spaces): then a following \frac is a mixed number.
  bool integer_literal(size_t start) const {
    if (i_ <= start) return false;
    for (size_t k = start; k < i_; ++k)
      if (!is_digit(s_[k]) && !std::isspace(static_cast<unsigned char>(s_[k]))) return false;
    return true;
  }
  // Whether a digit at i_ starts a factor of its own: after a letter, a command or a bracket ("x2", "\pi 2",
  // "(x+1)2", "zy3" are products, as Math-Verify reads them), not after a number.
  bool digit_factor() const {
    size_t k = i_;
    while (k > 0 && std::isspace(static_cast<unsigned char>(s_[k - 1]))) --k;
    return k > 0 && !is_digit(s_[k - 1]) && s_[k - 1] != '.';
  }
  std::optional<double> term() {
    skip();
    const size_t start = i_;
    auto v = unary();
    bool mixed = v && integer_literal(start);
    while (v) {
      std::optional<double> r;
      if (eat("*") || eat("\\cdot") || eat("\\times")) {
        if ((r = unary())) v = finite(*v * *r, *v, *r);
      } else if (eat("/") || eat("\\div") || eat(":")) {  // a ratio a:b is a / b, as Math-Verify reads it
        if ((r = unary())) v = finite(*v / *r, *v, *r);
      } else if (at_atom_start() && mixed && at_frac()) {
        if ((r = power())) v = finite(*v + *r, *v, *r);  // mixed number: 2\frac{1}{2} = 2.5
      } else if (at_atom_start() && (!is_digit(s_[i_]) || digit_factor())) {
        if ((r = power())) v = finite(*v * *r, *v, *r);  // implicit multiplication: 2\sqrt{3}, 3\pi, 2x, xy, y3
      } else {
        break;
      }
      if (!r) return std::nullopt;
      mixed = false;
    }
    return v;
  }
  std::optional<double> power() {
    auto base = atom();
    while (base && i_ < s_.size() && s_[i_] == '!' && (i_ + 1 >= s_.size() || s_[i_ + 1] != '=')) {
      ++i_;  // factorial: 5! = 120 (Gamma for non-integers)
      if (*base < 0 || *base > 170) return std::nullopt;
      base = std::tgamma(*base + 1);
    }
    if (base && eat("^")) {
      auto e = unary();  // right-associative: 2^3^2 = 2^9; 2^-1 = 0.5
      if (!e) return std::nullopt;
      return finite(std::pow(*base, *e), *base, *e);
    }
    return base;
  }
  std::optional<double> unary() {  // binds looser than ^: -x^2 = -(x^2)
    // Every recursion passes here: bounded for adversarial text such as "((((..." or "----...".
    struct Depth {
      int& d;
      ~Depth() { --d; }
    } guard{++depth_};
    if (depth_ > kMaxDepth) return std::nullopt;
    if (eat("-")) {
      auto v = unary();
      if (!v) return std::nullopt;
      return -*v;
    }
    if (eat("+")) return unary();
    return power();
  }
  std::optional<double> group(char close) {
    ++i_;
    auto v = expr();
    skip();
    if (!v || i_ >= s_.size() || s_[i_] != close) return std::nullopt;
    ++i_;
    return v;
  }
  // A command argument: {expr}, or a single digit or letter (\frac12, \sqrt2, \sqrt x).
  std::optional<double> braced() {
    skip();
    if (i_ < s_.size() && s_[i_] == '{') return group('}');
    if (i_ < s_.size() && is_digit(s_[i_])) return static_cast<double>(s_[i_++] - '0');
    if (i_ < s_.size() && with_vars() && is_alpha(s_[i_])) return variable(std::string(1, s_[i_++]));
    return std::nullopt;
  }
  std::optional<double> variable(const std::string& name) {
    if (seen_) {
      seen_->insert(name);
      return 1.0;
    }
    if (!vars_) return std::nullopt;
    auto it = vars_->find(name);
    if (it == vars_->end()) return std::nullopt;
    return it->second;
  }
  // "_c" or "_{...}" at i_ (nested braces): its text as "_{...}" without spaces, so x_1 and x_{1} are one name; i_
  // moves past it. "" when there is none (i_ unchanged).
  std::string subscript() {
    if (i_ + 1 >= s_.size() || s_[i_] != '_') return "";
    size_t k = i_ + 1, begin = k, end = k + 1;
    if (s_[k] == '{') {
      int depth = 0;
      for (; k < s_.size(); ++k) {
        if (s_[k] == '{') ++depth;
        if (s_[k] == '}' && --depth == 0) break;
      }
      if (k >= s_.size()) return "";
      begin = i_ + 2, end = k, k = k + 1;
    } else {
      k = end;
    }
    std::string inner;
    for (size_t j = begin; j < end; ++j)
      if (!std::isspace(static_cast<unsigned char>(s_[j]))) inner += s_[j];
    i_ = k;
    return "_{" + inner + "}";
  }
  // A decimal number, or digits with a base as subscript (231_4 = 45; a digit not below the base: no number).
  std::optional<double> number() {
    size_t start = i_;
    while (i_ < s_.size() && (is_digit(s_[i_]) || s_[i_] == '.')) ++i_;
    const std::string digits = s_.substr(start, i_ - start);
    if (i_ < s_.size() && s_[i_] == '_') {
      const std::string sub = subscript();
      const std::string b = sub.size() > 3 ? sub.substr(2, sub.size() - 3) : "";
      if (b.empty() || b.size() > 2 || !std::all_of(b.begin(), b.end(), is_digit) ||
          digits.find('.') != std::string::npos)
        return std::nullopt;
      const int base = std::stoi(b);
      double v = 0;
      for (char d : digits) {
        if (base < 2 || d - '0' >= base) return std::nullopt;
        v = v * base + (d - '0');
      }
      return v;
    }
    try {
      return std::stod(digits);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  std::optional<double> command() {
    if (eat("\\frac")) {
      auto a = braced();
      auto b = a ? braced() : std::nullopt;
      if (!a || !b) return std::nullopt;
      return finite(*a / *b, *a, *b);
    }
    if (eat("\\binom")) {
      auto n = braced();
      auto k = n ? braced() : std::nullopt;
      if (!n || !k) return std::nullopt;
      return finite(binomial(*n, *k), *n, *k);
    }
    if (eat("\\sqrt")) {
      double n = 2;
      if (eat("[")) {
        auto k = expr();
        if (!k || !eat("]")) return std::nullopt;
        n = *k;
      }
      auto x = braced();
      if (!x) return std::nullopt;
      return n == 3 ? std::cbrt(*x) : std::pow(*x, 1.0 / n);
    }
    bool named = false;
    if (auto f = function(named)) return f;
    if (named) return std::nullopt;  // a function whose argument did not parse
    if (eat("\\sum")) return sum();
    if (eat("\\pi")) return M_PI;
    if (eat("\\infty")) return INFINITY;
    if (with_vars())
      for (const char* g : kGreek)
        if (s_.compare(i_, std::string(g).size(), g) == 0 && !(i_ + std::string(g).size() < s_.size() &&
                                                               is_alpha(s_[i_ + std::string(g).size()]))) {
          i_ += std::string(g).size();
          return variable(g + subscript());
        }
    return std::nullopt;
  }
  // \\sin x, \\sin(x), \\sin^2 x, \\log_2 8, \\ln(e^2): the argument is a parenthesised or braced group, or a
  // product of atoms up to the next operator or function (\\sin 2x = sin(2x); \\sin x\\cos x = sin(x)cos(x)).
  // `named` is set when a function name matched (then nullopt means its argument did not parse).
  std::optional<double> function(bool& named) {
    const FunctionDef* def = nullptr;
    for (const auto& f : kFunctions) {
      const size_t n = std::char_traits<char>::length(f.name);
      if (s_.compare(i_, n, f.name) == 0 && !(i_ + n < s_.size() && is_alpha(s_[i_ + n]))) {
        def = &f;
        i_ += n;
        break;
      }
    }
    if (!def) return std::nullopt;
    named = true;
    std::optional<double> base;
    if (def->log && eat("_")) base = braced();
    std::optional<double> exponent;
    if (eat("^")) {
      if (!(exponent = braced())) return std::nullopt;
    }
    if (def->log && !base && eat("_")) base = braced();  // \\log^2_3 x
    skip();
    std::optional<double> arg;
    if (i_ < s_.size() && (s_[i_] == '(' || s_[i_] == '{')) {
      arg = power();
    } else {
      arg = power();
      while (arg && at_atom_start() && !is_digit(s_[i_]) && !at_function()) {
        auto r = power();
        if (!r) return std::nullopt;
        *arg *= *r;
      }
    }
    if (!arg) return std::nullopt;
    double v = def->f(*arg);
    if (base) v = std::log(*arg) / std::log(*base);
    if (exponent) v = std::pow(v, *exponent);
    return finite(v, *arg, exponent.value_or(1));
  }
  // \sum_{k=lo}^{hi} body (also \sum\limits), the body a product up to the next + or - (as Math-Verify parses it).
  // Integer bounds, at most kMaxSumTerms terms: the sum. Other bounds (a free n): a fingerprint, exp(0.31 lo + 0.57 hi)
  // * sum_j w_j body(k = t_j), equal for the same bounds and the same body as a function of k (F_k F_{n-k-1} and
  // F_{n-k-1} F_k), different otherwise; a sum and its closed form are not equal then (sympy may find them so).
  std::optional<double> sum() {
    eat("\\limits");
    if (in_sum_ || !eat("_") || !eat("{")) return std::nullopt;
    skip();
    if (i_ >= s_.size() || !is_alpha(s_[i_])) return std::nullopt;
    const std::string index(1, s_[i_++]);
    std::optional<double> lo, hi;
    if (!eat("=") || !(lo = expr()) || !eat("}") || !eat("^") || !(hi = braced())) return std::nullopt;
    skip();
    std::set<std::string> names;  // the body's extent and names, every name a variable
    Parser probe(s_, nullptr, &names, true);
    probe.i_ = i_;
    if (!probe.term()) return std::nullopt;
    const std::string body = s_.substr(i_, probe.i_ - i_);
    i_ = probe.i_;
    if (seen_) {
      names.erase(index);
      seen_->insert(names.begin(), names.end());
      return 1.0;
    }
    MathVars vars = vars_ ? *vars_ : MathVars{};
    auto at = [&](double k) -> std::optional<double> {
      vars[index] = k;
      return Parser(body, &vars, nullptr, true).parse();
    };
    double total = 0;
    const bool integers = *lo == std::round(*lo) && *hi == std::round(*hi);
    if (integers && *hi - *lo < kMaxSumTerms) {
      for (double k = *lo; k <= *hi; ++k) {
        auto v = at(k);
        if (!v) return std::nullopt;
        total += *v;
      }
      return finite(total, 0, 0);
    }
    const double t[] = {1.3, 2.7, 4.1, 5.9}, w[] = {1.0, 0.61, 0.37, 0.23};
    for (int j = 0; j < 4; ++j) {
      auto v = at(t[j]);
      if (!v) return std::nullopt;
      total += w[j] * *v;
    }
    return finite(std::exp(0.31 * *lo + 0.57 * *hi) * total, 0, 0);
  }
  bool at_function() const {
    for (const auto& f : kFunctions)
      if (s_.compare(i_, std::char_traits<char>::length(f.name), f.name) == 0) return true;
    return false;
  }
  std::optional<double> atom() {
    skip();
    if (i_ >= s_.size()) return std::nullopt;
    char c = s_[i_];
    if (c == '(') return group(')');
    if (c == '{') return group('}');
    if (is_digit(c) || c == '.') return number();
    if (c == '\\') return command();
    if (c == '|') {  // |x|
      auto v = group('|');
      return v ? std::optional<double>(std::abs(*v)) : std::nullopt;
    }
    if (c == 'e' && !(i_ + 1 < s_.size() && (is_alpha(s_[i_ + 1]) || s_[i_ + 1] == '_'))) {
      ++i_;  // Euler's number, as Math-Verify reads a lone e
      return M_E;
    }
    if (with_vars() && is_alpha(c)) {
      const std::string name(1, s_[i_++]);
      return variable(name + subscript());  // G_j and G_{m-j} are two variables
    }
    return std::nullopt;
  }

  const std::string& s_;
  const MathVars* vars_;
  std::set<std::string>* seen_;
  bool in_sum_ = false;
  size_t i_ = 0;
  int depth_ = 0;  // active unary() calls
};

}  // namespace

std::optional<double> evaluate_math(const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto v = Parser(text, nullptr, nullptr).parse();
  if (v && std::isnan(*v)) return std::nullopt;
  return v;
}

std::optional<double> evaluate_with_vars(const std::string& text, const MathVars& vars) {
  if (text.empty()) return std::nullopt;
  auto v = Parser(text, &vars, nullptr).parse();
  if (v && std::isnan(*v)) return std::nullopt;
  return v;
}

std::optional<std::set<std::string>> math_variables(const std::string& text) {
  std::set<std::string> seen;
  if (text.empty() || !Parser(text, nullptr, &seen).parse()) return std::nullopt;
  return seen;
}

}  // namespace gspo::reward
