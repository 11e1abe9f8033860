// Parser of the Jinja subset (jinja.h): tokens (jinja_lex.h) into the syntax tree of jinja_detail.h, following
// jinja2's grammar and operator precedence (jinja2/parser.py).
#include <algorithm>
#include <cctype>
#include <set>

#include "gspo/tokenizer/jinja.h"
#include "gspo/tokenizer/jinja_detail.h"
#include "gspo/tokenizer/jinja_lex.h"

namespace gspo::tokenizer::jinja {

void fail(const std::string& origin, int line, const std::string& what) {
  throw TemplateError(origin + ":" + std::to_string(line) + ": " + what);
}

namespace {

ExprPtr make(Expr::Kind k, int line, std::vector<ExprPtr> kids = {}, std::string name = "") {
  auto e = std::make_shared<Expr>();
  e->kind = k;
  e->line = line;
  e->kids = std::move(kids);
  e->name = std::move(name);
  return e;
}

class Parser {
 public:
  Parser(std::vector<Tok> toks, const std::string& origin) : t_(std::move(toks)), origin_(origin) {}

  Body top() {
    std::string end;
    Body b = body({}, end);
    return b;
  }

 private:
  const Tok& cur() const { return t_[i_]; }
  const Tok& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }
  [[noreturn]] void error(const std::string& what) const { fail(origin_, cur().line, what); }

  void expect_op(const char* op) {
    if (!is_op(op)) error(std::string("expected '") + op + "', found " + describe(cur()));
    ++i_;
  }
  std::string expect_name() {
    if (cur().type != Tok::Name) error("expected a name, found " + describe(cur()));
    return t_[i_++].text;
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd) error("expected the end of the tag (%}), found " + describe(cur()));
    ++i_;
  }
  static std::string describe(const Tok& t) {
    switch (t.type) {
      case Tok::End: return "the end of the template";
      case Tok::BlockEnd: return "'%}'";
      case Tok::VarEnd: return "'}}'";
      case Tok::String: return "a string";
      default: return "'" + t.text + "'";
    }
  }

  // Statements until one of `ends` (a tag name); `end` gets the tag found ("" at the end of the template).
  Body body(const std::set<std::string>& ends, std::string& end) {
    Body out;
    for (;;) {
      const Tok& t = cur();
      if (t.type == Tok::End) {
        if (!ends.empty()) error("missing {% " + *ends.rbegin() + " %}: the template ended first");
        end.clear();
        return out;
      }
      if (t.type == Tok::Text) {
        auto n = std::make_shared<Node>();
        n->kind = Node::Kind::Text;
        n->line = t.line;
        n->text = t.text;
        out.push_back(n);
        ++i_;
      } else if (t.type == Tok::VarBegin) {
        ++i_;
        auto n = std::make_shared<Node>();
        n->kind = Node::Kind::Output;
        n->line = t.line;
        n->exprs.push_back(tuple_expr());
        if (cur().type != Tok::VarEnd) error("expected '}}', found " + describe(cur()));
        ++i_;
        out.push_back(n);
      } else {
        ++i_;
        const std::string name = cur().type == Tok::Name ? cur().text : "";
        if (ends.count(name)) {
          ++i_;
          end = name;
          return out;
        }
        out.push_back(statement());
      }
    }
  }

  std::shared_ptr<Node> statement() {
    const Tok& t = cur();
    if (t.type != Tok::Name) error("expected a tag name after {%, found " + describe(t));
    const std::string name = t.text;
    ++i_;
    auto n = std::make_shared<Node>();
    n->line = t.line;
    if (name == "if") return if_stmt(n);
    if (name == "for") return for_stmt(n);
    if (name == "set") return set_stmt(n);
    if (name == "macro") return macro_stmt(n);
    if (name == "break" || name == "continue") {
      n->kind = name == "break" ? Node::Kind::Break : Node::Kind::Continue;
      expect_block_end();
      return n;
    }
    if (name == "generation") {  // transformers' AssistantTracker tag: renders its body
      n->kind = Node::Kind::Block;
      expect_block_end();
      std::string end;
      n->bodies.push_back(body({"endgeneration"}, end));
      expect_block_end();
      return n;
    }
    fail(origin_, t.line, "unsupported tag {% " + name + " %}");
  }

