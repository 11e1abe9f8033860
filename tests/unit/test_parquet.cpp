// Parquet datasets read with Arrow's C++ reader (data/parquet.h), against JSONL twins of the same rows written by
// pyarrow (tests/golden/parquet_cases.py, the make_parquet_cases fixture): verl's GSM8K and DAPO-Math-17k schemas,
// TRL's conversational prompt-only format, a 2-shard directory in the Hub's layout, every column type gspo reads,
// and the bad inputs (truncated, corrupt or foreign file, unsupported column type, empty directory).
#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/data/parquet.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::string cases() { return std::string(GSPO_TEST_MODELS) + "/parquet"; }

std::vector<nlohmann::json> jsonl_rows(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// Every row of the parquet path equals its twin's, field by field, and is named FILE:row N within its file.
void check_twin(const std::string& parquet, const std::string& jsonl, const std::vector<std::string>& names) {
  const auto got = data::read_parquet_rows(parquet);
  const auto want = jsonl_rows(jsonl);
  REQUIRE(got.size() == want.size());
  REQUIRE(got.size() == names.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(got[i].where << "\n  parquet: " << got[i].row.dump() << "\n  jsonl:   " << want[i].dump());
    CHECK(got[i].where == names[i]);
    CHECK(got[i].text == got[i].row.dump());
    REQUIRE(got[i].row.is_object());
    CHECK(got[i].row.size() == want[i].size());
    for (const auto& [key, value] : want[i].items()) {
      INFO("field " << key);
      REQUIRE(got[i].row.contains(key));
      CHECK(got[i].row.at(key) == value);
    }
  }
}

std::vector<std::string> row_names(const std::string& file, int n, int first = 1) {
  std::vector<std::string> out;
  for (int k = first; k < first + n; ++k) out.push_back(file + ":row " + std::to_string(k));
  return out;
}

}  // namespace

TEST_CASE("parquet: verl GSM8K, DAPO-Math-17k and TRL conversational files read as their JSONL twins",
          "[data][parquet]") {
  for (const char* name : {"gsm8k", "dapo", "trl"}) {
    SECTION(name) {
      const std::string file = cases() + "/" + name + ".parquet";
      const size_t n = jsonl_rows(cases() + "/" + name + ".jsonl").size();
      check_twin(file, cases() + "/" + name + ".jsonl", row_names(file, static_cast<int>(n)));
    }
  }
  // The GSM8K file has 3 row groups (row_group_size 3): rows keep their order and numbering across them.
  const auto rows = data::read_parquet_rows(cases() + "/gsm8k.parquet");
  REQUIRE(rows.size() == 7);
  CHECK(rows[6].row["extra_info"]["index"] == 6);
  CHECK(rows[6].row["prompt"][0]["role"] == "user");
  CHECK(rows[6].row["reward_model"]["ground_truth"] == "54");
}

TEST_CASE("parquet: every column type gspo reads, with nulls at every level", "[data][parquet]") {
  const std::string file = cases() + "/types.parquet";
  check_twin(file, cases() + "/types.jsonl", row_names(file, 3));
  const auto rows = data::read_parquet_rows(file);
  CHECK(rows[0].row["u64"].is_number_unsigned());
  CHECK(rows[0].row["u64"].get<uint64_t>() == 18446744073709551615ull);
  CHECK(rows[0].row["i64"].get<int64_t>() == INT64_MIN);
  CHECK(rows[0].row["f32"].get<double>() == 0.1);  // float32 0.1f read as the shortest decimal, not 0.1000000015
  CHECK(rows[0].row["cat"] == "red");               // a dictionary (pandas categorical) column read as its values
  CHECK(rows[2].row["st"].is_null());
  CHECK(rows[1].row["st"]["inner"].is_null());
}

TEST_CASE("parquet: a directory reads every shard under it in sorted path order", "[data][parquet]") {
  const std::string dir = cases() + "/shards";
  CHECK(data::is_parquet_path(dir));
  CHECK(data::is_parquet_path("x/train-00000-of-00001.parquet"));
  CHECK_FALSE(data::is_parquet_path(cases() + "/gsm8k.jsonl"));
  const std::string a = dir + "/data/train-00000-of-00002.parquet", b = dir + "/data/train-00001-of-00002.parquet";
  CHECK(data::parquet_files(dir) == std::vector<std::string>{a, b});
  auto names = row_names(a, 4);
  for (const auto& n : row_names(b, 3)) names.push_back(n);
  check_twin(dir, cases() + "/shards.jsonl", names);
}

