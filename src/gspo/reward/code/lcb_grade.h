// Grading a response against a LiveCodeBench problem the way LiveCodeBench's own evaluator does
// (lcb_runner/evaluation/testing_util.py, code_generation_lite):
//   code:       the last fenced block (the lines between the last two lines holding ```); none = "no code found";
//               a fixed block of standard-library imports is put before it, as LiveCodeBench does;
//   stdin:      each test runs the program on its input; stdout and the expected output are stripped, split into
//               lines, each line stripped; the line counts must agree and each line must be equal, or else equal
//               as a list of exact decimals (Python's Decimal: "1.0" equals "1", "1e2" equals "100");
//   functional: Solution().func_name(*args) (a module-level func_name when there is no class Solution), each input
//               line parsed as JSON into one argument; a tuple result counts as a list; passes when it == the
//               JSON-parsed expected output (Python equality);
//   a sample passes only when every test (public and private) passes; grading stops at the first failing test;
//   each test has a wall-clock limit (reward.lcb_timeout_s, 6 s as in LiveCodeBench).
#pragma once
#include <optional>
#include <string>

#include "gspo/reward/code/code_tests.h"

namespace gspo::reward {

// LiveCodeBench's code extraction; nullopt when the response has fewer than two fence lines.
std::optional<std::string> lcb_extract_code(const std::string& response);

// LiveCodeBench's stdout comparison (see above).
bool lcb_output_matches(const std::string& got, const std::string& want);

// True when `a` and `b` parse as the same exact decimal (Python Decimal equality; NaN equals nothing).
// nullopt when either is not a decimal literal.
std::optional<bool> decimal_equal(const std::string& a, const std::string& b);

// Runs `program` against LiveCodeBench tests (kind kLcbStdin or kLcbCall). `timeout_s` per test.
CodeResult run_lcb_tests(const std::string& program, const CodeTests& tests, const CodeOptions& opts);

}  // namespace gspo::reward
