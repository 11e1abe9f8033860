// gspo report's reader of run directories and gspo gate's bands (#67 items 2-4; docs/report.md): what a killed run,
// an older gspo, a damaged line or an empty directory leaves is named and the rest read; model text cannot end the
// page's data element; the bands and the verdict equal values computed here by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "gspo/cli/gate.h"
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

TEST_CASE("report_html: fields of another type than gspo writes are passed over, not fatal", "[report]") {
  const std::string dir = fresh_dir("report_types");
  core::ensure_dir(dir + "/rollouts");
  write(dir + "/metrics.jsonl", "{\"step\":1,\"time_step_s\":\"slow\",\"sample_tokens\":null,\"reward_mean\":[1]}\n"
                                "{\"step\":2,\"time_step_s\":2.5,\"world_size\":\"x\"}\n");
  write(dir + "/rollouts/step_00000001.jsonl", "{\"group\":0,\"response\":\"a\",\"logprobs\":\"bad\",\"prompt\":7}\n");
  write(dir + "/rollouts/step_99999999999999999999.jsonl", "");
  const auto r = cli::read_run(dir);
  CHECK(r.rollout_files.size() == 1);
  CHECK(has_note(r.notes, "step_99999999999999999999.jsonl: not a step file"));
  std::vector<std::string> notes;
  std::string html;
  REQUIRE_NOTHROW(html = cli::report_html({r}, {}, notes));
  CHECK(html.find("2.5 s") != std::string::npos);  // the summary's wall time: the string "slow" passed over
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

TEST_CASE("make_bands: three runs' window means, mean +- max(k * spread, floor, 10% of |mean|)", "[gate]") {
  // Windows of 2 steps. Window 1 (steps 1-2): run means 0.2, 0.4, 0.6 -> mean 0.4, s_b = 0.2; each run's lines lie
  // 0.1 either side of its mean -> s_w^2 = 3 * 0.02 / 3 = 0.02, m = 2. spread^2 = 0.04 * (1 + 1/3) + 0.02 / 2 = 0.19/3.
  const auto a = run_with("gate_a", "reward_mean", {0.1, 0.3, 0.5, 0.5});
  const auto b = run_with("gate_b", "reward_mean", {0.3, 0.5, 0.5, 0.5});
  const auto c = run_with("gate_c", "reward_mean", {0.5, 0.7, 0.5, 0.5});
  const auto bands = cli::make_bands({cli::read_run(a), cli::read_run(b), cli::read_run(c)},
                                     {"reward_mean", "kl"}, 2, 3.0);
  CHECK(bands.window == 2);
  REQUIRE(bands.metrics.size() == 1);
  CHECK(has_note(bands.notes, "kl: no baseline run wrote it"));
  const auto& w = bands.metrics[0].windows;
  REQUIRE(w.size() == 2);
  CHECK(w[0].from == 1);
  CHECK(w[0].to == 2);
  CHECK(w[0].mean == Approx(0.4));
  const double half = 3 * std::sqrt(0.19 / 3);  // 0.755 > floor 0.05 and 10% of 0.4
  CHECK(w[0].lo == Approx(0.4 - half));
  CHECK(w[0].hi == Approx(0.4 + half));
  // Window 2: every line 0.5, spread 0: the floor, max(0.05, 10% of 0.5) = 0.05.
  CHECK(w[1].lo == Approx(0.45));
  CHECK(w[1].hi == Approx(0.55));
  CHECK(w[1].runs == 3);
}

TEST_CASE("make_bands: one baseline run's spread is its lines' standard deviation over the root of their count",
          "[gate]") {
  const auto a = run_with("gate_one", "entropy", {1.0, 3.0});  // mean 2, s_w^2 = 2 (one degree of freedom), m = 2
  const auto bands = cli::make_bands({cli::read_run(a)}, {"entropy"}, 0, 2.0);
  CHECK(bands.window == 1);  // ceil(2 / 10)
  const auto b2 = cli::make_bands({cli::read_run(a)}, {"entropy"}, 2, 2.0);  // spread 1, half 2
  CHECK(b2.metrics[0].windows[0].lo == Approx(0.0));
  CHECK(b2.metrics[0].windows[0].hi == Approx(4.0));
}

TEST_CASE("check_run: names the metric and steps outside the band, and what it cannot compare", "[gate]") {
  const auto base = run_with("gate_base", "reward_mean", {0.5, 0.5, 0.5, 0.5});
  const auto bands = cli::make_bands({cli::read_run(base)}, {"reward_mean"}, 2, 3.0);  // [0.45, 0.55] each window
  const auto good = run_with("gate_good", "reward_mean", {0.48, 0.52, 0.5, 0.54});
  const auto v = cli::check_run(cli::read_run(good), bands);
  CHECK(v.passed());
  CHECK(v.windows_checked == 2);
  const auto bad = run_with("gate_bad", "reward_mean", {0.5, 0.5, 0.1});
  const auto f = cli::check_run(cli::read_run(bad), bands);
  CHECK_FALSE(f.passed());
  REQUIRE(f.failures.size() == 1);
  CHECK(f.failures[0].rfind("reward_mean at steps 3-4: 0.1 below the band [0.45, 0.55]", 0) == 0);
  const auto other = run_with("gate_other", "entropy", {1, 1, 1, 1});
  const auto o = cli::check_run(cli::read_run(other), bands);
  CHECK_FALSE(o.passed());  // nothing compared is not a pass
  CHECK(o.windows_checked == 0);
  CHECK(has_note(o.not_compared, "reward_mean: the run wrote no reward_mean (the baseline did): not compared"));
}

TEST_CASE("bands file: written and read back equal, a bad one names the file and the key", "[gate]") {
  const auto a = run_with("gate_json", "accuracy", {0.2, 0.4});
  const auto bands = cli::make_bands({cli::read_run(a)}, {"accuracy"}, 1, 3.0);
  const auto back = cli::bands_from_json(Json::parse(cli::bands_to_json(bands).dump()), "b.json");
  REQUIRE(back.metrics.size() == 1);
  CHECK(back.metrics[0].windows[1].mean == Approx(0.4));
  CHECK(back.window == 1);
  auto broken = Json::parse(cli::bands_to_json(bands).dump());
  broken["metrics"]["accuracy"]["windows"][1].erase("hi");
  CHECK_THROWS_WITH(cli::bands_from_json(broken, "b.json"),
                    Catch::Contains("b.json metrics.accuracy.windows[1]: missing \"hi\""));
  CHECK_THROWS_WITH(cli::bands_from_json(Json{{"x", 1}}, "c.json"), Catch::Contains("c.json: missing \"gspo_bands\""));
}
