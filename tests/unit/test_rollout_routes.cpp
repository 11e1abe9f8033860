// Rollout Routing Replay (#70, algorithm.routing_replay rollout): the sampler records the experts every token ran
// through (prefill, decode, refills and compaction of a slot pool), laid out with the batch; the trainer's replay of
// them gives the sampler's log-probs back; what it changes in a run where the rollout runs in bfloat16 and training in
// float32; and what is refused.
#include <catch2/catch.hpp>

#include "gspo/cli/train_job.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler.h"
#include "gspo/rollout/slot_hook.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/routing.h"
#include "helpers.h"

using namespace gspo;

namespace {

const train::LogprobPass kLayers{true, false, true};

// Row `row`, once `at` tokens in, is paused and `tokens` appended to its response (a tool's output in miniature),
// then resumed at the next sync.
class Append : public rollout::SlotHook {
 public:
  Append(int64_t row, int64_t at, std::vector<int64_t> tokens) : row_(row), at_(at), tokens_(std::move(tokens)) {}
  void at_sync(rollout::SlotControl& c) override {
    for (int64_t s = 0; s < c.num_slots(); ++s) {
      if (c.row(s) != row_) continue;
      if (c.paused(s)) {
        c.resume(s);
      } else if (taken < 0 && c.step(s) >= at_) {
        c.pause(s);
        taken = c.append(s, tokens_);
      }
    }
  }
  int64_t taken = -1;

