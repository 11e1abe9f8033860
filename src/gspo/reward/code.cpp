#include "gspo/reward/code.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <sstream>

#include "gspo/core/error.h"

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
}  // namespace

CodeTests parse_code_tests(const std::string& row_json, const std::string& where) {
  json row;
  try {
    row = json::parse(row_json);
  } catch (const json::exception&) {
    throw DataError(where + ": the code verifier needs the dataset row as JSON");
  }
  CodeTests t;
  if (row.contains("tests") && row["tests"].is_object()) {
    const auto& ts = row["tests"];
    const std::string type = ts.value("type", "");
    if (type == "stdio") {
      for (const auto& c : ts.value("cases", json::array())) add_case(t, c, where);
    } else if (type == "function") {
      t.kind = CodeTests::Kind::kFunction;
      t.test_code = ts.value("code", "");
      t.entry_point = ts.value("entry_point", "");
    } else {
      throw DataError(where + ": tests.type must be 'stdio' or 'function' (got '" + type + "')");
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

bool outputs_match(const std::string& got, const std::string& want) {
  std::istringstream a(got), b(want);
  std::string x, y;
  while (true) {
    bool ha = static_cast<bool>(a >> x), hb = static_cast<bool>(b >> y);
    if (!ha || !hb) return ha == hb;
    if (x != y) return false;
  }
}

namespace {
std::string describe_failure(const RunResult& r) {
  if (r.timed_out || r.term_signal == SIGXCPU) return "time limit";
  if (r.output_overflow) return "output limit exceeded";
  if (r.term_signal) return "killed by signal " + std::to_string(r.term_signal);
  std::string tail = r.err.size() > 300 ? r.err.substr(r.err.size() - 300) : r.err;
  return "exit " + std::to_string(r.exit_code) + (tail.empty() ? "" : ": " + tail);
}
}  // namespace

CodeResult run_code_tests(const std::string& program, const CodeTests& t, const CodeOptions& o) {
  CodeResult res;
  const std::vector<std::string> argv = {o.python, "-I", "solution.py"};
  if (t.kind == CodeTests::Kind::kFunction) {
    res.total = 1;
    // A response that does not define the entry point continues the prompt's signature (HumanEval style).
    std::string src = program;
    if (!t.prompt.empty() && program.find("def " + t.entry_point) == std::string::npos) src = t.prompt + program;
    src += "\n\n" + t.test_code + "\n\ncheck(" + t.entry_point + ")\n";
    auto r = run_sandboxed(argv, {{"solution.py", src}}, "", o.limits);
    if (r.ok()) res.passed = 1;
    else res.first_failure = describe_failure(r);
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
      if (!ok && res.first_failure.empty()) res.first_failure = "test " + std::to_string(i + 1) + ": wrong answer";
    } else if (res.first_failure.empty()) {
      res.first_failure = "test " + std::to_string(i + 1) + ": " + describe_failure(r);
    }
    if (ok) ++res.passed;
    else if (!o.partial) break;  // all-or-nothing: the rest cannot change the reward
  }
  return res;
}

Score CodeVerifier::score(const std::string& response, const data::Example& ex) const {
  const auto tests = parse_code_tests(ex.row, ex.id);
  const auto r = run_code_tests(extract_code(response), tests, opts_);
  const bool all = r.total > 0 && r.passed == r.total;
  const double reward = opts_.partial ? (r.total ? static_cast<double>(r.passed) / r.total : 0.0) : (all ? 1.0 : 0.0);
  std::string detail = std::to_string(r.passed) + "/" + std::to_string(r.total) + " tests passed";
  if (!r.first_failure.empty()) detail += "; " + r.first_failure.substr(0, 300);
  return {reward, all, detail};
}

}  // namespace gspo::reward
