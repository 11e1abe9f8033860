// Typed options, one struct per YAML section. Each struct's visit() is the single table that drives YAML
// parsing, --set overrides, per-field validation, `gspo config` printing and docs/config.md: a field added
// here exists everywhere at once. Every field has a default (its declaration) and one doc, its table row: the
// fields carry no comment of their own, so the two cannot drift (they had: logging.progress).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gspo/config/choices.h"
#include "gspo/config/options_distill.h"
#include "gspo/config/options_parallel.h"
#include "gspo/config/options_reward.h"
#include "gspo/config/rule.h"
#include "gspo/config/value_text.h"

namespace gspo::config {

struct ModelOptions {
  std::string path = "";
  std::string device = "cpu";
  Dtype dtype = Dtype::kFloat32;
  int64_t lora_rank = 0;
  double lora_alpha = 32;
  double lora_dropout = 0;
  std::vector<std::string> lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  bool lora_experts = false;
  std::string adapter = "";

  template <class V>
  void visit(V&& v) {
    v("path", path, "TorchScript policy file (.pt) meeting docs/model-contract.md", any());
    v("device", device, "cpu, cuda, cuda:N, or auto (cuda when available)", any());
    v("dtype", dtype, "training weights: float32, or bfloat16 (forward/backward in bf16; float32 master weights, "
      "gradients accumulated in float32, float32 AdamW state)", choice_rule(dtype));
    v("lora_rank", lora_rank, "low-rank adapters (docs/lora.md): rank r of each adapter; 0 = off (full fine-tuning). "
      "With r > 0 the base weights are frozen in model.dtype (no gradients, masters or moments) and only float32 "
      "adapters train, W + (lora_alpha / r) B A merged into each decoder layer as it runs; checkpoints hold the "
      "adapters and the base's path and fingerprint", at_least(0));
    v("lora_alpha", lora_alpha, "LoRA scaling numerator: the update is (lora_alpha / lora_rank) B A (PEFT's "
      "lora_alpha)", greater_than(0));
    v("lora_dropout", lora_dropout, "dropout on the adapters' input (PEFT's lora_dropout); only 0: the adapters are "
      "merged into the weights, where no input dropout applies (RL recipes run LoRA without dropout)",
      from_below(0, 1));
    v("lora_targets", lora_targets, "decoder-layer projections that get adapters (PEFT's target_modules, matched to "
      "the last name before .weight): any of q_proj k_proj v_proj o_proj gate_proj up_proj down_proj; the default "
      "is all of them ('all-linear'); the embedding, the head and an MoE router never", any());
    v("lora_experts", lora_experts, "MoE models: every expert's projections get adapters too (routers never)",
      any());
    v("adapter", adapter, "a directory of low-rank adapters trained on model.path (a gspo checkpoint with "
      "adapter.pt): gspo eval merges them into the base; gspo train starts its adapters from them (lora_rank as "
      "they were trained) or, with lora_rank 0, fine-tunes the merged model; empty = none", any());
  }
};

struct TokenizerOptions {
  std::string path = "";
  template <class V>
  void visit(V&& v) {
    v("path", path, "tokenizer spec file; empty = the tokenizer embedded in the model file", any());
  }
};

// One entry of data.mix: a dataset and its share of the prompts (data/cursor.h states the sampling rule).
struct MixEntry {
  std::string path = "";
  double weight = 0;
  std::string prompt_key = "";
  std::string answer_key = "";

  template <class V>
  void visit(V&& v) {
    v("path", path, "the dataset: a JSONL, JSON or parquet file, or a directory of parquet shards", any());
    v("weight", weight, "its share of the prompts; the weights of data.mix sum to 1", above_up_to(0, 1));
    v("prompt_key", prompt_key, "the field holding its prompt; empty = data.prompt_key", any());
    v("answer_key", answer_key, "the field holding its reference answer; empty = data.answer_key", any());
  }
};
template <>
struct IsRecord<MixEntry> : std::true_type {};

struct DataOptions {
  Task task = Task::kArithmetic;
  std::string path = "";
  std::vector<MixEntry> mix = {};
  std::string prompt_key = "auto";
  std::string answer_key = "answer";
  std::string source_key = "data_source";
  std::string prompt_template = "{prompt}";
  ChatTemplate chat_template = ChatTemplate::kNone;
  std::string system_prompt = "";
  bool enable_thinking = true;
  bool shuffle = true;
  int64_t seed = 1234;
  int64_t max_operand = 9;
  std::string operators = "+";
  int64_t num_prompts = 0;
  int64_t holdout = 0;
  Overlong overlong_prompts = Overlong::kSkip;
  // Not keys: what chat_template auto renders, resolved from the loaded model at start-up (io::resolve_chat_template):
  // its Jinja template, where that came from (for errors), and the bos_token / eos_token strings the template sees.
  std::string chat_template_source, chat_template_origin, chat_bos_token, chat_eos_token;

