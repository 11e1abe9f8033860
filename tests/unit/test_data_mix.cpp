// data.mix (#66 item 3): several datasets mixed by weight. The cursor's stated rule (data/cursor.h: Tijdeman's
// sequence, every dataset within floor/ceil of n * w after n draws, each dataset in its own epoch order) checked
// against counts taken from the drawn indices themselves; loading with per-dataset keys; config errors; a training
// run whose steps hold the mix's shares, and its exact resume.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "gspo/cli/train_job.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/cursor.h"
#include "gspo/data/dataset.h"
#include "gspo/data/rng.h"
#include "helpers.h"

using namespace gspo;
using test::config_error_of;

namespace {

// Which dataset global index `i` belongs to, from the sizes alone.
size_t owner(const std::vector<int64_t>& sizes, int64_t i) {
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (i < sizes[d]) return d;
    i -= sizes[d];
  }
  FAIL("index past the last dataset");
  return sizes.size();
}

std::string write_rows(const std::string& name, const std::string& key, const std::vector<std::string>& prompts) {
  const std::string path = std::string(GSPO_TEST_MODELS) + "/" + name;
  std::ofstream f(path);
  for (const auto& p : prompts) f << nlohmann::json{{key, p}, {"answer", "0"}}.dump() << "\n";
  return path;
}

}  // namespace

TEST_CASE("one dataset: the cursor draws the same permutations as before the mix existed", "[data][mix]") {
  // The reference: epoch e is permutation(size, seed * 1000003 + e), as data::Cursor has drawn it since resume existed.
  data::Cursor c(7, true, 9);
  std::vector<int64_t> want;
  for (uint64_t e = 0; e < 3; ++e) {
    const auto p = data::permutation(7, 9ULL * 1000003ULL + e);
    want.insert(want.end(), p.begin(), p.end());
  }
  CHECK(c.next(21) == want);
  data::Cursor d(7, false, 9);
  CHECK(d.next(9) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 0, 1});
  // The saved state of a finished epoch stays (epoch, size) until the next row is drawn, as checkpoints hold it.
  data::Cursor e(7, true, 9);
  e.next(7);
  CHECK(e.epoch() == 0);
  CHECK(e.position() == 7);
  e.next(1);
  CHECK(e.epoch() == 1);
  CHECK(e.position() == 1);
}

TEST_CASE("a mix gives every dataset floor or ceil of n * weight after every n draws", "[data][mix]") {
  std::mt19937_64 gen(5);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t k = 2 + trial % 5;
    std::vector<double> w(k);
    std::vector<int64_t> sizes(k);
    double sum = 0;
    for (size_t i = 0; i < k; ++i) {
      w[i] = std::pow(std::uniform_real_distribution<double>(0.05, 1.0)(gen), 3);
      sum += w[i];
      sizes[i] = 1 + static_cast<int64_t>(gen() % 30);
    }
    for (auto& x : w) x /= sum;
    data::Cursor c(sizes, w, true, 100 + trial);
    std::vector<int64_t> counts(k, 0);
    const double bound = 1.0 - 1.0 / static_cast<double>(2 * k - 2) + 1e-9;
    double worst = 0;
    for (int64_t n = 1; n <= 1500; ++n) {
      ++counts[owner(sizes, c.next(1)[0])];
      for (size_t i = 0; i < k; ++i) worst = std::max(worst, std::abs(static_cast<double>(counts[i]) - n * w[i]));
    }
    INFO("trial " << trial << ", " << k << " datasets");
    CHECK(worst <= bound);
    CHECK(c.taken() == counts);
  }
}

TEST_CASE("a mix takes each dataset's rows in its own epochs: every full pass over a dataset is a permutation",
          "[data][mix]") {
  const std::vector<int64_t> sizes{5, 40, 3};
  data::Cursor c(sizes, {0.5, 0.3, 0.2}, true, 11);
  std::vector<std::vector<int64_t>> per(3);
  for (auto i : c.next(400)) per[owner(sizes, i)].push_back(i);
  int64_t offset = 0;
  for (size_t d = 0; d < 3; ++d) {
    INFO("dataset " << d);
    const auto& seq = per[d];
    REQUIRE(seq.size() >= static_cast<size_t>(sizes[d]));
    std::vector<std::vector<int64_t>> epochs;
    for (size_t at = 0; at + sizes[d] <= seq.size(); at += sizes[d]) {
      std::vector<int64_t> e(seq.begin() + at, seq.begin() + at + sizes[d]);
      epochs.push_back(e);
      std::sort(e.begin(), e.end());
      for (int64_t j = 0; j < sizes[d]; ++j) CHECK(e[j] == offset + j);
    }
    if (epochs.size() >= 2) CHECK(epochs[0] != epochs[1]);  // reshuffled per epoch (3! = 6 orders: seed-checked)
    offset += sizes[d];
  }
  // The small set with the large weight repeats: 200 of 400 draws from 5 rows.
  CHECK(per[0].size() == 200);
  CHECK(per[1].size() == 120);
  CHECK(per[2].size() == 80);
}

