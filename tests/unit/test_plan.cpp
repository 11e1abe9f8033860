// gspo plan's memory model: the shape read from a manifest (no weights) and from a Hugging Face config.json counts
// exactly the parameters of the exported files, the per-phase arithmetic on a hand-computed case, and the runtime's
// rules the plan takes (micro-batch split, device).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "gspo/config/load.h"
#include "gspo/core/device.h"
#include "gspo/core/error.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/plan/memory.h"
#include "gspo/plan/model_shape.h"
#include "gspo/rollout/decode_loop.h"
#include "gspo/rollout/sampler.h"
#include "gspo/train/minibatch.h"
#include "gspo/model/reward_model.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double term(const std::vector<plan::Term>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return t.bytes;
  FAIL("no term '" << name << "'");
  return 0;
}

// A 2-layer llama shape (the hand-computed case's).
plan::ModelShape small_llama() {
  plan::ModelShape s;
  s.architecture = "llama";
  s.vocab_size = 1000;
  s.hidden_size = 64;
  s.num_layers = 2;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.head_dim = 16;
  s.intermediate_size = 256;
  return s;
}

}  // namespace

TEST_CASE("plan: parameters counted from the manifest's shape equal the loaded model's", "[plan]") {
  // llama untied; Qwen3 q/k norms + qkv bias + tied head; lm_head bias; Qwen3-MoE with a dense layer
  for (const char* name : {"tiny.pt", "tiny_qwen3.pt", "tiny_prior.pt", "qwen3_moe_tiny.pt"}) {
    INFO(name);
    const auto shape = plan::read_model_shape(test::model_path(name));
    CHECK(shape.num_parameters() == model::Policy::load(test::model_path(name)).num_parameters());
  }
  const auto moe = plan::read_model_shape(test::model_path("qwen3_moe_tiny.pt"));
  CHECK(moe.moe_layers == std::vector<int64_t>{0, 2});  // mlp_only_layers [1]
  CHECK(moe.num_experts == 4);
}

// The HF-exported Qwen3 on the real vocabulary is made from ../shared's tokenizer (make_test_models.py).
TEST_CASE("plan: the HF-exported Qwen3's shape, from its manifest and its config.json, counts the loaded model",
          "[plan]") {
  if (!test::shared_data_or_skip(test::shared_path("data/tokenizers/qwen3/tokenizer.json"))) return;
  const auto pt = plan::read_model_shape(test::model_path("qwen3_tiny.pt"));
  CHECK(pt.num_parameters() == model::Policy::load(test::model_path("qwen3_tiny.pt")).num_parameters());
  const auto hf = plan::read_hf_config(test::model_path("qwen3_tiny_hf/config.json"));
  CHECK(hf.num_parameters() == pt.num_parameters());
  CHECK(hf.moe_layers.empty());
  CHECK(hf.qk_norm);
}

TEST_CASE("plan: a Hugging Face config.json gives the exported model's shape", "[plan]") {
  const auto hf = plan::read_hf_config(test::model_path("qwen3_moe_tiny_hf/config.json"));
  const auto pt = plan::read_model_shape(test::model_path("qwen3_moe_tiny.pt"));
  CHECK(hf.num_parameters() == pt.num_parameters());
  CHECK(hf.moe_layers == pt.moe_layers);
  CHECK(hf.qk_norm);
  // Qwen3-8B's published sizes: 8.19B parameters (untied head), configs/hf/qwen3-8b.json.
  const auto q8 = plan::read_hf_config(std::string(GSPO_SOURCE_DIR) + "/configs/hf/qwen3-8b.json");
  CHECK(q8.num_parameters() == 8190735360);
  // Qwen3-30B-A3B: 30.53B parameters, 48 MoE layers of 128 experts.
  const auto q30 = plan::read_hf_config(std::string(GSPO_SOURCE_DIR) + "/configs/hf/qwen3-30b-a3b.json");
  CHECK(q30.num_parameters() == 30532122624);
  CHECK(q30.moe_layers.size() == 48);
}

TEST_CASE("plan: bad shapes are errors naming the file and the key", "[plan]") {
  CHECK_THROWS_WITH(plan::shape_from_hf_config("{\"model_type\": \"qwen3\", \"hidden_size\": 8}", "c.json"),
                    Catch::Contains("c.json: missing key 'vocab_size'"));
  CHECK_THROWS_AS(plan::shape_from_hf_config("{", "c.json"), ConfigError);
  CHECK_THROWS_WITH(plan::shape_from_hf_config("{\"model_type\": \"gemma\"}", "c.json"),
                    Catch::Contains("model_type 'gemma' is not supported"));
  CHECK_THROWS_WITH(plan::shape_from_hf_config("{\"vocab_size\": 10, \"hidden_size\": -4}", "c.json"),
                    Catch::Contains("'hidden_size' must be a non-negative integer"));
  CHECK_THROWS_AS(plan::read_model_shape(test::model_path("not_torchscript.pt")), ModelContractError);
  CHECK_THROWS_AS(plan::read_model_shape(test::model_path("no_such.pt")), IoError);
  // A manifest without "shape" nor hf_source: exported before gspo plan.
  const std::string old = R"({"contract_version": 1, "vocab_size": 10, "max_seq_len": 8, "eos_token_id": 1})";
  CHECK_THROWS_WITH(plan::shape_from_manifest(old, "old.pt"), Catch::Contains("has no \"shape\""));
}

