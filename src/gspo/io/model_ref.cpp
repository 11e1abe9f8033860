#include "gspo/io/model_ref.h"

#include <filesystem>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/core/log.h"
#include "gspo/io/adapter_file.h"
#include "gspo/io/checkpoint.h"

namespace gspo::io {

ModelRef resolve_model_ref(const std::string& path, const std::string& adapter) {
  if (!std::filesystem::is_directory(path)) return {path, adapter, ""};
  std::string ckpt = path;
  if (!core::exists(policy_file(path)) && !core::exists(adapter_file(path))) {
    const auto latest = latest_checkpoint(path);
    if (!latest)
      throw IoError("'" + path + "' is a directory with no model in it: give a model file (.pt), a checkpoint "
                    "directory (policy.pt or adapter.pt) or a run directory with a complete checkpoint under "
                    "checkpoints/");
    ckpt = *latest;
  }
  ModelRef ref{policy_file(ckpt), adapter, ckpt};
  if (!core::exists(ref.model)) {
    if (!core::exists(adapter_file(ckpt))) throw IoError("checkpoint '" + ckpt + "' holds neither policy.pt nor adapter.pt");
    if (!adapter.empty() && adapter != ckpt)
      throw ConfigError("'" + path + "' is a checkpoint of adapters ('" + ckpt + "'), and adapters '" + adapter +
                        "' are given too: give one of them");
    ref = {read_adapter_meta(ckpt).base_path, ckpt, ckpt};
  }
  log::info("model: {}{} (from checkpoint {})", ref.model, ref.adapter.empty() ? "" : " with adapters " + ref.adapter,
            ckpt);
  return ref;
}

}  // namespace gspo::io
