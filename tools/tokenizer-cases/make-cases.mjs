// Builds fixtures/qwen-tokenizer-real/cases.json: expected ids for varied strings on the real Qwen2.5 tokenizer,
// computed by Hugging Face's own JavaScript implementation (@huggingface/tokenizers, independent of the Rust
// library the project uses). Run: npm install @huggingface/tokenizers@0.2.0 && node make-cases.mjs ROOT
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";
import path from "node:path";

const root = process.argv[2];
const dir = path.join(root, "fixtures/qwen-tokenizer-real");
const tok = new Tokenizer(JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
                          JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")));
const tinyCases = JSON.parse(fs.readFileSync(path.join(root, "fixtures/qwen2-tiny/reference/tokenizer_cases.json"), "utf8")).cases;
const extra = [
  "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
  "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
  "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
  "3.14159265358979 and 2718281828 and 1,000,000.00",
  "Привет, как дела? Всё хорошо.",
  "こんにちは世界！今日はいい天気ですね。",
  "안녕하세요, 반갑습니다.",
  "مرحبا بالعالم",
  "שלום עולם",
  "नमस्ते दुनिया",
  "Ελληνικά γράμματα αβγδ",
  "Tiếng Việt có dấu: đường phố",
  "ไทย ภาษาไทย",
  "I'm sure they'll say we've done it, and you'd agree; it's John's.",
  "HELLO WORLD IN CAPITALS, Mixed CaSe, snake_case, camelCase, kebab-case",
  "email: someone@example.com, url: https://example.org/path?q=1&r=2#frag",
  "Tabs\tand\ttabs\t\tdouble",
  "trailing spaces   ",
  "   leading spaces",
  "line1\r\nline2\rline3\n\n\nline6",
  "😀😃😄😁 👩‍👩‍👧‍👦 🇯🇵 🏳️‍🌈",
  "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
  "<|endoftext|><|endoftext|>text after",
  "Mathematics: ∑_{i=1}^{n} i² = n(n+1)(2n+1)/6, ∀x∈ℝ, √2 ≈ 1.414",
  "Currency: $100, €50, £30, ¥1000, ₹500",
  "Café naïve résumé coöperate Ångström",
  "e\u0301 (decomposed) vs é (composed)",
  "\u00a0non-breaking\u2009thin\u3000ideographic space",
  "a".repeat(300),
  "1234567890".repeat(10),
  "The quick brown fox jumps over the lazy dog. ".repeat(5),
  "子曰：學而時習之，不亦說乎？有朋自遠方來，不亦樂乎？",
  "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
];
const texts = [...new Set([...tinyCases.map(c => c.text), ...extra])];
const cases = texts.map(text => {
  const ids = tok.encode(text, { add_special_tokens: false }).ids;
  return { text, ids, decoded: ids.length ? tok.decode(ids, { skip_special_tokens: false }) : "" };
});
fs.writeFileSync(path.join(dir, "cases.json"), JSON.stringify({
  produced_by: "tools/tokenizer-cases/make-cases.mjs with @huggingface/tokenizers 0.2.0 (Hugging Face's JavaScript implementation)",
  encode_options: { add_special_tokens: false },
  cases,
}, null, 1));
console.log(`${cases.length} cases`);
