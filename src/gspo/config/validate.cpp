#include "gspo/config/validate.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "gspo/config/origin.h"
#include "gspo/config/reward_rules.h"
#include "gspo/config/suggest.h"
#include "gspo/config/value_text.h"

namespace gspo::config {
namespace {
// Where `key` was set (where_set, "<default>" for a default): every message's head.
std::string at(const Config& c, const std::string& key) { return where_set(c, key); }

// reward.sources: "source:kind" entries, kinds among the rules a data source may name (the model scorers and
// tool_format are not per-source verifiers). With kind auto each named kind counts as used (regex, external: their
// keys are required).
void validate_sources(const Config& c, std::vector<std::string>& e, std::vector<std::string>& used) {
  for (const auto& entry : c.reward.sources) {
    const auto colon = entry.rfind(':');
    const std::string name = colon == std::string::npos ? "" : entry.substr(colon + 1);
    const auto kind = parse_choice<RewardKind>(name);
    const bool rule = kind && *kind != RewardKind::kAuto && *kind != RewardKind::kModel &&
                      *kind != RewardKind::kJudge && *kind != RewardKind::kToolFormat;
    if (colon == std::string::npos || colon == 0 || !rule) {
      e.push_back(at(c, "reward.sources") + ": reward.sources entries must be \"source:kind\" with a kind among math, "
                  "code, exact, leading_integer, regex, format, external (got " + value_preview(entry) + ")");
      continue;
    }
    if (uses_reward(c, RewardKind::kAuto)) used.push_back(name);
  }
  if (!c.reward.sources.empty() && c.data.source_key.empty())
    e.push_back(at(c, "reward.sources") + ": reward.sources routes rows by their data source, but data.source_key is "
                "empty (no source is read)");
}

void validate_reward(const Config& c, std::vector<std::string>& e) {
  const auto& r = c.reward;
  std::vector<std::string> used = {name_of(r.kind)};
  if (!r.components.empty()) used.clear();
  for (const auto& comp : r.components) {
    const auto colon = comp.rfind(':');
    const std::string name = comp.substr(0, colon);
    bool ok_weight = false;
    if (colon != std::string::npos) {
      try {
        size_t pos = 0;
        const double w = std::stod(comp.substr(colon + 1), &pos);
        ok_weight = pos == comp.size() - colon - 1 && std::isfinite(w);  // model:inf, model:nan: no learning
      } catch (const std::exception&) {
      }
    }
    if (colon == std::string::npos || !ok_weight || !parse_choice<RewardKind>(name)) {
      e.push_back(at(c, "reward.components") + ": reward.components entries must be \"name:weight\" with a name among " +
                  names_of<RewardKind>() + " and a finite number as the weight (got " + value_preview(comp) + ")");
      continue;
    }
    used.push_back(name);
  }
  validate_sources(c, e, used);
  auto uses = [&](const char* n) { return std::find(used.begin(), used.end(), n) != used.end(); };
  if (uses("regex")) {
    if (r.regex.empty()) e.push_back(at(c, "reward.kind") + ": the regex verifier needs reward.regex");
    try {
      std::string probe = r.regex;  // {answer} is substituted (escaped) at scoring time
      for (size_t pos; (pos = probe.find("{answer}")) != std::string::npos;) probe.replace(pos, 8, "x");
      std::regex test(probe);
    } catch (const std::regex_error& ex) {
      e.push_back(at(c, "reward.regex") + ": reward.regex is not a valid regular expression (" + ex.what() + ")");
    }
  }
  external_rules(c, uses("external"), e);
  model_reward_rules(c, uses_reward(c, RewardKind::kModel), e);
  judge_rules(c, uses_reward(c, RewardKind::kJudge), e);
}

// Whether the program a shell command line starts (its first word after any VAR=value) is an executable file, a
// path or a name found on PATH. Shell syntax beyond that (quotes, builtins) is not interpreted: such a line fails.
bool program_found(const std::string& command) {
  std::istringstream words(command);
  std::string program;
  while (words >> program && program.find('=') != std::string::npos && program.find('/') == std::string::npos) {
  }
  if (program.empty() || program.find('=') != std::string::npos) return false;
  auto executable = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) return executable(program);
  const char* path_env = std::getenv("PATH");
  std::istringstream dirs(path_env ? path_env : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && executable(dir + "/" + program)) return true;
  return false;
}

void validate_tools(const Config& c, std::vector<std::string>& e) {
  if (c.tools.list.empty()) {  // tool_format grades an episode's tool use: without tools every response would get 0
    if (c.reward.kind == RewardKind::kToolFormat)
      e.push_back(at(c, "reward.kind") + ": reward.kind tool_format grades the tool use of episodes, but tools.list "
                  "is empty");
    for (const auto& comp : c.reward.components)
      if (comp.rfind("tool_format:", 0) == 0)
        e.push_back(at(c, "reward.components") + ": reward.components '" + comp + "' grades the tool use of "
                    "episodes, but tools.list is empty");
  }
  static const std::regex kName("[A-Za-z0-9_.-]{1,64}");
  std::set<std::string> seen;
  for (size_t i = 0; i < c.tools.list.size(); ++i) {
    const auto& t = c.tools.list[i];
    const std::string item = "tools.list[" + std::to_string(i) + "]";
    if (t.name.size() > 64 || !std::regex_match(t.name, kName))
      e.push_back(at(c, item + ".name") + ": " + item + ".name must be 1 to 64 letters, digits, _ . or - (got " +
                  value_preview(t.name) + ")");
    else if (!seen.insert(t.name).second)
      e.push_back(at(c, item + ".name") + ": " + item + ".name '" + t.name + "' is already the name of another tool");
    const auto schema = nlohmann::json::parse(t.parameters.json, nullptr, false);
    if (schema.is_discarded() || !schema.is_object())
      e.push_back(at(c, item + ".parameters") + ": " + item + ".parameters must be a mapping (got " +
                  value_preview(t.parameters.json) + ")");
    else if (schema.contains("type") && schema["type"] != "object")
      e.push_back(at(c, item + ".parameters") + ": " + item + ".parameters.type must be object (got " +
                  value_preview(schema["type"].dump()) + "): a tool's arguments are a JSON object");
    if (t.kind == ToolKind::kCommand) {
      if (t.command.empty())
        e.push_back(at(c, item + ".kind") + ": " + item + " is of kind command and needs " + item + ".command");
      else if (!program_found(t.command))
        e.push_back(at(c, item + ".command") + ": " + item + ".command " + value_preview(t.command) +
                    ": its program is neither an executable file nor found on PATH");
    } else if (!t.command.empty()) {
      e.push_back(at(c, item + ".command") + ": " + item + ".command applies to kind command only (tool '" + t.name +
                  "' is of kind " + name_of(t.kind) + ")");
    }
  }
}

// The options of the DAPO pieces, reward scaling and mismatch correction that only make sense together.
void validate_eval(const Config& c, std::vector<std::string>& e) {
  static const std::regex kDay(R"((\d{4})-(\d{2})-(\d{2}))");
  for (const auto& [key, value] : {std::pair{"eval.since", c.eval.since}, std::pair{"eval.until", c.eval.until}}) {
    std::smatch m;
    if (value.empty()) continue;
    if (!std::regex_match(value, m, kDay)) {
      e.push_back(at(c, key) + ": " + key + " must be a day written YYYY-MM-DD (got " + value_preview(value) + ")");
      continue;
    }
    // Compared as text with the rows' dates, so it must be a day of the calendar: 2024-02-30 would keep March 1st.
    const int y = std::stoi(m[1]), mo = std::stoi(m[2]), d = std::stoi(m[3]);
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    static const int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12)
      e.push_back(at(c, key) + ": " + key + " " + value_preview(value) + " has no month " + m[2].str() +
                  " (01-12)");
    else if (d < 1 || d > kDays[mo - 1] + (mo == 2 && leap))
      e.push_back(at(c, key) + ": " + key + " " + value_preview(value) + " is not a day of the calendar (" +
                  m[1].str() + "-" + m[2].str() + " has " + std::to_string(kDays[mo - 1] + (mo == 2 && leap)) +
                  " days)");
  }
  if (!c.eval.since.empty() && !c.eval.until.empty() && c.eval.until < c.eval.since)
    e.push_back(at(c, "eval.until") + ": eval.until (" + c.eval.until + ") is before eval.since (" + c.eval.since + ")");
  if (c.eval.every > 0 && c.eval.datasets.empty())
    e.push_back(at(c, "eval.every") + ": validation during training (eval.every > 0) needs eval.datasets");
  for (size_t i = 0; i < c.eval.datasets.size(); ++i) {
    const auto& set = c.eval.datasets[i];
    const std::string item = "eval.datasets[" + std::to_string(i) + "]";
    if (set.path.empty()) e.push_back(at(c, item + ".path") + ": " + item + ".path must name a problem set");
    if (set.verifier == "regex" && c.reward.regex.empty())
      e.push_back(at(c, item + ".verifier") + ": " + item + ".verifier regex grades with reward.regex, which is empty");
    if (set.verifier == "external" && c.reward.external.command.empty())
      e.push_back(at(c, item + ".verifier") + ": " + item + ".verifier external grades with "
                  "reward.external_command, which is empty");
  }
  // Either bound may be inherited from rollout.*: the message names where each value came from.
  const bool own_min = c.eval.min_new_tokens >= 0, own_max = c.eval.max_new_tokens > 0;
  const int64_t min = own_min ? c.eval.min_new_tokens : c.rollout.min_new_tokens;
  const int64_t max = own_max ? c.eval.max_new_tokens : c.rollout.max_new_tokens;
  if ((own_min || own_max) && min > max)
    e.push_back(at(c, own_min ? "eval.min_new_tokens" : "eval.max_new_tokens") + ": the eval's min_new_tokens (" +
                value_text(min) + (own_min ? "" : ", from rollout.min_new_tokens") + ") must be <= its max_new_tokens (" +
                value_text(max) + (own_max ? "" : ", from rollout.max_new_tokens") + ")");
}

