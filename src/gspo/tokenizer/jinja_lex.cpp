// The lexer of the Jinja subset (jinja_lex.h). Whitespace control as jinja2 applies it with trim_blocks and
// lstrip_blocks.
#include "gspo/tokenizer/jinja_lex.h"

#include <algorithm>
#include <cctype>

#include "gspo/tokenizer/jinja_detail.h"

namespace gspo::tokenizer::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
 public:
  Lexer(const std::string& src, const std::string& origin) : src_(src), origin_(origin) {}

  std::vector<Tok> run() {
    bool strip_next = false;
    while (pos_ < src_.size()) {
      size_t p = pos_;
      while ((p = src_.find('{', p)) != std::string::npos) {
        const char c = p + 1 < src_.size() ? src_[p + 1] : '\0';
        if (c == '{' || c == '%' || c == '#') break;
        ++p;
      }
      if (p == std::string::npos) p = src_.size();
      std::string text = src_.substr(pos_, p - pos_);
      const int text_line = line_at(pos_);
      if (strip_next) text.erase(0, std::find_if_not(text.begin(), text.end(), is_space) - text.begin());
      strip_next = false;
      if (p == src_.size()) {
        push_text(text, text_line);
        break;
      }
      strip_before(text, p);
      push_text(text, text_line);
      strip_next = tag(p);
    }
    out_.push_back({Tok::End, "", line_at(src_.size())});
    return std::move(out_);
  }

 private:
  int line_at(size_t pos) const { return 1 + static_cast<int>(std::count(src_.begin(), src_.begin() + pos, '\n')); }

  void push_text(const std::string& text, int line) {
    if (!text.empty()) out_.push_back({Tok::Text, text, line});
  }

  // `{%-`/`{{-`/`{#-` strip all whitespace before the tag; lstrip_blocks strips the spaces between a line's start
  // and a block or comment tag (not after `{%+`).
  void strip_before(std::string& text, size_t p) {
    const char kind = src_[p + 1], mod = p + 2 < src_.size() ? src_[p + 2] : '\0';
    if (mod == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
      return;
    }
    if (kind == '{' || mod == '+') return;
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    const bool line_starting = pos_ == 0 || src_[pos_ - 1] == '\n';
    if (l_pos == 0 && !line_starting) return;
    if (l_pos < text.size() && std::all_of(text.begin() + l_pos, text.end(), is_space)) text.erase(l_pos);
  }

  // Lexes the tag at p; returns whether it ends with `-` (strip the whitespace after it).
  bool tag(size_t p) {
    const char kind = src_[p + 1];
    size_t q = p + 2;
    if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ++q;
    if (kind == '#') {
      const size_t e = src_.find("#}", q);
      if (e == std::string::npos) fail(origin_, line_at(p), "the comment is not closed (no #})");
      pos_ = e + 2;
      return finish(src_[e - 1] == '-' && e - 1 >= q, true);
    }
    const int line = line_at(p);
    out_.push_back({kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", line});
    pos_ = q;
    const bool strip = expression(kind == '{' ? '}' : '%', line);
    out_.push_back({kind == '{' ? Tok::VarEnd : Tok::BlockEnd, "", line_at(pos_)});
    return finish(strip, kind == '%');
  }

  // trim_blocks: the first newline after a block or comment tag is removed.
  bool finish(bool strip, bool block) {
    if (!strip && block) {
      if (src_.compare(pos_, 2, "\r\n") == 0) pos_ += 2;
      else if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
    }
    return strip;
  }

  // Tokens up to the closing `}}` / `%}` (at bracket depth 0); returns whether it was `-}}` / `-%}`.
  bool expression(char closer, int open_line) {
    int depth = 0;
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) fail(origin_, open_line, std::string("the tag is not closed (no ") + closer + "})");
      if (depth == 0) {
        if (src_[pos_] == closer && src_.compare(pos_ + 1, 1, "}") == 0) {
          pos_ += 2;
          return false;
        }
        if (src_[pos_] == '-' && src_.compare(pos_ + 1, 2, std::string(1, closer) + "}") == 0) {
          pos_ += 3;
          return true;
        }
      }
      token(depth);
    }
  }

  void token(int& depth) {
    const int line = line_at(pos_);
    const char c = src_[pos_];
    if (c == '\'' || c == '"') return string(line);
    if (std::isdigit(static_cast<unsigned char>(c))) return number(line);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos_;
      while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
      out_.push_back({Tok::Name, src_.substr(pos_, e - pos_), line});
      pos_ = e;
      return;
    }
    static const char* const two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : two)
      if (src_.compare(pos_, 2, op) == 0) {
        out_.push_back({Tok::Op, op, line});
        pos_ += 2;
        return;
      }
    if (std::string("+-*/%~<>=()[]{}.,:|").find(c) == std::string::npos)
      fail(origin_, line, std::string("unexpected character '") + c + "' in a tag");
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    out_.push_back({Tok::Op, std::string(1, c), line});
    ++pos_;
  }

  void string(int line) {
    const char quote = src_[pos_++];
    std::string v;
    for (;;) {
      if (pos_ >= src_.size()) fail(origin_, line, "a string literal is not closed");
      const char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\' || pos_ >= src_.size()) {
        v += c;
        continue;
      }
      const char e = src_[pos_++];
      switch (e) {
        case 'n': v += '\n'; break;
        case 't': v += '\t'; break;
        case 'r': v += '\r'; break;
        case '0': v += '\0'; break;
        case '\\': case '\'': case '"': v += e; break;
        case '\n': break;
        default: v += '\\'; v += e;  // Python keeps an unknown escape as written
      }
    }
    out_.push_back({Tok::String, v, line});
  }

  void number(int line) {
    size_t e = pos_;
    bool is_float = false;
    while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      for (++e; e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_');) ++e;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && std::isdigit(static_cast<unsigned char>(src_[x]))) {
        is_float = true;
        for (e = x; e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]));) ++e;
      }
    }
    std::string digits = src_.substr(pos_, e - pos_);
    digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
    Tok t{is_float ? Tok::Float : Tok::Int, digits, line};
    if (is_float) t.fval = std::stod(digits);
    else t.ival = std::stoll(digits);
    out_.push_back(t);
    pos_ = e;
  }

  const std::string& src_;
  const std::string& origin_;
  size_t pos_ = 0;
  std::vector<Tok> out_;
};

}  // namespace

std::vector<Tok> lex(const std::string& src, const std::string& origin) { return Lexer(src, origin).run(); }

}  // namespace gspo::tokenizer::jinja
