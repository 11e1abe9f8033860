#include "gspo/data/lcb_row.h"

namespace gspo::data {

bool is_lcb_row(const nlohmann::json& row) {
  return row.is_object() && row.contains("question_content") && row.contains("public_test_cases");
}

std::string lcb_prompt(const nlohmann::json& row) {
  const auto text = [&](const char* key) {
    return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : std::string();
  };
  std::string p = "### Question:\n" + text("question_content") + "\n\n";
  const std::string starter = text("starter_code");
  if (!starter.empty()) {
    p += "### Format: You will use the following starter code to write the solution to the problem and enclose your "
         "code within delimiters.\n```python\n" + starter + "\n```\n\n";
  } else {
    p += "### Format: Read the inputs from stdin solve the problem and write the answer to stdout (do not directly "
         "test on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python "
         "program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.\n```python\n# YOUR CODE "
         "HERE\n```\n\n";
  }
  return p + "### Answer: (use the provided format with backticks)\n\n";
}

}  // namespace gspo::data