 private:
  int64_t row_, at_;
  std::vector<int64_t> tokens_;
};

const std::vector<std::vector<int64_t>> kPrompts{{5, 17, 33, 40, 41}, {7, 8}, {60, 61, 62, 63, 64, 65, 66, 67}};
const rollout::NoiseKey kKey{11, 0};

// Three prompts of different lengths, G = 2, sampled in a pool of 3 slots (refills, shared prefills, compaction);
// with a plan, its rows continued.
rollout::RolloutBatch sample_recorded(model::Policy& policy, bool record, rollout::SlotHook* hook = nullptr,
                                      const rollout::CallPlan* plan = nullptr) {
  const auto tok = tokenizer::from_spec(policy.tokenizer_json(), "qwen3_moe_tiny.pt");
  rollout::SamplingParams sp;
  sp.max_new_tokens = 10;
  sp.record_routes = record;
  sp.insert_capacity = hook ? 6 : 0;
  const int64_t columns = 8 + sp.max_new_tokens + sp.insert_capacity;
  const int64_t one = policy.init_cache(1, 1).nbytes(), two = policy.init_cache(1, 2).nbytes();
  sp.kv_cache_bytes = 3 * (one + (two - one) * (columns - 1));
  rollout::Sampler s(policy, *tok, sp);
  s.set_hook(hook);
  auto b = plan ? s.generate(kPrompts, 2, kKey, *plan) : s.generate(kPrompts, 2, kKey);
  REQUIRE(s.last_stats().slots == 3);
  return b;
}

// Row r of `b` as a partial rollout would carry it after `n` of its tokens (its routes: the prompt's and those tokens'
// but the last), or passed through whole (n < 0).
rollout::RowSoFar so_far(const rollout::RolloutBatch& b, int64_t r, int64_t n) {
  const auto& all = b.response_ids[r];
  const int64_t len = n < 0 ? static_cast<int64_t>(all.size()) : n;
  rollout::RowSoFar row{{all.begin(), all.begin() + len}, {}, n < 0 ? b.finish[r] : rollout::Finish::kCarried,
                        rollout::row_hash(kKey, r)};
  auto lp = b.behaviour_logprobs.accessor<float, 2>();
  for (int64_t t = 0; t < len; ++t) row.logprobs.push_back(lp[r][t]);
  const int64_t plen = static_cast<int64_t>(kPrompts[r / 2].size());
  if (len > 0) row.routes = b.routes[r].narrow(0, b.prompt_len - plen, plen + len - 1).clone();
  return row;
}

// The share of (token, MoE layer) pairs, over every token the rollout ran (each row's prompt and response but its
// last token), whose experts in `routes` differ from the trainer's own routing of the rows (route_experts: the
// per-layer pass as training runs it, in `trainer`).
double differing(model::Policy& trainer, const rollout::RolloutBatch& b, const at::Tensor& routes) {
  const int64_t P = b.prompt_len;
  const auto& moe = trainer.moe_layers();
  const auto own = train::route_experts(trainer, b.input_ids, b.attention_mask, P);
  const auto rec = train::rollout_record(routes, b.attention_mask, P, 0, moe, trainer.num_layers());
  const int64_t W = rec.experts[moe[0]].size(1);
  const auto col = torch::arange(W).unsqueeze(0);
  const auto ran = col < (b.attention_mask.sum(1, true) - 1);  // [n, W] right-aligned
  double differ = 0, pairs = 0;
  for (int64_t l : moe) {
    const auto a = std::get<0>(rec.experts[l].sort(-1)), o = std::get<0>(own.experts[l].sort(-1));
    differ += (a.ne(o).any(-1) & ran).sum().item<double>();
    pairs += ran.sum().item<double>();
  }
  return differ / pairs;
}

// The trainer's log-probs of the response tokens, replaying `routes` (undefined: its own routing).
at::Tensor trainer_logprobs(model::Policy& trainer, const rollout::RolloutBatch& b, const at::Tensor& routes) {
  train::RouteRecord rec;
  if (routes.defined())
    rec = train::rollout_record(routes, b.attention_mask, b.prompt_len, 0, trainer.moe_layers(), trainer.num_layers());
  return train::response_logprobs(trainer, b.input_ids, b.attention_mask, b.prompt_len, 1.0, train::Entropy::kSkip,
                                  1024, kLayers, {routes.defined() ? &rec : nullptr, nullptr})
      .logprobs;
}

double max_abs(const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask) {
  return ((a - b) * mask).abs().max().item<double>();
}

double mean_abs(const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask) {
  return (((a - b) * mask).abs().sum() / mask.sum()).item<double>();
}

config::Config run_cfg(const std::string& out, const std::string& model, std::vector<std::string> sets) {
  sets.insert(sets.begin(), {"model.path=" + test::model_path(model), "train.output_dir=" + out});
  return config::load_text(R"(
data: {task: arithmetic, max_operand: 3, num_prompts: 12}
rollout: {prompts_per_step: 4, group_size: 4, max_new_tokens: 6}
reward: {kind: regex, regex: "^[\\x00-\\x7f]"}
algorithm: {num_minibatches: 2, loss: grpo, routing_replay: rollout, mismatch_metrics: true}
optimizer: {lr: 3.0e-2}
train: {max_steps: 2}
checkpoint: {every: 0}
logging: {progress: false}
)", "test.yaml", sets);
}

}  // namespace

TEST_CASE("the rollout records the experts each token ran through, and replaying them gives its log-probs back",
          "[routing][moe][rollout]") {
  auto policy = model::Policy::load(test::model_path("qwen3_moe_tiny.pt"));
  REQUIRE(policy.can_record_routes());
  const auto plain = sample_recorded(policy, false);
  const auto b = sample_recorded(policy, true);
  // Recording runs the slot passes one layer at a time: the same samples, the same behaviour log-probs.
  CHECK(b.response_ids == plain.response_ids);
  CHECK(max_abs(b.behaviour_logprobs, plain.behaviour_logprobs, b.loss_mask) < 1e-5);
  CHECK_FALSE(plain.routes.defined());
  REQUIRE(b.routes.defined());
  const int64_t top_k = policy.moe_routing(policy.moe_layers()[0]).first;
  CHECK(b.routes.sizes() == at::IntArrayRef({b.num_rows(), b.input_ids.size(1), 2, top_k}));
  CHECK(b.routes.scalar_type() == at::kByte);  // (4 experts: one byte an expert)
  CHECK(b.routes.max().item<int64_t>() < 4);

  // Float32 both sides: the trainer routes as the rollout did (near-ties aside: none in this batch), and its
  // log-probs replaying the rollout's experts are the sampler's.
  const double diff = differing(policy, b, b.routes);
  INFO("differing (token, layer) pairs: " << diff);
  CHECK(diff == 0.0);
  const auto mask = b.loss_mask;
  CHECK(max_abs(trainer_logprobs(policy, b, b.routes), b.behaviour_logprobs, mask) < 1e-4);
  // The record is where the tokens are: one column off, most expert sets differ and the log-probs move.
  const auto shifted = b.routes.roll(1, 1);
  CHECK(differing(policy, b, shifted) > 0.2);
  CHECK(max_abs(trainer_logprobs(policy, b, shifted), b.behaviour_logprobs, mask) > 1e-2);
}

