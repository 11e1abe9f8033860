// The config parser: defaults, every error kind with its documented message, overrides, printing round-trip.
#include <catch2/catch.hpp>

#include "gspo/config/load.h"
#include "gspo/config/suggest.h"
#include "gspo/core/error.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/rollout/sampling_config.h"
#include "helpers.h"

using namespace gspo;

using test::config_error_of;

TEST_CASE("defaults are valid and loss-dependent clip ranges resolve", "[config]") {
  auto c = config::load("");
  CHECK(c.algorithm.loss == config::LossKind::kGspo);
  CHECK(c.algorithm.clip_low == Approx(3e-4));
  CHECK(c.algorithm.clip_high == Approx(4e-4));
  CHECK(c.algorithm.num_minibatches == 4);
  auto g = config::load_text("algorithm:\n  loss: grpo\n", "x.yaml");
  CHECK(g.algorithm.clip_low == Approx(0.2));
  CHECK(g.algorithm.clip_high == Approx(0.28));
  auto explicit_clip = config::load_text("algorithm:\n  loss: grpo\n  clip_high: 0.3\n", "x.yaml");
  CHECK(explicit_clip.algorithm.clip_high == Approx(0.3));
}

TEST_CASE("unknown keys name the line and suggest the nearest key", "[config]") {
  CHECK(config_error_of("rollout:\n  grup_size: 4\n") ==
        "invalid config:\n  run.yaml:2: unknown key 'rollout.grup_size'; did you mean 'rollout.group_size'?");
  CHECK_THAT(config_error_of("rolout:\n  group_size: 4\n"), Catch::Contains("run.yaml:1: unknown section 'rolout'; did you mean 'rollout'?"));
  // A key that belongs to another section.
  CHECK_THAT(config_error_of("train:\n  lr: 0.1\n"), Catch::Contains("unknown key 'train.lr'; did you mean 'optimizer.lr'?"));
}

TEST_CASE("wrong types and out-of-range values name key, rule, value and line", "[config]") {
  CHECK(config_error_of("\nrollout:\n  group_size: many\n") ==
        "invalid config:\n  run.yaml:3: rollout.group_size must be an integer (got 'many')");
  CHECK(config_error_of("rollout:\n  group_size: 1\n") == "invalid config:\n  run.yaml:2: rollout.group_size must be in [2, 65536] (got 1)");
  // A key with an empty value is named at its own line (yaml-cpp marks the empty value where the next token begins).
  CHECK_THAT(config_error_of("rollout:\n  group_size:\n  top_p: 0.5\n"), Catch::Contains("run.yaml:2: rollout.group_size must be"));
  CHECK_THAT(config_error_of("rollout:\n  temperature: 1.0\n\n\n  group_size:\n"),
             Catch::Contains("run.yaml:5: rollout.group_size must be"));
  CHECK_THAT(config_error_of("rollout:\n  top_p: 1.5\n"), Catch::Contains("run.yaml:2: rollout.top_p must be in (0, 1] (got 1.5)"));
  CHECK_THAT(config_error_of("rollout:\n  top_p: 0\n"), Catch::Contains("run.yaml:2: rollout.top_p must be in (0, 1] (got 0)"));
  // Exclusive upper bounds: the key that is wrong, with its value (beta2 = 1 used to be blamed on beta1).
  CHECK(config_error_of("optimizer:\n  beta2: 1\n") == "invalid config:\n  run.yaml:2: optimizer.beta2 must be in [0, 1) (got 1)");
  CHECK(config_error_of("optimizer:\n  beta1: 0\n  beta2: 0.999999\n") == "<no error>");
  CHECK_THAT(config_error_of("rollout:\n  temperature: [1, 2]\n"), Catch::Contains("rollout.temperature must be a number (got a list)"));
  CHECK_THAT(config_error_of("data:\n  shuffle: maybe\n"), Catch::Contains("data.shuffle must be true or false (got 'maybe')"));
  CHECK_THAT(config_error_of("algorithm:\n  loss: gpso\n"),
             Catch::Contains("run.yaml:2: algorithm.loss must be one of gspo, gspo_token, grpo (got \"gpso\"); did you mean 'gspo'?"));
  CHECK_THAT(config_error_of("algorithm:\n  micro_batch_tokens: -64\n"),
             Catch::Contains("run.yaml:2: algorithm.micro_batch_tokens must be >= 0 (got -64)"));
  CHECK(config_error_of("algorithm:\n  micro_batch_tokens: 1\n") == "<no error>");  // no minimum: long rows run alone
  CHECK_THAT(config_error_of("rollout: 3\n"), Catch::Contains("section 'rollout' must be a mapping"));
  CHECK_THAT(config_error_of("- a\n- b\n"), Catch::Contains("the top level must be a mapping"));
}

