// #68 item 3: one value says which update engine a config gets; make_update_engine builds it and `gspo plan` sizes it.
#include <catch2/catch.hpp>

#include "gspo/config/options.h"
#include "gspo/core/error.h"
#include "gspo/train/engines/engine_choice.h"

using namespace gspo;
using train::EngineKind;

namespace {

config::Config with(int64_t zero_stage, int64_t lora_rank, int64_t expert_parallel, bool offload, int64_t bits) {
  config::Config c;
  c.distributed.zero_stage = zero_stage;
  c.model.lora_rank = lora_rank;
  c.distributed.expert_parallel = expert_parallel;
  c.distributed.optimizer_offload = offload;
  c.optimizer.state_bits = bits;
  return c;
}

}  // namespace

TEST_CASE("choose_engine names the engine of each setting", "[engine]") {
  struct Case { int64_t zero, lora, ep; EngineKind kind; bool adapters; };
  const Case cases[] = {
      {0, 0, 1, EngineKind::kReplicated, false},   {1, 0, 1, EngineKind::kZero1, false},
      {3, 0, 1, EngineKind::kZero3, false},        {0, 8, 1, EngineKind::kReplicated, true},
      {1, 8, 1, EngineKind::kZero1, true},         {3, 8, 1, EngineKind::kZero3Adapters, true},
      {1, 0, 2, EngineKind::kExpertParallel, false},
  };
  for (const auto& k : cases) {
    INFO("zero_stage " << k.zero << " lora_rank " << k.lora << " expert_parallel " << k.ep);
    const auto c = train::choose_engine(with(k.zero, k.lora, k.ep, false, 32));
    CHECK(c.kind == k.kind);
    CHECK(c.adapters == k.adapters);
    CHECK(c.sharded() == (k.kind != EngineKind::kReplicated));
    CHECK(c.expert_parallel == k.ep);
  }
}

TEST_CASE("the engine's moment bytes and shard rounding are the 8-bit layout's", "[engine]") {
  const auto f32 = train::choose_engine(with(1, 0, 1, false, 32));
  const auto b8 = train::choose_engine(with(1, 0, 1, true, 8));
  CHECK(f32.moment_bytes() == 8.0);              // float32 exp_avg and exp_avg_sq
  CHECK(b8.moment_bytes() == 2.0 + 8.0 / 256);   // two codes and a float32 absmax per 256 elements
  CHECK(f32.shard_align() == 1);
  CHECK(b8.shard_align() == 256);
  CHECK(b8.offload);
  CHECK(b8.describe() == "ZeRO-1, 8-bit moments offloaded");
}

TEST_CASE("offload without sharded moments and unknown state bits are refused where the engine is chosen", "[engine]") {
  CHECK_THROWS_AS(train::choose_engine(with(0, 0, 1, true, 32)), ConfigError);
  CHECK_THROWS_WITH(train::choose_engine(with(0, 0, 1, true, 32)), Catch::Contains("distributed.optimizer_offload"));
  CHECK_THROWS_WITH(train::choose_engine(with(1, 0, 1, false, 16)), Catch::Contains("optimizer.state_bits"));
  CHECK_NOTHROW(train::choose_engine(with(3, 8, 1, true, 8)));  // ZeRO-3's adapters: their ZeRO-1 moments offload
}
