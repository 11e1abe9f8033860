#include "gspo/cli/run_read.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/train/metrics/metrics.h"

namespace gspo::cli {
namespace fs = std::filesystem;
namespace {

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

int64_t step_of_file(const std::string& name) {  // step_00000050.jsonl -> 50; -1 for other names
  if (name.rfind("step_", 0) != 0 || name.size() < 12 || name.substr(name.size() - 6) != ".jsonl") return -1;
  const std::string digits = name.substr(5, name.size() - 11);
  if (digits.empty() || digits.size() > 15 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

// RUN/config.yaml, else the newest checkpoint's config.yaml (a run killed before writing its own copy).
void read_config(RunRead& r) {
  if (core::exists(r.dir + "/config.yaml")) {
    r.config_from = r.dir + "/config.yaml";
  } else {
    const std::string ck = r.dir + "/checkpoints";
    if (fs::is_directory(ck)) {
      auto names = core::list_dir(ck);
      for (auto it = names.rbegin(); it != names.rend(); ++it)
        if (core::exists(ck + "/" + *it + "/config.yaml")) {
          r.config_from = ck + "/" + *it + "/config.yaml";
          break;
        }
    }
  }
  if (r.config_from.empty()) {
    r.notes.push_back(r.dir + ": no config.yaml (nor one in a checkpoint): the report has no config");
    return;
  }
  r.config_yaml = core::read_text(r.config_from);
}

void read_rollout_names(RunRead& r) {
  const std::string d = r.dir + "/rollouts";
  if (!fs::is_directory(d)) return;
  for (const auto& name : core::list_dir(d)) {
    const int64_t step = step_of_file(name);
    if (step >= 0) r.rollout_files[step] = d + "/" + name;
    else if (name.find(".tmp") == std::string::npos) r.notes.push_back(d + "/" + name + ": not a step file, skipped");
  }
}

void flatten(const std::string& key, const nlohmann::json& v, std::map<std::string, double>& out) {
  if (v.is_number()) {
    out[key] = v.get<double>();
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].is_number()) out[key + "/" + std::to_string(i)] = v[i].get<double>();
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it->is_number()) out[key + "/" + it.key()] = it->get<double>();
  }
}

}  // namespace

std::vector<nlohmann::json> read_jsonl(const std::string& path, std::vector<std::string>& notes) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const bool last_unended = end == std::string::npos;
    const std::string line = text.substr(pos, last_unended ? std::string::npos : end - pos);
    pos = last_unended ? text.size() : end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    const std::string where = path + " line " + std::to_string(line_no) + ": ";
    if (j.is_discarded()) {
      notes.push_back(where + (last_unended ? "cut off (a run killed while writing it?), skipped"
                                            : "not JSON, skipped: " + clip(line, 60)));
    } else if (!j.is_object()) {
      notes.push_back(where + "not a JSON object, skipped: " + clip(line, 60));
    } else {
      out.push_back(std::move(j));
    }
  }
  return out;
}

std::vector<nlohmann::json> read_rollouts(const std::string& path, std::vector<std::string>& notes) {
  std::vector<nlohmann::json> rows;
  int64_t n = 0;
  for (auto& j : read_jsonl(path, notes)) {
    ++n;
    if (j.contains("group") && j["group"].is_number_integer() && j.contains("response") && j["response"].is_string())
      rows.push_back(std::move(j));
    else
      notes.push_back(path + " object " + std::to_string(n) + ": no integer \"group\" or string \"response\", skipped");
  }
  return rows;
}

RunRead read_run(const std::string& dir) {
  if (!fs::is_directory(dir)) throw IoError("'" + dir + "' is not a run directory (it does not exist or is a file)");
  RunRead r;
  r.dir = dir;
  r.name = fs::path(dir).lexically_normal().filename().string();
  if (r.name.empty() || r.name == ".") r.name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  const std::string metrics = dir + "/metrics.jsonl";
  if (!core::exists(metrics)) r.notes.push_back(dir + ": no metrics.jsonl (the run wrote no step yet): no curves");
  int64_t n = 0;
  for (auto& j : read_jsonl(metrics, r.notes)) {
    ++n;
    if (j.contains("step") && j["step"].is_number_integer()) r.metrics.push_back(std::move(j));
    else r.notes.push_back(metrics + " object " + std::to_string(n) + ": no integer \"step\", skipped");
  }
  for (auto& j : read_jsonl(dir + "/validation.jsonl", r.notes)) r.validation.push_back(std::move(j));
  read_config(r);
  read_rollout_names(r);
  return r;
}

std::map<std::string, double> numeric_fields(const nlohmann::json& line) {
  std::map<std::string, double> out;
  for (auto it = line.begin(); it != line.end(); ++it) flatten(it.key(), *it, out);
  return out;
}

std::vector<std::string> missing_always_metrics(const RunRead& run) {
  std::vector<std::string> missing;
  if (run.metrics.empty()) return missing;
  const auto schema = nlohmann::json::parse(train::metrics_schema_json());
  for (const auto& row : schema) {
    if (row.value("shown", "") != "always") continue;
    const std::string name = row.value("name", "");
    const bool seen = std::any_of(run.metrics.begin(), run.metrics.end(),
                                  [&](const nlohmann::json& j) { return j.contains(name); });
    if (!seen) missing.push_back(name);
  }
  return missing;
}

}  // namespace gspo::cli
