// MoE routing (train/routing.h): recording the experts of a pass, Routing Replay through the per-layer pass
// (bit for bit the plain pass while routing is unchanged, different when it is not, gradients through the
// checkpointed recompute), the routing-change count, the routing methods' contract check, and the trainer's
// moe_routing_change_frac and algorithm.routing_replay.
#include <catch2/catch.hpp>

#include "contract_helpers.h"
#include "gspo/cli/train_job.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/routing.h"
#include "helpers.h"

using namespace gspo;

namespace {

// Three rows in the rollout layout: a left-padded prompt of P = 4 columns, a right-padded response of 5.
struct Batch {
  torch::Tensor ids, mask;
  int64_t P = 4;
};

Batch batch() {
  torch::manual_seed(7);
  Batch b;
  b.ids = torch::randint(1, 250, {3, 9}, torch::kLong);
  b.mask = torch::ones_like(b.ids);
  b.mask[0].narrow(0, 0, 2).zero_();  // prompt of row 0: two padding columns
  b.mask[1].narrow(0, 7, 2).zero_();  // response of row 1: 3 tokens
  b.ids.mul_(b.mask);
  return b;
}

const train::LogprobPass kLayers{true, false, true};

train::TokenLogprobs logprobs(model::Policy& p, const Batch& b, train::RouteIO routes = {},
                              train::LogprobPass pass = kLayers) {
  return train::response_logprobs(p, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 1024, pass, routes);
}

// Parameter gradients of the summed masked log-probs.
std::vector<torch::Tensor> gradients(model::Policy& p, const Batch& b, train::RouteIO routes, bool checkpoint) {
  for (auto& w : p.parameters()) w.mutable_grad() = torch::Tensor();
  auto lp = logprobs(p, b, routes, {true, checkpoint, true}).logprobs;
  (lp * b.mask.narrow(1, b.P, 5)).sum().backward();
  std::vector<torch::Tensor> out;
  for (auto& w : p.parameters()) out.push_back(w.grad().defined() ? w.grad().clone() : torch::zeros_like(w));
  return out;
}

config::Config run_cfg(const std::string& out, const std::string& model, std::vector<std::string> sets) {
  sets.insert(sets.begin(), {"model.path=" + test::model_path(model), "train.output_dir=" + out});
  return config::load_text(R"(
data: {task: arithmetic, max_operand: 3, num_prompts: 12}
rollout: {prompts_per_step: 4, group_size: 4, max_new_tokens: 4}
reward: {kind: regex, regex: "^[\\x00-\\x7f]"}
algorithm: {num_minibatches: 2, loss: grpo}
optimizer: {lr: 3.0e-2}
train: {max_steps: 2}
checkpoint: {every: 0}
logging: {progress: false}
)", "test.yaml", sets);
}

}  // namespace

TEST_CASE("routing replay of the recorded experts is the plain pass bit for bit, other experts change it",
          "[routing][moe]") {
  auto p = test::load_tiny("qwen3_moe_tiny.pt");
  REQUIRE(p.has_routing());
  REQUIRE(p.moe_layers() == std::vector<int64_t>{0, 2});
  const auto b = batch();
  torch::NoGradGuard g;
  const auto plain = logprobs(p, b).logprobs;
  train::RouteRecord rec;
  CHECK(torch::equal(logprobs(p, b, {nullptr, &rec}).logprobs, plain));  // recording does not change the pass
  REQUIRE(rec.experts.size() == 3);
  CHECK_FALSE(rec.experts[1].defined());  // the dense layer
  CHECK(rec.experts[0].sizes() == torch::IntArrayRef({3, 9, 2}));  // right-aligned: the longest row is 9 columns
  // Response columns: row 0's 5 (after its 2-token prompt), row 1's 3, row 2's 5.
  CHECK(rec.response.sum().item<int64_t>() == 13);
  CHECK(rec.response[0][2].item<bool>());
  CHECK_FALSE(rec.response[0][1].item<bool>());

  CHECK(torch::equal(logprobs(p, b, {&rec, nullptr}).logprobs, plain));

  auto other = rec;
  other.experts[2] = rec.experts[2].roll(1, 1);  // every token of layer 2 takes its left neighbour's experts
  auto moved = logprobs(p, b, {&other, nullptr}).logprobs;
  const double diff = ((moved - plain) * b.mask.narrow(1, b.P, 5)).abs().max().item<double>();
  INFO("max |log-prob change| from replaying other experts in layer 2: " << diff);
  CHECK(diff > 1e-4);
  // A second record during replay holds the replayed experts.
  train::RouteRecord again;
  logprobs(p, b, {&other, &again});
  CHECK(torch::equal(again.experts[2], other.experts[2]));
}

TEST_CASE("gradients under routing replay, checkpointed or not, are the plain pass's", "[routing][moe]") {
  auto p = test::load_tiny("qwen3_moe_tiny.pt");
  const auto b = batch();
  train::RouteRecord rec;
  {
    torch::NoGradGuard g;
    logprobs(p, b, {nullptr, &rec});
  }
  const auto plain = gradients(p, b, {}, false);
  const auto replayed = gradients(p, b, {&rec, nullptr}, false);
  const auto checkpointed = gradients(p, b, {&rec, nullptr}, true);
  double scale = 0, d1 = 0, d2 = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    scale = std::max(scale, plain[i].abs().max().item<double>());
    d1 = std::max(d1, (replayed[i] - plain[i]).abs().max().item<double>());
    d2 = std::max(d2, (checkpointed[i] - plain[i]).abs().max().item<double>());
  }
  INFO("largest gradient " << scale << ", replay diff " << d1 << ", checkpointed replay diff " << d2);
  REQUIRE(scale > 0);
  CHECK(d1 <= 1e-6 * scale);  // the router's gradient reaches it through the gathered softmax in both
  CHECK(d2 <= 1e-6 * scale);
}

