#include "gspo/model/reward_model.h"

#include <nlohmann/json.hpp>
#include <torch/script.h>
#include <torch/torch.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <unordered_map>

#include "gspo/core/error.h"
#include "gspo/model/manifest.h"

namespace gspo::model {
namespace {

constexpr const char* kFormat = "gspo-reward-model";
constexpr int64_t kRewardApi = 1;

std::unordered_map<std::string, std::string> read_extra(const std::string& path, c10::Device device,
                                                        torch::jit::Module* module) {
  std::unordered_map<std::string, std::string> extra{{kManifestFile, ""}, {kTokenizerFile, ""}};
  try {
    auto m = torch::jit::load(path, device, extra);
    if (module) *module = std::move(m);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    throw ModelContractError("'" + path + "' is not a loadable TorchScript file (" + what.substr(0, 200) +
                             "); export reward models with scripts/export_hf.py --reward");
  }
  return extra;
}

RewardManifest parse_reward_manifest(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw ModelContractError(path + ": " + kManifestFile + " is missing or not valid JSON; export reward models with "
                             "scripts/export_hf.py --reward (docs/model-contract.md, \"Reward models\")");
  }
  if (j.value("format", std::string()) != kFormat)
    throw ModelContractError(path + ": not a reward model (manifest format '" + j.value("format", std::string("?")) +
                             "', expected '" + kFormat + "'): reward.model_path takes a *ForSequenceClassification "
                             "exported by scripts/export_hf.py --reward, not a policy");
  auto need = [&](const char* key) -> int64_t {
    if (!j.contains(key) || !j.at(key).is_number_integer())
      throw ModelContractError(path + ": reward-model manifest lacks the integer field '" + key + "'");
    return j.at(key).get<int64_t>();
  };
  RewardManifest m;
  m.reward_api = need("reward_api");
  if (m.reward_api != kRewardApi)
    throw ModelContractError(path + ": reward_api " + std::to_string(m.reward_api) + " is not supported (this gspo "
                             "reads reward_api " + std::to_string(kRewardApi) + ")");
  m.vocab_size = need("vocab_size");
  m.max_seq_len = need("max_seq_len");
  m.pad_token_id = need("pad_token_id");
  m.bos_token_id = j.value("bos_token_id", int64_t{-1});
  m.eos_token_id = j.value("eos_token_id", int64_t{-1});
  m.num_layers = j.value("num_layers", int64_t{0});
  m.hidden_size = j.value("hidden_size", int64_t{0});
  m.architecture = j.value("architecture", std::string("unknown"));
  m.dtype = j.value("dtype", std::string("float32"));
  m.raw_json = text;
  if (m.vocab_size <= 0 || m.max_seq_len <= 0)
    throw ModelContractError(path + ": reward-model manifest vocab_size and max_seq_len must be positive");
  if (m.pad_token_id < 0 || m.pad_token_id >= m.vocab_size)
    throw ModelContractError(path + ": reward-model manifest pad_token_id " + std::to_string(m.pad_token_id) +
                             " is outside the vocabulary [0, " + std::to_string(m.vocab_size) + ")");
  return m;
}

}  // namespace

struct RewardModel::Impl {
  torch::jit::Module module;
  RewardManifest manifest;
  std::string tokenizer, path;
  c10::Device device{c10::kCPU};
  c10::ScalarType dtype = c10::kFloat;
};

bool is_reward_model(const std::string& path) {
  try {
    std::unordered_map<std::string, std::string> extra{{kManifestFile, ""}};
    torch::jit::load(path, c10::Device(c10::kCPU), extra);
    return nlohmann::json::parse(extra[kManifestFile]).value("format", std::string()) == kFormat;
  } catch (const std::exception&) {
    return false;
  }
}

RewardModel RewardModel::load(const std::string& path, c10::Device device, c10::ScalarType dtype) {
  {
    std::ifstream probe(path, std::ios::binary);
    if (!probe) throw IoError("cannot read reward model '" + path + "': " + std::strerror(errno));
  }
  if (dtype != c10::kFloat && dtype != c10::kBFloat16)
    throw std::invalid_argument("RewardModel::load: dtype must be float32 or bfloat16");
  auto impl = std::make_unique<Impl>();
  auto extra = read_extra(path, device, &impl->module);
  impl->manifest = parse_reward_manifest(extra[kManifestFile], path);
  if (!impl->module.find_method("score"))
    throw ModelContractError("'" + path + "' lacks the reward-model method 'score' (docs/model-contract.md, \"Reward "
                             "models\")");
  impl->tokenizer = extra[kTokenizerFile];
  impl->path = path;
  torch::NoGradGuard g;
  for (auto p : impl->module.parameters()) {
    if (p.is_floating_point() && p.scalar_type() != dtype) p.set_data(p.detach().to(dtype));
    p.set_requires_grad(false);
  }
  const auto params = impl->module.parameters();
  impl->device = params.size() > 0 ? (*params.begin()).device() : device;
  impl->dtype = dtype;
  impl->module.eval();
  return RewardModel(std::move(impl));
}

RewardModel::RewardModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RewardModel::RewardModel(RewardModel&&) noexcept = default;
RewardModel& RewardModel::operator=(RewardModel&&) noexcept = default;
RewardModel::~RewardModel() = default;

const RewardManifest& RewardModel::manifest() const { return impl_->manifest; }
const std::string& RewardModel::tokenizer_json() const { return impl_->tokenizer; }
const std::string& RewardModel::path() const { return impl_->path; }
c10::Device RewardModel::device() const { return impl_->device; }
c10::ScalarType RewardModel::dtype() const { return impl_->dtype; }

int64_t RewardModel::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : impl_->module.parameters()) n += p.numel();
  return n;
}

at::Tensor RewardModel::score(const at::Tensor& ids, const at::Tensor& mask) {
  torch::InferenceMode guard;
  auto out = impl_->module.get_method("score")({ids, mask}).toTensor();
  if (out.dim() != 1 || out.size(0) != ids.size(0))
    throw ModelContractError(impl_->path + ": score returned shape " + std::to_string(out.dim()) + "-d, expected [" +
                             std::to_string(ids.size(0)) + "] (one score a row)");
  return out.to(at::kFloat);
}

}  // namespace gspo::model