TEST_CASE("the experts of tokens a hook appends to a response are recorded where they sit", "[routing][moe][rollout]") {
  auto policy = model::Policy::load(test::model_path("qwen3_moe_tiny.pt"));
  Append hook(2, 3, {70, 71, 72, 73});
  const auto b = sample_recorded(policy, true, &hook);
  REQUIRE(hook.taken == 4);
  REQUIRE(b.response_lengths[2] > 3 + 4 + 1);  // (the row went on after the appended tokens)
  CHECK(differing(policy, b, b.routes) == 0.0);
  CHECK(max_abs(trainer_logprobs(policy, b, b.routes), b.behaviour_logprobs, b.loss_mask) < 1e-4);
}

TEST_CASE("a bfloat16 rollout's experts replayed in float32 training: the trainer routes every token as the rollout did",
          "[routing][moe][rollout]") {
  auto trainer = model::Policy::load(test::model_path("qwen3_moe_tiny.pt"));
  auto sampler = model::Policy::load(test::model_path("qwen3_moe_tiny.pt"));
  sampler.set_param_dtype(at::kBFloat16);
  const auto b = sample_recorded(sampler, true);
  const auto mask = b.loss_mask;
  const double own_diff = differing(trainer, b, b.routes);
  const auto own = trainer_logprobs(trainer, b, {}), replayed = trainer_logprobs(trainer, b, b.routes);
  const double own_gap = mean_abs(own, b.behaviour_logprobs, mask);
  const double replay_gap = mean_abs(replayed, b.behaviour_logprobs, mask);
  WARN("bf16 rollout vs float32 trainer: " << own_diff << " of (token, layer) pairs routed otherwise; mean "
       "|log pi_trainer - log pi_sampler| " << own_gap << " with its own routing, " << replay_gap
       << " replaying the rollout's (largest " << max_abs(own, b.behaviour_logprobs, mask) << ", "
       << max_abs(replayed, b.behaviour_logprobs, mask) << ")");
  CHECK(own_diff > 0);  // (bfloat16 moves some routes on this model and these prompts)
  CHECK(replay_gap < own_gap);
}

TEST_CASE("training with routing_replay rollout: a bf16 rollout, float32 updates, the routing gap measured",
          "[routing][moe][rollout][train]") {
  const auto dir = test::fresh_dir("rollout_routes_bf16");
  cli::TrainJob(run_cfg(dir, "qwen3_moe_tiny.pt", {"rollout.dtype=bfloat16"}), "").run();
  const auto m = test::read_metrics(dir);
  REQUIRE(m.size() == 2);
  for (const auto& line : m) {
    REQUIRE(line.contains("moe_rollout_route_diff_frac"));
    const double d = line["moe_rollout_route_diff_frac"];
    CHECK((d >= 0 && d <= 1));
    CHECK(std::isfinite(line["loss"].get<double>()));
  }
  // float32 both sides: the trainer's own routing at the step start is the rollout's.
  const auto same = test::fresh_dir("rollout_routes_f32");
  cli::TrainJob(run_cfg(same, "qwen3_moe_tiny.pt", {"train.max_steps=1"}), "").run();
  CHECK(test::read_metrics(same)[0]["moe_rollout_route_diff_frac"].get<double>() == 0.0);
  // Partial rollouts: rows carried into later steps keep their first part's routes (and a stop string ends rows
  // at different lengths, so some are carried). Step 1 trains rows one version sampled whole: no route differs.
  const auto part = test::fresh_dir("rollout_routes_partial");
  cli::TrainJob(run_cfg(part, "qwen3_moe_tiny.pt", {"train.max_steps=3", "async.partial_rollout=true",
                                                    "async.max_staleness=1", "rollout.max_new_tokens=12",
                                                    "rollout.stop=[\"a\", \"e\", \"1\", \" \"]"}), "").run();
  const auto pm = test::read_metrics(part);
  REQUIRE(pm.size() == 3);
  CHECK(pm[0]["moe_rollout_route_diff_frac"].get<double>() == 0.0);
  double spanned = 0;
  for (const auto& line : pm) {
    spanned += line.value("spanned_rows_frac", 0.0);
    CHECK(std::isfinite(line["loss"].get<double>()));
  }
  INFO("rows spanning versions: " << spanned);
  CHECK(spanned > 0);
}

