// The options with a fixed set of values, as enums. Each enum's names (what YAML, --set, `gspo config` and the docs
// spell) are listed once, in choices(E) below; the loader parses them, so a typo is a config error at load and a
// compile error in code. Defaults stay in options.h, each written once.
#pragma once
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "gspo/config/rule.h"

namespace gspo::config {

template <class E>
struct Choice {
  const char* name;
  E value;
};

enum class Dtype { kFloat32, kBFloat16 };
enum class Task { kArithmetic, kJsonl };
enum class ChatTemplate { kNone, kChatml, kQwen25, kDeepseekR1, kAuto };
enum class Overlong { kSkip, kError };
enum class RewardKind { kAuto, kExact, kLeadingInteger, kMath, kCode, kRegex, kFormat, kExternal, kToolFormat, kModel,
                        kJudge };
enum class ScoreDtype { kAuto, kFloat32, kBFloat16 };  // reward.model_dtype: auto = bfloat16 on CUDA, float32 on the CPU
enum class JudgeMode { kVerdict, kSampled };  // reward.judge_mode
enum class DistillObjective { kReverseKl, kForwardKl, kJsd };  // distill.objective
// distill.chat_template: the teacher reads the student's prompt tokens, or the conversation in a format of its own
enum class TeacherChat { kStudent, kAuto, kNone, kChatml, kQwen25, kDeepseekR1 };
enum class LossKind { kGspo, kGspoToken, kGrpo };
enum class AdvantageKind {
  kGroupNorm,    // (r - mean) / (std + eps)
  kNoStd,        // r - mean                       (Dr. GRPO)
  kLeaveOneOut,  // r - mean of the other G - 1    (RLOO baseline)
};
enum class StdKind { kPopulation, kSample };
enum class KlEstimator { kK1, kK3 };
enum class OldLogprobs { kRecompute, kSampler };
enum class Schedule { kConstant, kCosine };
enum class OnNonfinite { kStop, kSkip };
enum class Backend { kAuto, kGloo, kNccl };
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };
enum class IsCorrection { kNone, kTis, kMis };  // importance-weight correction of the sampler/trainer mismatch
enum class IsLevel { kToken, kSequenceGeometric, kSequenceProduct };
enum class RewardScale { kGroup, kBatch, kNone };  // the std that group_norm advantages divide by
enum class ComponentNorm { kAfterSum, kBeforeSum };  // reward.components: normalised after or before summing
enum class RolloutDtype { kSame, kBFloat16 };  // weights the sampler runs with
// MoE: the update's experts are its own, the old-log-prob pass's (R2), or the rollout's (R3)
enum class RoutingReplay { kNone, kOld, kRollout };
enum class MathGold { kAuto, kAnswer, kExtract };  // math: the reference is the answer field, or extracted from it
enum class ToolKind { kPython, kCommand };  // tools.list: the code sandbox, or a user's program
// rollout.cuda_graphs: on a CUDA device when the model can (auto), always (true: saying so when it cannot), never
enum class CudaGraphs { kAuto, kOn, kOff };

// The names of each enum's values, in documentation order (found by argument-dependent lookup).
const std::vector<Choice<Dtype>>& choices(Dtype);
const std::vector<Choice<Task>>& choices(Task);
const std::vector<Choice<ChatTemplate>>& choices(ChatTemplate);
const std::vector<Choice<Overlong>>& choices(Overlong);
const std::vector<Choice<RewardKind>>& choices(RewardKind);
const std::vector<Choice<LossKind>>& choices(LossKind);
const std::vector<Choice<AdvantageKind>>& choices(AdvantageKind);
const std::vector<Choice<StdKind>>& choices(StdKind);
const std::vector<Choice<KlEstimator>>& choices(KlEstimator);
const std::vector<Choice<OldLogprobs>>& choices(OldLogprobs);
const std::vector<Choice<Schedule>>& choices(Schedule);
const std::vector<Choice<OnNonfinite>>& choices(OnNonfinite);
const std::vector<Choice<Backend>>& choices(Backend);
const std::vector<Choice<LogLevel>>& choices(LogLevel);
const std::vector<Choice<IsCorrection>>& choices(IsCorrection);
const std::vector<Choice<IsLevel>>& choices(IsLevel);
const std::vector<Choice<RewardScale>>& choices(RewardScale);
const std::vector<Choice<ScoreDtype>>& choices(ScoreDtype);
const std::vector<Choice<JudgeMode>>& choices(JudgeMode);
const std::vector<Choice<DistillObjective>>& choices(DistillObjective);
const std::vector<Choice<TeacherChat>>& choices(TeacherChat);
const std::vector<Choice<ComponentNorm>>& choices(ComponentNorm);
const std::vector<Choice<RolloutDtype>>& choices(RolloutDtype);
const std::vector<Choice<CudaGraphs>>& choices(CudaGraphs);
const std::vector<Choice<RoutingReplay>>& choices(RoutingReplay);
const std::vector<Choice<MathGold>>& choices(MathGold);
const std::vector<Choice<ToolKind>>& choices(ToolKind);

template <class E>
struct IsChoice : std::false_type {};
#define GSPO_CHOICE(E) template <> struct IsChoice<E> : std::true_type {}
GSPO_CHOICE(Dtype); GSPO_CHOICE(Task); GSPO_CHOICE(ChatTemplate); GSPO_CHOICE(Overlong); GSPO_CHOICE(RewardKind);
GSPO_CHOICE(LossKind); GSPO_CHOICE(AdvantageKind); GSPO_CHOICE(StdKind); GSPO_CHOICE(KlEstimator);
GSPO_CHOICE(OldLogprobs); GSPO_CHOICE(Schedule); GSPO_CHOICE(OnNonfinite); GSPO_CHOICE(Backend); GSPO_CHOICE(LogLevel);
GSPO_CHOICE(IsCorrection); GSPO_CHOICE(IsLevel); GSPO_CHOICE(RewardScale); GSPO_CHOICE(ComponentNorm);
GSPO_CHOICE(RolloutDtype); GSPO_CHOICE(RoutingReplay); GSPO_CHOICE(MathGold); GSPO_CHOICE(ToolKind);
GSPO_CHOICE(CudaGraphs); GSPO_CHOICE(ScoreDtype); GSPO_CHOICE(JudgeMode); GSPO_CHOICE(DistillObjective);
GSPO_CHOICE(TeacherChat);
#undef GSPO_CHOICE

// The name of a value ("bfloat16").
template <class E>
const char* name_of(E v) {
  for (const auto& c : choices(E{}))
    if (c.value == v) return c.name;
  return "?";
}

// The value of a name, if it is one.
template <class E>
std::optional<E> parse_choice(const std::string& name) {
  for (const auto& c : choices(E{}))
    if (name == c.name) return c.value;
  return std::nullopt;
}

// "a, b, c": every name of E.
template <class E>
std::string names_of() {
  std::string s;
  for (const auto& c : choices(E{})) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

// The table's rule for an enum field: one of its names.
template <class E>
Rule choice_rule(const E&) {
  std::vector<std::string> names;
  for (const auto& c : choices(E{})) names.push_back(c.name);
  return one_of(std::move(names));
}

// GSPO's clip range (the paper's 3e-4 / 4e-4, also GSPO-token's) and GRPO's (0.2 / 0.28, clip-higher): what
// algorithm.clip_low / clip_high < 0 resolve to.
struct ClipRange {
  double low, high;
};
ClipRange default_clip(LossKind loss);

}  // namespace gspo::config
