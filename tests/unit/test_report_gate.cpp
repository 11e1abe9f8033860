// gspo report's reader of run directories (#67 items 2 and 4; docs/report.md): what a killed run, an older gspo, a
// damaged line or an empty directory leaves is named and the rest read; model text cannot end the page's data element.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "gspo/cli/report_cmd.h"
#include "gspo/cli/run_read.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "helpers.h"

using namespace gspo;
using gspo::test::fresh_dir;
using Json = nlohmann::json;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  for (const auto& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// A run directory whose metrics lines hold `metric` = values[i] at step i + 1.
std::string run_with(const std::string& name, const std::string& metric, const std::vector<double>& values) {
  const std::string dir = fresh_dir(name);
  core::ensure_dir(dir);
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += Json{{"step", static_cast<int64_t>(i + 1)}, {metric, values[i]}}.dump() + "\n";
  write(dir + "/metrics.jsonl", text);
  return dir;
}

}  // namespace

TEST_CASE("read_run: a killed run's cut-off last line, a damaged line and a non-object are named and skipped",
          "[report]") {
  const std::string dir = fresh_dir("report_damaged");
  core::ensure_dir(dir);
  write(dir + "/metrics.jsonl", "{\"step\":1,\"reward_mean\":0.5}\nnot json at all\n[1,2]\n{\"step\":2,\"reward_mean\":0.7}\n"
                                "{\"nostep\":true}\n{\"step\":3,\"reward_me");
  const auto r = cli::read_run(dir);
  REQUIRE(r.metrics.size() == 2);
  CHECK(r.metrics[1]["reward_mean"].get<double>() == 0.7);
  CHECK(has_note(r.notes, "metrics.jsonl line 2: not JSON, skipped: not json at all"));
  CHECK(has_note(r.notes, "metrics.jsonl line 3: not a JSON object"));
  CHECK(has_note(r.notes, "metrics.jsonl object 3: no integer \"step\""));
  CHECK(has_note(r.notes, "metrics.jsonl line 6: cut off (a run killed while writing it?)"));
  CHECK(has_note(r.notes, "no config.yaml"));
}

TEST_CASE("read_run: an empty directory reads as no lines with its notes, a missing one is an error", "[report]") {
  const std::string dir = fresh_dir("report_empty");
  core::ensure_dir(dir);
  const auto r = cli::read_run(dir);
  CHECK(r.metrics.empty());
  CHECK(r.rollout_files.empty());
  CHECK(has_note(r.notes, "no metrics.jsonl"));
  CHECK(cli::missing_always_metrics(r).empty());
  CHECK_THROWS_AS(cli::read_run(dir + "/nope"), IoError);
}

TEST_CASE("read_run: the config of the newest checkpoint when the run has none, rollout step files by step",
          "[report]") {
  const std::string dir = fresh_dir("report_ckpt");
  core::ensure_dir(dir + "/checkpoints/step_00000004");
  core::ensure_dir(dir + "/checkpoints/step_00000008");
  core::ensure_dir(dir + "/rollouts");
  write(dir + "/checkpoints/step_00000004/config.yaml", "old: 1\n");
  write(dir + "/checkpoints/step_00000008/config.yaml", "new: 1\n");
  write(dir + "/rollouts/step_00000010.jsonl", "{\"group\":0,\"response\":\"a\"}\n{\"group\":\"x\"}\n");
  write(dir + "/rollouts/notes.txt", "");
  const auto r = cli::read_run(dir);
  CHECK(r.config_yaml == "new: 1\n");
  REQUIRE(r.rollout_files.count(10) == 1);
  CHECK(has_note(r.notes, "notes.txt: not a step file"));
  std::vector<std::string> notes;
  CHECK(cli::read_rollouts(r.rollout_files.at(10), notes).size() == 1);
  CHECK(has_note(notes, "object 2: no integer \"group\""));
}

TEST_CASE("missing_always_metrics names the every-step fields an older gspo did not write", "[report]") {
  const std::string dir = run_with("report_old", "reward_mean", {0.1, 0.2});
  const auto missing = cli::missing_always_metrics(cli::read_run(dir));
  CHECK(std::find(missing.begin(), missing.end(), "entropy") != missing.end());
  CHECK(std::find(missing.begin(), missing.end(), "reward_mean") == missing.end());
  CHECK(std::find(missing.begin(), missing.end(), "kl") == missing.end());  // written only with kl_coef > 0
}

TEST_CASE("numeric_fields flattens lists and objects as TensorBoard names them", "[report]") {
  const auto f = cli::numeric_fields(Json::parse(R"({"step":3,"a":1.5,"l":[1,2],"o":{"x":4,"s":"t"},"b":true,"n":null})"));
  CHECK(f.size() == 5);
  CHECK(f.at("l/1") == 2);
  CHECK(f.at("o/x") == 4);
  CHECK(f.count("b") == 0);
}

TEST_CASE("script_safe_json: a model's </script> or <!-- cannot end the data element, and parses back equal",
          "[report]") {
  const Json j{{"response", "</script><script>alert(1)</script><!-- & <b>"}};
  const std::string s = cli::script_safe_json(j.dump());
  CHECK(s.find('<') == std::string::npos);
  CHECK(s.find('>') == std::string::npos);
  CHECK(s.find('&') == std::string::npos);
  CHECK(Json::parse(s) == j);
}

TEST_CASE("report_html: one page holding the runs' data, hostile rollout text only escaped", "[report]") {
  const std::string dir = run_with("report_page", "reward_mean", {0.25, 0.5});
  core::ensure_dir(dir + "/rollouts");
  write(dir + "/rollouts/step_00000002.jsonl",
        Json{{"group", 0}, {"row", 0}, {"prompt", "<b>p</b>"}, {"response", "</script><img src=x onerror=alert(1)>"},
             {"reward", 1}, {"logprobs", {-0.5}}}.dump() + "\n");
  std::vector<std::string> notes;
  const auto html = cli::report_html({cli::read_run(dir)}, {}, notes);
  CHECK(html.find("<img src=x") == std::string::npos);
  CHECK(html.find("\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e") != std::string::npos);
  CHECK(html.find("Plotly") != std::string::npos);  // plotly.js inlined
  CHECK(html.find("<script src=") == std::string::npos);  // nothing loaded from outside the file
  CHECK(has_note(notes, "absent (an older gspo?)"));
}

TEST_CASE("report_html: past --rollout-mb, every k-th rollout step is kept with the first and the last, and named",
          "[report]") {
  const std::string dir = run_with("report_thin", "reward_mean", {0.1});
  core::ensure_dir(dir + "/rollouts");
  const std::string row = Json{{"group", 0}, {"response", std::string(1000, 'x')}}.dump() + "\n";
  for (int s = 1; s <= 10; ++s) {
    char name[40];
    std::snprintf(name, sizeof name, "/rollouts/step_%08d.jsonl", s);
    write(dir + name, row);
  }
  std::vector<std::string> notes;
  const auto html = cli::report_html({cli::read_run(dir)}, {0.0035, 2048}, notes);  // ~10 KB of rows, 3.5 KB kept
  CHECK(has_note(notes, "6 of 10 rollout steps left out"));  // kept: 1, 4, 7 (every 3rd) and 10
  CHECK(has_note(notes, "1 step in 3 kept"));
}
