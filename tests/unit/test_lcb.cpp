// LiveCodeBench rows read as they are and graded by LiveCodeBench's rules: private tests decoded natively
// (base64, zlib, pickle of a str), the stdout comparison (stripped lines, then exact decimals), functional calls,
// the last fenced block, failure reasons. The labelled cases come from tests/eval/make_lcb_cases.py.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/reward/code/lcb_decode.h"
#include "gspo/reward/code/lcb_grade.h"
#include "gspo/reward/factory.h"
#include "configured_paths.h"

using namespace gspo;

TEST_CASE("exact decimal equality follows Python's Decimal", "[lcb]") {
  CHECK(*reward::decimal_equal("1.0", "1"));
  CHECK(*reward::decimal_equal("2.50", "2.5"));
  CHECK(*reward::decimal_equal("1e2", "100"));
  CHECK(*reward::decimal_equal("-0", "0.000"));
  CHECK(*reward::decimal_equal("+3", "3"));
  CHECK(*reward::decimal_equal(".5", "0.5"));
  CHECK(*reward::decimal_equal("1_000", "1000"));
  CHECK(*reward::decimal_equal("Infinity", "inf"));
  CHECK_FALSE(*reward::decimal_equal("NaN", "NaN"));
  CHECK_FALSE(*reward::decimal_equal("0.1", "0.10000001"));
  CHECK_FALSE(*reward::decimal_equal("-1", "1"));
  CHECK_FALSE(*reward::decimal_equal("inf", "-inf"));
  CHECK_FALSE(reward::decimal_equal("1.0x", "1").has_value());
  CHECK_FALSE(reward::decimal_equal("1e", "1").has_value());
  CHECK_FALSE(reward::decimal_equal(".", "0").has_value());
  CHECK_FALSE(reward::decimal_equal("1__0", "10").has_value());
}

TEST_CASE("stdout comparison: stripped lines, then decimals token by token", "[lcb]") {
  CHECK(reward::lcb_output_matches("3\n", "3"));
  CHECK(reward::lcb_output_matches("  1 2 \n3\t\n\n", "1 2\n3"));
  CHECK(reward::lcb_output_matches("3.0 2.50\n", "3 2.5\n"));
  CHECK_FALSE(reward::lcb_output_matches("1  2\n", "1 2 3\n"));
  CHECK_FALSE(reward::lcb_output_matches("1\n2\n", "1 2\n"));  // line counts differ
  CHECK_FALSE(reward::lcb_output_matches("Yes\n", "yes\n"));
  CHECK(reward::lcb_output_matches("a  b\n", "a  b\n"));       // equal strings need no decimals
  CHECK_FALSE(reward::lcb_output_matches("a b\n", "a  b\n"));  // not equal, and not decimals
  CHECK(reward::lcb_output_matches("", "\n"));
}

TEST_CASE("code is the last fenced block, as LiveCodeBench extracts it", "[lcb]") {
  CHECK(*reward::lcb_extract_code("x\n```python\nprint(1)\n```\ny\n```\nprint(2)\nprint(3)\n```\n") == "print(2)\nprint(3)");
  CHECK(*reward::lcb_extract_code("```python\n```") == "");
  CHECK_FALSE(reward::lcb_extract_code("no fences").has_value());
  CHECK_FALSE(reward::lcb_extract_code("```python\nprint(1)\n").has_value());  // cut off: fewer than two fences
}

