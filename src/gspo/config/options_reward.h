// The sections of options.h that score responses: reward (the verifiers, reward models and judges, the code
// sandbox's limits) and tools (multi-turn tool calls). Kept apart only for length; options.h includes this file and
// the Config there holds both sections like every other.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/choices.h"
#include "gspo/config/prefixed.h"
#include "gspo/config/rule.h"
#include "gspo/config/value_text.h"

namespace gspo::config {

// The groups below hold one verifier's options each (reward.math_*, reward.code_*, ...). Their rows name the fields
// without the group's prefix; RewardOptions::visit adds it (prefixed.h), so the YAML keys stay the flat ones.

// The math verifier (reward/math/math.h): keys reward.math_*.
struct MathRewardOptions {
  bool answer_is = true;
  bool last_number = true;
  double rel_tol = 1e-6;
  MathGold gold = MathGold::kAuto;

  template <class V>
  void visit(V&& v) {
    v("answer_is", answer_is, "math: when there is no \\boxed{}, use the math or number after "
      "\"answer\" (\"The answer is 18.\", \"**Answer:** $x=5$\")", any());
    v("last_number", last_number, "math: as a last resort, use the last math span ($...$, \\(...\\), "
      "\\[...\\]) or the last number of the response", any());
    v("rel_tol", rel_tol, "math: relative tolerance of numeric equality", between(0, 0.1));
    v("gold", gold, "math: the reference answer: answer (the answer field as it is, after a GSM8K "
      "'####'), extract (found in the field as in a response: a whole solution's last \\boxed{}, $...$, 'The "
      "answer is ...'), auto (extract when the field holds \\boxed, $, \\( or \\[, or 'answer is'; else as it is)",
      choice_rule(gold));
  }
};

// The code verifier and its sandbox (reward/code/): keys reward.code_*, and reward.lcb_timeout_s (a row of
// RewardOptions::visit, its key having no code_ prefix).
struct CodeRewardOptions {
  bool partial = false;
  double timeout_s = 5.0;
  int64_t memory_mb = 1024;
  std::string python = "/usr/bin/python3";
  double lcb_timeout_s = 6.0;

  template <class V>
  void visit(V&& v) {
    v("partial", partial, "code: reward = fraction of tests passed; false = 1 only when all pass", any());
    v("timeout_s", timeout_s, "code: CPU seconds per test run (wall clock limit: 2x + 1 s)", greater_than(0));
    v("memory_mb", memory_mb, "code: address-space limit per test run in MiB", at_least(64));
    v("python", python, "code: Python interpreter for candidate programs", any());
  }
};

// The external verifier (reward/external/external.h): keys reward.external_*.
struct ExternalRewardOptions {
  std::string command = "";
  double timeout_s = 60;

  template <class V>
  void visit(V&& v) {
    v("command", command, "external verifier: a command started once that reads JSON lines "
      "{prompt, response, answer, row} (with tools also tool_turns, tool_calls, tool_errors, tool_timeouts) and writes "
      "one number per line", any());
    v("timeout_s", timeout_s, "external verifier: seconds to wait for each answer before the "
      "run stops with a verifier error", greater_than(0));
  }
};

// The learned reward model (reward/scorers/model_reward.h): keys reward.model_*, less the three of ScorerOptions.
struct ModelRewardOptions {
  std::string path = "";
  ChatTemplate chat = ChatTemplate::kChatml;
  bool normalize = false;
  double clip = 0;

  template <class V>
  void visit(V&& v) {
    v("path", path, "model reward (kind or component \"model\"): a reward model exported by "
      "scripts/export_hf.py --reward (a Hugging Face *ForSequenceClassification, num_labels 1; docs/verifiers.md)", any());
    v("template", chat, "model reward: the chat template the reward model reads prompt and response "
      "in (its own family's: chatml for Qwen3, qwen2.5, deepseek_r1), or none (data.prompt_template's prompt, then the "
      "response)", choice_rule(chat));
    v("normalize", normalize, "model reward: standardise the scores over the rows this rank scores at "
      "once ((s - mean) / std); false = the raw score", any());
    v("clip", clip, "model reward: clip the (normalised) score to [-clip, clip]; 0 = no clip", at_least(0));
  }
};

// How a model-backed scorer runs, read by both the reward model and the judge (reward/scorers/model_scoring.h):
// keys reward.model_dtype, model_max_tokens, model_batch_tokens (named before there was a judge).
struct ScorerOptions {
  ScoreDtype dtype = ScoreDtype::kAuto;
  int64_t max_tokens = 0;
  int64_t batch_tokens = 16384;