TEST_CASE("a mix restores from its saved epoch and position to the same future", "[data][mix]") {
  const std::vector<int64_t> sizes{6, 9, 4};
  const std::vector<double> w{0.2, 0.5, 0.3};
  data::Cursor d(sizes, w, true, 3);  // restored forward and back, as a rollout rank's cursor is every batch
  for (int64_t drawn : {37, 0, 100, 1, 18, 19, 5}) {
    data::Cursor c(sizes, w, true, 3);
    c.next(drawn);
    const auto e = c.epoch(), p = c.position();
    const auto rest = c.next(60);
    d.restore(e, p);
    INFO("after " << drawn << " draws (epoch " << e << ", position " << p << ")");
    CHECK(d.next(60) == rest);
  }
  data::Cursor c(sizes, w, true, 3);
  CHECK_THROWS_AS(c.restore(0, 20), DataError);  // past the mix's 19 rows
  CHECK_THROWS_WITH(data::Cursor(sizes, {0.2, 0.5, 0.2}, true, 3), Catch::Contains("sum to 0.9"));
  CHECK_THROWS_WITH(data::Cursor({6, 0}, {0.5, 0.5}, true, 3), Catch::Contains("dataset 1 of the mix has no examples"));
}

TEST_CASE("data.mix loads each dataset with its own keys, in order, and names a dataset left empty", "[data][mix]") {
  const auto a = write_rows("mix_a.jsonl", "question", {"q1", "q2", "q3"});
  const auto b = write_rows("mix_b.jsonl", "problem", {"p1", "p2"});
  auto cfg = config::load_text("data:\n  task: jsonl\n  mix:\n    - {path: " + a + ", weight: 0.25, prompt_key: question}\n"
                               "    - {path: " + b + ", weight: 0.75}\n  prompt_key: problem\n", "run.yaml");
  const auto rows = data::load_dataset(cfg.data);
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].prompt == "q1");
  CHECK(rows[2].dataset == 0);
  CHECK(rows[3].prompt == "p1");
  CHECK(rows[3].id == b + ":1");
  CHECK(rows[4].dataset == 1);
  auto cursor = data::make_cursor(cfg.data, rows);
  const auto first = cursor.next(4);  // 1 of a, 3 of b
  CHECK(std::count_if(first.begin(), first.end(), [](int64_t i) { return i < 3; }) == 1);
  CHECK(data::describe_mix(cfg.data, rows) ==
        "data.mix: '" + a + "' (3 rows) at weight 0.25, '" + b + "' (2 rows) at weight 0.75");
  // Every row of b dropped (too long for the rollout, say): the mix cannot keep its weights.
  const std::vector<data::Example> only_a(rows.begin(), rows.begin() + 3);
  CHECK_THROWS_WITH(data::make_cursor(cfg.data, only_a), Catch::Contains("data.mix[1] ('" + b + "'): no prompt is left"));
  // A dataset with no rows at all.
  const auto empty = write_rows("mix_empty.jsonl", "problem", {});
  auto cfg2 = config::load_text("data:\n  task: jsonl\n  mix:\n    - {path: " + a + ", weight: 0.5, prompt_key: question}\n"
                                "    - {path: " + empty + ", weight: 0.5}\n", "run.yaml");
  CHECK_THROWS_WITH(data::load_dataset(cfg2.data), Catch::Contains("data.mix[1] ('" + empty + "') has no examples"));
}