TEST_CASE("routing change counts unordered expert sets over response tokens only", "[routing]") {
  train::RouteRecord before, after;
  // One row, three columns, top-2; layer 1 is dense. Column 0 is a prompt token (changed, not counted), column 1
  // changes {2,3} -> {1,2}, column 2 only reorders {1,0} -> {0,1} (unchanged).
  before.experts = {torch::tensor({2, 3, 2, 3, 1, 0}, torch::kShort).view({1, 3, 2}), torch::Tensor(),
                    torch::tensor({0, 1, 0, 1, 0, 1}, torch::kShort).view({1, 3, 2})};
  after.experts = {torch::tensor({0, 1, 1, 2, 0, 1}, torch::kShort).view({1, 3, 2}), torch::Tensor(),
                   torch::tensor({0, 1, 0, 1, 0, 1}, torch::kShort).view({1, 3, 2})};
  before.response = after.response = torch::tensor({false, true, true}).view({1, 3});
  train::RoutingChange c(2);
  c.add(before, after, {0, 2});
  c.add(before, before, {0, 2});
  CHECK(c.changed == std::vector<double>{1, 0});
  CHECK(c.tokens == std::vector<double>{4, 4});
  CHECK(c.changed_total() / c.tokens_total() == Approx(1.0 / 8));
  after.experts[2] = after.experts[2].narrow(1, 0, 2);
  CHECK_THROWS_AS(c.add(before, after, {0, 2}), Error);
}

TEST_CASE("the contract check refuses a routed_layer that ignores its routes", "[routing][model]") {
  test::check_contract_rejects("broken_routes.pt", "routed_layer(0) ignores the routes it is given");
  auto dense = test::load_tiny("tiny.pt");
  CHECK(dense.has_routing());
  CHECK(dense.moe_layers().empty());
  CHECK_FALSE(test::load_tiny("tiny_without_layers.pt").has_routing());
}

TEST_CASE("training an MoE policy logs routing volatility, trains with routing replay, and dense models refuse replay",
          "[routing][train][moe]") {
  // lr 1e-12: the weights move by rounding only, so no token's expert set may change (a layout mismatch between the
  // step-start record and the after-update pass would show here as changes).
  const auto still = test::fresh_dir("routing_still");
  cli::TrainJob(run_cfg(still, "qwen3_moe_tiny.pt", {"optimizer.lr=1e-12", "train.max_steps=1"}), "").run();
  auto m = test::read_metrics(still);
  REQUIRE(m.size() == 1);
  REQUIRE(m[0].contains("moe_routing_change_frac"));
  CHECK(m[0]["moe_routing_change_frac"].get<double>() == 0.0);
  CHECK(m[0]["moe_routing_change_frac_layers"].size() == 2);

  for (const char* replay : {"none", "old"}) {
    const auto dir = test::fresh_dir(std::string("routing_moved_") + replay);
    cli::TrainJob(run_cfg(dir, "qwen3_moe_tiny.pt", {std::string("algorithm.routing_replay=") + replay}), "").run();
    auto lines = test::read_metrics(dir);
    REQUIRE(lines.size() == 2);
    for (const auto& line : lines) {
      const double frac = line["moe_routing_change_frac"];
      const auto layers = line["moe_routing_change_frac_layers"].get<std::vector<double>>();
      INFO(replay << ": " << frac);
      CHECK((frac >= 0 && frac <= 1));
      CHECK(frac == Approx((layers[0] + layers[1]) / 2).margin(1e-12));  // equal token counts per layer
    }
    // lr 3e-2 on a 4-expert router: some expert sets move within two steps.
    CHECK(lines[0]["moe_routing_change_frac"].get<double>() + lines[1]["moe_routing_change_frac"].get<double>() > 0);
  }

  const auto off = test::fresh_dir("routing_off");
  cli::TrainJob(run_cfg(off, "qwen3_moe_tiny.pt", {"algorithm.routing_metrics=false", "train.max_steps=1"}), "").run();
  CHECK_FALSE(test::read_metrics(off)[0].contains("moe_routing_change_frac"));
  const auto dense_dir = test::fresh_dir("routing_dense");
  cli::TrainJob(run_cfg(dense_dir, "tiny.pt", {"train.max_steps=1"}), "").run();
  CHECK_FALSE(test::read_metrics(dense_dir)[0].contains("moe_routing_change_frac"));

  auto refused = [](const std::string& model, const std::string& needle) {
    INFO(model);
    try {
      cli::TrainJob(run_cfg(test::fresh_dir("routing_refused"), model, {"algorithm.routing_replay=old"}), "").run();
      FAIL("routing replay accepted for " << model);
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("algorithm.routing_replay old") && Catch::Contains(needle));
    }
  };
  refused("tiny.pt", "is dense (no MoE layers)");
  refused("tiny_without_layers.pt", "has no routing methods");
}
