#include "gspo/model/policy.h"

#include <torch/csrc/jit/serialization/export.h>
#include <torch/script.h>

#include <fstream>
#include <stdexcept>
#include <set>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/core/file_sink.h"
#include "gspo/core/log.h"
#include "gspo/core/resources.h"
#include "gspo/model/policy_impl.h"

namespace gspo::model {

namespace {
const char* const kMethods[] = {"forward", "init_cache", "prefill", "decode", "reorder_cache"};
}

Policy::Policy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Policy::Policy(Policy&&) noexcept = default;
Policy& Policy::operator=(Policy&&) noexcept = default;
Policy::~Policy() = default;

namespace {
// The exported attention takes FlashAttention-2 (varlen_attention) for bf16/fp16 on CUDA, a kernel that exists from
// sm80 (Ampere) on: below that its first call throws. TorchScript cannot ask the device, so the export carries a bool
// attribute `flash_ok` (scripts/gspo_model.py) that is switched off here on an older GPU, and the masked SDPA path
// runs instead. An export from before the attribute cannot be switched: refused on such a GPU, naming the fix.
void gate_flash(Policy::Impl& impl) {
  const int major = core::cuda_capability_major(impl.device);
  if (!impl.device.is_cuda() || major >= 8) return;
  if (impl.module.hasattr("flash_ok")) {
    impl.module.setattr("flash_ok", false);
    return;
  }
  if (impl.manifest.dtype == "float32") {  // (the flash path is for bf16/fp16 only: a bf16 run of it would fail)
    log::warn("{}: this export predates the flash_ok switch; on this GPU (compute capability {}.x) run it in float32 "
              "only, or export it again with scripts/export_hf.py", impl.path, major);
    return;
  }
  throw ModelContractError("'" + impl.path + "' is a " + impl.manifest.dtype + " export whose attention uses "
                           "FlashAttention-2, which needs a GPU of compute capability 8.0 or newer (this one is " +
                           std::to_string(major) + ".x); export it again with scripts/export_hf.py (its models fall "
                           "back to masked attention on such a GPU) or run it in float32");
}
}  // namespace

Policy Policy::load(const std::string& path, c10::Device device) {
  {
    std::ifstream probe(path, std::ios::binary);
    if (!probe) throw IoError("cannot read model file '" + path + "': " + std::strerror(errno));
  }
  auto impl = std::make_unique<Impl>();
  std::unordered_map<std::string, std::string> extra{{kManifestFile, ""}, {kTokenizerFile, ""}};
  try {
    impl->module = torch::jit::load(path, device, extra);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    throw ModelContractError("'" + path + "' is not a loadable TorchScript file (" + what.substr(0, 200) +
                             "); export models with scripts/make_tiny_model.py or scripts/export_hf.py");
  }
  for (const char* name : kMethods) {
    if (!impl->module.find_method(name)) {
      throw ModelContractError("'" + path + "' lacks the contract method '" + name +
                               "' (needs forward, init_cache, prefill, decode, reorder_cache; see "
                               "docs/model-contract.md)");
    }
  }
  impl->manifest = parse_manifest(extra[kManifestFile], path);
  impl->tokenizer = extra[kTokenizerFile];
  impl->path = path;
  // Where the weights are: a bare "cuda" resolves to an indexed device here, so CUDA calls that take an index
  // (streams, graph capture) can use device() as it is.
  const auto params = impl->module.parameters();
  impl->device = params.size() > 0 ? (*params.begin()).device() : device;
  impl->has_logits_from = impl->module.find_method("logits_from").has_value();
  probe_layers(*impl);
  probe_slots(*impl);
  probe_routing(*impl);
  probe_expert_parallel(*impl);
  gate_flash(*impl);
  impl->module.eval();
  return Policy(std::move(impl));
}

Policy Policy::ungated_view() const {
  auto impl = std::make_unique<Impl>(*impl_);  // the module is a handle: the same module object
  impl->gates = GateChain();
  impl->gate = nullptr;
  return Policy(std::move(impl));
}

const Manifest& Policy::manifest() const { return impl_->manifest; }
const std::string& Policy::path() const { return impl_->path; }
const std::string& Policy::tokenizer_json() const { return impl_->tokenizer; }
c10::Device Policy::device() const { return impl_->device; }

void require_whole(const Policy::Impl& impl, const char* method) {
  if (impl.gate && !impl.gate->whole())
    throw Error(std::string("Policy::") + method + " needs the whole model, but its decoder layers' weights are "
                "held by a gate: sharded (distributed.zero_stage 3, or experts under distributed.expert_parallel) and not "
                "gathered now, or adapted (model.lora: "
                "the adapters merge only into layers run one by one; sample from a merged copy)");
}

void Policy::add_gate(ParamGate* gate) {
  impl_->gates.add(gate);
  impl_->gate = &impl_->gates;
}

void Policy::remove_gate(ParamGate* gate) {
  impl_->gates.remove(gate);
  if (impl_->gates.empty()) impl_->gate = nullptr;
}

at::Tensor Policy::logits(const at::Tensor& ids, const at::Tensor& mask) {
  require_whole(*impl_, "logits");
  return impl_->module.forward({ids, mask}).toTensor();
}

bool Policy::has_logits_from() const { return impl_->has_logits_from; }

at::Tensor Policy::logits_from(const at::Tensor& ids, const at::Tensor& mask, int64_t first) {
  require_whole(*impl_, "logits_from");
  if (impl_->has_logits_from) return impl_->module.get_method("logits_from")({ids, mask, first}).toTensor();
  return logits(ids, mask).narrow(1, first, ids.size(1) - first);
}

at::Tensor Policy::init_cache(int64_t batch, int64_t max_len) {
  return impl_->module.get_method("init_cache")({batch, max_len}).toTensor();
}

at::Tensor Policy::prefill(const at::Tensor& ids, const at::Tensor& mask, at::Tensor& cache) {
  require_whole(*impl_, "prefill");
  return impl_->module.get_method("prefill")({ids, mask, cache}).toTensor();
}

at::Tensor Policy::decode(const at::Tensor& ids, const at::Tensor& mask, at::Tensor& cache, int64_t start) {
  return impl_->module.get_method("decode")({ids, mask, cache, start}).toTensor();
}

at::Tensor Policy::reorder_cache(const at::Tensor& cache, const at::Tensor& rows) {
  return impl_->module.get_method("reorder_cache")({cache, rows}).toTensor();
}

bool Policy::has_static_decode() const { return impl_->module.find_method("decode_static").has_value(); }

at::Tensor Policy::decode_static(const at::Tensor& ids, const at::Tensor& mask, at::Tensor& cache,
                                 const at::Tensor& position) {
  return impl_->module.get_method("decode_static")({ids, mask, cache, position}).toTensor();
}

std::vector<at::Tensor> Policy::expert_load() {
  std::vector<at::Tensor> out;
  if (!impl_->module.find_method("expert_load")) return out;
  for (const auto& v : impl_->module.get_method("expert_load")({}).toTensorList()) out.push_back(v);
  return out;
}

namespace {

// A module's parameters, each once: TorchScript's C++ module.parameters() lists a tied weight (embedding = output
// layer) under every name it has, and an optimizer, master copy, gradient sync, checkpoint or count that saw it
// twice would step it twice or split its update. Tied names hold one tensor (one TensorImpl, one autograd leaf,
// one .grad), so its address identifies it.
std::vector<at::Tensor> unique_parameters(const torch::jit::Module& module) {
  std::vector<at::Tensor> out;
  std::set<const c10::TensorImpl*> seen;
  for (const auto& p : module.parameters())
    if (seen.insert(p.unsafeGetTensorImpl()).second) out.push_back(p);
  return out;
}

}  // namespace

std::vector<at::Tensor> Policy::parameters() const { return unique_parameters(impl_->module); }

std::vector<std::pair<std::string, at::Tensor>> Policy::named_parameters() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  std::set<const c10::TensorImpl*> seen;
  for (const auto& np : impl_->module.named_parameters())
    if (seen.insert(np.value.unsafeGetTensorImpl()).second) out.emplace_back(np.name, np.value);
  return out;
}

