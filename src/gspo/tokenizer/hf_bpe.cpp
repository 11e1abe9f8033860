#include "gspo/tokenizer/hf_bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <nlohmann/json.hpp>
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "gspo/core/error.h"
#include "gspo/tokenizer/byte_level.h"
#include "gspo/tokenizer/utf8.h"

namespace gspo::tokenizer {

namespace {
using nlohmann::json;

// GPT-2's pre-tokenizer pattern (ByteLevel with use_regex = true).
const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = std::min(utf8_char_len(static_cast<unsigned char>(s[i])), s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

struct CodeFree {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataFree {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
}  // namespace

// One compiled Split pattern (PCRE2 with UTF and Unicode properties, JIT when available). Owns the compiled code:
// movable, not copyable.
struct HfBpeTokenizer::Regex {
  std::unique_ptr<pcre2_code, CodeFree> code;
  Regex(const std::string& pattern, const std::string& origin) {
    int err = 0;
    PCRE2_SIZE off = 0;
    code.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr));
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw DataError(origin + ": pre-tokenizer regex does not compile at offset " + std::to_string(off) + ": " +
                      reinterpret_cast<char*>(msg));
    }
    pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);
  }

  // Splits `text` into matches and the gaps between them ("Isolated" behaviour). encode() repairs ill-formed UTF-8
  // first; should PCRE2 still fail, the rest stays one piece.
  std::vector<std::string> split(const std::string& text) const {
    std::vector<std::string> pieces;
    std::unique_ptr<pcre2_match_data, MatchDataFree> md(pcre2_match_data_create_from_pattern(code.get(), nullptr));
    size_t offset = 0, last = 0;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    while (offset < text.size()) {
      int rc = pcre2_match(code.get(), subject, text.size(), offset, 0, md.get(), nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {  // e.g. invalid UTF-8: keep the rest whole
        break;
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
      const size_t start = ov[0], end = ov[1];
      if (start > last) pieces.push_back(text.substr(last, start - last));
      if (end > start) {
        pieces.push_back(text.substr(start, end - start));
        offset = last = end;
      } else {
        offset = start + utf8_char_len(static_cast<unsigned char>(text[start]));
        last = start;
      }
    }
    if (last < text.size()) pieces.push_back(text.substr(last));
    return pieces;
  }
};

HfBpeTokenizer::~HfBpeTokenizer() = default;

namespace {
json parse_tokenizer_json(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw DataError(origin + ": tokenizer.json is not valid JSON: " + std::string(e.what()).substr(0, 120));
  }
}

// Throws unless `model` is a byte-level BPE model (no byte fallback).
void check_bpe(const json& model, const std::string& origin) {
  if (model.value("type", "") != "BPE")
    throw DataError(origin + ": only BPE models are supported (got '" + model.value("type", "?") + "')");
  if (model.value("byte_fallback", false)) throw DataError(origin + ": byte_fallback BPE (SentencePiece style) is not supported");
}

void read_vocab(const json& model, const std::string& origin, std::unordered_map<std::string, int64_t>& vocab,
                int64_t& vocab_size) {
  for (const auto& [tok, id] : model.at("vocab").items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      throw DataError(origin + ": model.vocab['" + tok.substr(0, 40) + "'] is " + id.dump().substr(0, 40) +
                      ", not a token id (an integer >= 0)");
    vocab[tok] = id.get<int64_t>();
    vocab_size = std::max(vocab_size, id.get<int64_t>() + 1);
  }
}

// A merge's "left right" key, or "" when `m` is not a merge.
std::string merge_key(const json& m) {
  // A merge is "left right" (one space) or ["left", "right"]; anything else would merge tokens that never occur.
  std::string key;
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    key = m[0].get<std::string>() + " " + m[1].get<std::string>();
  } else if (m.is_string()) {
    key = m.get<std::string>();
    const auto sp = key.find(' ');
    if (sp == 0 || sp == std::string::npos || sp + 1 == key.size() || key.find(' ', sp + 1) != std::string::npos)
      key.clear();
  }
  return key;
}

// "left right" -> rank, in the file's order.
void read_merges(const json& model, const std::string& origin, std::unordered_map<std::string, int>& merge_rank) {
  int rank = 0;
  for (const auto& m : model.at("merges")) {
    const std::string key = merge_key(m);
    if (key.empty())
      throw DataError(origin + ": model.merges[" + std::to_string(rank) + "] is " + m.dump().substr(0, 60) +
                      ", not a merge (\"left right\" or [\"left\", \"right\"])");
    merge_rank.emplace(key, rank++);
  }
}

// Whether the normaliser is NFC: none or NFC (alone or in a Sequence) is supported.
bool reads_nfc(const json& j, const std::string& origin) {
  bool nfc = false;
  const auto& norm = j.value("normalizer", json());
  auto accept_norm = [&](const json& n) {
    const std::string t = n.value("type", "");
    if (t == "NFC") nfc = true;
    else throw DataError(origin + ": unsupported normalizer '" + t + "' (supported: NFC)");
  };
  if (norm.is_object()) {
    if (norm.value("type", "") == "Sequence") for (const auto& n : norm.at("normalizers")) accept_norm(n);
    else accept_norm(norm);
  }
  return nfc;
}

// Pre-tokenizer: Split (Isolated) patterns and a ByteLevel step; `add_split(pattern)` is called for each pattern, in
// order.
template <class AddSplit>
void read_pre_tokenizer(const json& j, const std::string& origin, AddSplit&& add_split) {
  auto accept_pre = [&](const json& p) {
    const std::string t = p.value("type", "");
    if (t == "Split") {
      if (p.value("behavior", "") != "Isolated" || p.value("invert", false))
        throw DataError(origin + ": only Split with behavior Isolated and invert false is supported");
      add_split(p.at("pattern").at("Regex").get<std::string>());
    } else if (t == "ByteLevel") {
      if (p.value("add_prefix_space", false)) throw DataError(origin + ": ByteLevel add_prefix_space is not supported");
      if (p.value("use_regex", true)) add_split(kGpt2Pattern);
    } else {
      throw DataError(origin + ": unsupported pre_tokenizer '" + t + "' (supported: Split, ByteLevel)");
    }
  };
  const auto& pre = j.value("pre_tokenizer", json());
  if (pre.is_object()) {
    if (pre.value("type", "") == "Sequence") for (const auto& p : pre.at("pretokenizers")) accept_pre(p);
    else accept_pre(pre);
  }
}

// Where tokenizer_config.json is for a tokenizer read from `origin` (a tokenizer.json path, or a model's spec).
std::string config_origin(const std::string& origin) {
  const std::string tail = "tokenizer.json";
  if (origin.size() >= tail.size() && origin.compare(origin.size() - tail.size(), tail.size(), tail) == 0)
    return origin.substr(0, origin.size() - tail.size()) + "tokenizer_config.json";
  return origin + " (its tokenizer config)";
}

// The special token a tokenizer.json post-processor puts before every single sequence (TemplateProcessing's `single`
// starting with a SpecialToken, alone or inside a Sequence of processors: Llama 3's <|begin_of_text|>), or -1.
int64_t leading_special(const HfBpeTokenizer& t, const json& j, const std::string& origin) {
  const json* pp = j.contains("post_processor") ? &j["post_processor"] : nullptr;
  if (!pp || !pp->is_object()) return -1;
  std::vector<const json*> procs{pp};
  if (pp->value("type", "") == "Sequence" && pp->contains("processors") && (*pp)["processors"].is_array()) {
    procs.clear();
    for (const auto& p : (*pp)["processors"]) procs.push_back(&p);
  }
  for (const json* p : procs) {
    if (!p->is_object() || p->value("type", "") != "TemplateProcessing") continue;
    const auto& single = p->value("single", json::array());
    if (!single.is_array() || single.empty() || !single[0].is_object() || !single[0].contains("SpecialToken")) return -1;
    const auto& st = single[0]["SpecialToken"];
    const std::string name = st.is_object() && st.contains("id") && st["id"].is_string() ? st["id"].get<std::string>() : "";
    const int64_t id = name.empty() ? -1 : t.token_id(name);
    if (id < 0)
      throw DataError(origin + ": post_processor adds the special token '" + name.substr(0, 60) +
                      "', which is not a token of tokenizer.json");
    return id;
  }
  return -1;
}

// The id of a role's token: named in tokenizer_config.json (`cfg`) when given, else the first fallback known; -1 if
// none. A name the vocabulary lacks is a DataError (an eos of -1 would let every response run to the length cap).
// A role given as null is "none" (transformers writes "bos_token": null); any other value must name a token: a string or
// an AddedToken object {"content": "..."}. A number, an empty name or another type is a DataError naming the file and key
// (it used to be ignored and the role guessed).
int64_t role_id(const HfBpeTokenizer& t, const json& cfg, const char* key,
                std::initializer_list<const char*> fallbacks, const std::string& origin) {
  if (cfg.is_object() && cfg.contains(key) && !cfg[key].is_null()) {
    const auto& v = cfg[key];
    const json* content = v.is_object() && v.contains("content") ? &v["content"] : &v;
    if (!content->is_string() || content->get<std::string>().empty())
      throw DataError(config_origin(origin) + ": " + key + " is " + v.dump().substr(0, 60) +
                      ", not a token (a string, or an object with a \"content\" string)");
    const std::string name = content->get<std::string>();
    const int64_t id = t.token_id(name);
    if (id < 0)
      throw DataError(origin + ": tokenizer_config.json names " + key + " '" + name.substr(0, 60) +
                      "', which is not a token of tokenizer.json");
    return id;
  }
  for (const char* f : fallbacks)
    if (t.token_id(f) >= 0) return t.token_id(f);
  return -1;
}
}  // namespace

