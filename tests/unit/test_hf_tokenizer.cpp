// The Hugging Face BPE tokenizer against llama.cpp's test vectors for Qwen2 (shared/data/tokenizers) and
// decode(encode(s)) == s on multilingual text, code, emoji and whitespace runs. Needs ../shared beside the
// checkout (CI has it); without it the first three cases print "SKIPPED (no ../shared): ..." and ctest counts them
// as skipped, not passed.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/tokenizer/hf_bpe.h"
#include "gspo/tokenizer/utf8.h"
#include "helpers.h"

using namespace gspo;

namespace {
std::string shared_tokenizers() { return test::shared_path("data/tokenizers"); }

std::vector<std::string> split_on(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0, pos;
  while ((pos = text.find(sep, start)) != std::string::npos) {
    out.push_back(text.substr(start, pos - start));
    start = pos + sep.size();
  }
  out.push_back(text.substr(start));
  return out;
}

void check_vectors(const tokenizer::Tokenizer& tok, const std::string& stem) {
  auto inputs = split_on(core::read_text(stem + ".inp"), "\n__ggml_vocab_test__\n");
  auto lines = split_on(core::read_text(stem + ".out"), "\n");
  REQUIRE(inputs.size() == lines.size());
  int checked = 0;
  for (size_t i = 0; i + 1 < inputs.size(); ++i) {
    std::vector<int64_t> want;
    std::istringstream is(lines[i]);
    for (int64_t id; is >> id;) want.push_back(id);
    INFO("case " << i << ": '" << inputs[i] << "'");
    CHECK(tok.encode(inputs[i]) == want);
    CHECK(tok.decode(tok.encode(inputs[i])) == inputs[i]);
    ++checked;
  }
  CHECK(checked == 46);
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::string show(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < 40; ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + (ids.size() > 40 ? ",..." : "");
}
}  // namespace

TEST_CASE("Qwen3 and Qwen2.5 ids equal Hugging Face tokenizers' on adversarial text, bad UTF-8 and the corpus",
          "[tokenizer][hf]") {
  // Oracle: tests/golden/tokenizer_reference.py (fixture make_tokenizer_golden), `tokenizers`' encode of each input
  // (ill-formed UTF-8 decoded with errors="replace" first, which our encode reproduces), and the same with
  // encode_special_tokens (split_special_tokens=True) for encode_text. Exact equality.
  const std::string dir = shared_tokenizers();
  if (!test::shared_data_or_skip(dir + "/qwen3/tokenizer.json") ||
      !test::shared_data_or_skip(dir + "/qwen2.5/tokenizer.json"))
    return;
  std::ifstream in(test::model_path("tokenizer_cases.json"));
  REQUIRE(in);
  const auto cases = nlohmann::json::parse(in)["cases"];
  std::map<std::string, std::unique_ptr<tokenizer::Tokenizer>> toks;
  std::map<std::string, int> per_kind, lossy;
  int plain_differs = 0;  // cases whose special-token strings make encode_text differ from encode
  for (const auto& c : cases) {
    const std::string name = c["tokenizer"], kind = c["kind"], text = from_hex(c["hex"]);
    if (!toks.count(name)) toks[name] = tokenizer::from_file(dir + "/" + name);
    const auto want = c["ids"].get<std::vector<int64_t>>(), want_plain = c["plain_ids"].get<std::vector<int64_t>>();
    const auto got = toks[name]->encode(text), got_plain = toks[name]->encode_text(text);
    INFO(name << " " << kind << " input bytes (hex) " << c["hex"].get<std::string>() << "\n  ours " << show(got)
              << "\n  HF   " << show(want) << "\n  ours plain " << show(got_plain) << "\n  HF plain   "
              << show(want_plain));
    CHECK(got == want);
    CHECK(got_plain == want_plain);  // split_special_tokens=True
    bool special_in_plain = false;
    for (int64_t id : got_plain)
      for (const auto& [special, sid] : toks[name]->special_tokens()) special_in_plain |= id == sid;
    CHECK_FALSE(special_in_plain);
    ++per_kind[kind];
    lossy[kind] += c["lossy"].get<bool>();
    plain_differs += want_plain != want;
  }
  CHECK(toks.size() == 2);
  CHECK(plain_differs >= 2 * 20);
  CHECK(per_kind["adversarial"] >= 2 * 150);
  CHECK(lossy["invalid_utf8"] == per_kind["invalid_utf8"]);  // every one of them really is ill-formed
  CHECK(lossy["random_bytes"] > 0);
  if (!core::exists(test::shared_path("data/benchmarks/math500.jsonl"))) return;
  CHECK(per_kind["corpus"] >= 2 * 200);
}

TEST_CASE("ill-formed UTF-8 becomes U+FFFD per maximal subpart", "[tokenizer]") {
  // Expected strings follow the Unicode standard's Table 3-8 practice (what Python's bytes.decode(errors="replace")
  // gives, which the golden case above checks through the tokenizer on 230 more inputs).
  const std::string r = "\xEF\xBF\xBD";
  auto fix = [](const std::string& s) {
    std::string out;
    return tokenizer::replace_invalid_utf8(s, out) ? out : s;
  };
  std::string untouched;
  CHECK_FALSE(tokenizer::replace_invalid_utf8("ok \xC3\xA9 \xF0\x9F\x99\x82", untouched));
  CHECK(untouched.empty());
  CHECK(fix(std::string("a\0b", 3)) == std::string("a\0b", 3));
  CHECK(fix("\xFF") == r);
  CHECK(fix("\xC0\x80") == r + r);                  // overlong: C0 is never a lead
  CHECK(fix("\xE0\x80\x80") == r + r + r);         // overlong 3-byte: second byte out of range
  CHECK(fix("\xED\xA0\x80") == r + r + r);         // surrogate
  CHECK(fix("\xF4\x90\x80\x80") == r + r + r + r); // past U+10FFFF
  CHECK(fix("\xE4\xB8") == r);                      // truncated: one replacement for the maximal subpart
  CHECK(fix("\xF0\x9F\x99 ok") == r + " ok");
  CHECK(fix("\xE4\xB8\xE4\xB8\xAD") == r + "\xE4\xB8\xAD");
  CHECK(fix("\x80\xBF") == r + r);
}

TEST_CASE("Qwen2.5 tokenizer.json reproduces llama.cpp's Qwen2 and DeepSeek-R1-Qwen vectors", "[tokenizer][hf]") {
  const std::string dir = shared_tokenizers();
  if (!test::shared_data_or_skip(dir + "/qwen2.5/tokenizer.json") ||
      !test::shared_data_or_skip(dir + "/qwen/llamacpp_vocab_test_qwen2.inp") ||
      !test::shared_data_or_skip(dir + "/qwen/llamacpp_vocab_test_deepseek-r1-qwen.inp"))
    return;
  auto tok = tokenizer::from_file(dir + "/qwen2.5");
  check_vectors(*tok, dir + "/qwen/llamacpp_vocab_test_qwen2");
  check_vectors(*tok, dir + "/qwen/llamacpp_vocab_test_deepseek-r1-qwen");
}

TEST_CASE("GPT-2 (vocabulary converted from llama.cpp's GGUF) reproduces llama.cpp's GPT-2 vectors", "[tokenizer][hf]") {
  // The vocabulary is converted from ../shared's GGUF by the fixture make_gpt2_tokenizer: with the GGUF present a
  // missing conversion is a failure, not a skip.
  if (!test::shared_data_or_skip(shared_tokenizers() + "/gpt2/ggml-vocab-gpt-2.gguf") ||
      !test::shared_data_or_skip(shared_tokenizers() + "/gpt2/llamacpp_vocab_test_gpt2.inp"))
    return;
  const std::string dir = std::string(GSPO_TEST_MODELS) + "/gpt2_tokenizer";
  REQUIRE(core::exists(dir + "/tokenizer.json"));
  auto tok = tokenizer::from_file(dir);
  check_vectors(*tok, shared_tokenizers() + "/gpt2/llamacpp_vocab_test_gpt2");
}

TEST_CASE("Qwen3 tokenizer: special tokens, roles, round trips", "[tokenizer][hf]") {
  const std::string dir = shared_tokenizers();
  if (!test::shared_data_or_skip(dir + "/qwen3/tokenizer.json")) return;
  auto tok = tokenizer::from_file(dir + "/qwen3");
  auto hf = dynamic_cast<tokenizer::HfBpeTokenizer*>(tok.get());
  REQUIRE(hf);
  const int64_t im_start = hf->token_id("<|im_start|>"), im_end = hf->token_id("<|im_end|>");
  CHECK(im_start == 151644);
  CHECK(im_end == 151645);
  auto ids = tok->encode("<|im_start|>user\nHi<|im_end|>");
  CHECK(ids.front() == im_start);
  CHECK(ids.back() == im_end);
  CHECK(tok->decode(ids) == "user\nHi");                      // specials hidden by default
  CHECK(tok->decode(ids, true) == "<|im_start|>user\nHi<|im_end|>");
  CHECK(tok->eos_id() == im_end);                              // tokenizer_config.json: eos_token
  for (const std::string s : {"Grüße aus München! 你好，世界。 こんにちは Привет مرحبا",
                              "def f(x):\n\tif x >= 10:\n\t\treturn x ** 2  # square\n    \n\n\n",
                              "emoji 🙂👍🏽🇩🇪 and ZWJ 👨‍👩‍👧", "   leading and trailing   \t\n  ", "1234567890 3.14159 1e-9",
                              "e\xCC\x81 (decomposed e-acute)"}) {
    INFO(s);
    auto enc = tok->encode(s);
    const std::string back = tok->decode(enc);
    if (s.find("\xCC\x81") != std::string::npos) CHECK(back == "\xC3\xA9 (decomposed e-acute)");  // NFC applied
    else CHECK(back == s);
  }
}

TEST_CASE("unsupported tokenizer.json features are named", "[tokenizer][hf]") {
  CHECK_THROWS_WITH(tokenizer::HfBpeTokenizer(R"({"model": {"type": "WordPiece", "vocab": {}}})", "", "t.json"),
                    Catch::Contains("t.json: only BPE models are supported (got 'WordPiece')"));
  CHECK_THROWS_WITH(tokenizer::HfBpeTokenizer(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "normalizer": {"type": "NFKD"}})", "", "t.json"), Catch::Contains("unsupported normalizer 'NFKD'"));
}

// A malformed vocabulary or merge list names the file and the entry (it used to be a bare JSON type error).
TEST_CASE("a malformed merge or vocabulary entry names the tokenizer file and the entry", "[tokenizer][hf]") {
  auto bpe = [](const std::string& vocab, const std::string& merges) {
    return R"({"model": {"type": "BPE", "vocab": )" + vocab + R"(, "merges": )" + merges + "}}";
  };
  const std::string vocab = R"({"a": 0, "b": 1, "ab": 2})";
  CHECK_NOTHROW(tokenizer::HfBpeTokenizer(bpe(vocab, R"(["a b"])"), "", "t.json"));
  CHECK_NOTHROW(tokenizer::HfBpeTokenizer(bpe(vocab, R"([["a", "b"]])"), "", "t.json"));
  for (const std::string bad : {R"(["a b", 7])", R"(["a b", "ab"])", R"(["a b", "a  b"])", R"(["a b", ["a"]])",
                                R"(["a b", [1, 2]])", R"(["a b", " b"])"})
    CHECK_THROWS_WITH(tokenizer::HfBpeTokenizer(bpe(vocab, bad), "", "dir/tokenizer.json"),
                      Catch::StartsWith("dir/tokenizer.json: model.merges[1] is ") && Catch::Contains("not a merge"));
  CHECK_THROWS_WITH(tokenizer::HfBpeTokenizer(bpe(R"({"a": 0, "b": "one"})", "[]"), "", "dir/tokenizer.json"),
                    Catch::StartsWith("dir/tokenizer.json: model.vocab['b'] is \"one\""));
  CHECK_THROWS_WITH(tokenizer::HfBpeTokenizer(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})", "", "dir/tokenizer.json"),
                    Catch::StartsWith("dir/tokenizer.json: model.merges of tokenizer.json is malformed"));
}

