#include "gspo/io/checkpoint_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include <exception>

#include "gspo/core/error.h"
#include "gspo/io/adapter_file.h"
#include "gspo/io/checkpoint.h"
#include "gspo/core/fs.h"

namespace gspo::io {
using core::exists;
using core::list_dir;
namespace {

std::string archive_damage(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    for (const auto& name : reader.getAllRecords()) reader.getRecord(name);
    return "";
  } catch (const c10::Error& e) {
    return "'" + path + "' does not read back (" + std::string(e.what_without_backtrace()).substr(0, 160) + ")";
  } catch (const std::exception& e) {
    return "'" + path + "' does not read back (" + std::string(e.what()).substr(0, 160) + ")";
  }
}

}  // namespace

std::string checkpoint_damage(const std::string& dir) {
  try {
    read_meta(dir);
  } catch (const Error& e) {
    return e.what();
  }
  if (!exists(policy_file(dir)) && !exists(adapter_file(dir)))
    return "'" + policy_file(dir) + "' (or, training adapters, '" + adapter_file(dir) + "') is missing";
  if (exists(adapter_file(dir))) {  // the adapters' description, read as a resume reads it
    try {
      read_adapter_meta(dir);
    } catch (const Error& e) {
      return e.what();
    }
  }
  for (const auto& name : list_dir(dir)) {
    if (name.size() < 3 || name.compare(name.size() - 3, 3, ".pt") != 0) continue;
    auto problem = archive_damage(dir + "/" + name);
    if (!problem.empty()) return problem;
  }
  return "";
}

IntactCheckpoint latest_intact_checkpoint(const std::string& run_dir) {
  IntactCheckpoint out;
  for (const auto& dir : complete_checkpoints_newest_first(run_dir)) {
    auto problem = checkpoint_damage(dir);
    if (problem.empty()) {
      out.dir = dir;
      break;
    }
    out.damaged.emplace_back(dir, problem);
  }
  return out;
}

}  // namespace gspo::io