TEST_CASE("plan: per-phase arithmetic on a hand-computed case", "[plan]") {
  const auto s = small_llama();
  // per layer: norms 128 + q 4096 + k,v 2x2048 + o 4096 + q/k norms 32 + MLP 3x64x256 = 61600; embed + head 128000 + 64
  REQUIRE(s.num_parameters() == 2 * 61600 + 128064);
  const double N = s.num_parameters();
  auto cfg = config::load("", {"rollout.prompts_per_step=4", "rollout.group_size=4", "rollout.max_new_tokens=24",
                               "algorithm.num_minibatches=2", "distributed.zero_stage=1"});
  plan::PlanInputs in;
  in.world_size = 2;
  in.prompt_tokens = 8;
  in.runtime_mb = 100;
  const auto p = plan::plan_memory(s, cfg, in);
  CHECK(p.rows_per_rank == 8);           // 4 prompts / 2 ranks x 4
  CHECK(p.micro_rows == 4);              // 8 rows / 2 mini-batches, micro_batch_size 0 = all
  CHECK(p.micro_tokens == 4 * 32);       // 8 + 24 columns
  CHECK(term(p.resident, "weights") == 4 * N);
  CHECK(term(p.resident, "AdamW moments") == 8 * std::ceil(N / 2));
  CHECK(term(p.resident, "runtime") == 100 * 1024.0 * 1024.0);
  // KV: 8 rows x 32 columns x (2 layers x 2 x 2 heads x 16 x 4 B)
  CHECK(term(p.phases[0].terms, "KV cache") == 8 * 32 * 2 * 2 * 2 * 16 * 4);
  // ZeRO-1's step (the shard's weights, 4 AdamW temporaries, a chunk of both shards: here the whole shard) outweighs
  // this backward.
  CHECK(term(p.phases[2].terms, "ZeRO-1 step buffers") == 20 * std::ceil(N / 2) + 4 * 2 * std::ceil(N / 2));
  CHECK(p.peak_bytes == std::max({p.phases[0].peak_bytes, p.phases[1].peak_bytes, p.phases[2].peak_bytes}));
  // Plain AdamW on one rank (no all-reduce buckets): the backward sets the update's peak; checkpointed, layer
  // inputs of 256 tokens (16 rows / 2 mini-batches x 32 columns) x 2 layers x 64 x 4 B.
  in.world_size = 1;
  auto plain = config::load("", {"rollout.prompts_per_step=4", "rollout.group_size=4", "rollout.max_new_tokens=24",
                                 "algorithm.num_minibatches=2"});
  CHECK(term(plan::plan_memory(s, plain, in).phases[2].terms, "layer inputs (checkpointed)") == 256 * 2 * 64 * 4);
  // Without checkpointing every layer's saved tensors are held; zero_stage 0 holds all the moments.
  auto off = config::load("", {"rollout.prompts_per_step=4", "rollout.group_size=4", "rollout.max_new_tokens=24",
                               "algorithm.num_minibatches=2", "train.activation_checkpointing=false"});
  const auto q = plan::plan_memory(s, off, in);
  CHECK(term(q.resident, "AdamW moments") == 8 * N);
  CHECK(q.micro_tokens == 8 * 32);  // one rank: 16 rows, 2 mini-batches of 8
  CHECK(term(q.phases[2].terms, "activations (no checkpointing)") ==
        256 * 2 * plan::layer_saved_bytes_per_token(s, 0, 4));
  in.world_size = 3;
  CHECK_THROWS_WITH(plan::plan_memory(s, cfg, in), Catch::Contains("must be a multiple of --world-size (3)"));
}