TEST_CASE("all errors are reported at once", "[config]") {
  auto msg = config_error_of("rollout:\n  group_size: 1\n  top_k: -1\noptimizer:\n  lr: 0\n");
  CHECK_THAT(msg, Catch::StartsWith("3 config errors:"));
  CHECK_THAT(msg, Catch::Contains("run.yaml:2: rollout.group_size"));
  CHECK_THAT(msg, Catch::Contains("run.yaml:3: rollout.top_k must be >= 0 (got -1)"));
  CHECK_THAT(msg, Catch::Contains("run.yaml:5: optimizer.lr must be > 0 (got 0)"));
}

TEST_CASE("optimizer.state_bits is 8 or 32 under every engine", "[config][adamw8bit]") {
  CHECK(config_error_of("optimizer:\n  state_bits: 16\n") ==
        "invalid config:\n  run.yaml:2: optimizer.state_bits must be 8 or 32 (got 16)");
  CHECK_THAT(config_error_of("optimizer:\n  state_bits: 4\n"),
             Catch::Contains("run.yaml:2: optimizer.state_bits must be in [8, 32] (got 4)"));
  CHECK(config_error_of("optimizer:\n  state_bits: 8\ndistributed:\n  zero_stage: 1\n") == "<no error>");
  CHECK(config_error_of("optimizer:\n  state_bits: 8\ndistributed:\n  zero_stage: 3\ntrain:\n"
                        "  activation_checkpointing: true\n") == "<no error>");
  CHECK(config_error_of("optimizer:\n  state_bits: 8\n") == "<no error>");
  CHECK(config_error_of("optimizer:\n  state_bits: 8\nmodel:\n  lora_rank: 4\n") == "<no error>");
}

TEST_CASE("cross-field rules name both keys and the line", "[config]") {
  CHECK(config_error_of("rollout:\n  prompts_per_step: 3\n  group_size: 2\nalgorithm:\n  num_minibatches: 4\n") ==
        "invalid config:\n  run.yaml:5: algorithm.num_minibatches (4) must divide the rollout batch "
        "rollout.prompts_per_step * rollout.group_size = 6");
  CHECK_THAT(config_error_of("data:\n  task: jsonl\n"), Catch::Contains("run.yaml:2: data.path must name a dataset"));
  CHECK_THAT(config_error_of("data:\n  prompt_template: 'Q: {question}'\n"), Catch::Contains("data.prompt_template must contain {prompt}"));
  CHECK_THAT(config_error_of("model:\n  device: gpu\n"), Catch::Contains("model.device must be cpu, cuda, cuda:N or auto"));
  CHECK(config_error_of("rollout:\n  max_new_tokens: 8\n  min_new_tokens: 9\n") ==
        "invalid config:\n  run.yaml:3: rollout.min_new_tokens (9) must be <= rollout.max_new_tokens (8)");
  CHECK(config_error_of("rollout:\n  min_new_tokens: -1\n") ==
        "invalid config:\n  run.yaml:2: rollout.min_new_tokens must be >= 0 (got -1)");
  CHECK(config_error_of("rollout:\n  min_new_tokens: 8\n  max_new_tokens: 8\n") == "<no error>");
  // The eval's bounds may each be inherited from rollout: the message says which.
  CHECK_THAT(config_error_of("eval:\n  min_new_tokens: 20\n"),
             Catch::Contains("run.yaml:2: the eval's min_new_tokens (20) must be <= its max_new_tokens (16, from "
                             "rollout.max_new_tokens)"));
  CHECK_THAT(config_error_of("rollout:\n  min_new_tokens: 10\neval:\n  max_new_tokens: 4\n"),
             Catch::Contains("run.yaml:4: the eval's min_new_tokens (10, from rollout.min_new_tokens) must be <= its "
                             "max_new_tokens (4)"));
  CHECK(config_error_of("rollout:\n  min_new_tokens: 10\neval:\n  max_new_tokens: 4\n  min_new_tokens: 0\n") ==
        "<no error>");
}

