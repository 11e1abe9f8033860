// gspo score's response lines and reference answers as other tools write them (#65 item 10): a line whose "id" is
// another generator's (vLLM's "cmpl-...") is placed by its "index" and the id ignored (it used to be refused), while
// a gspo id of another set, or of another row than the index, is refused; a reference answer that is a list of one
// (["4"]) is graded as its element (it used to be refused as "got array"), a list of several is refused naming the row.
#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/data/dataset.h"
#include "gspo/eval/eval.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  core::ensure_dir(dir);
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

nlohmann::ordered_json score(const std::string& rows, const std::string& responses) {
  const auto cfg = config::load_text("reward: {kind: math}\n", "t.yaml");
  return eval::run_score(cfg, {rows, responses, "", ""});
}

}  // namespace

TEST_CASE("score: another generator's ids are ignored and the index places the line, gspo ids must agree",
          "[score]") {
  const auto dir = test::fresh_dir("score_ids");
  const auto rows = write(dir, "rows.jsonl", "{\"problem\": \"2+2\", \"answer\": \"4\"}\n"
                                             "{\"problem\": \"3*3\", \"answer\": \"9\"}\n");
  auto resp = write(dir, "vllm.jsonl", "{\"id\": \"cmpl-8f3a\", \"index\": 1, \"response\": \"\\\\boxed{9}\"}\n"
                                       "{\"id\": 17, \"index\": 0, \"response\": \"\\\\boxed{4}\"}\n");
  auto s = score(rows, resp);
  CHECK(s["problems"] == 2);
  CHECK(s["avg@1"].get<double>() == Approx(1.0));
  // gspo's own id of the same file, agreeing with the index (rows.jsonl:2 is row 1)
  resp = write(dir, "own.jsonl",
               "{\"id\": \"/elsewhere/rows.jsonl:2\", \"index\": 1, \"response\": \"\\\\boxed{9}\"}\n");
  CHECK(score(rows, resp)["avg@1"].get<double>() == Approx(1.0));
  // ... naming another row than the index
  resp = write(dir, "disagree.jsonl", "{\"id\": \"rows.jsonl:2\", \"index\": 0, \"response\": \"9\"}\n");
  CHECK_THROWS_AS(score(rows, resp), DataError);
  CHECK_THROWS_WITH(score(rows, resp), Catch::Contains("disagree.jsonl:1: id 'rows.jsonl:2' names row 1 of") &&
                                           Catch::Contains("but 'index' is 0"));
  // ... of another set
  resp = write(dir, "other.jsonl", "{\"id\": \"test.jsonl:1\", \"index\": 0, \"response\": \"4\"}\n");
  CHECK_THROWS_WITH(score(rows, resp),
                    Catch::Contains("other.jsonl:1: id 'test.jsonl:1' is a problem of 'test.jsonl'"));
  // a foreign id places nothing: the index is needed
  resp = write(dir, "no_index.jsonl", "{\"id\": \"cmpl-1\", \"response\": \"4\"}\n");
  CHECK_THROWS_WITH(score(rows, resp), Catch::Contains("no_index.jsonl:1: needs an integer 'index'") &&
                                           Catch::Contains("its 'id' \"cmpl-1\" is not gspo's"));
}

TEST_CASE("a reference answer in a list of one is read as its element, several are refused naming the row",
          "[score][data]") {
  const auto dir = test::fresh_dir("score_list_answers");
  const auto rows = write(dir, "rows.jsonl", "{\"problem\": \"2+2\", \"answer\": [\"4\"]}\n"
                                             "{\"problem\": \"3*3\", \"answer\": [9]}\n");
  const auto ex = data::load_jsonl(rows, "auto", "answer");
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].answer == "4");
  CHECK(ex[1].answer == "9");
  const auto resp = write(dir, "resp.jsonl", "{\"index\": 0, \"response\": \"\\\\boxed{4}\"}\n"
                                             "{\"index\": 1, \"response\": \"\\\\boxed{9}\"}\n");
  CHECK(score(rows, resp)["avg@1"].get<double>() == Approx(1.0));
  const auto several = write(dir, "several.jsonl", "{\"problem\": \"x\", \"answer\": \"1\"}\n"
                                                   "{\"problem\": \"x^2=1\", \"answer\": [\"1\", \"-1\"]}\n");
  CHECK_THROWS_AS(data::load_jsonl(several, "auto", "answer"), DataError);
  CHECK_THROWS_WITH(data::load_jsonl(several, "auto", "answer"),
                    Catch::Contains("several.jsonl:2: field 'answer' holds 2 answers"));
  const auto empty = write(dir, "empty.jsonl", "{\"problem\": \"x\", \"answer\": []}\n");
  CHECK_THROWS_WITH(data::load_jsonl(empty, "auto", "answer"), Catch::Contains("empty.jsonl:1: field 'answer' is an "
                                                                               "empty list"));
  const auto nested = write(dir, "nested.jsonl", "{\"problem\": \"x\", \"answer\": [[1]]}\n");
  CHECK_THROWS_WITH(data::load_jsonl(nested, "auto", "answer"),
                    Catch::Contains("is a list whose element ([1]) is not a string"));
}

TEST_CASE("score: gspo ids of parquet rows (FILE:row N) place samples, in a shard directory too", "[score][parquet]") {
  // gspo eval's samples of a parquet set, written in another order than the rows: their "index" counts the problems
  // the eval kept, so the id decides. The test split of a verl-style directory (tests/golden/parquet_cases.py):
  // row 1's answer is 0, row 2's is 4.
  const std::string split = std::string(GSPO_TEST_MODELS) + "/parquet/verl_splits";
  const auto cfg = config::load_text("reward: {kind: math}\ndata: {answer_key: reward_model.ground_truth}\n", "t.yaml");
  const auto dir = test::fresh_dir("score_parquet_ids");
  const auto resp = write(dir, "samples.jsonl",
      "{\"dataset\": \"verl_splits:test\", \"index\": 0, \"id\": \"" + split + "/test.parquet:row 2\", "
      "\"response\": \"\\\\boxed{4}\"}\n"
      "{\"dataset\": \"verl_splits:test\", \"index\": 1, \"id\": \"" + split + "/test.parquet:row 1\", "
      "\"response\": \"\\\\boxed{0}\"}\n");
  const nlohmann::ordered_json s = eval::run_score(cfg, {split + ":test", resp, "", ""});
  CHECK(s["problems"] == 2);
  CHECK(s["avg@1"].get<double>() == Approx(1.0));
  // A row the file does not have, and a shard of another dataset, are refused.
  const auto missing = write(dir, "missing.jsonl", "{\"id\": \"test.parquet:row 9\", \"response\": \"4\"}\n");
  CHECK_THROWS_WITH(eval::run_score(cfg, {split + ":test", missing, "", ""}),
                    Catch::Contains("id 'test.parquet:row 9': row 9 of") && Catch::Contains("holds no problem"));
  const auto other = write(dir, "other.jsonl", "{\"id\": \"train.parquet:row 1\", \"response\": \"4\"}\n");
  CHECK_THROWS_WITH(eval::run_score(cfg, {split + ":test", other, "", ""}),
                    Catch::Contains("is a problem of 'train.parquet'"));
}