TEST_CASE("plan: optimizer.state_bits 8 counts 2 bytes a parameter and an absmax per 256, and a chunk's temporaries",
          "[plan][adamw8bit]") {
  const auto s = small_llama();
  const double N = s.num_parameters();
  plan::PlanInputs in;
  in.prompt_tokens = 2;  // a 2 x 4-token batch: the optimizer step, not the backward, sets the update's peak
  const std::vector<std::string> base = {"rollout.prompts_per_step=1", "rollout.group_size=2",
                                         "rollout.max_new_tokens=2", "algorithm.num_minibatches=1"};
  auto with = [&](const std::vector<std::string>& sets) {  // after the base: a later --set wins
    auto all = base;
    all.insert(all.end(), sets.begin(), sets.end());
    return plan::plan_memory(s, config::load("", all), in);
  };
  const auto p32 = with({}), p8 = with({"optimizer.state_bits=8"});
  CHECK(term(p32.resident, "AdamW moments") == 8 * N);
  CHECK(term(p8.resident, "AdamW moments") == (2 + 8.0 / 256) * N);  // norms below 4096 elements counted alike
  // the step dequantises a chunk (here the largest tensor, the 64000-element embedding) at a time, not the whole state
  REQUIRE(p8.phases[2].name == "update");
  CHECK(term(p8.phases[2].terms, "8-bit AdamW chunk") == 40 * 64000.0);
  CHECK(term(p32.resident, "AdamW moments") - term(p8.resident, "AdamW moments") == (8 - 2 - 8.0 / 256) * N);
  // adapters: their moments alike
  const auto l32 = with({"model.lora_rank=4"}), l8 = with({"model.lora_rank=4", "optimizer.state_bits=8"});
  CHECK(term(l32.resident, "LoRA adapters") - term(l8.resident, "LoRA adapters") ==
        Approx((8 - (2 + 8.0 / 256)) * (term(l32.resident, "LoRA adapters") / 16)));
  // the ZeRO-3 comparison keeps the 8-bit moments (every engine takes them) and says so
  in.world_size = 2;
  const auto w2 = with({"optimizer.state_bits=8", "rollout.prompts_per_step=2"});
  CHECK(std::any_of(w2.notes.begin(), w2.notes.end(), [](const std::string& n) {
    return n.find("with distributed.zero_stage 3 (and activation checkpointing, 8-bit moments): peak") == 0;
  }));
  // the sharded engines: 2 + 8/256 bytes a parameter of the shard (whole 256-element blocks), beside the float32
  // master and gradient shards under ZeRO-3
  const double shard = std::ceil(N / 512) * 256;
  const auto z1 = with({"optimizer.state_bits=8", "rollout.prompts_per_step=2", "distributed.zero_stage=1"});
  CHECK(term(z1.resident, "AdamW moments") == (2 + 8.0 / 256) * shard);
  const auto z3 = with({"optimizer.state_bits=8", "rollout.prompts_per_step=2", "distributed.zero_stage=3",
                        "train.activation_checkpointing=true"});
  const auto z3f = with({"rollout.prompts_per_step=2", "distributed.zero_stage=3", "train.activation_checkpointing=true"});
  CHECK(term(z3.resident, "ZeRO-3 shards") == (8 + 2 + 8.0 / 256) * shard);
  CHECK(term(z3f.resident, "ZeRO-3 shards") == 16 * std::ceil(N / 2));
}

TEST_CASE("plan: the micro-batches and the device follow the runtime's rules", "[plan]") {
  const auto s = small_llama();
  plan::PlanInputs in;
  in.prompt_tokens = 10;
  // 6 prompts x 3 = 18 rows in 2 mini-batches of 9; a 60-token budget takes 2 rows of 10 + 20 columns a pass.
  const auto cfg = config::load("", {"rollout.prompts_per_step=6", "rollout.group_size=3", "rollout.max_new_tokens=20",
                                     "algorithm.num_minibatches=2", "algorithm.micro_batch_tokens=60"});
  CHECK(train::minibatch_sizes(18, 4) == std::vector<int64_t>{5, 5, 4, 4});
  CHECK(train::minibatch_sizes(3, 8) == std::vector<int64_t>{1, 1, 1});
  CHECK(plan::plan_memory(s, cfg, in).micro_rows == 2);
  // ZeRO-3's load phase is planned on the device only for a CPU run; auto counts as CUDA (a GPU's --device-gb).
  CHECK(core::device_type("auto", true, "model.device") == c10::kCUDA);
  CHECK(core::device_type("auto", false, "model.device") == c10::kCPU);
  CHECK(core::device_type("cuda:3", false, "model.device") == c10::kCUDA);
  CHECK_THROWS_WITH(core::device_type("gpu", true, "model.device"), Catch::Contains("model.device must be cpu"));
  auto phases = [&](const std::string& device) {
    std::vector<std::string> names;
    const auto c = config::load("", {"distributed.zero_stage=3", "train.activation_checkpointing=true",
                                     "model.device=" + device});
    for (const auto& ph : plan::plan_memory(s, c, in).phases) names.push_back(ph.name);
    return names;
  };
  CHECK(phases("cpu") == std::vector<std::string>{"load", "rollout", "logprobs", "update"});
  CHECK(phases("auto") == std::vector<std::string>{"rollout", "logprobs", "update"});
  CHECK(phases("cuda:1") == std::vector<std::string>{"rollout", "logprobs", "update"});
}