  template <class V>
  void visit(V&& v) {
    v("dtype", dtype, "model and judge rewards: the reward model's weights and compute: auto (bfloat16 on CUDA, float32 "
      "on the CPU), float32, bfloat16", choice_rule(dtype));
    v("max_tokens", max_tokens, "model and judge rewards: the longest conversation scored, in the reward model's "
      "tokens; a longer one gets reward 0 and the failure 'longer than the reward model's context'; 0 = the reward "
      "model's max_seq_len", at_least(0));
    v("batch_tokens", batch_tokens, "model and judge rewards: rows x padded length of one scoring pass (rows sorted "
      "by length, as the rollout batches its prefills)", at_least(1));
  }
};

// The generative judge (reward/scorers/judge.h): keys reward.judge_*.
struct JudgeOptions {
  std::string path = "";
  JudgeMode mode = JudgeMode::kVerdict;
  std::string question =
      "Question:\n{prompt}\n\nReference answer: {answer}\n\nResponse:\n{response}\n\nDoes the response reach the "
      "reference answer? Answer Yes or No.";
  ChatTemplate chat = ChatTemplate::kChatml;
  bool thinking = false;
  std::string yes = "Yes";
  std::string no = "No";
  int64_t max_new_tokens = 512;
  double temperature = 0;
  double max_score = 10;

  template <class V>
  void visit(V&& v) {
    v("path", path, "judge reward (kind or component \"judge\"): a policy export (any causal LM gspo "
      "samples from, with its tokenizer) asked judge_template; model_dtype, model_max_tokens and model_batch_tokens "
      "apply to it too (docs/verifiers.md, \"Generative judges\")", any());
    v("mode", mode, "judge: verdict (reward = P(judge_yes) / (P(judge_yes) + P(judge_no)) at the first "
      "position the judge writes, one forward pass, no sampling) or sampled (the judge writes a judgement with gspo's "
      "sampler; reward = the number in its last \\boxed{} / judge_max_score)", choice_rule(mode));
    v("template", question, "judge: the question put to the judge, with {prompt}, {response} and "
      "{answer} (the row's answer; a row without one is a counted failure when the template asks for it)", any());
    v("chat", chat, "judge: the chat template the question is rendered in as a user turn, the assistant "
      "turn opened (the judge's family's: chatml for Qwen3, qwen2.5, deepseek_r1), or none (the question as it is)",
      choice_rule(chat));
    v("thinking", thinking, "judge, chatml: let a Qwen3 judge think first; false opens the turn with an "
      "empty <think></think> block (verdict mode reads the very next token)", any());
    v("yes", yes, "judge, verdict: the text of the verdict that scores 1 (one token of the judge's "
      "tokenizer, checked at start-up)", any());
    v("no", no, "judge, verdict: the text of the verdict that scores 0 (one token, not judge_yes's)", any());
    v("max_new_tokens", max_new_tokens, "judge, sampled: the longest judgement; one cut off before its "
      "\\boxed{} is a counted failure", at_least(1));
    v("temperature", temperature, "judge, sampled: sampling temperature; 0 = greedy", at_least(0));
    v("max_score", max_score, "judge, sampled: the top of the judge's score scale; reward = score / "
      "judge_max_score, a score outside [0, judge_max_score] a counted failure", greater_than(0));
  }
};

struct RewardOptions {
  RewardKind kind = RewardKind::kAuto;
  std::vector<std::string> components = {};
  std::vector<std::string> sources = {};
  std::string regex = "";
  int64_t workers = 0;
  int64_t overlong_buffer = 0;
  double overlong_penalty = 1.0;
  MathRewardOptions math;
  CodeRewardOptions code;
  ExternalRewardOptions external;
  ModelRewardOptions model;
  ScorerOptions scorer;
  JudgeOptions judge;

