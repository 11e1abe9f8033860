#include "gspo/reward/code/code.h"

#include <nlohmann/json.hpp>

#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/reward/code/competition.h"
#include "gspo/reward/code/lcb_decode.h"
#include "gspo/reward/code/lcb_grade.h"

namespace gspo::reward {
namespace {
using nlohmann::json;

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void add_case(CodeTests& t, const json& c, const std::string& where) {
  if (!c.is_object() || !c.contains("input") || !c.contains("output"))
    throw DataError(where + ": each test case needs 'input' and 'output'");
  CodeTests::Case k;
  k.input = text_of(c["input"]);
  if (c["output"].is_array())
    for (const auto& o : c["output"]) k.outputs.push_back(text_of(o));
  else
    k.outputs.push_back(text_of(c["output"]));
  t.cases.push_back(std::move(k));
}
// A field that LiveCodeBench stores as a JSON string (or that a converted copy holds as JSON already).
json json_field(const json& row, const char* key, const std::string& where) {
  if (!row.contains(key)) return json();
  const auto& v = row[key];
  if (!v.is_string()) return v;
  auto parsed = json::parse(v.get<std::string>(), nullptr, false);
  if (parsed.is_discarded()) throw DataError(where + ": field '" + key + "' is not valid JSON");
  return parsed;
}

void add_lcb_cases(CodeTests& t, const json& cases, const std::string& where, const char* field) {
  if (cases.is_null()) return;
  if (!cases.is_array()) throw DataError(where + ": " + field + " must be a list of {input, output, testtype}");
  for (const auto& c : cases) {
    if (!c.is_object() || !c.contains("input") || !c.contains("output"))
      throw DataError(where + ": each test in " + field + " needs 'input' and 'output'");
    t.cases.push_back({text_of(c["input"]), {text_of(c["output"])}});
  }
}

// LiveCodeBench code_generation_lite: public and private tests together (as its evaluator grades), call-based
// when metadata names a func_name.
CodeTests parse_lcb_tests(const json& row, const std::string& where) {
  CodeTests t;
  add_lcb_cases(t, json_field(row, "public_test_cases", where), where, "public_test_cases");
  if (row.contains("private_test_cases")) {
    const auto& p = row["private_test_cases"];
    const json priv = p.is_string() ? json::parse(decode_private_tests(p.get<std::string>(), where), nullptr, false) : p;
    if (priv.is_discarded()) throw DataError(where + ": private_test_cases decoded to text that is not JSON");
    add_lcb_cases(t, priv.is_string() ? json::parse(priv.get<std::string>(), nullptr, false) : priv, where,
                  "private_test_cases");
  }
  const json meta = json_field(row, "metadata", where);
  if (meta.is_object() && meta.contains("func_name") && meta["func_name"].is_string() &&
      !meta["func_name"].get<std::string>().empty()) {
    t.kind = CodeTests::Kind::kLcbCall;
    t.entry_point = meta["func_name"];
  } else {
    t.kind = CodeTests::Kind::kLcbStdin;
  }
  if (t.cases.empty()) throw DataError(where + ": LiveCodeBench row without tests (public and private are empty)");
  return t;
}

}  // namespace

CodeTests parse_code_tests(const std::string& row_json, const std::string& where) {
  json row;
  try {
    row = json::parse(row_json);
  } catch (const json::exception&) {
    throw DataError(where + ": the code verifier needs the dataset row as JSON");
  }
  if (row.contains("public_test_cases")) return parse_lcb_tests(row, where);
  CodeTests t;
  if (row.contains("tests") && row["tests"].is_object()) {
    const auto& ts = row["tests"];
    const std::string type = ts.value("type", "");
    if (type == "stdio") {
      for (const auto& c : ts.value("cases", json::array())) add_case(t, c, where);
    } else if (type == "competition") {
      parse_competition_tests(t, row, where);
    } else if (type == "function") {
      t.kind = CodeTests::Kind::kFunction;
      t.test_code = ts.value("code", "");
      t.entry_point = ts.value("entry_point", "");
    } else {
      throw DataError(where + ": tests.type must be 'stdio', 'function' or 'competition' (got '" + type + "')");
    }
  } else if (row.contains("test") && row.contains("entry_point")) {
    t.kind = CodeTests::Kind::kFunction;
    t.test_code = text_of(row["test"]);
    t.entry_point = text_of(row["entry_point"]);
    t.prompt = row.value("prompt", "");
  } else if (row.contains("test_list") && row["test_list"].is_array()) {
    for (const auto& c : row["test_list"]) add_case(t, c, where);
  } else {
    throw DataError(where + ": no tests found (expected 'tests', HumanEval 'test' + 'entry_point', or APPS 'test_list')");
  }
  if (t.kind == CodeTests::Kind::kStdio && t.cases.empty()) throw DataError(where + ": the test list is empty");
  if (t.kind == CodeTests::Kind::kFunction && (t.test_code.empty() || t.entry_point.empty()))
    throw DataError(where + ": function tests need test code and an entry point");
  return t;
}

bool answer_holds_tests(const std::string& answer) {
  if (answer.empty() || answer.front() != '{') return false;
  const auto j = json::parse(answer, nullptr, false);
  return j.is_object() && j.contains("inputs") && j.contains("outputs");
}

CodeTests parse_answer_tests(const std::string& answer, const std::string& where) {
  const auto j = json::parse(answer, nullptr, false);
  const std::string what = where + ": the reference answer's tests ({\"inputs\", \"outputs\"}, verl's prime_code)";
  if (!j.is_object() || !j.contains("inputs") || !j.contains("outputs"))
    throw DataError(what + " are not a JSON object with 'inputs' and 'outputs'");
  if (j.contains("fn_name"))
    throw DataError(what + " name a function (fn_name): call-based tests are read from 'tests' (type function) only");
  const auto& in = j["inputs"];
  const auto& out = j["outputs"];
  if (!in.is_array() || !out.is_array() || in.size() != out.size() || in.empty())
    throw DataError(what + ": 'inputs' and 'outputs' must be non-empty lists of the same length");
  CodeTests t;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].is_string() || !out[i].is_string())
      throw DataError(what + ": test " + std::to_string(i) + " is not a string input and output (stdin, stdout)");
    t.cases.push_back({in[i].get<std::string>(), {out[i].get<std::string>()}});
  }
  return t;
}