HfBpeTokenizer::HfBpeTokenizer(const std::string& text, const std::string& config_text, const std::string& origin) {
  const json j = parse_tokenizer_json(text, origin);
  const auto& model = j.value("model", json::object());
  check_bpe(model, origin);
  const char* part = "model.vocab";  // what is being read, for a message naming it
  try {
    read_vocab(model, origin, vocab_, vocab_size_);
    part = "model.merges";
    read_merges(model, origin, merge_rank_);
    part = "added_tokens";
    for (const auto& a : j.value("added_tokens", json::array())) {
      const auto& id = a.at("id");
      if (!id.is_number_integer() || id.get<int64_t>() < 0)  // would become a negative id in what encode returns
        throw DataError(origin + ": added_tokens[" + std::to_string(added_.size()) + "].id is " +
                        id.dump().substr(0, 40) + ", not a token id (an integer >= 0)");
      added_.push_back({a.at("content"), id, a.value("special", false)});
      vocab_size_ = std::max(vocab_size_, a.at("id").get<int64_t>() + 1);
    }
  } catch (const json::exception& e) {
    throw DataError(origin + ": " + part + " of tokenizer.json is malformed: " + std::string(e.what()).substr(0, 160));
  }
  std::stable_sort(added_.begin(), added_.end(), [](const Added& x, const Added& y) { return x.content.size() > y.content.size(); });
  for (size_t i = 0; i < added_.size(); ++i) added_by_id_[added_[i].id] = i;
  id_to_token_.assign(vocab_size_, "");
  for (const auto& [tok, id] : vocab_) id_to_token_[id] = tok;

  nfc_ = reads_nfc(j, origin);
  read_pre_tokenizer(j, origin,
                     [&](const std::string& pattern) { splits_.push_back(std::make_unique<Regex>(pattern, origin)); });

  // Roles from tokenizer_config.json when given, else conventional names.
  json cfg = config_text.empty() ? json::object() : json::parse(config_text, nullptr, false);
  if (!cfg.is_object())  // (it used to be ignored: the roles were guessed, e.g. eos <|endoftext|> for Llama 3)
    throw DataError(origin + ": the tokenizer_config.json beside it is not a JSON object (" +
                    (cfg.is_discarded() ? std::string("not valid JSON") : "a " + std::string(cfg.type_name())) +
                    "): its eos_token, bos_token and pad_token cannot be read");
  eos_id_ = role_id(*this, cfg, "eos_token", {"<|endoftext|>", "</s>", "<|end_of_text|>"}, origin);
  bos_id_ = role_id(*this, cfg, "bos_token", {}, origin);
  pad_id_ = role_id(*this, cfg, "pad_token", {}, origin);
  if (pad_id_ < 0) pad_id_ = eos_id_;
  if (cfg.contains("add_bos_token") && !cfg["add_bos_token"].is_boolean() && !cfg["add_bos_token"].is_null())
    throw DataError(config_origin(origin) + ": add_bos_token is " + cfg["add_bos_token"].dump().substr(0, 40) +
                    ", not true or false");
  const bool asked = cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean();
  add_bos_ = bos_id_ >= 0 && asked && cfg["add_bos_token"].get<bool>();
  // The post-processor's leading special token is what transformers adds to a plain prompt (add_special_tokens=True):
  // Llama 3 adds <|begin_of_text|> this way, without add_bos_token. An explicit add_bos_token false keeps it off.
  if (const int64_t lead = leading_special(*this, j, origin); lead >= 0 && !(asked && !cfg["add_bos_token"].get<bool>())) {
    if (bos_id_ < 0) bos_id_ = lead;
    add_bos_ = add_bos_ || lead == bos_id_;
  }
  for (const auto& a : added_)
    if (a.special) specials_[a.content] = a.id;
}