// data.path or data.mix (one of them) when the task reads files; data.mix's weights sum to 1.
void validate_data(const Config& c, std::vector<std::string>& e) {
  const auto& d = c.data;
  if (d.task == Task::kJsonl && d.path.empty() && d.mix.empty()) {
    e.push_back(at(c, "data.task") + ": data.path must name a dataset (a JSONL, JSON or parquet file, or a directory "
                "of parquet shards), or data.mix list several, when data.task is 'jsonl'");
  }
  if (d.mix.empty()) return;
  if (d.task != Task::kJsonl) {
    e.push_back(at(c, "data.mix") + ": data.mix mixes datasets read from files: it needs data.task: jsonl");
  }
  if (!d.path.empty()) {
    e.push_back(at(c, "data.mix") + ": data.mix and data.path (" + at(c, "data.path") + ") are both set: the mix "
                "lists every dataset, data.path is for one; leave data.path out");
  }
  double sum = 0;
  std::string terms;
  for (size_t i = 0; i < d.mix.size(); ++i) {
    const std::string item = "data.mix[" + std::to_string(i) + "]";
    if (d.mix[i].path.empty()) e.push_back(at(c, item + ".path") + ": " + item + ".path must name a dataset");
    if (c.origin.count(item + ".weight") == 0)
      e.push_back(at(c, item + ".weight") + ": " + item + ".weight is missing (its share of the prompts, in (0, 1])");
    sum += d.mix[i].weight;
    terms += (terms.empty() ? "" : " + ") + value_text(d.mix[i].weight);
  }
  if (std::abs(sum - 1.0) > 1e-6) {
    e.push_back(at(c, "data.mix") + ": the weights of data.mix must sum to 1; they sum to " + value_text(sum) + " (" +
                terms + ")");
  }
}