  template <class V>
  void visit(V&& v) {
    v("task", task, "arithmetic (built-in, exact-match rewards) or jsonl (prompt/answer rows from data.path or data.mix)",
      choice_rule(task));
    v("path", path, "the dataset (task = jsonl): a JSONL file (one object per line), a JSON file (an array of rows, "
      "or {\"data\": [...]}), a parquet file or a directory of parquet shards", any());
    v("mix", mix, "several datasets mixed by weight instead of path (task = jsonl): a list of mappings with the keys "
      "data.mix[].*; after n prompts each has given floor or ceil of n * weight of them, each taken in its own "
      "(shuffled) epoch order, so a small set with a large weight repeats; empty = data.path alone", any());
    v("prompt_key", prompt_key, "the row's field holding the prompt: a string, or a list of chat messages ({role, "
      "content}: TRL's conversational format, verl's prompt column); a dotted path reaches into objects "
      "(extra_info.question); auto = the first of prompt, problem, question, description (APPS)", any());
    v("answer_key", answer_key, "the row's field holding the reference answer, a dotted path allowed "
      "(reward_model.ground_truth, as verl's preprocessing writes it); may be absent in rows that carry code tests",
      any());
    v("source_key", source_key, "field naming each row's data source (verl's data_source; a dotted path as the other "
      "keys): with reward.kind auto, rows that carry one are graded by their source's verifier (reward.sources) and "
      "the step's metrics are split by source; \"\" = none read", any());
    v("prompt_template", prompt_template, "template applied to every prompt; {prompt} is replaced by it", any());
    v("chat_template", chat_template, "auto (the model's own Jinja chat_template, from the export's "
      "tokenizer_config.json or chat_template.jinja, rendered as transformers' apply_chat_template renders it: "
      "system_prompt, the templated prompt as the user turn, the generation prompt, enable_thinking), "
      "none (the templated prompt as raw text), chatml (Qwen3's chat template: "
      "optional system message, the templated prompt as the user message, assistant generation prompt; "
      "enable_thinking applies), qwen2.5 (Qwen2.5-Instruct's: its default system message when system_prompt is "
      "empty) or deepseek_r1 (DeepSeek-R1-Distill's <｜User｜>/<｜Assistant｜> format); each equals Hugging Face's "
      "apply_chat_template for that model", choice_rule(chat_template));
    v("system_prompt", system_prompt, "chat formats: system message; empty = none (qwen2.5: Qwen2.5's default one)",
      any());
    v("enable_thinking", enable_thinking, "chatml: false appends an empty <think></think> block (Qwen3 non-thinking mode)",
      any());
    v("shuffle", shuffle, "reshuffle the prompt order at every epoch", any());
    v("seed", seed, "seed of shuffling and of the synthetic task", at_least(0));
    v("max_operand", max_operand, "arithmetic task: operands are drawn from [0, max_operand]", between(1, 1000000));
    v("operators", operators, "arithmetic task: operators to draw from, any of + - *", any());
    v("num_prompts", num_prompts, "arithmetic task: number of distinct problems to train on (drawn without "
      "replacement); 0 = every distinct problem not held out", at_least(0));
    v("holdout", holdout, "arithmetic task: distinct problems never trained on; their greedy accuracy is reported "
      "at the end of training (0 = none)", at_least(0));
    v("overlong_prompts", overlong_prompts, "prompts whose tokens plus rollout.max_new_tokens exceed the model's "
      "max_seq_len, checked at load after templating: skip (dropped with a warning and a count) or error (refused, "
      "naming file:line)", choice_rule(overlong_prompts));
  }
};

struct RolloutOptions {
  int64_t prompts_per_step = 16;
  int64_t group_size = 8;
  int64_t max_new_tokens = 16;
  int64_t min_new_tokens = 0;
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;
  std::vector<std::string> stop = {};
  int64_t seed = 0;
  CudaGraphs cuda_graphs = CudaGraphs::kAuto;
  int64_t kv_cache_mb = 0;
  double kv_cache_fraction = 0;
  bool continuous_batching = true;
  RolloutDtype dtype = RolloutDtype::kSame;
  bool dynamic_sampling = false;
  int64_t dynamic_max_rounds = 3;

