// The inside of the Jinja interpreter (jinja.h): runtime values, the syntax tree, the parser (jinja_parse.cpp) and
// the value helpers that give Python's semantics (jinja_value.cpp). Only jinja*.cpp include this.
#pragma once
#include <cstdint>
#include <functional>
#include <ctime>
#include <memory>
#include <optional>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gspo::tokenizer::jinja {

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // string keys in insertion order, as a Python dict
using Kwargs = std::vector<std::pair<std::string, Value>>;
using Function = std::function<Value(const List& args, const Kwargs& kwargs)>;

// A runtime value. Lists, dicts and namespaces are shared (Python reference semantics: `ns.n = ...` is seen by every
// holder of ns). An Undefined keeps the name it was looked up by, for error messages.
struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Tuple, Dict, Namespace, Function };
  Kind kind = Kind::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String: the text; Undefined: the name
  std::shared_ptr<List> list;  // List, Tuple
  std::shared_ptr<Dict> dict;  // Dict, Namespace
  std::shared_ptr<Function> fn;

  static Value undefined(std::string name);
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value real(double v);
  static Value string(std::string v);
  static Value make_list(List items, bool tuple = false);
  static Value make_dict(Dict items, bool is_namespace = false);
  static Value function(Function f);
  static Value from_json(const nlohmann::ordered_json& j);

  bool is(Kind k) const { return kind == k; }
  bool is_sequence() const { return kind == Kind::List || kind == Kind::Tuple; }
  bool is_mapping() const { return kind == Kind::Dict || kind == Kind::Namespace; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  const Value* find(const std::string& key) const;  // a mapping's entry or nullptr
};

// Python semantics of values (jinja_value.cpp).
bool truthy(const Value& v);
bool equal(const Value& a, const Value& b);
std::string to_str(const Value& v);  // str(v): what {{ v }} writes
std::string repr(const Value& v);    // repr(v): how v appears inside a list or dict
std::string python_float(double d);
std::string type_name(const Value& v);
// json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: none), transformers' tojson. Throws std::runtime_error
// on a value JSON cannot hold.
std::string to_json(const Value& v, int indent);
std::u32string utf32(const std::string& s);
std::string utf8(const std::u32string& s);
std::string upper(const std::string& s);
std::string lower(const std::string& s);

// Builtins (jinja_builtins.cpp). They throw std::runtime_error with Python's message; the evaluator adds the
// template's name and line. args[0] of a filter or test is the value it applies to.
Value call_filter(const std::string& name, const List& args, const Kwargs& kwargs);
bool call_test(const std::string& name, const List& args);
Value call_method(const Value& obj, const std::string& name, const List& args, const Kwargs& kwargs);
bool contains(const Value& container, const Value& item);  // `item in container`
int compare(const Value& a, const Value& b);                 // <, == and > of numbers, strings and sequences
// The globals transformers defines (range, namespace, dict, raise_exception, strftime_now); `now` fixes
// strftime_now's clock (unset: the local time).
std::unordered_map<std::string, Value> globals(const std::optional<std::tm>& now);

// ---- syntax tree ----
struct Expr;
using ExprPtr = std::shared_ptr<Expr>;
struct Arg {
  std::string name;  // empty: positional
  ExprPtr value;
};

struct Expr {
  enum class Kind {
    Literal, Name, Attr, Item, Slice, Call, Filter, Test, Unary, Binary, Cond, List, Tuple, Dict
  };
  Kind kind;
  int line = 0;
  Value literal;              // Literal
  std::string name;           // Name, Attr, Filter, Test; Unary/Binary: the operator
  std::vector<ExprPtr> kids;  // Attr/Item/Call/Filter/Test: kids[0] is the object; Slice: obj, start, stop, step
                              // (null when absent); Unary: operand; Binary: left, right; Cond: then, cond, else
                              // (else may be null); List/Tuple: items; Dict: key, value, key, value, ...
  std::vector<Arg> args;      // Call, Filter, Test arguments
  bool negated = false;       // Test: `is not`
};

struct Node;
using Body = std::vector<std::shared_ptr<Node>>;
struct Node {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, Block };
  Kind kind;
  int line = 0;
  std::string text;                 // Text; Set/SetBlock/Macro: the name (Set to an attribute: "ns.attr")
  std::vector<std::string> names;   // For, Set: target names (several: tuple unpacking); Macro: parameters
  std::vector<ExprPtr> exprs;       // Output: [e]; If: conditions; For: [iterable, filter or null]; Set: [value];
                                    // Macro: parameter defaults (null: none)
  std::vector<Body> bodies;         // If: a body per condition plus the else body; For: body, else body;
                                    // SetBlock/Macro/Block: [body]
};

struct Program {
  std::string origin;
  Body body;
};

// Parses a template with transformers' lexer settings (trim_blocks, lstrip_blocks). Throws TemplateError.
std::shared_ptr<Program> parse(const std::string& source, const std::string& origin);

[[noreturn]] void fail(const std::string& origin, int line, const std::string& what);

}  // namespace gspo::tokenizer::jinja