int64_t HfBpeTokenizer::token_id(const std::string& token) const {
  for (const auto& a : added_)
    if (a.content == token) return a.id;
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

void HfBpeTokenizer::bpe(const std::string& piece, std::vector<int64_t>& out) const {
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  auto symbols = utf8_chars(bytes_to_unicode(piece));
  while (symbols.size() > 1) {
    int best = INT_MAX;
    size_t at = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = merge_rank_.find(symbols[i] + " " + symbols[i + 1]);
      if (it != merge_rank_.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    }
    if (best == INT_MAX) break;
    // Merge every occurrence of the best pair, left to right.
    const std::string a = symbols[at], b = symbols[at + 1];
    std::vector<std::string> merged;
    for (size_t i = 0; i < symbols.size();) {
      if (i + 1 < symbols.size() && symbols[i] == a && symbols[i + 1] == b) {
        merged.push_back(a + b);
        i += 2;
      } else {
        merged.push_back(symbols[i++]);
      }
    }
    symbols.swap(merged);
  }
  std::vector<int64_t> ids;
  for (const auto& s : symbols) {
    auto it = vocab_.find(s);
    if (it == vocab_.end()) throw DataError("tokenizer: BPE produced '" + s + "', which is not in the vocabulary");
    ids.push_back(it->second);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (cache_.size() > 200000) cache_.clear();
  cache_.emplace(piece, std::move(ids));
}

void HfBpeTokenizer::encode_plain(const std::string& raw, std::vector<int64_t>& out) const {
  if (raw.empty()) return;
  std::string text = raw;
  if (nfc_) {  // explicit length: NUL is a character here, not the end of the text
    utf8proc_uint8_t* n = nullptr;
    const utf8proc_ssize_t len =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(raw.data()), static_cast<utf8proc_ssize_t>(raw.size()),
                     &n, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (len >= 0) text.assign(reinterpret_cast<char*>(n), static_cast<size_t>(len));
    std::free(n);
  }
  std::vector<std::string> pieces{text};
  for (const auto& re : splits_) {
    std::vector<std::string> next;
    for (const auto& p : pieces) {
      auto parts = re->split(p);
      next.insert(next.end(), parts.begin(), parts.end());
    }
    pieces.swap(next);
  }
  for (const auto& p : pieces) bpe(p, out);
}

std::vector<int64_t> HfBpeTokenizer::encode(const std::string& text) const { return encode_added(text, true); }

std::vector<int64_t> HfBpeTokenizer::encode_text(const std::string& text) const { return encode_added(text, false); }

std::vector<int64_t> HfBpeTokenizer::encode_added(const std::string& input, bool specials) const {
  std::string repaired;  // ill-formed UTF-8 -> U+FFFD, as a lossy decode before Hugging Face's tokenizers does
  const std::string& text = replace_invalid_utf8(input, repaired) ? repaired : input;
  std::vector<int64_t> out;
  size_t plain_start = 0;
  for (size_t i = 0; i < text.size();) {
    const Added* hit = nullptr;
    for (const auto& a : added_)
      if (!a.content.empty() && text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;  // longest first
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    if (hit->special && !specials) {  // plain text: the whole match is skipped, not searched again inside
      i += hit->content.size();
      continue;
    }
    encode_plain(text.substr(plain_start, i - plain_start), out);
    out.push_back(hit->id);
    i += hit->content.size();
    plain_start = i;
  }
  encode_plain(text.substr(plain_start), out);
  return out;
}

std::string HfBpeTokenizer::token_bytes(int64_t id, bool with_special) const {
  auto a = added_by_id_.find(id);
  if (a != added_by_id_.end()) {
    const auto& t = added_[a->second];
    return (t.special && !with_special) ? "" : t.content;
  }
  if (id < 0 || id >= vocab_size_ || id_to_token_[id].empty())
    throw DataError("tokenizer: token id " + std::to_string(id) + " is not in the vocabulary");
  std::string bytes;
  if (!unicode_to_bytes(id_to_token_[id], bytes)) return id_to_token_[id];
  return bytes;
}

}  // namespace gspo::tokenizer
