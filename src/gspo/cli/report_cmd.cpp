#include "gspo/cli/report_cmd.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "gspo/cli/report_assets.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/train/metrics/metrics.h"

namespace gspo::cli {
namespace {

using Json = nlohmann::json;
constexpr double kMiB = 1024.0 * 1024.0;

// 6 significant digits: the page is read by people and plots (a 1,000-step run stays small); non-finite -> null.
Json short_num(double v) {
  if (!std::isfinite(v)) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A script's text made safe inside <script>: "</script" cannot occur in it (plotly.js holds none; kept as a guard).
std::string script_text(std::string_view js) {
  std::string s(js);
  for (size_t p = 0; (p = s.find("</script", p)) != std::string::npos; p += 2) s.replace(p, 2, "<\\/");
  return s;
}

// Every numeric field of every line as columns over the run's steps (null where a line lacks it).
Json run_series(const RunRead& r) {
  std::vector<std::map<std::string, double>> rows;
  std::set<std::string> keys;
  Json steps = Json::array();
  for (const auto& line : r.metrics) {
    rows.push_back(numeric_fields(line));
    for (const auto& kv : rows.back()) keys.insert(kv.first);
    steps.push_back(line["step"]);
  }
  keys.erase("step");
  Json series = Json::object();
  for (const auto& k : keys) {
    Json col = Json::array();
    for (const auto& row : rows) {
      const auto it = row.find(k);
      col.push_back(it == row.end() ? Json(nullptr) : short_num(it->second));
    }
    series[k] = std::move(col);
  }
  return {{"steps", steps}, {"series", series}};
}

// The mean of `key` over the first (or last) tenth of the lines that hold it; NaN when none do.
double tenth_mean(const RunRead& r, const std::string& key, bool last) {
  std::vector<double> v;
  for (const auto& line : r.metrics)
    if (line.contains(key) && line[key].is_number()) v.push_back(line[key].get<double>());
  if (v.empty()) return std::nan("");
  const size_t n = std::max<size_t>(1, v.size() / 10);
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += last ? v[v.size() - 1 - i] : v[i];
  return s / static_cast<double>(n);
}

std::string fmt(double v, const char* f = "%.3f") {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The end-of-run summary as the trainer prints it, from the lines: [label, value] rows.
Json run_summary(const RunRead& r) {
  Json rows = Json::array();
  const auto add = [&](const std::string& label, const std::string& value) { rows.push_back({label, value}); };
  add("directory", r.dir);
  if (r.metrics.empty()) {
    add("steps", "none written");
  } else {
    add("steps", std::to_string(r.metrics.front()["step"].get<int64_t>()) + " - " +
                     std::to_string(r.metrics.back()["step"].get<int64_t>()) + " (" +
                     std::to_string(r.metrics.size()) + " lines)");
    for (const char* k : {"reward_mean", "accuracy", "response_len_mean", "entropy"})
      add(std::string(k) + " (first vs last 10%)", fmt(tenth_mean(r, k, false)) + " -> " + fmt(tenth_mean(r, k, true)));
    double seconds = 0, tokens = 0;
    for (const auto& line : r.metrics) {  // numeric_fields: a damaged line's field of another type is passed over
      const auto f = numeric_fields(line);
      seconds += f.count("time_step_s") ? f.at("time_step_s") : 0.0;
      tokens += f.count("sample_tokens") ? f.at("sample_tokens") : 0.0;
    }
    add("wall time of the steps", fmt(seconds, "%.1f s"));
    add("tokens sampled", fmt(tokens, "%.0f"));
    if (r.metrics.back().contains("world_size")) add("world size", r.metrics.back()["world_size"].dump());
  }
  add("validations", std::to_string(r.validation.size()));
  add("rollout steps written", std::to_string(r.rollout_files.size()));
  add("config", r.config_from.empty() ? "none found" : r.config_from);
  return rows;
}

// A rollout row with its per-token arrays cut to `max_tokens` ("trimmed_tokens" says how many there were), without the
// token ids (the page shows text; ids would double its size).
Json trim_row(Json row, int64_t max_tokens) {
  row.erase("prompt_ids");
  row.erase("response_ids");
  int64_t longest = 0;
  for (auto it = row.begin(); it != row.end(); ++it)
    if (it->is_array() && static_cast<int64_t>(it->size()) > max_tokens && it.key() != "components") {
      longest = std::max<int64_t>(longest, static_cast<int64_t>(it->size()));
      it->erase(it->begin() + max_tokens, it->end());
    }
  if (longest > 0) row["trimmed_tokens"] = longest;
  return row;
}

// Per run, {step: rows}, within limits.rollout_mb over all runs: when the rows are larger, every k-th step file of
// each run is kept (its first and last always), the others named in `notes`.
std::vector<Json> rollouts_json(const std::vector<RunRead>& runs, const ReportLimits& limits,
                                std::vector<std::vector<std::string>>& run_notes, std::vector<std::string>& notes) {
  std::vector<std::vector<std::pair<int64_t, Json>>> steps(runs.size());
  double total = 0;
  for (size_t i = 0; i < runs.size(); ++i)
    for (const auto& [step, path] : runs[i].rollout_files) {
      Json rows = Json::array();
      for (auto& row : read_rollouts(path, run_notes[i])) rows.push_back(trim_row(std::move(row), limits.max_tokens));
      total += static_cast<double>(rows.dump(-1, ' ', false, Json::error_handler_t::replace).size());
      steps[i].emplace_back(step, std::move(rows));
    }
  const int64_t stride = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(total / (limits.rollout_mb * kMiB))));
  std::vector<Json> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    Json by_step = Json::object();
    std::vector<int64_t> dropped;
    for (size_t k = 0; k < steps[i].size(); ++k) {
      if (k % stride == 0 || k + 1 == steps[i].size()) by_step[std::to_string(steps[i][k].first)] = steps[i][k].second;
      else dropped.push_back(steps[i][k].first);
    }
    if (!dropped.empty())
      notes.push_back(runs[i].name + ": " + std::to_string(dropped.size()) + " of " + std::to_string(steps[i].size()) +
                      " rollout steps left out to keep the page under --rollout-mb " + fmt(limits.rollout_mb, "%g") +
                      " (" + fmt(total / kMiB, "%.1f") + " MB of rows; 1 step in " + std::to_string(stride) + " kept)");
    out.push_back(std::move(by_step));
  }
  return out;
}

Json metric_docs() {
  Json docs = Json::object();
  for (const auto& row : Json::parse(train::metrics_schema_json())) docs[row.value("name", "")] = row.value("doc", "");
  return docs;
}

Json page_data(const std::vector<RunRead>& runs, const ReportLimits& limits, std::vector<std::string>& notes) {
  std::vector<std::vector<std::string>> run_notes;
  for (const auto& r : runs) {
    run_notes.push_back(r.notes);
    const auto missing = missing_always_metrics(r);
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      run_notes.back().push_back(r.dir + "/metrics.jsonl: fields this gspo writes every step are absent (an older "
                                 "gspo?), their charts left out: " + list);
    }
  }
  auto rollouts = rollouts_json(runs, limits, run_notes, notes);
  Json jr = Json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    Json one = run_series(runs[i]);
    one["name"] = runs[i].name;
    one["dir"] = runs[i].dir;
    one["config"] = runs[i].config_yaml;
    one["summary"] = run_summary(runs[i]);
    one["notes"] = run_notes[i];
    one["validation"] = runs[i].validation;
    one["rollouts"] = std::move(rollouts[i]);
    jr.push_back(std::move(one));
    for (const auto& n : run_notes[i]) notes.push_back(n);
  }
  return {{"runs", jr}, {"docs", metric_docs()}, {"max_tokens", limits.max_tokens}};
}

