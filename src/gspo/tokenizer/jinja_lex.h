// The lexer of the Jinja subset (jinja.h): template text into tokens, with jinja2's whitespace control as it applies
// under trim_blocks and lstrip_blocks. Only jinja_parse.cpp uses it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::tokenizer::jinja {

struct Tok {
  enum Type { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, Int, Float, String, Op, End } type;
  std::string text;
  int line = 0;
  int64_t ival = 0;
  double fval = 0;
};

// The tokens of `src` (ending with one End); TemplateError "origin:line: ..." for a malformed tag or literal.
std::vector<Tok> lex(const std::string& src, const std::string& origin);

}  // namespace gspo::tokenizer::jinja