  std::shared_ptr<Node> if_stmt(std::shared_ptr<Node> n) {
    n->kind = Node::Kind::If;
    n->exprs.push_back(tuple_expr());
    expect_block_end();
    for (;;) {
      std::string end;
      n->bodies.push_back(body({"elif", "else", "endif"}, end));
      if (end == "elif") {
        n->exprs.push_back(tuple_expr());
        expect_block_end();
      } else if (end == "else") {
        expect_block_end();
        n->bodies.push_back(body({"endif"}, end));
        expect_block_end();
        return n;
      } else {
        expect_block_end();
        n->bodies.emplace_back();
        return n;
      }
    }
  }

  std::vector<std::string> targets() {
    std::vector<std::string> names{expect_name()};
    while (is_op(",")) {
      ++i_;
      names.push_back(expect_name());
    }
    return names;
  }

  std::shared_ptr<Node> for_stmt(std::shared_ptr<Node> n) {
    n->kind = Node::Kind::For;
    n->names = targets();
    if (!is_name("in")) error("expected 'in' in the for tag, found " + describe(cur()));
    ++i_;
    n->exprs.push_back(tuple_expr(/*no_cond=*/true));
    n->exprs.push_back(nullptr);
    if (is_name("if")) {
      ++i_;
      n->exprs[1] = tuple_expr();
    }
    if (is_name("recursive")) error("recursive loops are not supported");
    expect_block_end();
    std::string end;
    n->bodies.push_back(body({"else", "endfor"}, end));
    if (end == "else") {
      expect_block_end();
      n->bodies.push_back(body({"endfor"}, end));
    } else {
      n->bodies.emplace_back();
    }
    expect_block_end();
    return n;
  }

