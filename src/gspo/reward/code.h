// Code verifier: runs a candidate Python program against tests in the sandbox.
//
// Test formats read from a dataset row (first match wins):
//   {"tests": {"type": "stdio", "cases": [{"input": "...", "output": "..."}]}}       gspo's own
//   {"tests": {"type": "function", "code": "def check(f): ...", "entry_point": "f"}}  gspo's own
//   {"test": "def check(candidate): ...", "entry_point": "f", "prompt": "def f(..."}  HumanEval
//   {"test_list": [{"input": "...", "output": ["..."]}]}                             APPS (any listed output passes)
// Stdio outputs are compared after normalising whitespace (split on any whitespace, tokens compared exactly).
// Function tests pass when `test code; check(entry_point)` exits 0.
#pragma once
#include <string>
#include <vector>

#include "gspo/reward/sandbox.h"
#include "gspo/reward/verifier.h"

namespace gspo::reward {

struct CodeTests {
  enum class Kind { kStdio, kFunction } kind = Kind::kStdio;
  struct Case {
    std::string input;
    std::vector<std::string> outputs;  // any of them is accepted
  };
  std::vector<Case> cases;      // stdio
  std::string test_code;        // function
  std::string entry_point;      // function
  std::string prompt;           // HumanEval: the signature the response may continue
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
};

struct CodeResult {
  int passed = 0, total = 0;
  std::string first_failure;  // "test 3: wrong answer", "timeout", ...
};

CodeResult run_code_tests(const std::string& program, const CodeTests& tests, const CodeOptions& opts);

class CodeVerifier : public Verifier {
 public:
  explicit CodeVerifier(CodeOptions opts) : opts_(std::move(opts)) {}
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "code"; }

 private:
  CodeOptions opts_;
};

}  // namespace gspo::reward