// Shared prompts (train.shared_prefix with algorithm.minibatch_groups): the plan packs each micro-batch's groups as the
// step does, so a group's prompt counts once, and adds the packed rows' tree mask.
TEST_CASE("plan: shared prompts count a packed group's prompt once, and its tree mask", "[plan][shared_prefix]") {
  const auto s = small_llama();
  plan::PlanInputs in;
  in.prompt_tokens = 64;
  const std::vector<std::string> base{"rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=8",
                                      "algorithm.num_minibatches=1"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return plan::plan_memory(s, config::load("", extra), in);
  };
  const auto plain = with({});
  CHECK(plain.micro_rows == 8);
  CHECK(plain.micro_tokens == 8 * 72);
  // Two groups of 4 pack whole ((64 + 32)^2 <= 4 x 72^2): 2 packs x (64 + 4 x 8) tokens through the layers.
  const auto shared = with({"train.shared_prefix=true", "algorithm.minibatch_groups=true"});
  CHECK(shared.micro_rows == 8);
  CHECK(shared.micro_tokens == 2 * 96);
  CHECK(term(shared.phases[2].terms, "layer inputs (checkpointed)") == 2 * 96 * 2 * 64 * 4);
  CHECK(term(shared.phases[1].terms, "tree mask (train.shared_prefix)") == 2 * 96 * 96);
  CHECK(term(shared.phases[2].terms, "tree mask (train.shared_prefix)") == 2 * 96 * 96);
  CHECK(shared.phases[2].peak_bytes < plain.phases[2].peak_bytes);
  // Rows shuffled one by one rarely meet their group in a micro-batch: without whole groups the plan stays unshared.
  const auto rows_shuffled = with({"train.shared_prefix=true"});
  CHECK(rows_shuffled.micro_tokens == 8 * 72);
  for (const auto& t : rows_shuffled.phases[2].terms) CHECK(t.name != "tree mask (train.shared_prefix)");
  // A budget that holds one packed group (96 <= 100 < 192) cuts one group a micro-batch.
  const auto budget = with({"train.shared_prefix=true", "algorithm.minibatch_groups=true",
                            "algorithm.micro_batch_tokens=100"});
  CHECK(budget.micro_rows == 4);
  CHECK(budget.micro_tokens == 96);
}

// The sampler's own rules (rollout/sampler.h) size the plan's rollout: rows in a KV budget, which schedule runs, and
// whether finished rows are copied out of the cache. Rows of this shape: 32 columns x 512 B = 16 KiB.
TEST_CASE("plan: the rollout's schedule and budget follow the sampler's rules", "[plan]") {
  const auto s = small_llama();
  plan::PlanInputs in;
  in.prompt_tokens = 8;
  auto rollout = [&](const std::string& mb, const std::string& continuous) {
    const auto cfg = config::load("", {"rollout.prompts_per_step=4", "rollout.group_size=4", "rollout.max_new_tokens=24",
                                       "rollout.kv_cache_mb=" + mb, "rollout.continuous_batching=" + continuous});
    return plan::plan_memory(s, cfg, in).phases[0].terms;
  };
  auto has = [](const std::vector<plan::Term>& ts, const std::string& name) {
    return std::any_of(ts.begin(), ts.end(), [&](const plan::Term& t) { return t.name == name; });
  };
  CHECK(rollout::rows_in_budget(100, 32, 16) == 3);
  CHECK(rollout::rows_in_budget(31, 32, 16) == 0);
  CHECK(rollout::schedule_for(16, 16, true, true) == rollout::Schedule::kAllRows);
  CHECK(rollout::schedule_for(16, 4, true, true) == rollout::Schedule::kSlotPool);
  CHECK(rollout::schedule_for(16, 4, true, false) == rollout::Schedule::kStaticBatches);
  CHECK(rollout::schedule_for(16, 4, false, true) == rollout::Schedule::kStaticBatches);
  // A slot_api 3 model on CUDA decodes every row in a slot pool (each row reads its own live keys), budget or not;
  // not with continuous batching off, nor without the slot methods.
  CHECK(rollout::schedule_for(16, 16, true, true, true) == rollout::Schedule::kSlotPool);
  CHECK(rollout::schedule_for(16, 16, false, true, true) == rollout::Schedule::kAllRows);
  CHECK(rollout::schedule_for(16, 16, true, false, true) == rollout::Schedule::kAllRows);
  CHECK(rollout::schedule_for(16, 4, true, true, true) == rollout::Schedule::kSlotPool);
  // Compaction: none until a quarter of the pool is free; to the running rows, or with CUDA graphs to a power of two
  // (a graph per pool size: 1 + log2(pool) captures at most). A 256-row pool draining one row at a time compacts 8
  // times, bucketed, and sizes only fall.
  CHECK(rollout::compacted_pool(200, 256, false) == 256);
  CHECK(rollout::compacted_pool(192, 256, false) == 192);
  CHECK(rollout::compacted_pool(192, 256, true) == 256);
  CHECK(rollout::compacted_pool(100, 256, true) == 128);
  CHECK(rollout::compacted_pool(0, 256, true) == 256);
  CHECK(rollout::compacted_pool(5, 12, true) == 8);
  CHECK(rollout::compacted_pool(1, 12, true) == 1);
  int64_t slots = 256, compactions = 0;
  for (int64_t running = 256; running >= 1; --running) {
    const int64_t next = rollout::compacted_pool(running, slots, true);
    CHECK(next <= slots);
    CHECK(next >= running);
    compactions += next != slots;
    slots = next;
  }
  CHECK(compactions == 8);
  CHECK(slots == 1);
  // 1 MiB holds all 16 rows (256 KiB): the sampler runs them at once and compacts by copying, continuous or not.
  CHECK(term(rollout("1", "true"), "KV cache") == 16 * 32 * 512);
  CHECK(term(rollout("1", "true"), "cache compaction copy") == 0.75 * 16 * 32 * 512);
  CHECK(term(rollout("0", "true"), "cache compaction copy") == 0.75 * 16 * 32 * 512);
  const auto config_with = [&](const std::string& mb) {
    return config::load("", {"rollout.prompts_per_step=64", "rollout.group_size=4", "rollout.max_new_tokens=24",
                             "rollout.kv_cache_mb=" + mb});
  };
  // 256 rows need 4 MiB: 1 MiB holds 64 of them, a slot pool compacted in place (no copy term).
  const auto pool = plan::plan_memory(s, config_with("1"), in).phases[0].terms;
  CHECK(term(pool, "KV cache") == 64 * 32 * 512);
  CHECK_FALSE(has(pool, "cache compaction copy"));
  CHECK(has(rollout("1", "false"), "cache compaction copy"));
}