TEST_CASE("data.mix config errors name the key and the line", "[data][mix][config]") {
  const std::string head = "data:\n  task: jsonl\n  mix:\n";
  CHECK_THAT(config_error_of(head + "    - {path: a.jsonl, weight: 0.5}\n    - {path: b.jsonl, weight: 0.4}\n"),
             Catch::Contains("run.yaml:3: the weights of data.mix must sum to 1; they sum to 0.9 (0.5 + 0.4)"));
  CHECK_THAT(config_error_of(head + "    - {path: a.jsonl, weight: 1}\n  path: c.jsonl\n"),
             Catch::Contains("data.mix and data.path (run.yaml:5) are both set"));
  CHECK_THAT(config_error_of(head + "    - {path: a.jsonl}\n"), Catch::Contains("data.mix[0].weight is missing"));
  CHECK_THAT(config_error_of(head + "    - {path: a.jsonl, weight: 0}\n    - {path: b.jsonl, weight: 1}\n"),
             Catch::Contains("data.mix[0].weight must be"));
  CHECK_THAT(config_error_of(head + "    - {weight: 1}\n"), Catch::Contains("data.mix[0].path must name a dataset"));
  CHECK_THAT(config_error_of("data:\n  mix: [{path: a.jsonl, weight: 1}]\n"),
             Catch::Contains("data.mix mixes datasets read from files: it needs data.task: jsonl"));
  CHECK_THAT(config_error_of(head + "    - {path: a.jsonl, weight: 1, prompt: x}\n"),
             Catch::Contains("unknown key 'data.mix[0].prompt'; did you mean 'data.mix[0].prompt_key'?"));
  CHECK_THAT(config_error_of("data:\n  task: jsonl\n"), Catch::Contains("run.yaml:2: data.path must name a dataset"));
  // --set takes the list as YAML.
  CHECK(config_error_of("data:\n  task: jsonl\n", {"data.mix=[{path: a.jsonl, weight: 0.5}, {path: b.jsonl, weight: 0.5}]"}) ==
        "<no error>");
}

TEST_CASE("training on a mix: every step holds the mix's shares, and a resume continues the same draws",
          "[data][mix][train]") {
  // Two sets told apart by their operator: 3 of every 4 prompts from the '+' set, 1 from the '*' set.
  const auto plus = write_rows("mix_plus.jsonl", "prompt", {"1+1=", "1+2=", "2+2=", "2+1=", "0+1="});
  const auto times = write_rows("mix_times.jsonl", "prompt", {"1*1=", "2*2=", "2*1="});
  auto cfg_of = [&](const std::string& out, const std::string& steps) {
    return config::load_text("model: {path: " + test::model_path("tiny_prior.pt") + "}\n"
                             "data:\n  task: jsonl\n  mix:\n    - {path: " + plus + ", weight: 0.75}\n"
                             "    - {path: " + times + ", weight: 0.25}\n"
                             "rollout: {prompts_per_step: 4, group_size: 2, max_new_tokens: 2}\n"
                             "algorithm: {num_minibatches: 1}\nreward: {kind: exact}\n"
                             "train: {max_steps: " + steps + ", output_dir: " + out + "}\n"
                             "checkpoint: {every: 2}\nlogging: {progress: false, rollouts_every: 1, rollouts_rows: 8}\n",
                             "mix.yaml");
  };
  const auto one = test::fresh_dir("mix_one"), two = test::fresh_dir("mix_two");
  auto prompts_of = [](const std::string& run, int step) {
    const std::string n = std::to_string(step);
    std::ifstream f(run + "/rollouts/step_" + std::string(8 - n.size(), '0') + n + ".jsonl");
    REQUIRE(f.good());
    std::vector<std::string> out;
    for (std::string line; std::getline(f, line);) out.push_back(nlohmann::json::parse(line)["prompt"].get<std::string>());
    return out;
  };
  cli::TrainJob(cfg_of(one, "4"), "").run();
  for (int step = 1; step <= 4; ++step) {
    const auto prompts = prompts_of(one, step);
    INFO("step " << step);
    REQUIRE(prompts.size() == 8);
    CHECK(std::count_if(prompts.begin(), prompts.end(), [](const std::string& p) { return p.find('*') != std::string::npos; }) ==
          2);  // 1 prompt x group 2
  }
  cli::TrainJob(cfg_of(two, "2"), "").run();
  cli::TrainJob(cfg_of(two, "4"), "auto").run();
  for (int step = 3; step <= 4; ++step) {
    INFO("step " << step);
    CHECK(prompts_of(two, step) == prompts_of(one, step));
  }
  const auto a = test::read_metrics(one), b = test::read_metrics(two);
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 4);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(a[i].dump() == b[i].dump());  // one process, same shapes and threads: bitwise, as the arithmetic resume test
  }
}
