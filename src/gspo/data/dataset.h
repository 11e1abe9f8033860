// Datasets: the built-in arithmetic task and JSONL files. Errors name the file and line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/data/example.h"

namespace gspo::config { struct DataOptions; }

namespace gspo::data {

// Rows of a JSONL file; `prompt_key` ("auto": prompt, problem or question) and `answer_key` name the fields
// (answers may be strings or numbers; rows with code tests may lack one).
// Blank lines are skipped. Throws IoError (unreadable) or DataError ("file:LINE: ...").
std::vector<Example> load_jsonl(const std::string& path, const std::string& prompt_key, const std::string& answer_key);

// `count` problems "a+b=" with operands in [0, max_operand] and operators from `ops`; same seed, same set.
std::vector<Example> make_arithmetic(int64_t count, int64_t max_operand, const std::string& ops, uint64_t seed);

// The dataset config.data describes; throws DataError when it is empty.
std::vector<Example> load_dataset(const config::DataOptions& opts);

// True when the rows carry code tests (decides reward.kind auto).
bool has_code_tests(const std::vector<Example>& rows);

}  // namespace gspo::data
