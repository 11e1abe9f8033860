// #66 item 3 (part): rows as the Hub's RL datasets ship them, read without conversion: prompts as lists of chat
// messages (TRL's conversational prompt-only format; verl's `prompt` column) and answers at dotted paths (verl's
// `reward_model.ground_truth`). The rows below follow the exact schemas of verl's examples/data_preprocess/gsm8k.py and
// TRL's conversational prompt-only datasets. The expected ChatML text is written out by hand from the format's
// definition (an independent reference for how the conversation is assembled).
#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::string write_rows(const std::string& name, const std::string& text) {
  const std::string path = std::string(GSPO_TEST_MODELS) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

config::DataOptions chatml(const std::string& system = "") {
  auto cfg = config::load("", {});
  cfg.data.chat_template = config::ChatTemplate::kChatml;
  cfg.data.system_prompt = system;
  return cfg.data;
}

}  // namespace

TEST_CASE("verl's GSM8K rows: a message-list prompt and reward_model.ground_truth", "[data][shapes]") {
  const auto path = write_rows(
      "verl_gsm8k.jsonl",
      R"({"data_source": "openai/gsm8k", "prompt": [{"content": "Natalia sold 48 clips. Let's think step by step and output the final answer after \"####\".", "role": "user"}], "ability": "math", "reward_model": {"ground_truth": "72", "style": "rule"}, "extra_info": {"split": "train", "index": 0, "answer": "48 + 24 = 72\n#### 72", "question": "Natalia sold 48 clips."}})"
      "\n");
  const auto rows = data::load_jsonl(path, "prompt", "reward_model.ground_truth");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].answer == "72");
  REQUIRE(rows[0].messages.size() == 1);
  CHECK(rows[0].messages[0].role == "user");
  CHECK(rows[0].prompt == rows[0].messages[0].content);  // the last user turn: what the judge and logs read
  auto o = chatml();
  o.prompt_template = "{prompt}";
  CHECK(data::format_prompt(o, rows[0]) ==
        "<|im_start|>user\n" + rows[0].prompt + "<|im_end|>\n<|im_start|>assistant\n");
  // auto finds the prompt field and reads it as messages too
  CHECK(data::load_jsonl(path, "auto", "reward_model.ground_truth")[0].messages.size() == 1);
}

TEST_CASE("TRL's conversational prompts: the row's system message, several turns, data.prompt_template on the last "
          "user turn", "[data][shapes]") {
  const auto path = write_rows(
      "trl_conversational.jsonl",
      R"({"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}], "solution": "4"})"
      "\n"
      R"({"prompt": [{"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "7"}, {"role": "user", "content": "Another?"}], "solution": "11"})"
      "\n");
  const auto rows = data::load_jsonl(path, "prompt", "solution");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].prompt == "2+2?");
  CHECK(rows[1].prompt == "Another?");
  CHECK(rows[1].answer == "11");
  auto o = chatml("ignored: the row brings its own");
  o.prompt_template = "Q: {prompt}";
  CHECK(data::format_prompt(o, rows[0]) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nQ: 2+2?<|im_end|>\n<|im_start|>assistant\n");
  o.system_prompt = "Think.";  // a row without a system message gets data.system_prompt's first
  CHECK(data::format_prompt(o, rows[1]) ==
        "<|im_start|>system\nThink.<|im_end|>\n<|im_start|>user\nName a prime.<|im_end|>\n"
        "<|im_start|>assistant\n7<|im_end|>\n<|im_start|>user\nQ: Another?<|im_end|>\n<|im_start|>assistant\n");
  // one user turn given as a list renders as the same prompt given as a string
  data::Example as_text = rows[0];
  as_text.messages.clear();
  o.system_prompt = "Be brief.";
  CHECK(data::format_prompt(o, as_text) == data::format_prompt(o, rows[0]));
  // no chat template: a conversation cannot be flattened silently
  o.chat_template = config::ChatTemplate::kNone;
  CHECK_THROWS_WITH(data::format_prompt(o, rows[0]), Catch::Contains("data.chat_template none cannot render"));
  CHECK(data::format_prompt(o, as_text) == "Q: 2+2?");
}