  template <class V>
  void visit(V&& v) {
    v("prompts_per_step", prompts_per_step, "prompts per rollout batch (B)", between(1, 1 << 20));
    v("group_size", group_size, "responses sampled per prompt (G); group advantages need >= 2", between(2, 1 << 16));
    v("max_new_tokens", max_new_tokens, "maximum response length in tokens", between(1, 1 << 22));
    v("min_new_tokens", min_new_tokens, "minimum response length in tokens (transformers' min_new_tokens, vLLM's "
      "min_tokens): EOS cannot be drawn as one of the first min_new_tokens tokens (it is masked before top-k/top-p; "
      "the recorded log-probs stay the unmasked policy's, as with top-k/top-p), and stop strings are not checked "
      "until the response has min_new_tokens tokens (one completed by token min_new_tokens or later ends it); "
      "= max_new_tokens gives every response exactly that length; 0 = off; at most max_new_tokens", at_least(0));
    v("temperature", temperature, "sampling temperature; 0 = greedy argmax", between(0, 100));
    v("top_p", top_p, "nucleus sampling: smallest set of tokens with this probability mass; 1 disables",
      above_up_to(0, 1));
    v("top_k", top_k, "sample among the k most likely tokens; 0 disables", at_least(0));
    v("stop", stop, "stop strings: a response ends with the token that completes one of them", any());
    v("seed", seed, "sampler seed (same seed, same samples)", at_least(0));
    v("cuda_graphs", cuda_graphs, "CUDA: replay each decode step as a CUDA graph captured from the model's "
      "decode_slots (slot pool) or decode_static (static batch) (fewer launches; recaptured when finished rows are "
      "dropped, the pool in powers of two so at most 1 + log2(rows) captures a call; eager, with a warning, when "
      "capture fails). auto = on a CUDA device whenever the model has the method (4.6x eager's speed at 64 rows on an "
      "H200) and, for an MoE model, its export routes decode steps without reading back to the host (manifest "
      "moe_capture_rows: steps of at most that many rows; older MoE exports stay eager), true = always try, warning "
      "when the model cannot, false = eager; no effect on CPU", choice_rule(cuda_graphs));
    v("kv_cache_mb", kv_cache_mb, "KV-cache budget of the sampler in MiB (vLLM's KV-cache memory): the cache holds "
      "at most as many rows of (longest prompt + max_new_tokens) columns as fit, and rows wait in a queue for a row "
      "of cache to free up (continuous_batching); 0 = every row of the rank's batch at once, at full length (on the "
      "CPU also the slowest past a few dozen rows: every step reads every row's cache; docs/performance.md). A budget "
      "below one row is an error that names the row size", at_least(0));
    v("kv_cache_fraction", kv_cache_fraction, "CUDA only: the KV-cache budget as this fraction of the device memory "
      "free when each rollout starts (driver-free plus what LibTorch's allocator holds unused; like vLLM's "
      "gpu_memory_utilization, but of the memory left after weights, optimizer state and activations); 0 = off; "
      "exclusive with kv_cache_mb", between(0, 0.95));
    v("continuous_batching", continuous_batching, "under a KV-cache budget: when a response ends, its row of cache "
      "takes the next waiting sample in the same decode loop, and a prompt is prefilled once for its group (models "
      "with the slot methods of docs/model-contract.md); false, or a model without them: static batches of as many "
      "rows as the budget holds, each run until its longest response ends", any());
    v("dtype", dtype, "weights the sampler runs with: same (the policy itself) or bfloat16 (a bf16 copy of the "
      "policy, refreshed from it before every rollout; with model.dtype float32 this is bf16 sampling against "
      "float32 training, whose mismatch algorithm.is_correction corrects)", choice_rule(dtype));
    v("dynamic_sampling", dynamic_sampling, "DAPO dynamic sampling: when groups whose rewards are all equal (no "
      "learning signal) leave fewer than prompts_per_step groups with a signal, sample more prompts, up to "
      "dynamic_max_rounds extra rounds, and keep the groups with a signal", any());
    v("dynamic_max_rounds", dynamic_max_rounds, "dynamic sampling: extra generation rounds at most per step; "
      "a batch still short afterwards is filled with groups without a signal", between(1, 100));
  }
};

struct AlgorithmOptions {
  LossKind loss = LossKind::kGspo;
  double clip_low = -1;
  double clip_high = -1;
  double log_ratio_clamp = 10.0;
  AdvantageKind advantage = AdvantageKind::kGroupNorm;
  StdKind std_kind = StdKind::kPopulation;
  double adv_eps = 1e-6;
  double kl_coef = 0.0;
  KlEstimator kl_estimator = KlEstimator::kK3;
  std::string reference_model = "";
  OldLogprobs old_logprobs = OldLogprobs::kRecompute;
  int64_t num_minibatches = 4;
  int64_t micro_batch_size = 0;
  int64_t micro_batch_tokens = 0;
  bool minibatch_groups = false;
  bool filter_zero_variance = false;
  bool filter_truncated = false;
  RewardScale scale_rewards = RewardScale::kGroup;
  ComponentNorm component_norm = ComponentNorm::kAfterSum;
  IsCorrection is_correction = IsCorrection::kNone;
  IsLevel is_level = IsLevel::kToken;
  double is_cap = 2.0;
  double is_floor = 0.5;
  bool mismatch_metrics = true;
  double top_entropy_quantile = 1.0;
  RoutingReplay routing_replay = RoutingReplay::kNone;
  bool routing_metrics = true;