// (declared in competition.h, defined beside the parser it runs: code.h's parser reads competition rows through
// competition.h, which therefore does not include code.h)
void check_competition_rows(const std::vector<data::Example>& rows) {
  for (const auto& ex : rows)
    if (is_competition_row(json::parse(ex.row, nullptr, false))) parse_code_tests(ex.row, ex.id);
}

std::string extract_code(const std::string& response) {
  // Last fenced block: ```python ... ``` or ``` ... ```.
  size_t close = response.rfind("```");
  if (close != std::string::npos && close > 0) {
    size_t open = response.rfind("```", close - 1);
    if (open != std::string::npos && open != close) {
      size_t body = response.find('\n', open);
      if (body != std::string::npos && body < close) return response.substr(body + 1, close - body - 1);
    }
  }
  // An unterminated block (response cut off): from the opening fence on.
  size_t open = response.find("```");
  if (open != std::string::npos) {
    size_t body = response.find('\n', open);
    if (body != std::string::npos) return response.substr(body + 1);
  }
  return response;
}

CodeResult run_code_tests(const std::string& program, const CodeTests& t, const CodeOptions& o) {
  if (t.kind == CodeTests::Kind::kLcbStdin || t.kind == CodeTests::Kind::kLcbCall) return run_lcb_tests(program, t, o);
  if (t.kind == CodeTests::Kind::kCompetition)  // the language comes from the response's fence
    return run_competition("```python\n" + program + "\n```", t, o);
  CodeResult res;
  const std::vector<std::string> argv = {o.python, "-I", "solution.py"};
  if (t.kind == CodeTests::Kind::kFunction) {
    res.total = 1;
    // A response that does not define the entry point continues the prompt's signature (HumanEval style).
    std::string src = program;
    if (!t.prompt.empty() && program.find("def " + t.entry_point) == std::string::npos) src = t.prompt + program;
    src += "\n\n" + t.test_code + "\n\ncheck(" + t.entry_point + ")\n";
    auto r = run_sandboxed(argv, {{"solution.py", src}}, "", o.limits);
    if (r.ok()) {
      res.passed = 1;
    } else {
      res.first_failure = describe_failure(r);
      res.category = r.exit_code == 1 && !r.timed_out && !r.term_signal && r.err.find("AssertionError") != std::string::npos
                         ? "wrong answer" : failure_category(r);
    }
    return res;
  }
  res.total = static_cast<int>(t.cases.size());
  for (size_t i = 0; i < t.cases.size(); ++i) {
    const auto& c = t.cases[i];
    auto r = run_sandboxed(argv, {{"solution.py", program}}, c.input, o.limits);
    bool ok = r.ok();
    if (ok) {
      ok = false;
      for (const auto& want : c.outputs) ok = ok || outputs_match(r.out, want);
      if (!ok && res.first_failure.empty()) {
        res.first_failure = "test " + std::to_string(i + 1) + ": wrong answer";
        res.category = "wrong answer";
      }
    } else if (res.first_failure.empty()) {
      res.first_failure = "test " + std::to_string(i + 1) + ": " + describe_failure(r);
      res.category = failure_category(r);
    }
    if (ok) ++res.passed;
    else if (!o.partial) break;  // all-or-nothing: the rest cannot change the reward
  }
  return res;
}