TEST_CASE("plan: rollout ranks hold the policy and the batch's KV cache, training ranks hold no KV cache", "[plan]") {
  const auto s = small_llama();
  const double N = s.num_parameters();
  auto cfg = config::load("", {"rollout.prompts_per_step=4", "rollout.group_size=4", "rollout.max_new_tokens=24",
                               "algorithm.num_minibatches=2", "distributed.rollout_ranks=2"});
  plan::PlanInputs in;
  in.world_size = 4;  // 2 train, 2 sample
  in.prompt_tokens = 8;
  in.runtime_mb = 100;
  const auto t = plan::plan_memory(s, cfg, in);
  CHECK(t.rows_per_rank == 8);  // 4 prompts / 2 training ranks x 4
  REQUIRE(t.phases[0].name == "weight sync");
  CHECK(term(t.phases[0].terms, "weights for the rollout ranks (trainer 0)") == 4 * N);
  for (const auto& ph : t.phases)
    for (const auto& x : ph.terms) CHECK(x.name != "KV cache");
  const auto r = plan::plan_rollout_rank(s, cfg, in);
  CHECK(r.rows_per_rank == 8);  // 4 prompts / 2 rollout ranks x 4
  CHECK(term(r.resident, "weights (rollout dtype)") == 4 * N);
  CHECK(term(r.phases[0].terms, "KV cache") == 8 * 32 * 2 * 2 * 2 * 16 * 4);
  CHECK(r.peak_bytes == r.phases[0].peak_bytes);
  // bf16 sampling: half the rollout rank's weights and cache, half trainer 0's copy.
  auto bf = cfg;
  bf.rollout.dtype = config::RolloutDtype::kBFloat16;
  CHECK(term(plan::plan_rollout_rank(s, bf, in).resident, "weights (rollout dtype)") == 2 * N);
  CHECK(term(plan::plan_rollout_rank(s, bf, in).phases[0].terms, "KV cache") == 8 * 32 * 2 * 2 * 2 * 16 * 2);
  CHECK(term(plan::plan_memory(s, bf, in).phases[0].terms, "weights for the rollout ranks (trainer 0)") == 2 * N);
  for (const auto& x : plan::plan_memory(s, bf, in).resident) CHECK(x.name != "bf16 sampling copy");  // none sample
  // 3 training ranks cannot split 4 prompts: the run's own error.
  in.world_size = 5;
  CHECK_THROWS_WITH(plan::plan_memory(s, cfg, in), Catch::Contains("must be a multiple of the training ranks (3"));
  in.world_size = 2;
  CHECK_THROWS_WITH(plan::plan_rollout_rank(s, cfg, in), Catch::Contains("must leave at least one training rank"));
}