  template <class V>
  void visit(V&& v) {
    v("loss", loss, "policy loss: gspo (sequence ratio), gspo_token, grpo (token ratio)",
      choice_rule(loss));
    static const std::string low_doc = "eps_low of the clip range [1 - eps_low, 1 + eps_high]; < 0 = loss default (" +
                                       describe_default_clip(false) + ")";
    static const std::string high_doc = "eps_high of the clip range; < 0 = loss default (" +
                                        describe_default_clip(true) + ")";
    v("clip_low", clip_low, low_doc.c_str(), between(-1, 1));
    v("clip_high", clip_high, high_doc.c_str(), between(-1, 10));
    v("log_ratio_clamp", log_ratio_clamp, "upper clamp on the log-ratio before exp(); 0 disables", at_least(0));
    v("advantage", advantage, "group_norm (r-mean)/(std+eps), no_std (r-mean), leave_one_out (r - mean of others)",
      choice_rule(advantage));
    v("std_kind", std_kind, "std of group_norm: population (divide by G) or sample (divide by G-1)",
      choice_rule(std_kind));
    v("adv_eps", adv_eps, "eps added to the group std", at_least(0));
    v("kl_coef", kl_coef, "coefficient of the KL penalty to the reference model; 0 disables it", at_least(0));
    v("kl_estimator", kl_estimator, "per-token KL estimator: k1 or k3", choice_rule(kl_estimator));
    v("reference_model", reference_model, "reference policy for the KL term; empty = model.path", any());
    v("old_logprobs", old_logprobs, "pi_old log-probs: recompute (step-start weights) or sampler",
      choice_rule(old_logprobs));
    v("num_minibatches", num_minibatches, "optimizer steps per rollout batch (the paper: 4)", at_least(1));
    v("micro_batch_size", micro_batch_size, "sequences per forward/backward pass; 0 = whole mini-batch",
      at_least(0));
    v("micro_batch_tokens", micro_batch_tokens, "padded-token budget per forward/backward pass: each "
      "mini-batch's rows on this rank are sorted by response length and packed so that rows x (prompt length + "
      "longest response) stays within it (and rows <= micro_batch_size when that is set); a row longer than the "
      "budget runs alone, so there is no minimum. Same update as without it up to float rounding (except that "
      "top_entropy_quantile's quantile is per micro-batch); 0 = off. With train.shared_prefix it counts each packed "
      "prompt once (docs/algorithm.md, \"Shared prompts\")", at_least(0));
    v("minibatch_groups", minibatch_groups, "cut each step's mini-batches from whole groups: the groups are shuffled "
      "and every group's rows go to one mini-batch (and, with train.shared_prefix, share their micro-batches), "
      "instead of the rows shuffled one by one. Each optimizer step then sees fewer prompts with all their samples; "
      "the loss and its weights are unchanged (docs/algorithm.md, \"Shared prompts\")", any());
    v("filter_zero_variance", filter_zero_variance, "drop groups with identical rewards before the update", any());
    v("filter_truncated", filter_truncated, "drop responses that hit max_new_tokens before the update", any());
    v("scale_rewards", scale_rewards, "group_norm advantages divide (r - group mean) by the std of the group, of "
      "the whole batch (all ranks), or by nothing (then equal to advantage no_std); as TRL's scale_rewards",
      choice_rule(scale_rewards));
    v("component_norm", component_norm, "with reward.components: after_sum (advantages of the weighted sum) or "
      "before_sum (each component's group advantage, then their weighted sum)", choice_rule(component_norm));
    v("is_correction", is_correction, "training/inference mismatch correction with w = pi_train(step start) / "
      "pi_sampler: none, tis (terms times min(w, is_cap)) or mis (terms with w outside [is_floor, is_cap] "
      "rejected, the others times w); needs old_logprobs recompute", choice_rule(is_correction));
    v("is_level", is_level, "importance weights per token, or per sequence: sequence_geometric "
      "exp(mean_t log w_t) or sequence_product exp(sum_t log w_t)", choice_rule(is_level));
    v("is_cap", is_cap, "upper threshold of the importance weight (tis: truncation, mis: rejection)",
      greater_than(1));
    v("is_floor", is_floor, "mis: lower threshold of the importance weight", above_up_to(0, 1));
    v("mismatch_metrics", mismatch_metrics, "log the sampler-vs-trainer log-prob difference and importance weight "
      "statistics every step (with old_logprobs sampler this costs one extra forward pass per step)", any());
    v("top_entropy_quantile", top_entropy_quantile, "policy gradient only on tokens whose entropy is in the top "
      "fraction of each micro-batch's response tokens (0.2 = the 20% highest-entropy tokens); 1 = every token",
      above_up_to(0, 1));
    v("routing_replay", routing_replay, "MoE policies: none; old (GSPO paper's Routing Replay, verl's R2): the "
      "old-log-prob pass records each token's top-k experts per MoE layer and the update's forward uses them (gating "
      "weights from the current router over those experts), so token ratios compare the same sub-networks; rollout "
      "(Rollout Routing Replay, R3): the sampler records the experts that produced every token and the old, "
      "reference and update passes all use them, so the trainer's log-probs are the sampler's sub-networks' "
      "(docs/algorithm.md). Costs 2 bytes (old) or 1 byte (rollout, up to 256 experts) x top_k x MoE layers a "
      "token; needs a model with the routing methods (rollout: route_api 2; gspo inspect); refused for dense models",
      choice_rule(routing_replay));
    v("routing_metrics", routing_metrics, "MoE policies: log moe_routing_change_frac (the share of response tokens' "
      "top-k expert sets that the step's updates changed, per MoE layer and overall) every step; costs one forward "
      "of the decoder layers (no head, no gradient) over the step's rows after the update; no effect on dense "
      "models", any());
  }
};

struct OptimizerOptions {
  double lr = 1e-5;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double grad_clip = 1.0;
  int64_t warmup_steps = 0;
  Schedule schedule = Schedule::kConstant;
  double min_lr_ratio = 0.0;
  int64_t state_bits = 32;

