#include "gspo/reward/math_expr.h"

#include <cctype>
#include <cmath>

namespace gspo::reward {
namespace {

// Recursive descent: expr = term (('+'|'-') term)*; term = power (('*'|'/'|implicit) power)*;
// power = unary ('^' power)?; unary = '-' unary | atom; atom = number | group | command.
class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  std::optional<double> parse() {
    auto v = expr();
    skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
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
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '(' || c == '{' || c == '\\';
  }
  std::optional<double> expr() {
    auto v = term();
    while (v) {
      if (eat("+")) {
        auto r = term();
        if (!r) return std::nullopt;
        *v += *r;
      } else if (eat("-")) {
        auto r = term();
        if (!r) return std::nullopt;
        *v -= *r;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<double> term() {
    skip();
    const size_t start = i_;
    auto v = power();
    bool integer_literal = v && i_ > start;
    for (size_t k = start; k < i_ && integer_literal; ++k)
      integer_literal = std::isdigit(static_cast<unsigned char>(s_[k])) || std::isspace(static_cast<unsigned char>(s_[k]));
    while (v) {
      if (eat("*") || eat("\\cdot") || eat("\\times")) {
        auto r = power();
        if (!r) return std::nullopt;
        *v *= *r;
        integer_literal = false;
      } else if (eat("/") || eat("\\div")) {
        auto r = power();
        if (!r) return std::nullopt;
        *v /= *r;
        integer_literal = false;
      } else if (at_atom_start() && !(integer_literal && s_.compare(i_, 5, "\\frac") == 0) &&
                 !std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        auto r = power();  // implicit multiplication: 2\sqrt{3}, 3\pi, 2(5)
        if (!r) return std::nullopt;
        *v *= *r;
        integer_literal = false;
      } else if (at_atom_start() && integer_literal && s_.compare(i_, 5, "\\frac") == 0) {
        integer_literal = false;
        auto r = power();  // mixed number: an integer literal directly followed by \frac, 2\frac{1}{2} = 2.5
        if (!r) return std::nullopt;
        *v += *r;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<double> power() {
    auto base = unary();
    if (base && eat("^")) {
      auto e = power();  // right-associative: 2^3^2 = 2^9
      if (!e) return std::nullopt;
      return std::pow(*base, *e);
    }
    return base;
  }
  std::optional<double> unary() {
    if (eat("-")) {
      auto v = unary();
      if (!v) return std::nullopt;
      return -*v;
    }
    if (eat("+")) return unary();
    return atom();
  }
  std::optional<double> group(char open, char close) {
    ++i_;
    auto v = expr();
    skip();
    if (!v || i_ >= s_.size() || s_[i_] != close) return std::nullopt;
    ++i_;
    (void)open;
    return v;
  }
  std::optional<double> braced() {
    skip();
    if (i_ < s_.size() && s_[i_] == '{') return group('{', '}');
    // \frac12, \sqrt2: a single digit
    if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) return static_cast<double>(s_[i_++] - '0');
    return std::nullopt;
  }
  std::optional<double> atom() {
    skip();
    if (i_ >= s_.size()) return std::nullopt;
    char c = s_[i_];
    if (c == '(') return group('(', ')');
    if (c == '{') return group('{', '}');
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t start = i_;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) ++i_;
      try {
        return std::stod(s_.substr(start, i_ - start));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
    if (eat("\\frac")) {
      auto a = braced();
      auto b = braced();
      if (!a || !b) return std::nullopt;
      return *a / *b;
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
      return std::pow(*x, 1.0 / n);
    }
    if (eat("\\pi")) return M_PI;
    if (eat("\\infty")) return INFINITY;
    return std::nullopt;
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

std::optional<double> evaluate_math(const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto v = Parser(text).parse();
  if (v && std::isnan(*v)) return std::nullopt;
  return v;
}

}  // namespace gspo::reward