void validate_shaping(const Config& c, std::vector<std::string>& e) {
  const auto& a = c.algorithm;
  if (a.is_correction != IsCorrection::kNone && a.old_logprobs != OldLogprobs::kRecompute)
    e.push_back(at(c, "algorithm.is_correction") + ": algorithm.is_correction " + name_of(a.is_correction) +
                " needs algorithm.old_logprobs recompute: the weights pi_train / pi_sampler correct a ratio taken "
                "against the trainer's step-start log-probs (with old_logprobs sampler the ratio is already "
                "pi_theta / pi_sampler)");
  if (a.scale_rewards != RewardScale::kGroup && a.advantage != AdvantageKind::kGroupNorm)
    e.push_back(at(c, "algorithm.scale_rewards") + ": algorithm.scale_rewards " + name_of(a.scale_rewards) +
                " applies to advantage group_norm only (got advantage " + name_of(a.advantage) + ")");
  if (a.component_norm == ComponentNorm::kBeforeSum && c.reward.components.size() < 2)
    e.push_back(at(c, "algorithm.component_norm") + ": algorithm.component_norm before_sum needs two or more "
                "reward.components");
  if (c.rollout.dtype == RolloutDtype::kBFloat16 && c.model.dtype == Dtype::kBFloat16)
    e.push_back(at(c, "rollout.dtype") + ": rollout.dtype bfloat16 is for a float32 policy; with model.dtype "
                "bfloat16 the policy already samples in bf16 (use rollout.dtype same)");
  if (c.reward.overlong_buffer >= c.rollout.max_new_tokens)
    e.push_back(at(c, "reward.overlong_buffer") + ": reward.overlong_buffer (" + value_text(c.reward.overlong_buffer) +
                ") must be smaller than rollout.max_new_tokens (" + value_text(c.rollout.max_new_tokens) + ")");
}

}  // namespace