  template <class V>
  void visit(V&& v) {
    v("lr", lr, "peak learning rate", greater_than(0));
    v("weight_decay", weight_decay, "AdamW decoupled weight decay", at_least(0));
    v("beta1", beta1, "AdamW beta1", from_below(0, 1));
    v("beta2", beta2, "AdamW beta2", from_below(0, 1));
    v("eps", eps, "AdamW eps", greater_than(0));
    v("grad_clip", grad_clip, "clip the global gradient L2 norm to this; 0 disables", at_least(0));
    v("warmup_steps", warmup_steps, "optimizer steps of linear LR warmup", at_least(0));
    v("schedule", schedule, "LR after warmup: constant or cosine (decays to min_lr_ratio * lr)",
      choice_rule(schedule));
    v("min_lr_ratio", min_lr_ratio, "cosine schedule: final LR as a fraction of lr", between(0, 1));
    v("state_bits", state_bits,
      "bits of each stored AdamW moment: 32 (float32) or 8 (bitsandbytes' blockwise 8-bit AdamW: tensors of 4096+ "
      "elements keep both moments as 8-bit codes with a float32 absmax per 256, about 2 bytes a parameter instead of "
      "8; smaller ones stay float32). Every update engine takes 8: the plain and low-rank-adapter ones per tensor, "
      "ZeRO-1, ZeRO-3 and expert parallelism per shard, on 256-element block boundaries (docs/optimizer.md)",
      between(8, 32));
  }
};

struct TrainOptions {
  int64_t max_steps = 100;
  int64_t seed = 0;
  std::string output_dir = "runs/gspo";
  OnNonfinite on_nonfinite = OnNonfinite::kStop;
  int64_t threads = 0;
  int64_t logprob_chunk_tokens = 1024;
  bool activation_checkpointing = true;
  bool chunked_head = true;
  bool shared_prefix = false;
  int64_t shared_prefix_split_tokens = 512;