TEST_CASE("plan: LoRA's adapter count equals the adapters gspo makes, and the frozen base's terms", "[plan][lora]") {
  // Counted by formula from the shape against the adapters model/lora.h makes on the loaded module, dense and MoE.
  for (const auto& [file, experts] : {std::pair<std::string, bool>{"tiny.pt", false}, {"qwen3_moe_tiny.pt", true},
                                      {"qwen3_moe_tiny.pt", false}}) {
    INFO(file << " experts " << experts);
    auto policy = test::load_tiny(file);
    config::ModelOptions m;
    m.lora_rank = 3;
    m.lora_experts = experts;
    model::LoraSpec spec;
    spec.rank = 3;
    spec.experts = experts;
    const model::LoraAdapters lora(policy, spec);
    CHECK(plan::lora_count(plan::read_model_shape(test::model_path(file)), m).adapters ==
          static_cast<double>(lora.num_parameters()));
  }
  // By hand: a layer of small_llama at r = 4, r (in + out) a weight: q, o 4 x 128, k, v 4 x 96, gate, up, down 4 x 320.
  const auto s = small_llama();
  config::ModelOptions m;
  m.lora_rank = 4;
  CHECK(plan::lora_count(s, m).adapters == 2 * (2 * 512 + 2 * 384 + 3 * 1280));
  m.lora_targets = {"q_proj", "v_proj"};
  CHECK(plan::lora_count(s, m).adapters == 2 * (512 + 384));
  // Qwen3-8B at r = 32, every projection: 2,424,832 a layer x 36 (docs/lora.md); Qwen3-30B-A3B's attention only
  // (experts off): r (2 x (2048 + 4096) + 2 x (2048 + 512)) = 557,056 a layer x 48.
  m.lora_rank = 32;
  m.lora_targets = config::ModelOptions{}.lora_targets;
  CHECK(plan::lora_count(plan::read_hf_config(std::string(GSPO_SOURCE_DIR) + "/configs/hf/qwen3-8b.json"), m).adapters ==
        36.0 * 2424832);
  CHECK(plan::lora_count(plan::read_hf_config(std::string(GSPO_SOURCE_DIR) + "/configs/hf/qwen3-30b-a3b.json"), m)
            .adapters == 48.0 * 557056);
  // The plan: a frozen base (no gradients, masters or moments), 16 B an adapter parameter, a merged sampling copy.
  auto cfg = config::load("", {"rollout.prompts_per_step=4", "rollout.group_size=4", "rollout.max_new_tokens=24",
                               "algorithm.num_minibatches=2", "model.lora_rank=4"});
  plan::PlanInputs in;
  in.prompt_tokens = 8;
  const auto p = plan::plan_memory(s, cfg, in);
  const double N = s.num_parameters(), Na = 2 * (2 * 512 + 2 * 384 + 3 * 1280);
  CHECK(term(p.resident, "frozen base weights") == 4 * N);
  CHECK(term(p.resident, "LoRA adapters") == 16 * Na);
  // the copy's own tensors: the adapted weights (2 layers x 61440); the rest is the policy's (share_untargeted)
  CHECK(term(p.resident, "sampling copy (adapters merged)") == 2 * 61440 * 4);
  for (const auto& t : p.resident) CHECK((t.name != "gradients" && t.name != "AdamW moments" && t.name != "weights"));
  // the widest layer's targets (61600 - norms 128 - q/k norms 32 = 61440) merged, with their gradient in backward
  CHECK(term(p.phases[2].terms, "LoRA merged layer and its gradient") == 61440 * (2 * 4 + 4));

  // A KL penalty's reference is the frozen base itself (no reference model term); with another reference it is loaded.
  auto kl = cfg;
  kl.algorithm.kl_coef = 0.1;
  const auto p_kl = plan::plan_memory(s, kl, in);
  for (const auto& t : p_kl.resident) CHECK(t.name != "reference model");
  kl.algorithm.reference_model = "other.pt";
  CHECK(term(plan::plan_memory(s, kl, in).resident, "reference model") == 4 * N);

  // ZeRO-3 on 2 ranks: the base's shards (1/2 of the decoder layers; unit 0 whole, unsharded), the adapters under ZeRO-1 (4 + 4 +
  // (8 + 4) / 2 B), no sampling copy, and the rollout's gathered layers.
  auto z3 = cfg;
  z3.distributed.zero_stage = 3;
  z3.train.activation_checkpointing = true;
  in.world_size = 2;
  const auto p3 = plan::plan_memory(s, z3, in);
  double layers = 0;
  for (int64_t l = 0; l < s.num_layers; ++l) layers += static_cast<double>(s.layer_parameters(l));
  CHECK(term(p3.resident, "frozen base shards") == 4 * std::ceil(layers / 2));
  CHECK(term(p3.resident, "LoRA adapters") == 14 * Na);
  for (const auto& t : p3.resident) CHECK((t.name != "sampling copy (adapters merged)" && t.name != "ZeRO-3 shards"));
  for (const auto& ph : p3.phases)
    if (ph.name == "rollout") CHECK(term(ph.terms, "ZeRO-3 gathered layers") == 4 * layers);
}

TEST_CASE("plan: expert parallelism keeps 1/E of the experts, their moments sharded over the replicas", "[plan]") {
  // qwen3_moe_tiny: MoE layers 0 and 2 of 4 experts (hidden 32, expert MLP 24): 2 x 4 x 3 x 32 x 24 expert parameters
  const auto s = plan::read_model_shape(test::model_path("qwen3_moe_tiny.pt"));
  const double N = s.num_parameters(), Ne = 2 * 4 * 3 * 32 * 24, Nd = N - Ne;
  plan::PlanInputs in;
  in.world_size = 4;
  in.prompt_tokens = 8;
  in.runtime_mb = 100;
  auto at = [&](int64_t E) {
    return config::load("", {"rollout.prompts_per_step=4", "rollout.group_size=4", "rollout.max_new_tokens=24",
                             "distributed.zero_stage=1", "distributed.expert_parallel=" + std::to_string(E)});
  };
  const auto p = plan::plan_memory(s, at(2), in);  // groups of 2: each expert on 2 ranks (R = 2 replicas)
  const double kept = Nd + Ne / 2;
  CHECK(term(p.resident, "weights") == 4 * kept);
  CHECK(term(p.resident, "gradients") == 4 * kept);
  CHECK(term(p.resident, "AdamW moments") == 8 * (std::ceil(Nd / 4) + std::ceil(Ne / 2 / 2)));
  // the rollout gathers no expert: its exchange holds the group's rows of a pass (the largest: 1 prompt of 8 tokens a
  // rank, prefilled) x (hidden x (4 + 4) B + 4 experts x 4 B)
  CHECK(term(p.phases[0].terms, "rollout expert exchange") == 2 * 8 * (32 * 8 + 4 * 4));
  CHECK(term(p.phases[1].terms, "local experts stacked") == 2 * 3 * 32 * 24 * 4);  // one layer's 2 local experts
  // rows out and back: the micro-batch's tokens x top-2 x hidden x 4 B x 2
  CHECK(term(p.phases[1].terms, "expert exchange rows") == p.micro_tokens * 2 * 32 * 4 * 2.0);
  CHECK(std::none_of(p.not_built.begin(), p.not_built.end(),
                     [](const plan::Term& n) { return n.name.find("expert") != std::string::npos; }));
  // without expert parallelism, the plan says what it would give
  const auto none = plan::plan_memory(s, at(1), in);
  CHECK(term(none.resident, "weights") == 4 * N);
  CHECK(std::any_of(none.notes.begin(), none.notes.end(),
                    [](const std::string& n) { return n.find("with distributed.expert_parallel 4") == 0; }));
  CHECK_THROWS_WITH(plan::plan_memory(s, at(3), in), Catch::Contains("must divide --world-size (4)"));
}