std::string set_at(const Config& cfg, const std::string& key) {
  const auto it = cfg.origin.find(key);
  return it == cfg.origin.end() ? std::string() : it->second + ": ";
}

void resolve_defaults(Config& cfg) {
  auto& a = cfg.algorithm;
  if (a.clip_low < 0) a.clip_low = default_clip(a.loss).low;
  if (a.clip_high < 0) a.clip_high = default_clip(a.loss).high;
}

// distributed.zero_stage: 0, 1 or 3, and what ZeRO-3 runs with.
void validate_sharding(const Config& c, std::vector<std::string>& e) {
  const auto& d = c.distributed;
  if (d.zero_stage == 2)
    e.push_back(at(c, "distributed.zero_stage") + ": distributed.zero_stage must be 0, 1 or 3 (2 is not built: "
                "ZeRO-3 shards the gradients and the weights too)");
  if (d.zero_stage == 3 && !c.train.activation_checkpointing)
    e.push_back(at(c, "train.activation_checkpointing") + ": distributed.zero_stage 3 needs "
                "train.activation_checkpointing: true (a decoder layer's weights are gathered again for its backward)");
  if (d.zero3_keep_whole && d.zero_stage != 3)
    e.push_back(at(c, "distributed.zero3_keep_whole") + ": distributed.zero3_keep_whole applies to zero_stage 3 only");
  if (const auto why = offload_refusal(d.optimizer_offload, d.zero_stage); !why.empty())
    e.push_back(at(c, "distributed.optimizer_offload") + ": " + why);
}

// train.shared_prefix packs rows inside the per-layer pass.
void validate_shared_prefix(const Config& c, std::vector<std::string>& e) {
  if (c.train.shared_prefix && !c.train.chunked_head && !c.train.activation_checkpointing)
    e.push_back(at(c, "train.shared_prefix") + ": train.shared_prefix needs the per-layer pass (train.chunked_head or "
                "train.activation_checkpointing true): gspo packs a group's rows and runs each decoder layer over them");
}

std::string offload_refusal(bool offload, int64_t zero_stage) {
  if (!offload || zero_stage != 0) return "";
  return "distributed.optimizer_offload offloads the sharded optimizer state: set distributed.zero_stage 1 or 3 "
         "(zero_stage 1 at world size 1 is one shard)";
}

// optimizer.state_bits: 8 or 32 (every update engine takes both: docs/optimizer.md).
void validate_state_bits(const Config& c, std::vector<std::string>& e) {
  const int64_t bits = c.optimizer.state_bits;
  const std::string head = at(c, "optimizer.state_bits") + ": optimizer.state_bits ";
  if (bits > 8 && bits < 32)  // outside [8, 32] the field's rule has said so
    e.push_back(head + "must be 8 or 32 (got " + std::to_string(bits) + ")");
}

