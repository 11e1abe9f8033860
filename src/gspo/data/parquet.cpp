// Compiled as C++20 in a target of its own (gspo_parquet, CMakeLists.txt): Arrow's headers stay out of the C++17
// library and its precompiled header. nlohmann's comparison operators are kept as the C++17 files have them, so the
// inline functions both sides instantiate are the same code.
#define JSON_HAS_THREE_WAY_COMPARISON 0
#define JSON_HAS_RANGES 0
#include "gspo/data/parquet.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "gspo/core/error.h"

namespace gspo::data {

namespace fs = std::filesystem;

namespace {

// "DIR:SPLIT" (DIR a directory, the whole path not an existing file): the directory and the split named.
std::pair<std::string, std::string> split_path(const std::string& path) {
  std::error_code ec;
  const size_t colon = path.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == path.size() || fs::exists(path, ec)) return {path, ""};
  const std::string dir = path.substr(0, colon), split = path.substr(colon + 1);
  if (split.find('/') != std::string::npos || !fs::is_directory(dir, ec)) return {path, ""};
  return {dir, split};
}

bool split_word(const std::string& s) {
  for (const char* w : {"train", "test", "validation", "valid", "val", "dev", "eval", "evaluation"})
    if (s == w) return true;
  return false;
}

// The split a shard belongs to, as the Hub names shards: SPLIT-00000-of-00002.parquet, SPLIT/....parquet or
// SPLIT.parquet (SPLIT a split word for the last two); "" when the name says none.
std::string shard_split(const fs::path& relative) {
  const std::string stem = relative.stem().string();
  const size_t of = stem.rfind("-of-");
  if (of != std::string::npos) {
    const size_t dash = stem.rfind('-', of - 1);
    const auto digits = [](const std::string& s) {
      return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dash != std::string::npos && dash > 0 && digits(stem.substr(dash + 1, of - dash - 1)) &&
        digits(stem.substr(of + 4)))
      return stem.substr(0, dash);
  }
  for (auto p = relative.parent_path(); !p.empty(); p = p.parent_path())
    if (split_word(p.filename().string())) return p.filename().string();
  return split_word(stem) ? stem : "";
}

}  // namespace

bool is_parquet_path(const std::string& path) {
  if (path.size() >= 8 && path.compare(path.size() - 8, 8, ".parquet") == 0) return true;
  std::error_code ec;
  return fs::is_directory(split_path(path).first, ec);
}

