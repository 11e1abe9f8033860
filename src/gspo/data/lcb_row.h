// LiveCodeBench code_generation_lite rows (question_title, question_content, platform, question_id, contest_date,
// starter_code, difficulty, public_test_cases, private_test_cases, metadata) read as they are: the prompt is built
// the way LiveCodeBench builds it for chat models (lcb_runner/prompts/code_generation.py); the tests are read by
// the code verifier (reward/code/code.h, reward/code/lcb_grade.h).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gspo::data {

// LiveCodeBench's system message for code generation; configs/eval/*livecodebench*.yaml set it as data.system_prompt.
inline constexpr const char* kLcbSystemPrompt =
    "You are an expert Python programmer. You will be given a question (problem specification) and will generate a "
    "correct Python program that matches the specification and passes all tests.";

// A row with question_content and public_test_cases.
bool is_lcb_row(const nlohmann::json& row);

// The user message: "### Question:", the problem, "### Format:" with the starter code (functional problems) or the
// stdin/stdout instruction, and "### Answer:".
std::string lcb_prompt(const nlohmann::json& row);

}  // namespace gspo::data