  template <class V>
  void visit(V&& v) {
    v("kind", kind, "verifier: auto (arithmetic: leading_integer; jsonl: code when rows have tests, else math), "
      "exact, leading_integer, math, code, regex, format, external, tool_format (with tools: 1 when the episode called a "
      "tool and no call failed; a component), model (a learned reward model's score: model_path), judge (a causal LM "
      "asked whether the response is right: judge_path)",
      choice_rule(kind));
    v("components", components, "weighted sum of verifiers as \"name:weight\" (e.g. [\"math:1\", \"format:0.1\"]); "
      "accuracy follows the first; empty = kind", any());
    v("sources", sources, "kind auto on rows with a data source (data.source_key): each source's verifier as "
      "\"source:kind\" (kind math, code, exact, leading_integer, regex, format or external; a source ending in * "
      "matches by prefix), before the built-in table of verl's names (openai/gsm8k, lighteval/MATH, math_dapo, aime*, "
      "verl's numina_ sets: math; codecontests, apps, codeforces, taco: code; docs/verifiers.md); a row whose source "
      "neither names is refused at start-up", any());
    v("regex", regex, "regex verifier: reward 1 when the response matches; {answer} is replaced by the escaped answer", any());
    external.visit(prefixed("external_", v));
    math.visit(prefixed("math_", v));
    code.visit(prefixed("code_", v));
    v("lcb_timeout_s", code.lcb_timeout_s, "code, LiveCodeBench rows: wall-clock (and CPU) seconds per test, 6 as in "
      "LiveCodeBench's evaluator (the other code rows use code_timeout_s)", greater_than(0));
    v("workers", workers, "threads scoring responses in parallel; 0 = hardware threads", at_least(0));
    v("overlong_buffer", overlong_buffer, "DAPO soft overlong penalty: a response of L tokens longer than "
      "rollout.max_new_tokens - overlong_buffer gets overlong_penalty * (max_new_tokens - overlong_buffer - L) / "
      "overlong_buffer added to its reward (0 at the buffer's start, -overlong_penalty at the cap); 0 = off",
      at_least(0));
    v("overlong_penalty", overlong_penalty, "the soft overlong penalty at rollout.max_new_tokens", at_least(0));
    model.visit(prefixed("model_", v));
    scorer.visit(prefixed("model_", v));
    judge.visit(prefixed("judge_", v));
  }
};

// One entry of tools.list: a record with its own table (read from a YAML mapping, keys checked like a section's).
struct ToolSpec {
  std::string name = "";
  std::string description = "";
  ToolKind kind = ToolKind::kPython;
  JsonObject parameters = {};
  std::string command = "";

  template <class V>
  void visit(V&& v) {
    v("name", name, "the name the model calls it by: letters, digits, _ . - (at most 64), unique in the list", any());
    v("description", description, "what the chat template shows the model about it", any());
    v("kind", kind, "python (runs the call's `code` argument in the code sandbox: reward.code_python, "
      "reward.code_memory_mb, tools.timeout_s, no network, a fresh process per call) or command (this entry's "
      "command, started once and reused, one JSON line per call)", choice_rule(kind));
    v("parameters", parameters, "JSON schema of the arguments (a mapping; its type, when given, is object), shown to "
      "the model", any());
    v("command", command, "kind command: the program, run by /bin/sh -c, reading {\"name\", \"arguments\"} and "
      "answering {\"output\"}, one JSON line each; its first word must be an executable file or on PATH", any());
  }
};
template <>
struct IsRecord<ToolSpec> : std::true_type {};

// Tools the model may call in a multi-turn rollout (docs/tools.md): set, training samples episodes (env/episode.h).
struct ToolsOptions {
  std::vector<ToolSpec> list = {};
  int64_t max_turns = 4;
  int64_t max_calls_per_turn = 4;
  int64_t max_output_tokens = 1024;
  double timeout_s = 10;
  int64_t workers = 4;

  template <class V>
  void visit(V&& v) {
    v("list", list, "the tools, a list of mappings with the keys tools.list[].*; empty = no tools", any());
    v("max_turns", max_turns, "assistant turns per response, the one answering the last observation included",
      at_least(1));
    v("max_calls_per_turn", max_calls_per_turn, "tool calls run per assistant turn; each call past it is answered "
      "with the observation \"tool error: too many calls\"", at_least(1));
    v("max_output_tokens", max_output_tokens, "an observation longer than this many tokens keeps its head and tail "
      "around a marker saying how many tokens were cut", at_least(16));
    v("timeout_s", timeout_s, "wall-clock seconds per tool call (python: also its CPU seconds); past it the call's "
      "observation is a tool error", greater_than(0));
    v("workers", workers, "tool calls of a turn run in parallel on this many threads", at_least(1));
  }
};

}  // namespace gspo::config
