// make_verifier(): the verifier (or weighted combination) config.reward describes, built from the rooms below (base,
// math, code, external, models). reward/'s top level: the one place a reward kind meets the verifier that grades it.
#pragma once
#include <c10/core/Device.h>

#include <memory>
#include <vector>

#include "gspo/data/example.h"
#include "gspo/reward/base/verifier.h"

namespace gspo::config { struct Config; }

namespace gspo::reward {

// Whether config.reward scores with models on a device (the reward model or the judge, alone or as a component): one
// such scorer is loaded per run, and evaluation inside training shares it (eval/validation.h).
bool scores_with_models(const config::Config& cfg);

// The verifier (or weighted combination) config.reward selects for `rows`. Kind "auto" on JSONL data grades each
// row by what it carries: the code verifier where the row has tests, the math verifier elsewhere (a dataset may
// mix both). An explicit "code" on rows without tests is refused here, naming the first such row.
// `device`: where a model reward runs (reward.kind or a component "model"); the training or eval device.
std::unique_ptr<Verifier> make_verifier(const config::Config& cfg, const std::vector<data::Example>& rows = {},
                                        c10::Device device = c10::Device(c10::kCPU));

}  // namespace gspo::reward