TEST_CASE("plan: a reward model's weights and scoring pass are counted (an 8B reward model beside an 8B policy)",
          "[plan][reward_model]") {
  // Qwen3-8B's config.json sizes, for the policy and a reward model of the same shape.
  const std::string qwen3_8b = R"({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096,
      "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
      "intermediate_size": 12288, "tie_word_embeddings": false})";
  const std::string dir = test::fresh_dir("plan_reward");
  core::ensure_dir(dir);
  std::ofstream(dir + "/config.json") << qwen3_8b;
  const auto policy = plan::shape_from_hf_config(qwen3_8b, "config.json");
  const auto rm = plan::read_reward_model_shape(dir + "/config.json");
  // By hand: a layer is 2 norms 2H + q H x 32 x 128 + k, v 2 x H x 8 x 128 + o 32 x 128 x H + q/k norms 2 x 128 +
  // MLP 3 x H x I; the reward model has the embedding V x H, the final norm H and the score head H (no LM head).
  const double H = 4096, I = 12288, V = 151936;
  const double layer = 2 * H + H * 4096 + 2 * H * 1024 + 4096 * H + 256 + 3 * H * I;
  const double rm_params = V * H + H + 36 * layer + H;
  CHECK(static_cast<double>(plan::reward_model_parameters(rm)) == rm_params);
  CHECK(rm_params == Approx(7.57e9).epsilon(0.01));  // an "8B" reward model without its 0.6B LM head

  auto cfg = config::load("", {"rollout.prompts_per_step=8", "rollout.group_size=8", "rollout.max_new_tokens=8192",
                               "distributed.zero_stage=3", "train.activation_checkpointing=true",
                               "reward.components=[\"model:1\", \"math:0\"]", "reward.model_path=" + dir + "/config.json",
                               "reward.model_batch_tokens=32768", "model.device=cuda"});
  plan::PlanInputs in;
  in.world_size = 8;
  in.prompt_tokens = 1024;
  in.runtime_mb = 500;
  in.scorers = {{config::RewardKind::kModel, rm}};
  const auto with = plan::plan_memory(policy, cfg, in);
  in.scorers.clear();
  const auto without = plan::plan_memory(policy, cfg, in);
  CHECK(term(with.resident, "reward model") == 2 * rm_params);  // bf16 on CUDA (model_dtype auto)
  CHECK(with.resident_bytes == Approx(without.resident_bytes + 2 * rm_params));
  const plan::PhasePlan* scoring = nullptr;
  for (const auto& ph : with.phases)
    if (ph.name == "reward scoring") scoring = &ph;
  REQUIRE(scoring != nullptr);
  // a pass: 32768 tokens x (2H + q/k/v (32 + 16) x 128 + attention out 32 x 128 + 3I) x 2 B
  CHECK(term(scoring->terms, "reward model scoring pass") == 32768.0 * (2 * H + 48 * 128 + 4096 + 3 * I) * 2);
  CHECK(with.peak_bytes >= scoring->peak_bytes);
  CHECK(with.peak_bytes > without.peak_bytes);

  cfg.reward.scorer.dtype = config::ScoreDtype::kFloat32;
  in.scorers = {{config::RewardKind::kModel, rm}};
  CHECK(term(plan::plan_memory(policy, cfg, in).resident, "reward model") == 4 * rm_params);
  // From an export's manifest: the count equals the loaded reward model's parameters.
  const auto exported = plan::read_reward_model_shape(test::model_path("reward/reward_byte.pt"));
  CHECK(plan::reward_model_parameters(exported) ==
        model::RewardModel::load(test::model_path("reward/reward_byte.pt"), c10::Device(c10::kCPU), c10::kFloat)
            .num_parameters());
  // A policy is not a reward model: refused naming the key.
  CHECK_THROWS_WITH(plan::read_reward_model_shape(test::model_path("tiny.pt")), Catch::Contains("reward.model_path"));
}
TEST_CASE("plan: a judge's weights and its pass (working set and KV cache) are counted", "[plan][judge]") {
  const std::string qwen3_8b = R"({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096,
      "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
      "intermediate_size": 12288, "tie_word_embeddings": false})";
  const auto policy = plan::shape_from_hf_config(qwen3_8b, "config.json");
  const auto judge = plan::shape_from_hf_config(qwen3_8b, "config.json");  // an 8B judge beside an 8B policy
  const double H = 4096, I = 12288, V = 151936;
  const double layer = 2 * H + H * 4096 + 2 * H * 1024 + 4096 * H + 256 + 3 * H * I;
  const double params = 2 * V * H + H + 36 * layer;  // embedding, LM head (untied), final norm, layers
  CHECK(static_cast<double>(judge.num_parameters()) == params);
  auto cfg = config::load("", {"rollout.prompts_per_step=8", "rollout.group_size=8", "rollout.max_new_tokens=8192",
                               "distributed.zero_stage=3", "train.activation_checkpointing=true",
                               "reward.components=[\"judge:1\", \"math:0\"]", "reward.judge_path=j.pt",
                               "reward.model_batch_tokens=16384", "model.device=cuda"});
  plan::PlanInputs in;
  in.world_size = 8;
  in.prompt_tokens = 1024;
  in.runtime_mb = 500;
  in.scorers = {{config::RewardKind::kJudge, judge}};
  const auto with = plan::plan_memory(policy, cfg, in);
  in.scorers.clear();
  const auto without = plan::plan_memory(policy, cfg, in);
  CHECK(term(with.resident, "judge") == 2 * params);  // bf16 on CUDA
  CHECK(with.resident_bytes == Approx(without.resident_bytes + 2 * params));
  const plan::PhasePlan* judging = nullptr;
  for (const auto& ph : with.phases)
    if (ph.name == "judging") judging = &ph;
  REQUIRE(judging != nullptr);
  // 16384 tokens x (working set 2H + q/k/v + attention out + 3I, and KV: 2 x 36 layers x 8 heads x 128) x 2 B
  CHECK(term(judging->terms, "judge pass") == 16384.0 * (2 * H + 48 * 128 + 4096 + 3 * I + 2 * 36 * 8 * 128) * 2);
  CHECK(term(judging->terms, "judge pass") == Approx(4.23e9).epsilon(0.01));  // docs/verifiers.md: 1.8 + 2.4 GB
  // From an export's manifest: the count equals the loaded judge's parameters.
  const auto exported = plan::read_model_shape(test::model_path("judge/judge_qwen3.pt"));
  CHECK(exported.num_parameters() == model::Policy::load(test::model_path("judge/judge_qwen3.pt")).num_parameters());
}