  template <class V>
  void visit(V&& v) {
    v("max_steps", max_steps, "rollout steps to run (each = num_minibatches optimizer steps)", at_least(1));
    v("seed", seed, "training seed", at_least(0));
    v("output_dir", output_dir, "run directory for metrics.jsonl, checkpoints/ and the resolved config", any());
    v("on_nonfinite", on_nonfinite, "non-finite loss or gradient: stop (error naming the step) or skip the update",
      choice_rule(on_nonfinite));
    v("threads", threads, "intra-op CPU threads; 0 = LibTorch's default", at_least(0));
    v("logprob_chunk_tokens", logprob_chunk_tokens, "response positions per chunk of the LM head and float32 "
      "log-softmax over the vocabulary: their memory is about chunk x vocab x 8 bytes (1024 x 151,936: 1.2 GB); "
      "0 = all at once", at_least(0));
    v("activation_checkpointing", activation_checkpointing, "models with the per-layer methods "
      "(docs/model-contract.md): keep only each decoder layer's input through the training forward and recompute "
      "the layer in backward (activation memory per layer drops from its whole graph to [rows, T, hidden]; the "
      "update costs about one more forward). On by default: long responses do not fit without it, and the extra "
      "forward is a third of the update at most", any());
    v("chunked_head", chunked_head, "models with the per-layer methods: log-probs and entropy of the response "
      "tokens from the final hidden states a chunk at a time, forward and backward, never holding [T, vocab] logits. "
      "With either this or activation_checkpointing on, gspo drives the layers itself (rows right-aligned: causal "
      "attention without a mask); both false = the model's logits_from, as for models without the methods", any());
    v("shared_prefix", shared_prefix, "models with the per-layer methods: every training pass (old and reference "
      "log-probs, the update's forward and backward) runs each prompt that rows of a micro-batch share once: the "
      "same log-probs and gradients up to float rounding, (rows - 1) x prompt fewer tokens through the layers. With "
      "the model's shared_layer method (every scripts/gspo_model.py export) each layer takes the prompts and the "
      "responses apart, each response attending to its prompt's keys and its own; without it, or under expert "
      "parallelism, a group is packed into one row under a tree mask while that row's attention is no larger than "
      "its rows' (long prompts, short responses). Set algorithm.minibatch_groups so that a group's rows meet in a "
      "micro-batch. Needs the per-layer pass (chunked_head or activation_checkpointing); a model without the "
      "methods runs unshared (docs/algorithm.md, \"Shared prompts\")", any());
    v("shared_prefix_split_tokens", shared_prefix_split_tokens, "train.shared_prefix with a model that has "
      "shared_layer: a micro-batch runs its groups split when some group's prompt + responses in it reach this many "
      "tokens, else packed under the tree mask (below it the split's extra operations cost more than its smaller "
      "attention saves: 512 measured on a CPU, docs/performance.md \"Shared prompts\"; a GPU's crossover is "
      "unmeasured); 0 = always split", at_least(0));
  }
};

struct CheckpointOptions {
  int64_t every = 0;
  int64_t keep_last = 3;
  bool at_end = true;