constexpr const char* kStyle = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:0 16px;color:#222}
h1{font-size:20px;margin:14px 0 4px}h2{font-size:16px;margin:18px 0 6px;border-bottom:1px solid #ddd}
#controls{position:sticky;top:0;background:#fff;z-index:5;padding:6px 0;border-bottom:1px solid #eee;display:flex;
gap:18px;flex-wrap:wrap;align-items:center}#controls input[type=range]{width:260px;vertical-align:middle}
#charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(430px,1fr));gap:8px}.chart{height:290px}
#notes li{color:#8a4b00}#at-step table,.summary{border-collapse:collapse;font-size:12px}
#at-step td,#at-step th,.summary td{border:1px solid #ddd;padding:2px 6px}
#group{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:8px}
.resp{border:1px solid #ccc;border-radius:4px;padding:6px;font-size:12px;overflow-wrap:anywhere}
.resp.best{border-color:#2a8}.resp .head{font-family:monospace;margin-bottom:4px;color:#444}
.tokens{font-family:monospace;white-space:pre-wrap;line-height:1.6}.tok{border-radius:2px}
.prompt{font-family:monospace;white-space:pre-wrap;background:#f6f6f6;padding:6px;max-height:200px;overflow:auto}
pre.config{max-height:400px;overflow:auto;background:#f6f6f6;padding:6px;font-size:12px}
.pos{color:#080}.neg{color:#b00}.muted{color:#888}
)css";

}  // namespace

std::string script_safe_json(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string report_html(const std::vector<RunRead>& runs, const ReportLimits& limits, std::vector<std::string>& notes) {
  if (plotly_js().empty())
    throw IoError("this gspo was built without plotly.js (the pinned environment had no plotly package): run "
                  "scripts/setup.sh, then scripts/build.sh, or configure with -DGSPO_PLOTLY_JS=/path/to/plotly.min.js");
  const Json data = page_data(runs, limits, notes);
  std::string names;
  for (const auto& r : runs) names += (names.empty() ? "" : ", ") + r.name;
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>gspo report: " +
                     html_escape(names) + "</title>\n<style>" + kStyle + "</style>\n<script>" + script_text(plotly_js()) +
                     "</script>\n</head><body>\n<h1>gspo report: <span id=\"run-names\">" + html_escape(names) +
                     "</span></h1>\n<noscript>This report draws its charts with JavaScript; allow it for this file."
                     "</noscript>\n<div id=\"app\"></div>\n<script type=\"application/json\" id=\"gspo-data\">";
  html += script_safe_json(data.dump(-1, ' ', false, Json::error_handler_t::replace));
  html += "</script>\n<script>" + script_text(report_app_js()) + "</script>\n</body></html>\n";
  return html;
}

int report(const ReportArgs& a) {
  if (a.runs.empty()) throw ConfigError("gspo report needs at least one run directory");
  if (!(a.rollout_mb > 0)) throw ConfigError("--rollout-mb must be > 0 (got " + fmt(a.rollout_mb, "%g") + ")");
  std::vector<RunRead> runs;
  for (const auto& dir : a.runs) runs.push_back(read_run(dir));
  std::vector<std::string> notes;
  const std::string html = report_html(runs, {a.rollout_mb, a.max_tokens}, notes);
  const std::string out = a.out.empty() ? a.runs.front() + "/report.html" : a.out;
  const auto parent = std::filesystem::path(out).parent_path();
  if (!parent.empty()) core::ensure_dir(parent.string());
  for (const auto& n : notes) std::cerr << "report: " << n << "\n";
  core::atomic_write(out, html);
  size_t steps = 0, rollout_steps = 0;
  for (const auto& r : runs) {
    steps += r.metrics.size();
    rollout_steps += r.rollout_files.size();
  }
  std::cout << "wrote " << out << " (" << fmt(static_cast<double>(html.size()) / kMiB, "%.1f") << " MB: "
            << runs.size() << (runs.size() == 1 ? " run, " : " runs, ") << steps << " metrics lines, " << rollout_steps
            << " rollout steps" << (notes.empty() ? "" : ", " + std::to_string(notes.size()) + " notes") << ")\n"
            << "open it in a browser (no server needed): xdg-open " << out << "  (macOS: open " << out << ")\n";
  return 0;
}

}  // namespace gspo::cli