TEST_CASE("private tests: base64, zlib and a pickled str decoded natively: anything else refused", "[lcb]") {
  CHECK(reward::base64_decode("aGVsbG8=", "t") == "hello");
  CHECK(reward::base64_decode("aGVs\nbG8h", "t") == "hello!");
  CHECK_THROWS_WITH(reward::base64_decode("aGV*", "row 3"), Catch::Contains("row 3") && Catch::Contains("not base64"));
  CHECK_THROWS_WITH(reward::zlib_inflate("not zlib", "row 4"), Catch::Contains("row 4") && Catch::Contains("zlib"));
  // pickle.dumps("hi", protocol=4) and protocol 2
  const std::string p4("\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00\x8c\x02hi\x94.", 17);
  const std::string p2("\x80\x02X\x02\x00\x00\x00hiq\x00.", 12);
  CHECK(reward::unpickle_string(p4, "t") == "hi");
  CHECK(reward::unpickle_string(p2, "t") == "hi");
  // pickle.dumps([1]) is a list, not a str: refused, never interpreted further
  const std::string list("\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00]\x94K\x01\x61.", 17);
  CHECK_THROWS_WITH(reward::unpickle_string(list, "row 5"), Catch::Contains("row 5") && Catch::Contains("opcode 0x5d"));
  CHECK_THROWS_WITH(reward::unpickle_string(p4.substr(0, 9), "t"), Catch::Contains("truncated"));
  CHECK(reward::decode_private_tests(" [{\"input\": \"1\"}]", "t") == " [{\"input\": \"1\"}]");
}

TEST_CASE("LiveCodeBench rows load as they are and grade by LiveCodeBench's rules", "[lcb][sandbox]") {
  const std::string dir = std::string(GSPO_TEST_MODELS) + "/lcb";
  auto rows = data::load_jsonl(dir + "/lcb_rows.jsonl", "auto", "answer");
  REQUIRE(rows.size() == 5);
  // the prompt is LiveCodeBench's: question, then the starter code (functional) or the stdin instruction
  CHECK(rows[0].prompt.rfind("### Question:\nProblem sum.\n\n### Format: Read the inputs from stdin", 0) == 0);
  CHECK(rows[2].prompt.find("```python\nclass Solution:\n    def twoSum") != std::string::npos);
  CHECK(rows[2].prompt.find("### Answer: (use the provided format with backticks)") != std::string::npos);
  CHECK(rows[0].difficulty == "easy");
  CHECK(rows[3].date == "2023-05-01");
  auto cfg = config::load_text("data: {task: jsonl, path: x.jsonl}\nreward: {kind: code, lcb_timeout_s: 1}\n", "t.yaml");
  auto verifier = reward::make_verifier(cfg, rows);
  std::ifstream rf(dir + "/lcb_responses.jsonl"), ef(dir + "/lcb_expected.json");
  const auto expected = nlohmann::json::parse(ef);
  std::vector<std::string> responses;
  std::vector<const data::Example*> exs;
  for (std::string line; std::getline(rf, line);) {
    const auto j = nlohmann::json::parse(line);
    responses.push_back(j["response"]);
    exs.push_back(&rows.at(j["index"].get<size_t>()));
  }
  REQUIRE(responses.size() == expected.size());
  const auto scores = reward::score_all(*verifier, responses, exs, 2);
  for (size_t i = 0; i < scores.size(); ++i) {
    INFO("case " << i << " (row " << expected[i]["index"] << "): " << responses[i] << "\ndetail: " << scores[i].detail);
    CHECK(scores[i].correct == expected[i]["correct"].get<bool>());
    CHECK(scores[i].reward == (expected[i]["correct"].get<bool>() ? 1.0 : 0.0));
    CHECK(scores[i].failure == expected[i]["failure"].get<std::string>());
  }
}

TEST_CASE("a LiveCodeBench row whose private tests cannot be read is refused naming the row", "[lcb]") {
  const std::string path = std::string(GSPO_TEST_MODELS) + "/lcb_bad.jsonl";
  {
    std::ofstream f(path);
    f << R"({"question_content": "q", "public_test_cases": "[]", "private_test_cases": "bm90IHpsaWI=", "metadata": "{}"})"
      << "\n";
  }
  auto rows = data::load_jsonl(path, "auto", "answer");
  auto cfg = config::load_text("data: {task: jsonl, path: x.jsonl}\nreward: {kind: code}\n", "t.yaml");
  auto verifier = reward::make_verifier(cfg, rows);
  CHECK_THROWS_WITH(verifier->score("```python\nprint(1)\n```", rows[0]),
                    Catch::Contains("lcb_bad.jsonl:1: private_test_cases") && Catch::Contains("zlib"));
}
