// Datasets: the built-in arithmetic task and JSONL files. Errors name the file and line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/data/cursor.h"
#include "gspo/data/example.h"

namespace gspo::config { struct DataOptions; }

namespace gspo::data {

// Rows of a JSONL file; `prompt_key` ("auto": prompt, problem, question or description) and `answer_key` name the fields
// (answers may be strings or numbers; rows with code tests may lack one).
// Blank lines are skipped. Throws IoError (unreadable) or DataError ("file:LINE: ..."). A .parquet file or a directory
// of parquet shards is read row by row (data/parquet.h; rows named "FILE:row N") through the same field rules.
// `need_prompt` false (gspo score, which grades given responses) accepts rows without a prompt field. `source_key`
// (data.source_key) names the field read into Example::source ("" = none).
std::vector<Example> load_jsonl(const std::string& path, const std::string& prompt_key, const std::string& answer_key,
                                bool need_prompt = true, const std::string& source_key = "data_source");

// `count` distinct problems "a+b=" with operands in [0, max_operand] and operators from `ops`; same seed, same set.
// DataError when fewer than `count` distinct problems exist.
std::vector<Example> make_arithmetic(int64_t count, int64_t max_operand, const std::string& ops, uint64_t seed);
// The `holdout` distinct problems that follow the first `count` in the same draw: never in make_arithmetic's set.
std::vector<Example> arithmetic_holdout(int64_t count, int64_t holdout, int64_t max_operand, const std::string& ops,
                                        uint64_t seed);

// The arithmetic training pool's size: data.num_prompts, or (0) every distinct problem not held out.
int64_t arithmetic_pool_size(const config::DataOptions& opts);
// Problems held out of training (data.holdout; arithmetic only, else empty): disjoint from load_dataset's.
std::vector<Example> load_heldout(const config::DataOptions& opts);

// The dataset config.data describes (data.mix: each dataset's rows in turn, Example::dataset its index); throws
// DataError when it (or one dataset of the mix) is empty.
std::vector<Example> load_dataset(const config::DataOptions& opts);

// The cursor over `rows` (load_dataset's, after prompts were dropped): data.mix's weights over its datasets' rows,
// else one dataset. DataError naming the dataset when a mix's dataset has no row left.
Cursor make_cursor(const config::DataOptions& opts, const std::vector<Example>& rows);
// One line for the log: data.mix's datasets with their rows (of `rows`) and weights; "" without a mix.
std::string describe_mix(const config::DataOptions& opts, const std::vector<Example>& rows);
// The distinct data sources of `rows`, sorted; each row's source_id set to its source's place there (-1 without
// one). Every process that loads the same rows numbers them alike: the step's per-source metrics gather these ids.
std::vector<std::string> number_sources(std::vector<Example>& rows);

// True when the row carries code tests ('tests', HumanEval 'test', APPS 'test_list'): graded by the code verifier
// under reward.kind auto, else by the math verifier.
bool row_has_code_tests(const Example& ex);

// How many rows carry code tests and how many do not, with the first of each (file:line) for messages; and how many
// hold no reference answer (rows with tests may omit it: no math verifier can grade them).
struct TestCoverage {
  int64_t with_tests = 0;
  int64_t without_tests = 0;
  int64_t without_answer = 0;
  std::string first_with, first_without, first_without_answer;
  bool mixed() const { return with_tests > 0 && without_tests > 0; }
};
TestCoverage code_test_coverage(const std::vector<Example>& rows);

}  // namespace gspo::data