TEST_CASE("routing_replay rollout is refused for models that cannot record, and a resume may not change the mode",
          "[routing][moe][rollout][config]") {
  auto refused = [](const std::string& model, std::vector<std::string> sets, const std::string& needle) {
    INFO(model << " " << needle);
    try {
      cli::TrainJob(run_cfg(test::fresh_dir("rollout_routes_refused"), model, std::move(sets)), "").run();
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("algorithm.routing_replay") && Catch::Contains(needle));
    }
  };
  refused("tiny.pt", {}, "is dense (no MoE layers)");
  refused("moe_route_api1.pt", {}, "route_api 2");

  const auto dir = test::fresh_dir("rollout_routes_resume");
  cli::TrainJob(run_cfg(dir, "qwen3_moe_tiny.pt", {"train.max_steps=1", "checkpoint.every=1"}), "").run();
  try {
    cli::TrainJob(run_cfg(dir, "qwen3_moe_tiny.pt", {"train.max_steps=2", "checkpoint.every=1",
                                                     "algorithm.routing_replay=old"}), "auto").run();
    FAIL("resumed with another replay mode");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("another algorithm.routing_replay (rollout -> old)"));
  }
}

TEST_CASE("rollout routes another model recorded are refused, naming what differs", "[routing][rollout]") {
  const auto routes = torch::zeros({4, 9, 2, 2}, torch::kUInt8);  // 4 rows, 2 MoE layers of top-2
  CHECK_NOTHROW(train::check_rollout_routes(routes, 4, 2, 2, 4, "m.pt"));
  auto error_of = [&](const at::Tensor& r, int64_t layers, int64_t top_k, int64_t experts) {
    try {
      train::check_rollout_routes(r, 4, layers, top_k, experts, "m.pt");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK_THAT(error_of(routes, 3, 2, 4), Catch::Contains("[4, 9, 2, 2]") && Catch::Contains("3 MoE layers of top-2") &&
                                            Catch::Contains("another model"));
  CHECK_THAT(error_of(routes, 2, 8, 4), Catch::Contains("2 MoE layers of top-8"));
  auto far = routes.clone();
  far[1][3][0][1] = 7;
  CHECK_THAT(error_of(far, 2, 2, 4), Catch::Contains("name expert 7") && Catch::Contains("has 4 a layer"));
  CHECK_THAT(error_of(at::Tensor(), 2, 2, 4), Catch::Contains("without the rollout's experts"));
}

TEST_CASE("a partial rollout's continued rows keep their first part's experts, the continuation records the rest",
          "[routing][moe][rollout][partial]") {
  auto policy = model::Policy::load(test::model_path("qwen3_moe_tiny.pt"));
  const auto base = sample_recorded(policy, true);
  const int64_t N = base.num_rows(), P = base.prompt_len;
  // Row 0 passed through whole, row 1 continued (prompt 0: no fresh row, never prefilled again), row 2 fresh, rows
  // 3-5 continued after 1, 4 and 7 tokens; the same weights and noise, so the continuation samples the base call.
  rollout::CallPlan plan;
  const std::vector<int64_t> cut{-1, 3, 0, 1, 4, 7};
  for (int64_t r = 0; r < N; ++r) {
    REQUIRE(static_cast<int64_t>(base.response_ids[r].size()) > cut[r]);
    plan.rows.push_back(so_far(base, r, cut[r]));
  }
  // The carried part is what the plan says, not what this call would record: one row's carried experts moved.
  const auto moved = (plan.rows[4].routes.to(torch::kInt) + 1).remainder(4).to(torch::kUInt8);
  plan.rows[4].routes = moved;
  const auto b = sample_recorded(policy, true, nullptr, &plan);
  REQUIRE(b.response_ids == base.response_ids);
  REQUIRE(b.routes.sizes() == base.routes.sizes());
  for (int64_t r = 0; r < N; ++r) {
    INFO("row " << r << ", cut after " << cut[r]);
    const int64_t plen = static_cast<int64_t>(kPrompts[r / 2].size());
    const int64_t len = static_cast<int64_t>(base.response_ids[r].size());
    const int64_t carried = cut[r] < 0 ? plen + len - 1 : cut[r] > 0 ? plen + cut[r] - 1 : 0;
    const auto mine = b.routes[r].narrow(0, P - plen, plen + len - 1);
    const auto want = base.routes[r].narrow(0, P - plen, plen + len - 1);
    if (r == 4) {
      CHECK(torch::equal(mine.narrow(0, 0, carried), moved));
      CHECK(torch::equal(mine.narrow(0, carried, mine.size(0) - carried), want.narrow(0, carried, mine.size(0) - carried)));
    } else {
      // Float32 both calls: what the continuation recorded (the prefill of its tokens so far, then decode) is what
      // the uninterrupted call recorded (near-ties aside: none in this batch).
      CHECK(torch::equal(mine, want));
    }
  }
  // Replaying the laid-out routes gives the sampler's log-probs back (row 4's moved experts aside).
  auto mask = b.loss_mask.clone();
  mask[4].zero_();
  CHECK(max_abs(trainer_logprobs(policy, b, b.routes), b.behaviour_logprobs, mask) < 1e-4);
  CHECK(max_abs(trainer_logprobs(policy, b, b.routes), b.behaviour_logprobs, b.loss_mask) > 1e-3);
}

TEST_CASE("a partial rollout's row whose routes another model recorded is refused, naming the row and both shapes",
          "[routing][moe][rollout][partial]") {
  auto policy = model::Policy::load(test::model_path("qwen3_moe_tiny.pt"));
  const auto base = sample_recorded(policy, true);
  rollout::CallPlan plan;
  for (int64_t r = 0; r < base.num_rows(); ++r) plan.rows.push_back(so_far(base, r, r == 3 ? 4 : 0));
  auto error_of = [&](const rollout::CallPlan& p) {
    try {
      sample_recorded(policy, true, nullptr, &p);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK(error_of(plan) == "<no error>");
  const int64_t top_k = policy.moe_routing(policy.moe_layers()[0]).first;
  const std::string want = "[" + std::to_string(kPrompts[1].size() + 3) + ", 2, " + std::to_string(top_k) + "] Byte";
  auto wrong = plan;
  wrong.rows[3].routes = torch::zeros({plan.rows[3].routes.size(0), 3, top_k}, torch::kUInt8);  // 3 MoE layers
  CHECK_THAT(error_of(wrong), Catch::Contains("row 3 carries routes [") && Catch::Contains(want) &&
                                  Catch::Contains("another model's"));
  wrong = plan;
  wrong.rows[3].routes = plan.rows[3].routes.narrow(0, 0, 2);  // another row's length
  CHECK_THAT(error_of(wrong), Catch::Contains("row 3") && Catch::Contains(want));
  wrong = plan;
  wrong.rows[3].routes = plan.rows[3].routes.clone();
  wrong.rows[3].routes[0][0][0] = 9;
  CHECK_THAT(error_of(wrong), Catch::Contains("expert 9") && Catch::Contains("has 4 a layer"));
  wrong = plan;
  wrong.rows[3].routes = at::Tensor();
  CHECK_THAT(error_of(wrong), Catch::Contains("row 3 carries 4 tokens without their routes"));
}