  std::shared_ptr<Node> set_stmt(std::shared_ptr<Node> n) {
    n->kind = Node::Kind::Set;
    if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == ".") {
      n->text = expect_name();
      ++i_;
      n->text += "." + expect_name();
    } else {
      n->names = targets();
    }
    if (cur().type == Tok::BlockEnd && n->names.size() == 1) {
      n->kind = Node::Kind::SetBlock;
      n->text = n->names[0];
      expect_block_end();
      std::string end;
      n->bodies.push_back(body({"endset"}, end));
      expect_block_end();
      return n;
    }
    expect_op("=");
    n->exprs.push_back(tuple_expr());
    expect_block_end();
    return n;
  }

  std::shared_ptr<Node> macro_stmt(std::shared_ptr<Node> n) {
    n->kind = Node::Kind::Macro;
    n->text = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      n->names.push_back(expect_name());
      n->exprs.push_back(nullptr);
      if (is_op("=")) {
        ++i_;
        n->exprs.back() = expression();
      }
      if (!is_op(")")) expect_op(",");
    }
    ++i_;
    expect_block_end();
    std::string end;
    n->bodies.push_back(body({"endmacro"}, end));
    if (cur().type == Tok::Name) ++i_;  // {% endmacro name %}
    expect_block_end();
    return n;
  }

  // ---- expressions (jinja2/parser.py: parse_tuple, parse_expression, ...) ----
  ExprPtr tuple_expr(bool no_cond = false) {
    const int line = cur().line;
    ExprPtr first = expression(!no_cond);
    if (!is_op(",")) return first;
    std::vector<ExprPtr> items{first};
    while (is_op(",")) {
      ++i_;
      if (cur().type == Tok::BlockEnd || cur().type == Tok::VarEnd || is_name("in") || is_op(")")) break;
      items.push_back(expression(!no_cond));
    }
    return make(Expr::Kind::Tuple, line, items);
  }

  ExprPtr expression(bool with_cond = true) {
    ExprPtr e = or_expr();
    if (!with_cond) return e;
    while (is_name("if")) {
      const int line = cur().line;
      ++i_;
      ExprPtr cond = or_expr();
      ExprPtr other;
      if (is_name("else")) {
        ++i_;
        other = expression();
      }
      e = make(Expr::Kind::Cond, line, {e, cond, other});
    }
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (is_name("or")) {
      const int line = cur().line;
      ++i_;
      e = make(Expr::Kind::Binary, line, {e, and_expr()}, "or");
    }
    return e;
  }

  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) {
      const int line = cur().line;
      ++i_;
      e = make(Expr::Kind::Binary, line, {e, not_expr()}, "and");
    }
    return e;
  }

  ExprPtr not_expr() {
    if (is_name("not")) {
      const int line = cur().line;
      ++i_;
      return make(Expr::Kind::Unary, line, {not_expr()}, "not");
    }
    return compare();
  }

  ExprPtr compare() {
    ExprPtr e = math1();
    for (;;) {
      const int line = cur().line;
      std::string op;
      if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        ++i_;
      } else if (is_name("in")) {
        op = "in";
        ++i_;
      } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
        op = "not in";
        i_ += 2;
      } else {
        return e;
      }
      e = make(Expr::Kind::Binary, line, {e, math1()}, op);
    }
  }

  ExprPtr binary_level(ExprPtr (Parser::*next)(), std::initializer_list<const char*> ops) {
    ExprPtr e = (this->*next)();
    for (;;) {
      const char* hit = nullptr;
      for (const char* op : ops)
        if (is_op(op)) hit = op;
      if (!hit) return e;
      const int line = cur().line;
      ++i_;
      e = make(Expr::Kind::Binary, line, {e, (this->*next)()}, hit);
    }
  }
  ExprPtr math1() { return binary_level(&Parser::concat, {"+", "-"}); }
  ExprPtr concat() { return binary_level(&Parser::math2, {"~"}); }
  ExprPtr math2() { return binary_level(&Parser::power, {"*", "/", "//", "%"}); }
  ExprPtr power() { return binary_level(&Parser::unary_filtered, {"**"}); }
  ExprPtr unary_filtered() { return unary(true); }

  ExprPtr unary(bool with_filter) {
    const int line = cur().line;
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const std::string op = cur().text;
      ++i_;
      e = make(Expr::Kind::Unary, line, {unary(false)}, op);
    } else {
      e = primary();
    }
    e = postfix(e);
    return with_filter ? filters(e) : e;
  }

  ExprPtr primary();
  ExprPtr postfix(ExprPtr e);
  ExprPtr subscript(ExprPtr obj);
  ExprPtr filters(ExprPtr e);
  ExprPtr test(ExprPtr e);
  std::vector<Arg> call_args();
  ExprPtr call(ExprPtr callee, int line);

  std::vector<Tok> t_;
  size_t i_ = 0;
  const std::string& origin_;
};

ExprPtr Parser::primary() {
  const Tok t = cur();
  const int line = t.line;
  auto lit = [&](Value v) {
    ++i_;
    auto e = make(Expr::Kind::Literal, line);
    e->literal = std::move(v);
    return e;
  };
  switch (t.type) {
    case Tok::Int: return lit(Value::integer(t.ival));
    case Tok::Float: return lit(Value::real(t.fval));
    case Tok::String: {
      std::string s;
      while (cur().type == Tok::String) s += t_[i_++].text;  // adjacent literals join, as in Python
      --i_;
      return lit(Value::string(s));
    }
    case Tok::Name:
      if (t.text == "true" || t.text == "True") return lit(Value::boolean(true));
      if (t.text == "false" || t.text == "False") return lit(Value::boolean(false));
      if (t.text == "none" || t.text == "None") return lit(Value::none());
      ++i_;
      return make(Expr::Kind::Name, line, {}, t.text);
    default: break;
  }
  if (is_op("(")) {
    ++i_;
    if (is_op(")")) {
      ++i_;
      return make(Expr::Kind::Tuple, line);
    }
    ExprPtr first = expression();
    if (is_op(")")) {
      ++i_;
      return first;
    }
    std::vector<ExprPtr> items{first};
    while (is_op(",")) {
      ++i_;
      if (is_op(")")) break;
      items.push_back(expression());
    }
    expect_op(")");
    return make(Expr::Kind::Tuple, line, items);
  }
  if (is_op("[") || is_op("{")) {
    const bool list = is_op("[");
    ++i_;
    std::vector<ExprPtr> items;
    while (!is_op(list ? "]" : "}")) {
      items.push_back(expression());
      if (!list) {
        expect_op(":");
        items.push_back(expression());
      }
      if (!is_op(list ? "]" : "}")) expect_op(",");
    }
    ++i_;
    return make(list ? Expr::Kind::List : Expr::Kind::Dict, line, items);
  }
  error("unexpected " + describe(t) + " in an expression");
}