std::vector<std::string> parquet_files(const std::string& path_in) {
  const auto [path, wanted] = split_path(path_in);
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {path};
  std::map<std::string, std::vector<std::string>> by_split;
  fs::recursive_directory_iterator it(path, fs::directory_options::follow_directory_symlink, ec), end;
  for (; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".parquet" && it->is_regular_file(ec))
      by_split[shard_split(fs::relative(it->path(), path))].push_back(it->path().string());
  if (ec) throw IoError("cannot list dataset directory '" + path + "': " + ec.message());
  if (by_split.empty())
    throw DataError("dataset directory '" + path + "' holds no .parquet file (a directory is read as parquet shards, "
                    "e.g. DIR/train-00000-of-00002.parquet)");
  std::string splits;
  for (const auto& [name, files] : by_split)
    splits += (splits.empty() ? "" : ", ") + (name.empty() ? std::string("(no split in the name)") : name) + " (" +
              std::to_string(files.size()) + (files.size() == 1 ? " file)" : " files)");
  if (!wanted.empty() && !by_split.count(wanted))
    throw DataError("dataset '" + path_in + "': directory '" + path + "' has no split '" + wanted + "' (its shards: " +
                    splits + ")");
  if (wanted.empty() && by_split.size() > 1)
    throw DataError("dataset directory '" + path + "' holds shards of several splits: " + splits + "; name the one " +
                    "to read as '" + path + ":SPLIT' (e.g. '" + path + ":" +
                    (by_split.count("train") ? "train" : by_split.rbegin()->first) + "')");
  auto files = wanted.empty() ? by_split.begin()->second : by_split[wanted];
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

using arrow::Type;

// Every type the row conversion reads, checked on the schema before any row is: a column of another type is an error
// naming the file, the column (nested fields dotted, list elements "[]") and the type.
void check_type(const arrow::DataType& t, const std::string& file, const std::string& column) {
  switch (t.id()) {
    case Type::NA: case Type::BOOL: case Type::STRING: case Type::LARGE_STRING: case Type::STRING_VIEW:
    case Type::INT8: case Type::INT16: case Type::INT32: case Type::INT64:
    case Type::UINT8: case Type::UINT16: case Type::UINT32: case Type::UINT64:
    case Type::FLOAT: case Type::DOUBLE:
      return;
    case Type::STRUCT:
      for (const auto& f : t.fields()) check_type(*f->type(), file, column + "." + f->name());
      return;
    case Type::LIST: case Type::LARGE_LIST: case Type::FIXED_SIZE_LIST:
      check_type(*t.field(0)->type(), file, column + "[]");
      return;
    case Type::DICTIONARY:  // pandas categoricals: read as their values
      check_type(*static_cast<const arrow::DictionaryType&>(t).value_type(), file, column);
      return;
    default:
      throw DataError(file + ": column '" + column + "' has type " + t.ToString() + ", which gspo does not read " +
                      "(it reads strings, integers, floats, booleans, nulls, and structs and lists of them)");
  }
}

// A float32 as the shortest decimal that reads back to it (0.1f -> 0.1, not 0.10000000149011612), as JSON shows it.
double float_value(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf) - 1, v);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

nlohmann::json value(const arrow::Array& a, int64_t i);

template <class ListArray>
nlohmann::json list_value(const arrow::Array& a, int64_t i) {
  const auto& l = static_cast<const ListArray&>(a);
  nlohmann::json out = nlohmann::json::array();
  const auto start = l.value_offset(i), n = l.value_length(i);
  for (int64_t k = 0; k < n; ++k) out.push_back(value(*l.values(), start + k));
  return out;
}

nlohmann::json struct_value(const arrow::Array& a, int64_t i) {
  const auto& s = static_cast<const arrow::StructArray&>(a);
  nlohmann::json out = nlohmann::json::object();
  const auto& fields = s.struct_type()->fields();
  for (int k = 0; k < s.num_fields(); ++k) out[fields[k]->name()] = value(*s.field(k), i);
  return out;
}

template <class Array>
auto num(const arrow::Array& a, int64_t i) {
  return static_cast<const Array&>(a).Value(i);
}

// Row i of `a` (any type check_type accepts) as JSON.
nlohmann::json value(const arrow::Array& a, int64_t i) {
  if (a.IsNull(i)) return nullptr;
  switch (a.type_id()) {
    case Type::BOOL: return num<arrow::BooleanArray>(a, i);
    case Type::STRING: return std::string(static_cast<const arrow::StringArray&>(a).GetView(i));
    case Type::LARGE_STRING: return std::string(static_cast<const arrow::LargeStringArray&>(a).GetView(i));
    case Type::STRING_VIEW: return std::string(static_cast<const arrow::StringViewArray&>(a).GetView(i));
    case Type::INT8: return num<arrow::Int8Array>(a, i);
    case Type::INT16: return num<arrow::Int16Array>(a, i);
    case Type::INT32: return num<arrow::Int32Array>(a, i);
    case Type::INT64: return num<arrow::Int64Array>(a, i);
    case Type::UINT8: return num<arrow::UInt8Array>(a, i);
    case Type::UINT16: return num<arrow::UInt16Array>(a, i);
    case Type::UINT32: return num<arrow::UInt32Array>(a, i);
    case Type::UINT64: return num<arrow::UInt64Array>(a, i);
    case Type::FLOAT: return float_value(num<arrow::FloatArray>(a, i));
    case Type::DOUBLE: return num<arrow::DoubleArray>(a, i);
    case Type::STRUCT: return struct_value(a, i);
    case Type::LIST: return list_value<arrow::ListArray>(a, i);
    case Type::LARGE_LIST: return list_value<arrow::LargeListArray>(a, i);
    case Type::FIXED_SIZE_LIST: return list_value<arrow::FixedSizeListArray>(a, i);
    case Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(a);
      return value(*d.dictionary(), d.GetValueIndex(i));
    }
    default: return nullptr;  // Type::NA; check_type refused every other type before any row was read
  }
}

