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
//   {"answer": "{\"inputs\": [\"1 2\\n\"], \"outputs\": [\"3\\n\"]}"}  the reference answer (data.answer_key, e.g.
//                                                        reward_model.ground_truth) as verl's prime_code reads it;
//                                                        only for rows without the fields above
// Stdio outputs are compared after normalising whitespace (split on any whitespace, tokens compared exactly).
// Function tests pass when `test code; check(entry_point)` exits 0.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gspo/reward/base/verifier.h"
#include "gspo/reward/code/code_tests.h"

namespace gspo::reward {

// Throws DataError naming `where` when the row has no usable tests.
CodeTests parse_code_tests(const std::string& row_json, const std::string& where);

// Whether a reference answer holds stdio tests as a JSON object {"inputs": [...], "outputs": [...]} (verl's prime_code,
// Skywork-OR1's and DeepCoder's code rows), and those tests; DataError naming `where` for a malformed one.
bool answer_holds_tests(const std::string& answer);
CodeTests parse_answer_tests(const std::string& answer, const std::string& where);

// The program inside a response: the last ```python (or ```) fenced block, else the whole text.
std::string extract_code(const std::string& response);

// Competition tests take `program` as Python (the verifier grades them from the response: competition.h).
CodeResult run_code_tests(const std::string& program, const CodeTests& tests, const CodeOptions& opts);

class CodeVerifier : public Verifier {
 public:
  explicit CodeVerifier(CodeOptions opts) : opts_(std::move(opts)) {}
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "code"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kCode; }

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
