// Text <-> token ids. One interface for every tokenizer: the byte-level one for tiny models (here) and the
// Hugging Face tokenizer.json BPE (real models) implement it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gspo::tokenizer {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Ids of `text`; special-token strings in the text (e.g. "<|eos|>") map to their ids. No BOS added.
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  // Ids of `text` read as plain text: a special-token string in it (one of special_tokens(), e.g. "<|im_end|>") gets
  // the ids of its characters, never the special id, as Hugging Face encodes with split_special_tokens=True. Added
  // tokens that are not special (Qwen3's <think>, <tool_call>, <tool_response>) still map to their ids, as there.
  // For text nobody vouches for (tool output): it cannot end a turn or open one. No BOS added.
  virtual std::vector<int64_t> encode_text(const std::string& text) const = 0;
  // Bytes of one token; special tokens give their text when `with_special` else "".
  virtual std::string token_bytes(int64_t id, bool with_special) const = 0;
  virtual int64_t vocab_size() const = 0;

  // Concatenated token_bytes; invalid UTF-8 is kept as is (callers decide how to print it).
  std::string decode(const std::vector<int64_t>& ids, bool with_special = false) const;
  // encode() with BOS prepended when the tokenizer asks for it and the text does not already start with it.
  std::vector<int64_t> encode_prompt(const std::string& text) const;

  int64_t bos_id() const { return bos_id_; }
  int64_t eos_id() const { return eos_id_; }
  int64_t pad_id() const { return pad_id_; }
  bool add_bos() const { return add_bos_; }
  const std::map<std::string, int64_t>& special_tokens() const { return specials_; }

 protected:
  std::map<std::string, int64_t> specials_;
  int64_t bos_id_ = -1, eos_id_ = -1, pad_id_ = -1;
  bool add_bos_ = false;
};

// Builds a tokenizer from a JSON spec (the "gspo_tokenizer.json" carried in a model file, or a file given by
// tokenizer.path). `origin` names where the spec came from in error messages. Throws DataError.
std::unique_ptr<Tokenizer> from_spec(const std::string& spec_json, const std::string& origin);

// Reads a spec file from disk (IoError when unreadable).
std::unique_ptr<Tokenizer> from_file(const std::string& path);

// The tokenizer a run uses: the file `path` (tokenizer.path) when set, else the spec embedded in the model file
// `model` (its `embedded_spec`).
std::unique_ptr<Tokenizer> from_path_or_spec(const std::string& path, const std::string& embedded_spec,
                                             const std::string& model);

}  // namespace gspo::tokenizer