// distributed.expert_parallel: what it is built with so far (the world size and the model are checked at launch:
// train/rank_share.h, train/setup/expert_setup.cpp).
void validate_expert_parallel(const Config& c, std::vector<std::string>& e) {
  const int64_t E = c.distributed.expert_parallel;
  if (E <= 1) return;
  const std::string head = at(c, "distributed.expert_parallel") + ": distributed.expert_parallel " + std::to_string(E);
  if (c.distributed.zero_stage != 1)
    e.push_back(head + " needs distributed.zero_stage 1 (got " + std::to_string(c.distributed.zero_stage) + "): the "
                "moments are sharded, the experts' over the ranks holding the same experts, the rest over the world" +
                (c.distributed.zero_stage == 3 ? "; non-expert weights sharded by ZeRO-3 beside sharded experts are "
                 "not built yet" : ""));
  if (!c.train.chunked_head && !c.train.activation_checkpointing)
    e.push_back(head + " needs the per-layer pass (train.chunked_head or train.activation_checkpointing true): gspo "
                "runs each MoE layer's experts across the group itself");
  if (c.model.lora_rank > 0)
    e.push_back(head + " with model.lora_rank " + std::to_string(c.model.lora_rank) + ": adapters of sharded experts "
                "are not built yet; set one of them off");
  if (c.distributed.rollout_ranks > 0)
    e.push_back(head + " with distributed.rollout_ranks " + std::to_string(c.distributed.rollout_ranks) + ": rollout "
                "ranks beside expert-parallel trainers are not built yet");
  if (c.algorithm.kl_coef > 0)
    e.push_back(head + " with algorithm.kl_coef " + value_text(c.algorithm.kl_coef) + ": a KL reference with sharded "
                "experts is not built yet (GSPO trains without one: kl_coef 0)");
  if (c.rollout.dtype == RolloutDtype::kBFloat16)
    e.push_back(at(c, "rollout.dtype") + ": rollout.dtype bfloat16 with distributed.expert_parallel " + std::to_string(E) +
                ": the bf16 sampling copy would hold every expert on every rank; set model.dtype bfloat16 with "
                "rollout.dtype same (the sampler then reads the training weights)");
}

// model.lora_*: what the adapters merge into and what is built with them.
void validate_lora(const Config& c, std::vector<std::string>& e) {
  const auto& m = c.model;
  static const std::vector<std::string> kTargets{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                 "down_proj"};
  for (const auto& t : m.lora_targets)
    if (std::find(kTargets.begin(), kTargets.end(), t) == kTargets.end())
      e.push_back(at(c, "model.lora_targets") + ": model.lora_targets: '" + t + "' is not a decoder-layer projection "
                  "(q_proj k_proj v_proj o_proj gate_proj up_proj down_proj; the embedding, head and routers never "
                  "get adapters)");
  if (m.lora_rank == 0) return;
  if (m.lora_targets.empty()) e.push_back(at(c, "model.lora_targets") + ": model.lora_targets is empty: no weight would "
                                          "get an adapter (model.lora_rank 0 turns adapters off)");
  if (m.lora_dropout != 0)
    e.push_back(at(c, "model.lora_dropout") + ": model.lora_dropout must be 0 (got " + value_text(m.lora_dropout) +
                "): the adapters are merged into each layer's weights, where dropout on their input cannot apply");
  if (!c.train.chunked_head && !c.train.activation_checkpointing)
    e.push_back(at(c, "train.chunked_head") + ": model.lora_rank needs the per-layer pass (train.chunked_head or "
                "train.activation_checkpointing true): the adapters merge into each decoder layer as gspo runs it");
  if (c.distributed.zero_stage == 3 && c.distributed.zero3_keep_whole)
    e.push_back(at(c, "distributed.zero3_keep_whole") + ": distributed.zero3_keep_whole with model.lora_rank: the whole "
                "weights hold the adapters merged in for sampling, which a training pass would merge again; set it "
                "false (adapters train a base too big to keep whole anyway)");
  if (c.distributed.zero_stage == 3 && c.rollout.dtype == RolloutDtype::kBFloat16 && c.model.dtype == Dtype::kFloat32 &&
      c.distributed.rollout_ranks == 0)
    e.push_back(at(c, "rollout.dtype") + ": rollout.dtype bfloat16 with model.lora_rank, distributed.zero_stage 3 and "
                "model.dtype float32: the sampler reads the gathered base itself, in model.dtype; set model.dtype "
                "bfloat16 (the frozen base then is bf16 too) or rollout.dtype same");
}

bool reference_is_base(const Config& c) {
  return c.algorithm.kl_coef > 0 && c.model.lora_rank > 0 && c.algorithm.reference_model.empty() &&
         c.model.adapter.empty();
}