TEST_CASE("parquet: a directory of several splits is read one split at a time, named DIR:SPLIT", "[data][parquet]") {
  for (const std::string dir : {cases() + "/splits", cases() + "/verl_splits"}) {
    INFO(dir);
    // Alone: refused, listing the splits, so a run never trains on its test split.
    CHECK_THROWS_WITH(data::parquet_files(dir), Catch::Contains("several splits") && Catch::Contains("test (1 file)") &&
                                                    Catch::Contains("train (1 file)") &&
                                                    Catch::Contains("'" + dir + ":train'"));
    CHECK(data::is_parquet_path(dir + ":train"));
    const std::string train = dir == cases() + "/splits" ? dir + "/data/train-00000-of-00001.parquet"
                                                          : dir + "/train.parquet";
    CHECK(data::parquet_files(dir + ":train") == std::vector<std::string>{train});
    check_twin(dir + ":train", cases() + "/splits_train.jsonl", row_names(train, 5));
    check_twin(dir + ":test", cases() + "/splits_test.jsonl",
               row_names(dir == cases() + "/splits" ? dir + "/data/test-00000-of-00001.parquet" : dir + "/test.parquet",
                         2));
    CHECK_THROWS_WITH(data::parquet_files(dir + ":dev"), Catch::Contains("no split 'dev'") && Catch::Contains("train"));
    CHECK(data::load_jsonl(dir + ":test", "prompt", "reward_model.ground_truth").size() == 2);
  }
  // One split alone (the shards above: train only) is read whole, as before; a ':' in a file's own name is its name.
  CHECK(data::parquet_files(cases() + "/shards").size() == 2);
  CHECK(data::parquet_files(cases() + "/shards:train").size() == 2);
  CHECK(data::parquet_files("no/such/dir:train") == std::vector<std::string>{"no/such/dir:train"});
}

TEST_CASE("parquet: bad inputs are data errors naming the file, column and type", "[data][parquet]") {
  using Catch::Matchers::Contains;
  const std::string dir = cases();
  CHECK_THROWS_AS(data::read_parquet_rows(dir + "/truncated.parquet"), DataError);
  CHECK_THROWS_WITH(data::read_parquet_rows(dir + "/truncated.parquet"),
                    Contains("cannot read parquet file '" + dir + "/truncated.parquet'"));
  CHECK_THROWS_AS(data::read_parquet_rows(dir + "/corrupt.parquet"), DataError);
  CHECK_THROWS_WITH(data::read_parquet_rows(dir + "/corrupt.parquet"),
                    Contains("cannot read parquet file '" + dir + "/corrupt.parquet'"));
  CHECK_THROWS_WITH(data::read_parquet_rows(dir + "/not_parquet.parquet"),
                    Contains("cannot read parquet file '" + dir + "/not_parquet.parquet'"));
  CHECK_THROWS_AS(data::read_parquet_rows(dir + "/not_parquet.parquet"), DataError);
  CHECK_THROWS_AS(data::read_parquet_rows(dir + "/unsupported.parquet"), DataError);
  CHECK_THROWS_WITH(data::read_parquet_rows(dir + "/unsupported.parquet"),
                    Contains(dir + "/unsupported.parquet: column 'when' has type timestamp[ms]"));
  CHECK_THROWS_AS(data::read_parquet_rows(dir + "/empty_dir"), DataError);
  CHECK_THROWS_WITH(data::read_parquet_rows(dir + "/empty_dir"),
                    Contains("dataset directory '" + dir + "/empty_dir' holds no .parquet file"));
  CHECK_THROWS_AS(data::read_parquet_rows(dir + "/missing.parquet"), IoError);
  CHECK_THROWS_AS(data::read_parquet_rows(dir + "/bad_utf8.parquet"), DataError);
  CHECK_THROWS_WITH(data::read_parquet_rows(dir + "/bad_utf8.parquet"),
                    Contains(dir + "/bad_utf8.parquet:row 2: a string is not valid UTF-8"));
  // A null is read as null (what the dataset's field rules then refuse, naming the row and column).
  const auto rows = data::read_parquet_rows(dir + "/null_prompt.parquet");
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].where == dir + "/null_prompt.parquet:row 2");
  CHECK(rows[1].row["prompt"].is_null());
}

