// The Hugging Face BPE tokenizer against llama.cpp's test vectors for Qwen2 (shared/data/tokenizers) and
// decode(encode(s)) == s on multilingual text, code, emoji and whitespace runs. Needs ../shared beside the
// checkout (CI has it); without it the first three cases print "SKIPPED (no ../shared): ..." and ctest counts them
// as skipped, not passed.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/tokenizer/hf_bpe.h"
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
}  // namespace

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
