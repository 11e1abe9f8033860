// Code verifier: runs a candidate Python program against tests in the sandbox.
//
// Test formats read from a dataset row (first match wins):
//   {"tests": {"type": "stdio", "cases": [{"input": "...", "output": "..."}]}}       gspo's own
//   {"tests": {"type": "function", "code": "def check(f): ...", "entry_point": "f"}}  gspo's own
//   {"test": "def check(candidate): ...", "entry_point": "f", "prompt": "def f(..."}  HumanEval
//   {"test_list": [{"input": "...", "output": ["..."]}]}                             APPS (any listed output passes)
//   {"public_test_cases": "[...]", "private_test_cases": "...", "metadata": "{\"func_name\": ...}"}
//                                                        LiveCodeBench code_generation_lite (graded by lcb_grade.h)
//   {"tests": {"type": "competition", "cases": [...], "checker": ...}, "time_limit_s": ..., "memory_limit_mb": ...}
//                                                        competition problems (graded by competition.h)
// Stdio outputs are compared after normalising whitespace (split on any whitespace, tokens compared exactly).
// Function tests pass when `test code; check(entry_point)` exits 0.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gspo/reward/sandbox.h"
#include "gspo/reward/verifier.h"

namespace gspo::reward {

struct CodeTests {
  enum class Kind { kStdio, kFunction, kLcbStdin, kLcbCall, kCompetition } kind = Kind::kStdio;
  struct Case {
    std::string input;
    std::vector<std::string> outputs;  // any of them is accepted
  };
  std::vector<Case> cases;      // stdio
  std::string test_code;        // function
  std::string entry_point;      // function; LiveCodeBench call-based: metadata.func_name
  std::string prompt;           // HumanEval: the signature the response may continue
  double time_limit_s = 0;      // competition (competition.h): CPU seconds per test
  int64_t memory_mb = 0;        // competition: address space per test
  std::string checker;          // competition: checker source ("" = token comparison)
  std::string checker_language; // competition: "python" or "cpp"
};

// Throws DataError naming `where` when the row has no usable tests.
CodeTests parse_code_tests(const std::string& row_json, const std::string& where);

// The program inside a response: the last ```python (or ```) fenced block, else the whole text.
std::string extract_code(const std::string& response);

// True when the two outputs are equal after whitespace normalisation.
bool outputs_match(const std::string& got, const std::string& want);

struct CodeOptions {
  SandboxLimits limits;              // per test run
  bool partial = false;              // reward = fraction of tests passed; false = all-or-nothing (1 or 0)
  std::string python = "/usr/bin/python3";
  double lcb_timeout_s = 6;          // LiveCodeBench rows: wall-clock seconds per test
};

struct CodeResult {
  int passed = 0, total = 0;
  std::string first_failure;  // "test 3: wrong answer", "timeout", ...
  std::string category;       // "" when all passed, else: wrong answer, timeout, runtime error, compile error,
                              // output limit, no code found
};

// A failed run in words ("time limit", "exit 1: <stderr tail>") and as a category (timeout, output limit, compile
// error, runtime error).
std::string describe_failure(const RunResult& r);
std::string failure_category(const RunResult& r);

// Competition tests take `program` as Python (the verifier grades them from the response: competition.h).
CodeResult run_code_tests(const std::string& program, const CodeTests& tests, const CodeOptions& opts);

class CodeVerifier : public Verifier {
 public:
  explicit CodeVerifier(CodeOptions opts) : opts_(std::move(opts)) {}
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "code"; }

 private:
  // The row's tests, parsed once: LiveCodeBench rows carry up to megabytes of compressed private tests, and every
  // sample of a problem is graded against the same ones.
  std::shared_ptr<const CodeTests> tests_of(const data::Example& ex) const;

  CodeOptions opts_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const CodeTests>> cache_;
  mutable size_t cached_bytes_ = 0;
};

}  // namespace gspo::reward