// Arrow's error for `file` as a DataError: a truncated or corrupt file, or one that is not parquet.
[[noreturn]] void fail(const std::string& file, const arrow::Status& st) {
  throw DataError("cannot read parquet file '" + file + "': " + st.ToString());
}

template <class T>
T ok_or_fail(arrow::Result<T> r, const std::string& file) {
  if (!r.ok()) fail(file, r.status());
  return std::move(r).ValueUnsafe();
}

// Rows decoded at a time: Arrow holds one batch's columns (~0.5 KB a GSM8K row: ~4 MB), not a whole row group's.
constexpr int64_t kBatchRows = 8192;

// Arrow's memory for pages and batches comes from malloc (the system pool), not the wheel's default mimalloc pool,
// which held ~35 MB more at the peak of 100k rows and kept it after the read (docs/performance.md).
arrow::MemoryPool* pool() { return arrow::system_memory_pool(); }

void read_file(const std::string& file, const std::function<void(const ParquetRow&)>& on_row) {
  auto in = arrow::io::ReadableFile::Open(file, pool());
  if (!in.ok()) throw IoError("cannot read dataset '" + file + "': " + in.status().message());
  parquet::arrow::FileReaderBuilder builder;
  if (auto st = builder.Open(*in, parquet::ReaderProperties(pool())); !st.ok()) fail(file, st);
  parquet::ArrowReaderProperties props;
  props.set_batch_size(kBatchRows);
  auto reader = ok_or_fail(builder.memory_pool(pool())->properties(props)->Build(), file);
  std::shared_ptr<arrow::Schema> schema;
  if (auto st = reader->GetSchema(&schema); !st.ok()) fail(file, st);
  for (const auto& f : schema->fields()) check_type(*f->type(), file, f->name());
  auto batches = ok_or_fail(reader->GetRecordBatchReader(), file);
  int64_t n = 0;
  ParquetRow out;
  while (true) {
    auto batch = ok_or_fail(batches->Next(), file);
    if (!batch) break;
    for (int64_t r = 0; r < batch->num_rows(); ++r) {
      out.where = file + ":row " + std::to_string(++n);
      out.row = nlohmann::json::object();
      for (int c = 0; c < batch->num_columns(); ++c) out.row[batch->column_name(c)] = value(*batch->column(c), r);
      try {
        out.text = out.row.dump();
      } catch (const nlohmann::json::type_error& e) {  // Arrow's reader does not validate strings' UTF-8
        throw DataError(out.where + ": a string is not valid UTF-8 (" + e.what() + ")");
      }
      on_row(out);
    }
  }
}

}  // namespace

void for_each_parquet_row(const std::string& path, const std::function<void(const ParquetRow&)>& on_row) {
  for (const auto& file : parquet_files(path)) {
    try {
      read_file(file, on_row);
    } catch (const parquet::ParquetException& e) {  // the reader's own exceptions, should one escape its Status
      throw DataError("cannot read parquet file '" + file + "': " + e.what());
    }
  }
}

std::vector<ParquetRow> read_parquet_rows(const std::string& path) {
  std::vector<ParquetRow> rows;
  for_each_parquet_row(path, [&](const ParquetRow& r) { rows.push_back(r); });
  return rows;
}

int64_t parquet_peak_pool_bytes() { return pool()->max_memory(); }

}  // namespace gspo::data