  template <class V>
  void visit(V&& v) {
    v("every", every, "save a checkpoint every N rollout steps; 0 = only at the end", at_least(0));
    v("keep_last", keep_last, "number of newest checkpoints kept", at_least(1));
    v("at_end", at_end,
      "save one after the last step; false: only the `every` ones and an interrupted run's (benchmarks, smoke tests "
      "of large models, where the final save of weights and optimizer state takes longer than the run)", any());
  }
};

// One entry of eval.datasets: a problem set and the verifier that grades it, written as a mapping or as the path
// alone (then the verifier is auto).
struct EvalSetSpec {
  std::string path = "";
  std::string verifier = "auto";
  void set_shorthand(const std::string& text) { path = text; }  // a plain string in the list is the path

  template <class V>
  void visit(V&& v) {
    v("path", path, "the problem set: a JSONL, JSON or parquet file, or a directory of parquet shards", any());
    v("verifier", verifier, "what grades it: auto (by its rows, as reward.kind auto: the code verifier where a row "
      "carries tests, math elsewhere), reward (the run's reward section as it is: the training reward, its components "
      "and reward model or judge), or one rule verifier: math, code, exact, leading_integer, regex (reward.regex), "
      "format, external (reward.external_command)",
      one_of({"auto", "reward", "math", "code", "exact", "leading_integer", "regex", "format", "external"}));
  }
};
template <>
struct IsRecord<EvalSetSpec> : std::true_type {};

// Evaluation: `gspo eval`'s defaults, and validation during `gspo train` (every > 0). Sampling settings left at
// their "inherit" value take rollout's.
struct EvalOptions {
  std::vector<EvalSetSpec> datasets = {};
  std::string standings = "";
  int64_t samples = 4;
  int64_t every = 0;
  bool before_training = true;
  int64_t max_problems = 0;
  std::string since = "";
  std::string until = "";
  double temperature = -1;
  double top_p = -1;
  int64_t top_k = -1;
  int64_t max_new_tokens = 0;
  int64_t min_new_tokens = -1;
  int64_t kv_cache_mb = -1;

  template <class V>
  void visit(V&& v) {
    v("datasets", datasets, "problem sets, each a path or a mapping with the keys eval.datasets[].*: gspo eval's "
      "default when no --dataset is given (a --dataset set is graded by the reward section); the validation sets of "
      "gspo train, each graded by its own verifier, not by the training reward unless it says reward", any());
    v("standings", standings, "CodeElo standings pack (JSON, docs/evaluation.md \"CodeForces\"): CodeElo's rating of "
      "the competition sets in gspo eval (its --standings when none is given) and in validation during gspo train; "
      "empty = none", any());
    v("samples", samples, "responses sampled per problem (K of avg@K, pass@k, cons@K)", at_least(1));
    v("every", every, "gspo train: run the eval on eval.datasets every N rollout steps and after the last one, "
      "sharded over the ranks, into validation.jsonl and metrics.jsonl; 0 = off", at_least(0));
    v("before_training", before_training, "gspo train with eval.every > 0: also validate the initial policy (step 0) "
      "in a fresh run", any());
    v("max_problems", max_problems, "only the first N problems of each set (after the date filter); 0 = all",
      at_least(0));
    v("since", since, "keep only rows whose contest_date (LiveCodeBench) is on or after this day, YYYY-MM-DD; "
      "empty = no bound", any());
    v("until", until, "keep only rows whose contest_date is on or before this day, YYYY-MM-DD; empty = no bound",
      any());
    v("temperature", temperature, "sampling temperature of the eval; negative = rollout.temperature",
      between(-1, 100));
    v("top_p", top_p, "nucleus mass of the eval; negative = rollout.top_p", between(-1, 1));
    v("top_k", top_k, "top-k of the eval; negative = rollout.top_k", at_least(-1));
    v("max_new_tokens", max_new_tokens, "response length cap of the eval; 0 = rollout.max_new_tokens", at_least(0));
    v("min_new_tokens", min_new_tokens, "minimum response length of the eval (EOS and stop strings suppressed before "
      "it, as rollout.min_new_tokens); negative = rollout.min_new_tokens", at_least(-1));
    v("kv_cache_mb", kv_cache_mb, "KV-cache budget of the eval's sampler in MiB (as rollout.kv_cache_mb; "
      "rollout.kv_cache_fraction and continuous_batching apply too); negative = rollout.kv_cache_mb", at_least(-1));
  }
};

struct LoggingOptions {
  LogLevel level = LogLevel::kInfo;
  bool progress = true;
  std::string tensorboard = "";
  int64_t rollouts_every = 0;
  int64_t rollouts_rows = 64;
  double rollouts_max_mb = 256;