// distributed.rollout_ranks and the async section (the world size is checked at launch: train/rank_share.h).
int64_t prompts_in_flight(const Config& c) {
  if (c.async.prompts_in_flight > 0) return c.async.prompts_in_flight;
  const int64_t B = c.rollout.prompts_per_step, S = c.async.max_staleness;
  return (c.distributed.rollout_ranks > 0 ? std::min<int64_t>(2, S + 1) : S + 1) * B;
}

int64_t carry_steps(const Config& c) {
  if (!c.async.partial_rollout) return 0;
  const int64_t B = c.rollout.prompts_per_step;
  return (prompts_in_flight(c) + B - 1) / B - 1;
}

// async.partial_rollout and the groups it keeps in flight.
void validate_partial(const Config& c, std::vector<std::string>& e) {
  const auto& a = c.async;
  const int64_t B = c.rollout.prompts_per_step;
  if (!a.partial_rollout) {
    if (a.prompts_in_flight > 0)
      e.push_back(at(c, "async.prompts_in_flight") + ": async.prompts_in_flight applies to async.partial_rollout: true");
    return;
  }
  const std::string head = at(c, "async.partial_rollout") + ": async.partial_rollout ";
  if (a.max_staleness < 1)
    e.push_back(head + "needs async.max_staleness >= 1: a row carried to the next step trains at least one version "
                "after its first token");
  if (!c.tools.list.empty())
    e.push_back(head + "does not carry a multi-turn episode between steps: set tools.list: [] or turn it off");
  if (c.rollout.dynamic_sampling)
    e.push_back(head + "and rollout.dynamic_sampling are not built together; turn one of them off");
  const int64_t most = (a.max_staleness + 1) * B;
  if (a.prompts_in_flight > 0 && (a.prompts_in_flight < B || a.prompts_in_flight > most))
    e.push_back(at(c, "async.prompts_in_flight") + ": async.prompts_in_flight (" + value_text(a.prompts_in_flight) +
                ") must lie between rollout.prompts_per_step (" + std::to_string(B) + ") and (async.max_staleness + "
                "1) x rollout.prompts_per_step (" + std::to_string(most) + "): more groups in flight than that would "
                "keep some waiting past the staleness bound");
}

void validate_async(const Config& c, std::vector<std::string>& e) {
  const auto& a = c.async;
  validate_partial(c, e);
  if (c.distributed.rollout_ranks == 0) {
    const bool stale = a.max_staleness > 0 && !a.partial_rollout, sync = a.sync_every != 1;
    if (stale || sync) {
      const std::string key = sync ? "sync_every" : "max_staleness";
      e.push_back(at(c, "async." + key) + ": async." + key + " applies to asynchronous training: set "
                  "distributed.rollout_ranks > 0 (ranks that only sample)" +
                  (sync ? "" : ", or async.partial_rollout: true"));
    }
    return;
  }
  const int64_t h = carry_steps(c);  // partial rollouts: batches a group may be carried
  if (a.sync_every > a.max_staleness - h + 1)
    e.push_back(at(c, "async.sync_every") + ": async.sync_every (" + value_text(a.sync_every) + ") must be at most "
                "async.max_staleness + 1 = " + std::to_string(a.max_staleness + 1) +
                (h > 0 ? " less the " + std::to_string(h) + " step(s) partial rollouts may carry a group (async." +
                         "prompts_in_flight) = " + std::to_string(a.max_staleness - h + 1) : std::string()) +
                ": weights sent less often would leave batches older than the bound");
  if (c.rollout.dynamic_sampling)
    e.push_back(at(c, "rollout.dynamic_sampling") + ": rollout.dynamic_sampling is not built with "
                "distributed.rollout_ranks > 0 (the rollout ranks run ahead and cannot know which groups the "
                "trainers keep); turn one of them off");
}

