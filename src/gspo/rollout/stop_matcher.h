// Stop strings matched on the bytes of a growing response.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::rollout {

class StopMatcher {
 public:
  StopMatcher(std::vector<std::string> stops, const tokenizer::Tokenizer& tok);
  bool active() const { return !stops_.empty(); }
  // Appends token `id`'s bytes to `text`; true when a stop string ends inside the bytes just added. Cost is
  // O(|stop| + |token bytes|) per call: only the tail that could complete a match is searched.
  bool append_and_match(std::string& text, int64_t id) const;
  // Appends token `id`'s bytes without matching (a response shorter than min_new_tokens): a stop string that ends
  // in these bytes is ignored for good, one that a later token completes is found then.
  void append(std::string& text, int64_t id) const;
  // One sampled column of n rows (tokens, active: [n] on any device): appends each active row's token, EOS excepted,
  // (any of eos_ids) to *texts[i], matching the stop strings where check[i] (else append() only). Returns bool [n] on the CPU: the
  // rows a stop string ended.
  at::Tensor advance(const at::Tensor& tokens, const at::Tensor& active, const std::vector<int64_t>& eos_ids,
                     const std::vector<std::string*>& texts, const std::vector<bool>& check) const;

 private:
  std::vector<std::string> stops_;
  const tokenizer::Tokenizer& tok_;
};

}  // namespace gspo::rollout