  template <class V>
  void visit(V&& v) {
    v("level", level, "log level", choice_rule(level));
    v("progress", progress, "print a progress line per training step, and (on a terminal) the rollout's live "
      "line of finished rows and tokens", any());
    v("tensorboard", tensorboard, "TensorBoard event files, written as the run goes (every numeric metrics.jsonl "
      "field as a scalar at its step, validation included, and the resolved config as text; flushed every step): "
      "true = train.output_dir/tensorboard, or a directory of the run's own (rewritten from metrics.jsonl on a "
      "resume); empty or false = off. Watch with: tensorboard --logdir runs/", any());
    v("rollouts_every", rollouts_every, "write the step's rollouts to train.output_dir/rollouts/step_N.jsonl at the "
      "first rollout step, every N steps and the last (prompt, response, reward and components, advantage, how it "
      "ended, version, per-token behaviour log-probs; docs/metrics.md \"Rollouts\"); 0 = never", at_least(0));
    v("rollouts_rows", rollouts_rows, "rows of a step written: its first groups, whole, in global row order (at "
      "least one group)", at_least(1));
    v("rollouts_max_mb", rollouts_max_mb, "rollouts/ kept under this many MiB: the oldest step files go (the first "
      "step's stays)", at_least(0.0));
  }
};

// The whole configuration. `origin` maps "section.key" to where its value came from ("file.yaml:12" or
// "--set"), so cross-field errors can point at a line.
struct Config {
  ModelOptions model;
  TokenizerOptions tokenizer;
  DataOptions data;
  RolloutOptions rollout;
  RewardOptions reward;
  ToolsOptions tools;
  AlgorithmOptions algorithm;
  DistillOptions distill;
  OptimizerOptions optimizer;
  TrainOptions train;
  CheckpointOptions checkpoint;
  DistributedOptions distributed;
  AsyncOptions async;
  EvalOptions eval;
  LoggingOptions logging;
  std::map<std::string, std::string> origin;

  template <class V>
  void visit_sections(V&& v) {
    v("model", model, "the policy model");
    v("tokenizer", tokenizer, "text <-> token ids");
    v("data", data, "prompts and reference answers");
    v("rollout", rollout, "sampling of G responses per prompt");
    v("reward", reward, "verifiers that score responses");
    v("tools", tools, "tools the model may call (multi-turn rollouts)");
    v("algorithm", algorithm, "advantages and the policy loss");
    v("distill", distill, "on-policy distillation: a teacher's per-token log-probs in the advantage");
    v("optimizer", optimizer, "AdamW and the learning-rate schedule");
    v("train", train, "the step loop");
    v("checkpoint", checkpoint, "checkpoint cadence and retention");
    v("distributed", distributed, "data parallelism across processes and GPUs");
    v("async", async, "asynchronous training: rollout ranks ahead of the trainers under a staleness bound");
    v("eval", eval, "gspo eval's settings and validation during training");
    v("logging", logging, "console output");
  }
};

}  // namespace gspo::config