// tokenizer_config.json used to be ignored when it did not parse, and a role naming an unknown token gave id -1: the
// roles were guessed (eos <|endoftext|> for a Llama 3 tokenizer) or lost (no eos: every response ran to the cap).
TEST_CASE("a tokenizer_config.json that cannot be read, or names unknown role tokens, is refused", "[tokenizer][hf]") {
  const std::string tj = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
      "added_tokens": [{"id": 3, "content": "<|eot|>", "special": true}]})";
  CHECK(tokenizer::HfBpeTokenizer(tj, R"({"eos_token": "<|eot|>"})", "d/tokenizer.json").eos_id() == 3);
  CHECK(tokenizer::HfBpeTokenizer(tj, R"({"eos_token": {"content": "<|eot|>"}, "pad_token": null})", "d/tokenizer.json")
            .pad_id() == 3);  // no pad token: the eos
  CHECK_THROWS_WITH(tokenizer::HfBpeTokenizer(tj, R"({"eos_token": "<|eot|>",)", "d/tokenizer.json"),
                    Catch::StartsWith("d/tokenizer.json: the tokenizer_config.json beside it is not a JSON object "
                                      "(not valid JSON)"));
  CHECK_THROWS_WITH(tokenizer::HfBpeTokenizer(tj, "[1, 2]", "d/tokenizer.json"), Catch::Contains("(a array)"));
  CHECK_THROWS_WITH(tokenizer::HfBpeTokenizer(tj, R"({"eos_token": "<|eot_id|>"})", "d/tokenizer.json"),
                    Catch::Contains("names eos_token '<|eot_id|>', which is not a token of tokenizer.json"));
  const std::string dir = test::fresh_dir("tokenizer_bad_config");
  core::ensure_dir(dir);
  std::ofstream(dir + "/tokenizer.json") << tj;
  std::ofstream(dir + "/tokenizer_config.json") << "{\"eos_token\": ";
  CHECK_THROWS_AS(tokenizer::from_file(dir), DataError);
}
