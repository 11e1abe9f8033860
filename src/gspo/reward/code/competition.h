// Competition problems (Codeforces-style, docs/evaluation.md "CodeForces"): a response's program run on every test
// under the row's time and memory limits in the code sandbox (sandbox.h), graded in test order until the first
// failure, with the verdicts contestants know. Row format:
//   {"problem": "...", "time_limit_s": 2, "memory_limit_mb": 256, "difficulty": 1600,
//    "tests": {"type": "competition", "cases": [{"input": "...", "output": "..."}],
//              "checker": "<source>", "checker_language": "python" | "cpp"},      (checker optional)
//    "contest_id": "2024", "index": "A", "points": 500}                               (optional)
// Languages: the last fenced block's tag picks one: cpp, c++, cc, cxx (g++ -O2 -std=c++17, compiled in the sandbox
// once per attempt) or python, py, python3, none (python3 -I). Another tag: compile error naming it.
// Without a checker an output is accepted when its whitespace-separated tokens equal the expected ones (Codeforces'
// default). A checker is run as `checker input.txt output.txt answer.txt` (testlib's order: the solution's output,
// then the expected one) in its own sandbox, never the solution's: exit 0 accepts, 1 or 2 rejects (wrong answer,
// presentation error); any other exit, a crash or a hang (5 CPU s, 10 s wall) is a checker failure: counted, not a
// verdict. A Python checker runs under a wrapper that turns an uncaught exception or a syntax error (which Python
// reports as exit 1) into exit kCheckerCrashExit; sys.exit(1) still rejects.
// Limits: time_limit_s in (0, kMaxTimeLimitS], memory_limit_mb in [kMinMemoryLimitMb, kMaxMemoryLimitMb] (whole
// megabytes, rounded down); other values are refused when the row is read. A test's output (stdout and stderr) may
// be max(the sandbox's cap, kOutputCapFactor x its expected output) long; more is "output limit".
// The memory limit is an address-space limit (RLIMIT_AS), stricter than Codeforces' resident memory; a program that
// runs out of it reports MemoryError (Python) or std::bad_alloc (C++), which read as "memory limit".
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/data/example.h"
#include "gspo/reward/code/code_tests.h"

namespace gspo::reward {

// Verdicts (CodeResult::category; "" = accepted).
inline constexpr const char* kVerdictWrongAnswer = "wrong answer";
inline constexpr const char* kVerdictTimeLimit = "time limit";
inline constexpr const char* kVerdictMemoryLimit = "memory limit";
inline constexpr const char* kVerdictRuntimeError = "runtime error";
inline constexpr const char* kVerdictCompileError = "compile error";
inline constexpr const char* kVerdictOutputLimit = "output limit";
inline constexpr const char* kVerdictNoCode = "no code found";
inline constexpr const char* kCheckerFailure = "checker failure";  // not a verdict on the solution

// Row limits (docs/evaluation.md "CodeForces"): larger time or memory limits are no judge's and overflowed the
// rlimits; python3 does not start under an address-space limit below kMinMemoryLimitMb.
inline constexpr double kMaxTimeLimitS = 60;
inline constexpr double kMinMemoryLimitMb = 16;
inline constexpr double kMaxMemoryLimitMb = 65536;
// A test's output may be kOutputCapFactor times its expected output when that exceeds the sandbox's cap.
inline constexpr int64_t kOutputCapFactor = 2;
// The exit status a Python checker's uncaught exception or syntax error becomes (neither 0, 1 nor 2).
inline constexpr int kCheckerCrashExit = 70;

// A response's program and its language ("python" or "cpp"; the fence tag otherwise, which no runner takes).
struct CompetitionProgram {
  std::string language;
  std::string source;
  bool found = false;  // a fenced block was there
};
CompetitionProgram extract_competition_program(const std::string& response);

// Fills `t` (kind kCompetition) from a row's "tests" object of type "competition" and the row's limits; throws
// DataError naming `where` and the key.
void parse_competition_tests(CodeTests& t, const nlohmann::json& row, const std::string& where);

// True when `row` holds competition tests ("tests": {"type": "competition", ...}).
bool is_competition_row(const nlohmann::json& row);

// Reads the tests of every competition row among `rows` (others are skipped) as grading will, so a bad row (a
// limit out of range, a checker_language that is not a string) is a DataError naming the row before any sampling.
// (Defined in code.cpp, beside parse_code_tests.)
void check_competition_rows(const std::vector<data::Example>& rows);

// Grades `response` against competition tests. `opts.python` runs Python; `opts.limits` caps the output and the
// processes (time and memory come from the row).
CodeResult run_competition(const std::string& response, const CodeTests& tests, const CodeOptions& opts);

}  // namespace gspo::reward
