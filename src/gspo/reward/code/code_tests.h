// What the code graders share (code.h's verifier, competition.h's problems, lcb_grade.h's LiveCodeBench rows): a
// row's tests as parsed, the options of a run, its result, and how a failed sandbox run is described. Below all three:
// none of them includes another's header through it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/reward/code/sandbox.h"

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

}  // namespace gspo::reward