namespace {
// The submodule holding parameter `name` and the parameter's own name within it.
std::pair<torch::jit::Module, std::string> owner_of(const torch::jit::Module& root, const std::string& name) {
  torch::jit::Module m = root;
  size_t from = 0;
  for (size_t dot = name.find('.'); dot != std::string::npos; from = dot + 1, dot = name.find('.', from)) {
    const std::string part = name.substr(from, dot - from);
    if (!m.hasattr(part)) throw std::out_of_range("the model has no parameter '" + name + "'");
    m = m.attr(part).toModule();
  }
  const std::string leaf = name.substr(from);
  if (!m.hasattr(leaf) || !m.attr(leaf).isTensor())
    throw std::out_of_range("the model has no parameter '" + name + "'");
  return {m, leaf};
}
}  // namespace

at::Tensor Policy::parameter(const std::string& name) const {
  auto [m, leaf] = owner_of(impl_->module, name);
  return m.attr(leaf).toTensor();
}

at::Tensor Policy::swap_parameter(const std::string& name, const at::Tensor& value) {
  auto [m, leaf] = owner_of(impl_->module, name);
  auto old = m.attr(leaf).toTensor();
  m.setattr(leaf, value);
  return old;
}

void Policy::set_param_dtype(c10::ScalarType dtype) {
  torch::NoGradGuard g;
  for (auto p : unique_parameters(impl_->module))
    if (p.is_floating_point() && p.scalar_type() != dtype) p.set_data(p.detach().to(dtype));
}

void Policy::move_to(c10::Device device) {
  torch::NoGradGuard g;
  impl_->module.to(device);
  const auto params = impl_->module.parameters();
  impl_->device = params.size() > 0 ? (*params.begin()).device() : device;
}

int64_t Policy::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : unique_parameters(impl_->module)) n += p.numel();
  return n;
}

void Policy::save(const std::string& path) const {
  std::unordered_map<std::string, std::string> extra{{kManifestFile, impl_->manifest.raw_json},
                                                     {kTokenizerFile, impl_->tokenizer}};
  core::FileSink sink(path);  // a full disk becomes an IoError from finish(), not an abort inside torch's writer
  try {
    torch::jit::ExportModule(impl_->module, sink.writer(), extra);
  } catch (const c10::Error& e) {
    throw IoError("cannot write model file '" + path + "': " + e.what_without_backtrace());
  }
  sink.finish();
}

std::vector<std::string> Policy::methods() const {
  std::vector<std::string> out;
  for (const auto& m : impl_->module.get_methods()) out.push_back(m.name());
  return out;
}

std::array<double, 2> weights_fingerprint(const Policy& policy) {
  torch::NoGradGuard g;
  double sum = 0, sq = 0;
  for (const auto& p : policy.parameters()) {
    const auto d = p.detach().to(torch::kCPU, torch::kDouble);
    sum += d.sum().item<double>();
    sq += d.square().sum().item<double>();
  }
  return {sum, sq};
}

Policy load_frozen(const std::string& path, c10::Device device, std::optional<c10::ScalarType> dtype) {
  auto p = Policy::load(path, device);
  if (dtype && p.parameters().front().scalar_type() != *dtype) p.set_param_dtype(*dtype);
  for (auto& t : p.parameters()) t.set_requires_grad(false);
  return p;
}

}  // namespace gspo::model