std::shared_ptr<const CodeTests> CodeVerifier::tests_of(const data::Example& ex) const {
  const std::string key = ex.id + '\n' + std::to_string(ex.row.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto hit = cache_.find(key);
    if (hit != cache_.end()) return hit->second;
  }
  auto tests = std::make_shared<const CodeTests>(!data::row_has_code_tests(ex) && answer_holds_tests(ex.answer)
                                                     ? parse_answer_tests(ex.answer, ex.id)
                                                     : parse_code_tests(ex.row, ex.id));
  size_t bytes = 0;
  for (const auto& c : tests->cases) bytes += c.input.size() + (c.outputs.empty() ? 0 : c.outputs[0].size());
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_bytes_ + bytes > (size_t{512} << 20)) {  // keep at most ~512 MB of decoded tests
    cache_.clear();
    cached_bytes_ = 0;
  }
  cache_.emplace(key, tests);
  cached_bytes_ += bytes;
  return tests;
}

Score CodeVerifier::score(const std::string& response, const data::Example& ex) const {
  const auto tests = tests_of(ex);
  const bool lcb = tests->kind == CodeTests::Kind::kLcbStdin || tests->kind == CodeTests::Kind::kLcbCall;
  CodeResult r;
  if (tests->kind == CodeTests::Kind::kCompetition) {
    r = run_competition(response, *tests, opts_);
  } else if (lcb) {
    const auto code = lcb_extract_code(response);
    if (code) {
      r = run_code_tests(*code, *tests, opts_);
    } else {
      r.total = static_cast<int>(tests->cases.size());
      r.first_failure = r.category = "no code found";
    }
  } else {
    r = run_code_tests(extract_code(response), *tests, opts_);
  }
  const bool all = r.total > 0 && r.passed == r.total;
  const double reward = opts_.partial ? (r.total ? static_cast<double>(r.passed) / r.total : 0.0) : (all ? 1.0 : 0.0);
  std::string detail = std::to_string(r.passed) + "/" + std::to_string(r.total) + " tests passed";
  if (!r.first_failure.empty()) detail += "; " + r.first_failure.substr(0, 300);
  Score s{reward, all, detail, {}, all ? "" : (r.category.empty() ? "wrong answer" : r.category)};
  return s;
}

}  // namespace gspo::reward
