#include "gspo/config/choices.h"

namespace gspo::config {

const std::vector<Choice<Dtype>>& choices(Dtype) {
  static const std::vector<Choice<Dtype>> c{{"float32", Dtype::kFloat32}, {"bfloat16", Dtype::kBFloat16}};
  return c;
}
const std::vector<Choice<Task>>& choices(Task) {
  static const std::vector<Choice<Task>> c{{"arithmetic", Task::kArithmetic}, {"jsonl", Task::kJsonl}};
  return c;
}
const std::vector<Choice<ChatTemplate>>& choices(ChatTemplate) {
  static const std::vector<Choice<ChatTemplate>> c{{"none", ChatTemplate::kNone},
                                                   {"chatml", ChatTemplate::kChatml},
                                                   {"qwen2.5", ChatTemplate::kQwen25},
                                                   {"deepseek_r1", ChatTemplate::kDeepseekR1},
                                                   {"auto", ChatTemplate::kAuto}};
  return c;
}
const std::vector<Choice<Overlong>>& choices(Overlong) {
  static const std::vector<Choice<Overlong>> c{{"skip", Overlong::kSkip}, {"error", Overlong::kError}};
  return c;
}
const std::vector<Choice<RewardKind>>& choices(RewardKind) {
  static const std::vector<Choice<RewardKind>> c{
      {"auto", RewardKind::kAuto},   {"exact", RewardKind::kExact}, {"leading_integer", RewardKind::kLeadingInteger},
      {"math", RewardKind::kMath},   {"code", RewardKind::kCode},   {"regex", RewardKind::kRegex},
      {"format", RewardKind::kFormat}, {"external", RewardKind::kExternal}, {"tool_format", RewardKind::kToolFormat},
      {"model", RewardKind::kModel}, {"judge", RewardKind::kJudge}};
  return c;
}
const std::vector<Choice<LossKind>>& choices(LossKind) {
  static const std::vector<Choice<LossKind>> c{
      {"gspo", LossKind::kGspo}, {"gspo_token", LossKind::kGspoToken}, {"grpo", LossKind::kGrpo}};
  return c;
}
const std::vector<Choice<AdvantageKind>>& choices(AdvantageKind) {
  static const std::vector<Choice<AdvantageKind>> c{{"group_norm", AdvantageKind::kGroupNorm},
                                                    {"no_std", AdvantageKind::kNoStd},
                                                    {"leave_one_out", AdvantageKind::kLeaveOneOut}};
  return c;
}
const std::vector<Choice<StdKind>>& choices(StdKind) {
  static const std::vector<Choice<StdKind>> c{{"population", StdKind::kPopulation}, {"sample", StdKind::kSample}};
  return c;
}
const std::vector<Choice<KlEstimator>>& choices(KlEstimator) {
  static const std::vector<Choice<KlEstimator>> c{{"k1", KlEstimator::kK1}, {"k3", KlEstimator::kK3}};
  return c;
}
const std::vector<Choice<OldLogprobs>>& choices(OldLogprobs) {
  static const std::vector<Choice<OldLogprobs>> c{{"recompute", OldLogprobs::kRecompute},
                                                  {"sampler", OldLogprobs::kSampler}};
  return c;
}
const std::vector<Choice<ToolKind>>& choices(ToolKind) {
  static const std::vector<Choice<ToolKind>> c{{"python", ToolKind::kPython}, {"command", ToolKind::kCommand}};
  return c;
}
const std::vector<Choice<MathGold>>& choices(MathGold) {
  static const std::vector<Choice<MathGold>> c{
      {"auto", MathGold::kAuto}, {"answer", MathGold::kAnswer}, {"extract", MathGold::kExtract}};
  return c;
}
const std::vector<Choice<RoutingReplay>>& choices(RoutingReplay) {
  static const std::vector<Choice<RoutingReplay>> c{
      {"none", RoutingReplay::kNone}, {"old", RoutingReplay::kOld}, {"rollout", RoutingReplay::kRollout}};
  return c;
}
const std::vector<Choice<Schedule>>& choices(Schedule) {
  static const std::vector<Choice<Schedule>> c{{"constant", Schedule::kConstant}, {"cosine", Schedule::kCosine}};
  return c;
}
const std::vector<Choice<OnNonfinite>>& choices(OnNonfinite) {
  static const std::vector<Choice<OnNonfinite>> c{{"stop", OnNonfinite::kStop}, {"skip", OnNonfinite::kSkip}};
  return c;
}
const std::vector<Choice<Backend>>& choices(Backend) {
  static const std::vector<Choice<Backend>> c{{"auto", Backend::kAuto}, {"gloo", Backend::kGloo}, {"nccl", Backend::kNccl}};
  return c;
}
const std::vector<Choice<LogLevel>>& choices(LogLevel) {
  static const std::vector<Choice<LogLevel>> c{{"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug},
                                               {"info", LogLevel::kInfo},   {"warn", LogLevel::kWarn},
                                               {"error", LogLevel::kError}, {"off", LogLevel::kOff}};
  return c;
}

const std::vector<Choice<IsCorrection>>& choices(IsCorrection) {
  static const std::vector<Choice<IsCorrection>> c{
      {"none", IsCorrection::kNone}, {"tis", IsCorrection::kTis}, {"mis", IsCorrection::kMis}};
  return c;
}
const std::vector<Choice<IsLevel>>& choices(IsLevel) {
  static const std::vector<Choice<IsLevel>> c{{"token", IsLevel::kToken},
                                              {"sequence_geometric", IsLevel::kSequenceGeometric},
                                              {"sequence_product", IsLevel::kSequenceProduct}};
  return c;
}
const std::vector<Choice<RewardScale>>& choices(RewardScale) {
  static const std::vector<Choice<RewardScale>> c{
      {"group", RewardScale::kGroup}, {"batch", RewardScale::kBatch}, {"none", RewardScale::kNone}};
  return c;
}
const std::vector<Choice<DistillObjective>>& choices(DistillObjective) {
  static const std::vector<Choice<DistillObjective>> c{{"reverse_kl", DistillObjective::kReverseKl},
                                                       {"forward_kl", DistillObjective::kForwardKl},
                                                       {"jsd", DistillObjective::kJsd}};
  return c;
}
const std::vector<Choice<TeacherChat>>& choices(TeacherChat) {
  static const std::vector<Choice<TeacherChat>> c{
      {"student", TeacherChat::kStudent}, {"auto", TeacherChat::kAuto},     {"none", TeacherChat::kNone},
      {"chatml", TeacherChat::kChatml},   {"qwen2.5", TeacherChat::kQwen25}, {"deepseek_r1", TeacherChat::kDeepseekR1}};
  return c;
}

const std::vector<Choice<ScoreDtype>>& choices(ScoreDtype) {
  static const std::vector<Choice<ScoreDtype>> c{
      {"auto", ScoreDtype::kAuto}, {"float32", ScoreDtype::kFloat32}, {"bfloat16", ScoreDtype::kBFloat16}};
  return c;
}
const std::vector<Choice<JudgeMode>>& choices(JudgeMode) {
  static const std::vector<Choice<JudgeMode>> c{{"verdict", JudgeMode::kVerdict}, {"sampled", JudgeMode::kSampled}};
  return c;
}
const std::vector<Choice<ComponentNorm>>& choices(ComponentNorm) {
  static const std::vector<Choice<ComponentNorm>> c{{"after_sum", ComponentNorm::kAfterSum},
                                                    {"before_sum", ComponentNorm::kBeforeSum}};
  return c;
}
const std::vector<Choice<CudaGraphs>>& choices(CudaGraphs) {
  static const std::vector<Choice<CudaGraphs>> c{
      {"auto", CudaGraphs::kAuto}, {"true", CudaGraphs::kOn}, {"false", CudaGraphs::kOff}};
  return c;
}
const std::vector<Choice<RolloutDtype>>& choices(RolloutDtype) {
  static const std::vector<Choice<RolloutDtype>> c{{"same", RolloutDtype::kSame}, {"bfloat16", RolloutDtype::kBFloat16}};
  return c;
}

ClipRange default_clip(LossKind loss) {
  if (loss == LossKind::kGrpo) return {0.2, 0.28};
  return {3e-4, 4e-4};
}

}  // namespace gspo::config
