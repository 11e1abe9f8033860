#include "gspo/reward/code/competition.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <csignal>
#include <optional>
#include <vector>

#include "gspo/core/error.h"

namespace gspo::reward {
namespace {
using nlohmann::json;

// Compiling runs under its own limits: g++ needs far more memory and time than a test run.
SandboxLimits compile_limits(const SandboxLimits& base) {
  SandboxLimits l = base;
  l.cpu_seconds = 30;
  l.wall_seconds = 60;
  l.memory_mb = 2048;
  l.file_size_mb = 64;
  l.output_bytes = 64 << 20;  // the binary comes back on stdout
  return l;
}

// The compiled binary (stdout of `g++ ... && cat sol`), or nullopt with the compiler's message in `error`.
std::optional<std::string> compile_cpp(const std::string& source, const SandboxLimits& base, std::string& error) {
  const auto r = run_sandboxed({"/bin/sh", "-c", "g++ -O2 -std=c++17 -pipe -o sol sol.cpp >&2 && cat sol"},
                               {{"sol.cpp", source}}, "", compile_limits(base));
  if (r.ok() && !r.out.empty()) return r.out;
  error = r.timed_out ? "compilation took too long" : r.err.substr(0, 300);
  return std::nullopt;
}

// The argv and files that run a program: a Python source, or a compiled binary made executable in the sandbox.
struct Runnable {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> files;
};

Runnable runnable(const std::string& language, const std::string& payload, const std::string& python,
                  const std::vector<std::string>& args = {}) {
  Runnable r;
  if (language == "cpp") {
    r = {{"/bin/sh", "-c", "chmod +x sol && exec ./sol \"$@\"", "sol"}, {{"sol", payload}}};
  } else {
    r = {{python, "-I", "solution.py"}, {{"solution.py", payload}}};
  }
  r.argv.insert(r.argv.end(), args.begin(), args.end());
  return r;
}

std::string run_verdict(const RunResult& r, const std::string& language) {
  if (r.timed_out || r.term_signal == SIGXCPU || r.term_signal == SIGKILL) return kVerdictTimeLimit;
  if (r.output_overflow) return kVerdictOutputLimit;
  if (r.err.find("MemoryError") != std::string::npos || r.err.find("std::bad_alloc") != std::string::npos)
    return kVerdictMemoryLimit;
  if (language == "python" &&
      (r.err.find("SyntaxError:") != std::string::npos || r.err.find("IndentationError:") != std::string::npos))
    return kVerdictCompileError;
  return kVerdictRuntimeError;
}

std::string language_of(const std::string& tag) {
  if (tag == "cpp" || tag == "c++" || tag == "cc" || tag == "cxx") return "cpp";
  if (tag.empty() || tag == "python" || tag == "py" || tag == "python3") return "python";
  return tag;
}

// A prepared program: the language's payload (source or binary), or the compile error that stops it.
struct Prepared {
  std::string language, payload, error;
  bool ok = false;
};

Prepared prepare(const std::string& language, const std::string& source, const CodeOptions& o) {
  Prepared p{language, source, "", true};
  if (language == "cpp") {
    auto bin = compile_cpp(source, o.limits, p.error);
    p.ok = bin.has_value();
    if (bin) p.payload = std::move(*bin);
  } else if (language != "python") {
    p.ok = false;
    p.error = "language '" + language + "' is not supported (python, cpp)";
  }
  return p;
}

// Runs the checker's Python source as __main__ with testlib's arguments. Python exits 1 on an uncaught exception or
// a syntax error, which would read as a rejection: those exit kCheckerCrashExit instead; SystemExit (sys.exit) passes
// through.
constexpr const char* kPythonCheckerWrapper = R"(import runpy, sys, traceback
sys.argv[0] = 'checker.py'
try:
    runpy.run_path('checker.py', run_name='__main__')
except SystemExit:
    raise
except BaseException:
    traceback.print_exc()
    sys.exit(%d)
)";

Runnable checker_runnable(const Prepared& checker, const std::string& python) {
  const std::vector<std::string> args = {"input.txt", "output.txt", "answer.txt"};
  if (checker.language != "python") return runnable(checker.language, checker.payload, python, args);
  char wrapper[512];
  std::snprintf(wrapper, sizeof wrapper, kPythonCheckerWrapper, kCheckerCrashExit);
  Runnable r{{python, "-I", "-c", wrapper}, {{"checker.py", checker.payload}}};
  r.argv.insert(r.argv.end(), args.begin(), args.end());
  return r;
}

// The checker's judgement of one output: true/false, or nullopt when the checker itself failed.
std::optional<bool> check(const Prepared& checker, const CodeTests::Case& c, const std::string& produced,
                          const CodeOptions& o, std::string& note) {
  auto run = checker_runnable(checker, o.python);
  run.files.push_back({"input.txt", c.input});
  run.files.push_back({"output.txt", produced});
  run.files.push_back({"answer.txt", c.outputs.at(0)});
  SandboxLimits l = o.limits;
  l.cpu_seconds = 5;
  l.wall_seconds = 10;
  l.memory_mb = std::max<int64_t>(l.memory_mb, 1024);
  const auto r = run_sandboxed(run.argv, run.files, "", l);
  if (!r.timed_out && r.term_signal == 0 && !r.output_overflow) {
    if (r.exit_code == 0) return true;
    if (r.exit_code == 1 || r.exit_code == 2) return false;
  }
  note = "checker " + describe_failure(r);
  return std::nullopt;
}

// A row's limit `key`: a finite number v > 0 with lo <= v <= hi; else a DataError naming the row, the key, the value
// and `rule` (docs/evaluation.md "CodeForces": bounds that keep the rlimits and the wall clock representable).
double limit(const json& row, const char* key, double lo, double hi, const std::string& rule, const std::string& where) {
  const bool number = row.contains(key) && row[key].is_number();
  const double v = number ? row[key].get<double>() : 0;
  if (number && std::isfinite(v) && v > 0 && v >= lo && v <= hi) return v;
  const std::string got = row.contains(key) ? row[key].dump().substr(0, 40) : "nothing";
  throw DataError(where + ": competition rows need '" + key + "' " + rule + " (got " + got + ")");
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

CompetitionProgram extract_competition_program(const std::string& response) {
  CompetitionProgram p;
  const size_t close = response.rfind("```");
  if (close == std::string::npos || close == 0) return p;
  const size_t open = response.rfind("```", close - 1);
  if (open == std::string::npos) return p;
  const size_t eol = response.find('\n', open);
  if (eol == std::string::npos || eol >= close) return p;
  std::string tag = response.substr(open + 3, eol - open - 3);
  while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\r')) tag.pop_back();
  for (auto& ch : tag) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  p.language = language_of(tag);
  p.source = response.substr(eol + 1, close - eol - 1);
  p.found = true;
  return p;
}

void parse_competition_tests(CodeTests& t, const json& row, const std::string& where) {
  t.kind = CodeTests::Kind::kCompetition;
  const auto& ts = row["tests"];
  if (!ts.contains("cases") || !ts["cases"].is_array() || ts["cases"].empty())
    throw DataError(where + ": tests.cases must be a non-empty list of {input, output}");
  for (const auto& c : ts["cases"]) {
    if (!c.is_object() || !c.contains("input") || !c.contains("output") || !c["input"].is_string() ||
        !c["output"].is_string())
      throw DataError(where + ": each of tests.cases needs string 'input' and 'output'");
    t.cases.push_back({c["input"].get<std::string>(), {c["output"].get<std::string>()}});
  }
  t.time_limit_s = limit(row, "time_limit_s", 0, kMaxTimeLimitS,
                         "in CPU seconds, in (0, " + number_text(kMaxTimeLimitS) + "]: a longer limit is no judge's",
                         where);
  t.memory_mb = static_cast<int64_t>(
      limit(row, "memory_limit_mb", kMinMemoryLimitMb, kMaxMemoryLimitMb,
            "in megabytes, in [" + number_text(kMinMemoryLimitMb) + ", " + number_text(kMaxMemoryLimitMb) +
                "]: python3 does not start under a smaller address-space limit, and a larger one is no judge's",
            where));
  if (ts.contains("checker") && !ts["checker"].is_null()) {
    if (!ts["checker"].is_string() || ts["checker"].get<std::string>().empty())
      throw DataError(where + ": tests.checker must be the checker's source text");
    t.checker = ts["checker"];
    const json language = ts.contains("checker_language") && !ts["checker_language"].is_null()
                              ? ts["checker_language"] : json("python");
    if (!language.is_string())
      throw DataError(where + ": tests.checker_language must be the string python or cpp (got " +
                      language.dump().substr(0, 40) + ")");
    t.checker_language = language_of(language.get<std::string>());
    if (t.checker_language != "python" && t.checker_language != "cpp")
      throw DataError(where + ": tests.checker_language must be python or cpp (got '" + t.checker_language + "')");
  }
}

bool is_competition_row(const json& row) {
  return row.is_object() && row.contains("tests") && row["tests"].is_object() && row["tests"].contains("type") &&
         row["tests"]["type"] == "competition";
}

CodeResult run_competition(const std::string& response, const CodeTests& t, const CodeOptions& o) {
  CodeResult res;
  res.total = static_cast<int>(t.cases.size());
  const auto program = extract_competition_program(response);
  if (!program.found) {
    res.first_failure = res.category = kVerdictNoCode;
    return res;
  }
  const Prepared solution = prepare(program.language, program.source, o);
  if (!solution.ok) {
    res.category = kVerdictCompileError;
    res.first_failure = std::string(kVerdictCompileError) + ": " + solution.error;
    return res;
  }
  std::optional<Prepared> checker;
  if (!t.checker.empty()) checker = prepare(t.checker_language, t.checker, o);
  SandboxLimits l = o.limits;
  l.cpu_seconds = t.time_limit_s;
  l.wall_seconds = 2 * t.time_limit_s + 1;
  l.memory_mb = t.memory_mb;
  const auto run = runnable(solution.language, solution.payload, o.python);
  for (size_t i = 0; i < t.cases.size(); ++i) {
    const std::string where = "test " + std::to_string(i + 1) + ": ";
    l.output_bytes = std::max(o.limits.output_bytes,
                              kOutputCapFactor * static_cast<int64_t>(t.cases[i].outputs.at(0).size()));
    const auto r = run_sandboxed(run.argv, run.files, t.cases[i].input, l);
    if (!r.ok()) {
      res.category = run_verdict(r, solution.language);
      res.first_failure = where + res.category + " (" + describe_failure(r) + ")";
      return res;
    }
    std::optional<bool> accepted = outputs_match(r.out, t.cases[i].outputs.at(0));
    std::string note;
    if (checker && !checker->ok) {
      accepted.reset();
      note = "checker compile error: " + checker->error;
    } else if (checker) {
      accepted = check(*checker, t.cases[i], r.out, o, note);
    }
    if (!accepted) {
      res.category = kCheckerFailure;
      res.first_failure = where + note;
      return res;
    }
    if (!*accepted) {
      res.category = kVerdictWrongAnswer;
      res.first_failure = where + kVerdictWrongAnswer;
      return res;
    }
    ++res.passed;
  }
  return res;
}

}  // namespace gspo::reward