TEST_CASE("message lists and dotted paths that cannot be read are refused, naming the row and the field",
          "[data][shapes]") {
  auto refuses = [](const std::string& row, const std::string& answer_key, const std::string& says) {
    const auto path = write_rows("bad_shapes.jsonl", R"({"prompt": "ok", "reward_model": {"ground_truth": "1"}})" "\n" + row + "\n");
    INFO(row);
    CHECK_THROWS_WITH(data::load_jsonl(path, "prompt", answer_key),
                      Catch::Contains(path + ":2") && Catch::Contains(says));
  };
  const std::string gt = R"("reward_model": {"ground_truth": "1", "style": "rule"})";
  refuses(R"({"prompt": [], )" + gt + "}", "reward_model.ground_truth", "empty list of messages");
  refuses(R"({"prompt": ["hi"], )" + gt + "}", "reward_model.ground_truth", "message 0 is not a {\"role\", \"content\"}");
  refuses(R"({"prompt": [{"role": "tool", "content": "x"}], )" + gt + "}", "reward_model.ground_truth", "role 'tool'");
  refuses(R"({"prompt": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], )" + gt + "}",
          "reward_model.ground_truth", "content must be strings");
  refuses(R"({"prompt": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}], )" + gt + "}",
          "reward_model.ground_truth", "a system message comes first");
  refuses(R"({"prompt": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], )" + gt + "}",
          "reward_model.ground_truth", "ends with an assistant message");
  refuses(R"({"prompt": [{"role": "system", "content": "a"}], )" + gt + "}", "reward_model.ground_truth",
          "no user message");
  refuses(R"({"prompt": "x", "reward_model": "1"})", "reward_model.ground_truth",
          "'reward_model' is string, not an object");
  refuses(R"({"prompt": "x", "extra": 1})", "reward_model.ground_truth", "(fields: extra, prompt)");
  const auto typo = write_rows("typo_path.jsonl", R"({"prompt": "x", )" + gt + "}\n");
  CHECK_THROWS_WITH(data::load_jsonl(typo, "prompt", "reward_model.ground_truht"),
                    Catch::Contains(typo + ":1: no field 'reward_model.ground_truht' ('reward_model' has fields: "
                                    "ground_truth, style)"));
  // a field whose name holds a dot is read by that name first
  const auto path = write_rows("dotted_name.jsonl", R"({"prompt": "x", "a.b": "5", "a": {"b": "6"}})" "\n");
  CHECK(data::load_jsonl(path, "prompt", "a.b")[0].answer == "5");
}

TEST_CASE("a .json dataset: one array of rows, or an object whose data field is one", "[data][shapes]") {
  const auto arr = write_rows("rows.json", R"([{"problem": "1+1", "answer": 2}, {"problem": "2+2", "answer": "4"}])");
  const auto rows = data::load_jsonl(arr, "auto", "answer");
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].answer == "4");
  CHECK(rows[1].id == arr + "[1]");
  const auto wrapped = write_rows("wrapped.json", R"({"version": 1, "data": [{"prompt": "x", "answer": "y"}]})");
  CHECK(data::load_jsonl(wrapped, "auto", "answer")[0].answer == "y");
  CHECK_THROWS_WITH(data::load_jsonl(write_rows("bad.json", "[{\"prompt\": \"x\""), "auto", "answer"),
                    Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(data::load_jsonl(write_rows("scalar.json", "[1]"), "auto", "answer"),
                    Catch::Contains("scalar.json[0]: a row must be a JSON object"));
  CHECK_THROWS_WITH(data::load_jsonl(write_rows("obj.json", R"({"rows": []})"), "auto", "answer"),
                    Catch::Contains("must be an array of row objects"));
  CHECK_THROWS_WITH(data::load_jsonl(write_rows("missing.json", R"([{"prompt": "x"}])"), "auto", "answer"),
                    Catch::Contains("missing.json[0]: no field 'answer'"));
}