TEST_CASE("plan: a distillation teacher's weights on every training rank and its pass, by hand", "[plan][distill]") {
  // Qwen3-1.7B (tied head): 28 layers x 50,336,000 + embedding 151936 x 2048 + final norm 2048 = 1.72B (the model
  // card's 1.7B, 1.4B without the embedding); Qwen3-8B teaches it.
  const auto student = plan::read_hf_config(std::string(GSPO_SOURCE_DIR) + "/configs/hf/qwen3-1.7b.json");
  CHECK(student.num_parameters() == 1720574976);
  const auto teacher = plan::read_hf_config(std::string(GSPO_SOURCE_DIR) + "/configs/hf/qwen3-8b.json");
  auto cfg = config::load("", {"model.device=cuda", "model.dtype=bfloat16", "algorithm.loss=gspo_token",
                               "distill.teacher=t.pt", "rollout.prompts_per_step=8", "rollout.group_size=4",
                               "rollout.max_new_tokens=1024", "algorithm.num_minibatches=2"});
  plan::PlanInputs in;
  in.world_size = 1;
  in.prompt_tokens = 128;
  const auto without = plan::plan_memory(student, cfg, in);
  in.teacher = teacher;
  const auto p = plan::plan_memory(student, cfg, in);
  CHECK(term(p.resident, "distillation teacher") == 8190735360.0 * 2);  // distill.dtype auto: bf16 on CUDA
  CHECK(p.resident_bytes == without.resident_bytes + 8190735360.0 * 2);
  REQUIRE(p.phases.size() == without.phases.size() + 1);
  CHECK(p.phases[2].name == "teacher");
  // 16 rows x (128 + 1024) tokens a micro-batch; Qwen3-8B's layer: 2 x 4096 + (32 + 16) x 128 + 32 x 128 + 3 x 12288
  const double T = 16 * (128 + 1024), width = 2 * 4096 + 48 * 128 + 32 * 128 + 3 * 12288;
  CHECK(term(p.phases[2].terms, "teacher layer forward") == T * width * 2);
  CHECK(term(p.phases[2].terms, "teacher head") == 1024 * 151936.0 * (2 + 8));  // a 1024-token chunk of the head
  cfg.distill.dtype = config::ScoreDtype::kFloat32;
  CHECK(term(plan::plan_memory(student, cfg, in).resident, "distillation teacher") == 8190735360.0 * 4);
}