// On-policy distillation: per-token advantages need the token-level loss.
void validate_distill(const Config& c, std::vector<std::string>& e) {
  if (c.distill.teacher.empty()) {
    if (c.distill.chat_template != TeacherChat::kStudent)
      e.push_back(at(c, "distill.chat_template") + ": distill.chat_template " + name_of(c.distill.chat_template) +
                  " says how a teacher reads the prompt, but distill.teacher is not set: set distill.teacher, or "
                  "leave distill.chat_template student");
    return;
  }
  const bool sampled = c.distill.objective == DistillObjective::kReverseKl;
  if (sampled && c.algorithm.loss == LossKind::kGspo)
    e.push_back(at(c, "distill.teacher") + ": distill.teacher gives every token its own advantage, which the "
                "sequence-level algorithm.loss gspo cannot take (one advantage per sequence); set algorithm.loss "
                "gspo_token (GSPO's clipped loss per token) or grpo, or distill.objective forward_kl or jsd");
  if (!sampled && c.distill.clip > 0)
    e.push_back(at(c, "distill.clip") + ": distill.clip clips reverse_kl's per-token advantage; distill.objective " +
                name_of(c.distill.objective) + " adds a divergence to the loss instead: set distill.clip 0");
}

std::vector<std::string> validate(const Config& c) {
  std::vector<std::string> e;
  const int64_t batch = c.rollout.prompts_per_step * c.rollout.group_size;
  if (batch % c.algorithm.num_minibatches != 0) {
    e.push_back(at(c, "algorithm.num_minibatches") + ": algorithm.num_minibatches (" +
                value_text(c.algorithm.num_minibatches) + ") must divide the rollout batch rollout.prompts_per_step"
                " * rollout.group_size = " + std::to_string(batch));
  }
  if (c.algorithm.clip_low >= 1.0) {
    e.push_back(at(c, "algorithm.clip_low") + ": algorithm.clip_low must be < 1 (got " +
                value_text(c.algorithm.clip_low) + "): the lower clip bound 1 - clip_low must stay positive");
  }
  validate_data(c, e);
  if (c.data.prompt_template.find("{prompt}") == std::string::npos) {
    e.push_back(at(c, "data.prompt_template") + ": data.prompt_template must contain {prompt} (got " +
                value_preview(c.data.prompt_template) + ")");
  }
  if (c.data.operators.empty() || c.data.operators.find_first_not_of("+-*") != std::string::npos) {
    e.push_back(at(c, "data.operators") + ": data.operators must be a non-empty subset of \"+-*\" (got " +
                value_preview(c.data.operators) + ")");
  }
  static const std::regex kDevice("cpu|auto|cuda(:[0-9]+)?");
  // std::regex recurses per character: a huge value is refused before it reaches the matcher.
  if (c.model.device.size() > 32 || !std::regex_match(c.model.device, kDevice)) {
    e.push_back(at(c, "model.device") + ": model.device must be cpu, cuda, cuda:N or auto (got " +
                value_preview(c.model.device) + ")");
  }
  if (c.rollout.min_new_tokens > c.rollout.max_new_tokens) {
    e.push_back(at(c, "rollout.min_new_tokens") + ": rollout.min_new_tokens (" + value_text(c.rollout.min_new_tokens) +
                ") must be <= rollout.max_new_tokens (" + value_text(c.rollout.max_new_tokens) + ")");
  }
  if (c.rollout.kv_cache_mb > 0 && c.rollout.kv_cache_fraction > 0) {
    e.push_back(at(c, "rollout.kv_cache_fraction") + ": set rollout.kv_cache_mb (" +
                value_text(c.rollout.kv_cache_mb) + ") or rollout.kv_cache_fraction (" +
                value_text(c.rollout.kv_cache_fraction) + "), not both");
  }
  for (const auto& s : c.rollout.stop) {
    if (s.empty()) e.push_back(at(c, "rollout.stop") + ": rollout.stop must not contain an empty string");
  }
  validate_reward(c, e);
  validate_tools(c, e);
  validate_eval(c, e);
  validate_sharding(c, e);
  validate_shared_prefix(c, e);
  validate_state_bits(c, e);
  validate_expert_parallel(c, e);
  validate_lora(c, e);
  validate_async(c, e);
  validate_shaping(c, e);
  validate_distill(c, e);
  return e;
}

bool uses_reward(const Config& cfg, RewardKind kind) {
  const auto& r = cfg.reward;
  if (r.components.empty()) return r.kind == kind;
  for (const auto& c : r.components)
    if (parse_choice<RewardKind>(c.substr(0, c.rfind(':'))) == kind) return true;
  return false;
}

}  // namespace gspo::config