namespace {

// load_jsonl of the parquet path and of its JSONL twin give the same examples, field by field, under their own names.
void check_examples(const std::string& parquet, const std::string& jsonl, const std::string& answer_key,
                    const std::vector<std::string>& names) {
  const auto got = data::load_jsonl(parquet, "auto", answer_key);
  const auto want = data::load_jsonl(jsonl, "auto", answer_key);
  REQUIRE(got.size() == want.size());
  REQUIRE(got.size() == names.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(got[i].id << " against " << want[i].id);
    CHECK(got[i].id == names[i]);
    CHECK(got[i].prompt == want[i].prompt);
    CHECK(got[i].answer == want[i].answer);
    CHECK(got[i].difficulty == want[i].difficulty);
    CHECK(got[i].date == want[i].date);
    REQUIRE(got[i].messages.size() == want[i].messages.size());
    for (size_t m = 0; m < got[i].messages.size(); ++m) {
      CHECK(got[i].messages[m].role == want[i].messages[m].role);
      CHECK(got[i].messages[m].content == want[i].messages[m].content);
    }
    CHECK(nlohmann::json::parse(got[i].row) == nlohmann::json::parse(want[i].row));
    CHECK(data::row_has_code_tests(got[i]) == data::row_has_code_tests(want[i]));
  }
}

}  // namespace

TEST_CASE("parquet: load_jsonl reads verl, DAPO and TRL parquet files and a shard directory as their JSONL twins",
          "[data][parquet]") {
  const std::string dir = cases();
  SECTION("verl GSM8K: message-list prompt, reward_model.ground_truth") {
    check_examples(dir + "/gsm8k.parquet", dir + "/gsm8k.jsonl", "reward_model.ground_truth",
                   row_names(dir + "/gsm8k.parquet", 7));
    const auto rows = data::load_jsonl(dir + "/gsm8k.parquet", "auto", "reward_model.ground_truth");
    CHECK(rows[6].answer == "54");
    REQUIRE(rows[6].messages.size() == 1);
    CHECK(rows[6].messages[0].role == "user");
    CHECK(rows[6].prompt == rows[6].messages[0].content);
  }
  SECTION("DAPO-Math-17k") {
    check_examples(dir + "/dapo.parquet", dir + "/dapo.jsonl", "reward_model.ground_truth",
                   row_names(dir + "/dapo.parquet", 3));
  }
  SECTION("TRL conversational prompt-only, with a system message") {
    check_examples(dir + "/trl.parquet", dir + "/trl.jsonl", "solution", row_names(dir + "/trl.parquet", 2));
    const auto rows = data::load_jsonl(dir + "/trl.parquet", "auto", "solution");
    REQUIRE(rows[0].messages.size() == 2);
    CHECK(rows[0].messages[0].role == "system");
    CHECK(rows[0].prompt == "What is 7 * 6?");
  }
  SECTION("a directory of 2 shards, in the Hub's layout") {
    const std::string a = dir + "/shards/data/train-00000-of-00002.parquet";
    auto names = row_names(a, 4);
    for (const auto& n : row_names(dir + "/shards/data/train-00001-of-00002.parquet", 3)) names.push_back(n);
    check_examples(dir + "/shards", dir + "/shards.jsonl", "reward_model.ground_truth", names);
  }
}

TEST_CASE("parquet: load_jsonl's errors name the parquet row and column", "[data][parquet]") {
  using Catch::Matchers::Contains;
  const std::string dir = cases();
  CHECK_THROWS_AS(data::load_jsonl(dir + "/null_prompt.parquet", "auto", "answer"), DataError);
  CHECK_THROWS_WITH(data::load_jsonl(dir + "/null_prompt.parquet", "auto", "answer"),
                    Contains(dir + "/null_prompt.parquet:row 2: field 'prompt'"));
  CHECK_THROWS_WITH(data::load_jsonl(dir + "/null_prompt_string.parquet", "prompt", "answer"),
                    Contains(dir + "/null_prompt_string.parquet:row 2: field 'prompt'"));
  CHECK_THROWS_AS(data::load_jsonl(dir + "/no_prompt_column.parquet", "prompt", "answer"), DataError);
  CHECK_THROWS_WITH(data::load_jsonl(dir + "/no_prompt_column.parquet", "prompt", "answer"),
                    Contains(dir + "/no_prompt_column.parquet:row 1: no field 'prompt'"));
  CHECK(data::load_jsonl(dir + "/no_prompt_column.parquet", "auto", "answer").at(0).prompt == "What is 1+1?");
  CHECK_THROWS_WITH(data::load_jsonl(dir + "/gsm8k.parquet", "auto", "answer"),
                    Contains(dir + "/gsm8k.parquet:row 1: no field 'answer'"));
  CHECK_THROWS_AS(data::load_jsonl(dir + "/truncated.parquet", "auto", "answer"), DataError);
  CHECK_THROWS_AS(data::load_jsonl(dir + "/unsupported.parquet", "auto", "answer"), DataError);
  CHECK_THROWS_AS(data::load_jsonl(dir + "/empty_dir", "auto", "answer"), DataError);
  CHECK_THROWS_WITH(data::load_jsonl(dir + "/empty_dir", "auto", "answer"),
                    Contains("dataset directory '" + dir + "/empty_dir' holds no .parquet file"));
}