ExprPtr Parser::postfix(ExprPtr e) {
  for (;;) {
    const int line = cur().line;
    if (is_op(".")) {
      ++i_;
      if (cur().type == Tok::Int) {
        auto idx = make(Expr::Kind::Literal, line);
        idx->literal = Value::integer(t_[i_++].ival);
        e = make(Expr::Kind::Item, line, {e, idx});
      } else {
        e = make(Expr::Kind::Attr, line, {e}, expect_name());
      }
    } else if (is_op("[")) {
      ++i_;
      e = subscript(e);
    } else if (is_op("(")) {
      e = call(e, line);
    } else {
      return e;
    }
  }
}

// After '[': an index or a slice start:stop:step, then ']'.
ExprPtr Parser::subscript(ExprPtr obj) {
  const int line = cur().line;
  ExprPtr parts[3];
  int part = 0;
  bool slice = false;
  while (!is_op("]")) {
    if (is_op(":")) {
      slice = true;
      if (++part > 2) error("a slice has at most three parts");
      ++i_;
      continue;
    }
    parts[part] = expression();
  }
  ++i_;
  if (!slice) {
    if (!parts[0]) error("an empty subscript []");
    return make(Expr::Kind::Item, line, {obj, parts[0]});
  }
  return make(Expr::Kind::Slice, line, {obj, parts[0], parts[1], parts[2]});
}

std::vector<Arg> Parser::call_args() {
  expect_op("(");
  std::vector<Arg> args;
  while (!is_op(")")) {
    if (is_op("*") || is_op("**")) error("*args and **kwargs in calls are not supported");
    Arg a;
    if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
      a.name = cur().text;
      i_ += 2;
    }
    a.value = expression();
    args.push_back(a);
    if (!is_op(")")) expect_op(",");
  }
  ++i_;
  return args;
}

// A call of `callee` with the arguments that follow, '(' included.
ExprPtr Parser::call(ExprPtr callee, int line) {
  auto c = make(Expr::Kind::Call, line, {std::move(callee)});
  c->args = call_args();
  return c;
}

ExprPtr Parser::filters(ExprPtr e) {
  for (;;) {
    const int line = cur().line;
    if (is_op("|")) {
      ++i_;
      std::string name = expect_name();
      while (is_op(".")) {
        ++i_;
        name += "." + expect_name();
      }
      auto f = make(Expr::Kind::Filter, line, {e}, name);
      if (is_op("(")) f->args = call_args();
      e = f;
    } else if (is_name("is")) {
      ++i_;
      e = test(e);
    } else if (is_op("(")) {
      e = call(e, line);
    } else {
      return e;
    }
  }
}

// After 'is': [not] NAME, then arguments in parentheses or one bare argument (`is divisibleby 3`).
ExprPtr Parser::test(ExprPtr e) {
  const int line = cur().line;
  bool negated = false;
  if (is_name("not")) {
    negated = true;
    ++i_;
  }
  auto t = make(Expr::Kind::Test, line, {e}, expect_name());
  t->negated = negated;
  if (is_op("(")) {
    t->args = call_args();
  } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Int ||
              cur().type == Tok::Float || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if") && !is_name("in") &&
             !is_name("not")) {
    Arg a;
    a.value = postfix(primary());
    t->args.push_back(a);
  }
  return t;
}

}  // namespace

std::shared_ptr<Program> parse(const std::string& source, const std::string& origin) {
  Parser parser(lex(source, origin), origin);
  auto p = std::make_shared<Program>();
  p->origin = origin;
  p->body = parser.top();
  return p;
}

}  // namespace gspo::tokenizer::jinja
