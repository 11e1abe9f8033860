// The step pulls scored rounds from a RolloutSource (train/sources/rollout_source.h) instead of sampling itself: a source
// that replays what the in-process source produced trains the policy to the same weights, bit for bit (same shapes,
// same code path), and a round's noise is keyed by its RolloutId, whichever step consumes it.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/dataset.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/reward/factory.h"
#include "gspo/rollout/sampling_config.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/sources/rollout_source.h"
#include "gspo/train/step.h"
#include "gspo/train/engines/update_engine.h"
#include "helpers.h"

using namespace gspo;

namespace {

config::Config small_config() {
  config::Config c;
  c.model.path = test::model_path("tiny.pt");
  c.rollout.prompts_per_step = 4;
  c.rollout.group_size = 4;
  c.rollout.max_new_tokens = 3;
  c.rollout.temperature = 1.0;
  c.algorithm.num_minibatches = 2;
  c.optimizer.lr = 1e-3;
  c.train.max_steps = 2;
  c.logging.progress = false;
  // A reward with variance within groups, so the steps update (the tiny model rarely adds right).
  c.reward.kind = config::RewardKind::kRegex;
  c.reward.regex = "[02468]";
  return c;
}

// One trainer's worth of parts over tiny.pt, at world size 1.
struct Rig {
  config::Config cfg = small_config();
  parallel::Comm comm{parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU};
  model::Policy policy = test::load_tiny("tiny.pt");
  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::from_spec(policy.tokenizer_json(), cfg.model.path);
  std::vector<data::Example> examples = data::make_arithmetic(20, 9, "+", 1);
  std::unique_ptr<reward::Verifier> verifier = reward::make_verifier(cfg);
  std::unique_ptr<train::UpdateEngine> engine;
  std::unique_ptr<rollout::Sampler> sampler;
  std::unique_ptr<train::InProcessSource> source;
  train::Progress progress{0, 0, data::Cursor(20, true, 7), at::detail::createCPUGenerator(11)};
  Rig() {
    train::EngineOptions eo;
    eo.optimizer = cfg.optimizer;
    engine = train::make_update_engine(policy, eo, comm);
    sampler = std::make_unique<rollout::Sampler>(policy, *tok, rollout::sampling_params(cfg));
    source = std::make_unique<train::InProcessSource>(cfg, policy, nullptr, *tok, examples, *verifier, *sampler, comm);
  }
  train::StepRunner runner(train::RolloutSource& s) { return train::StepRunner({cfg, policy, nullptr, *verifier, s, comm, *engine}); }
};

// Passes the in-process source's rounds through, keeping a copy.
struct Recording : train::RolloutSource {
  explicit Recording(train::RolloutSource& s) : inner(s) {}
  train::Scored next_round(data::Cursor& cursor, const train::RolloutId& id, train::StepMetrics& m) override {
    rounds.push_back(inner.next_round(cursor, id, m));
    ids.push_back(id);
    return rounds.back();
  }
  train::RolloutSource& inner;
  std::vector<train::Scored> rounds;
  std::vector<train::RolloutId> ids;
};

// Hands out recorded rounds in order, advancing the cursor as a sampling source would.
struct Replay : train::RolloutSource {
  explicit Replay(std::vector<train::Scored> r, int64_t prompts) : rounds(std::move(r)), per_round(prompts) {}
  train::Scored next_round(data::Cursor& cursor, const train::RolloutId&, train::StepMetrics&) override {
    cursor.next(per_round);
    return rounds.at(next++);
  }
  std::vector<train::Scored> rounds;
  int64_t per_round;
  size_t next = 0;
};

}  // namespace

TEST_CASE("the step trains on what its rollout source gives: a replayed rollout reaches the same weights",
          "[train][source]") {
  Rig a, b;
  Recording rec(*a.source);
  for (int step = 0; step < 2; ++step) a.runner(rec).run(a.progress);
  REQUIRE(rec.rounds.size() == 2);
  CHECK(rec.ids[0].version == 0);  // synchronous: the version is the step that samples
  CHECK(rec.ids[1].version == 1);
  Replay replay(rec.rounds, b.cfg.rollout.prompts_per_step);
  for (int step = 0; step < 2; ++step) b.runner(replay).run(b.progress);
  const auto pa = a.policy.parameters(), pb = b.policy.parameters();
  REQUIRE(pa.size() == pb.size());
  bool moved = false;
  const auto fresh = test::load_tiny("tiny.pt").parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    CHECK(torch::equal(pa[i], pb[i]));
    moved = moved || !torch::equal(pa[i], fresh[i]);
  }
  CHECK(moved);  // the steps did train
  CHECK(a.progress.cursor.position() == b.progress.cursor.position());
}

TEST_CASE("a round's noise is keyed by its rollout id, not by the step that consumes it", "[train][source]") {
  Rig r;
  auto sample = [&](const train::RolloutId& id) {
    data::Cursor cursor(20, true, 7);
    train::StepMetrics m;
    return r.source->next_round(cursor, id, m).batch.response_ids;
  };
  const auto v3 = sample({3, 0});
  r.progress.step = 9;  // the consuming step plays no part
  CHECK(sample({3, 0}) == v3);
  CHECK(sample({3, 1}) != v3);
  CHECK(sample({4, 0}) != v3);
  // The key a synchronous run has always used: seed mix(rollout.seed, step), rows offset by round x B x G.
  const auto key = train::rollout_noise(r.cfg, {5, 2}, 8);
  CHECK(key.seed == rollout::mix_seed(static_cast<uint64_t>(r.cfg.rollout.seed), 5));
  CHECK(key.first_row == 2 * 4 * 4 + 8);
}
