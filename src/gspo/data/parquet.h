// Parquet datasets (a .parquet file, or a directory of shards as the Hugging Face Hub ships them) read natively with
// Apache Arrow's C++ parquet reader: libarrow and libparquet of the pinned pyarrow wheel (cmake/GspoArrow.cmake).
// Each row becomes a JSON object, so a parquet row and a JSONL line go through the same field rules (data/dataset.h).
// parquet.cpp is compiled alone as C++20 (Arrow 26's headers need it; gspo is C++17): this header names no Arrow type.
// Non-goals: column projection, predicate push-down, writing parquet.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gspo::data {

// True for a path ending in ".parquet", a directory, or "DIR:SPLIT": datasets given as a directory are read as parquet
// shards. A directory holding the shards of several splits (the Hub's DIR/data/train-00000-of-00002.parquet beside
// test-00000-of-00001.parquet, DIR/train/*.parquet, or verl's train.parquet beside test.parquet) must be given with
// the split to read, "DIR:train"; alone it is refused, listing its splits, so a run never trains on its test split.
bool is_parquet_path(const std::string& path);

// One row: its name for messages ("FILE:row N", N counted from 1 within FILE), its columns as a JSON object
// (structs -> objects, lists -> arrays, strings, integers, floats, booleans; a null value -> null) and that object's
// JSON text (what Example::row keeps for external verifiers and code tests).
struct ParquetRow {
  std::string where;
  nlohmann::json row;
  std::string text;
};

// Calls `on_row` for every row of `path` in file order: a .parquet file, or every *.parquet file under a directory
// (recursively) in sorted path order. Arrow holds one batch of 8192 rows at a time, beside the pages of the row group
// being decoded, from malloc (23 MiB at the peak for 100k GSM8K rows in one row group: docs/performance.md).
// Throws IoError (unreadable file or directory), DataError: a directory holding no .parquet file, a truncated or
// corrupt file (naming it), a column of a type it does not read (naming file, column and type), a string that is
// not UTF-8 (naming the row).
void for_each_parquet_row(const std::string& path, const std::function<void(const ParquetRow&)>& on_row);

// Every row of for_each_parquet_row, collected.
std::vector<ParquetRow> read_parquet_rows(const std::string& path);

// The .parquet files for_each_parquet_row reads for `path`, in its order (`path` itself when it is not a directory):
// with ":SPLIT", that split's shards. DataError for a directory of several splits given without one, or a split it
// does not hold (naming the splits it has).
std::vector<std::string> parquet_files(const std::string& path);

// Bytes Arrow's memory pool (malloc's) has held at most in this process: pages and batches read.
int64_t parquet_peak_pool_bytes();

}  // namespace gspo::data