TEST_CASE("set overrides (--set) change any field and are checked like the file", "[config]") {
  auto c = config::load_text("rollout:\n  group_size: 4\n", "run.yaml",
                             {"rollout.group_size=8", "rollout.stop=[\"\\n\", END]", "algorithm.loss=grpo"});
  CHECK(c.rollout.group_size == 8);
  CHECK(c.rollout.stop == std::vector<std::string>{"\n", "END"});
  CHECK(c.algorithm.clip_low == Approx(0.2));
  CHECK(c.origin.at("rollout.group_size") == "--set rollout.group_size=8");
  CHECK(config_error_of("", {"rollout.group_size=x"}) ==
        "invalid config:\n  --set rollout.group_size=x: rollout.group_size must be an integer (got 'x')");
  CHECK_THAT(config_error_of("", {"rollout.groupsize=3"}), Catch::Contains("did you mean 'rollout.group_size'?"));
  CHECK_THAT(config_error_of("", {"group_size=3"}), Catch::Contains("expected section.key=value"));
  CHECK_THAT(config_error_of("", {"nothing"}), Catch::Contains("expected section.key=value"));
}

TEST_CASE("non-YAML text and unreadable files are clear errors", "[config]") {
  CHECK_THAT(config_error_of("rollout:\n  group_size: [1, 2\n"), Catch::Contains("run.yaml:"));
  CHECK_THAT(config_error_of("rollout:\n  group_size: [1, 2\n"), Catch::Contains("not valid YAML"));
  CHECK_THROWS_AS(config::load("/nonexistent/run.yaml"), IoError);
  CHECK_THROWS_WITH(config::load("/nonexistent/run.yaml"), Catch::Contains("cannot read config file '/nonexistent/run.yaml'"));
}

TEST_CASE("the printed config reads back to the same values", "[config]") {
  auto c = config::load_text("rollout:\n  temperature: 0.7\n  stop: [\"\\n\\n\", \"#\"]\noptimizer:\n  lr: 3.0e-6\n"
                             "data:\n  prompt_template: \"Q: {prompt}\\nA:\"\n", "x.yaml");
  auto text = config::to_yaml(c);
  auto again = config::load_text(text, "printed.yaml");
  CHECK(config::to_yaml(again) == text);
  CHECK(again.rollout.temperature == c.rollout.temperature);
  CHECK(again.optimizer.lr == c.optimizer.lr);
  CHECK(again.rollout.stop == c.rollout.stop);
  CHECK(again.data.prompt_template == "Q: {prompt}\nA:");
  // Every option appears in the printout and the reference.
  auto ref = config::reference_markdown();
  for (const auto& key : config::all_keys()) {
    CHECK_THAT(ref, Catch::Contains("`" + key + "`"));
    CHECK_THAT(text, Catch::Contains(key.substr(key.find('.') + 1) + ":"));
  }
}

TEST_CASE("edit distance suggestions", "[config]") {
  CHECK(config::edit_distance("kitten", "sitting") == 3);
  CHECK(config::nearest("grup_size", {"group_size", "top_k"}) == "group_size");
  CHECK(config::nearest("zzzzzz", {"group_size", "top_k"}).empty());
}

// #53 item 2: rollout.cuda_graphs is auto by default (graphs on a CUDA device whenever the model can), true or false
// as before; what the sampler is given follows it (on a CPU every value decodes eagerly).
TEST_CASE("rollout.cuda_graphs: auto by default, true and false read, other values refused", "[config]") {
  CHECK(config::load_text("", "run.yaml").rollout.cuda_graphs == config::CudaGraphs::kAuto);
  CHECK(config::load_text("rollout:\n  cuda_graphs: true\n", "run.yaml").rollout.cuda_graphs == config::CudaGraphs::kOn);
  CHECK(config::load_text("rollout:\n  cuda_graphs: false\n", "run.yaml").rollout.cuda_graphs ==
        config::CudaGraphs::kOff);
  CHECK(config::load_text("", "run.yaml", {"rollout.cuda_graphs=false"}).rollout.cuda_graphs == config::CudaGraphs::kOff);
  CHECK_THAT(config_error_of("rollout:\n  cuda_graphs: always\n"),
             Catch::Contains("run.yaml:2: rollout.cuda_graphs must be one of auto, true, false (got \"always\")"));
  CHECK(rollout::sampling_params(config::load_text("", "run.yaml")).cuda_graphs == config::CudaGraphs::kAuto);
}
