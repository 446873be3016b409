// Loads a Hexforge dynamic export with transformers.js, unchanged, and prints the greedy continuation's ids.
// Checks that the folder follows the convention transformers.js expects (onnx/model.onnx + external data).
//   npm install --ignore-scripts @huggingface/transformers@4.3.2
//   bin/hexforge export --model fixtures/qwen2-tiny --out /tmp/tjs/qwen2-tiny
//   node check.mjs /tmp/tjs qwen2-tiny "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\n"
import { AutoModelForCausalLM, AutoTokenizer, env } from "@huggingface/transformers";
const [root, id, prompt] = process.argv.slice(2);
env.allowRemoteModels = false;
env.localModelPath = root.endsWith("/") ? root : root + "/";
const tok = await AutoTokenizer.from_pretrained(id);
const model = await AutoModelForCausalLM.from_pretrained(id);
const inputs = tok(prompt.replaceAll("\\n", "\n"));
const out = await model.generate({ ...inputs, max_new_tokens: 32, do_sample: false });
console.log(JSON.stringify(Array.from(out.tolist()[0]).map(Number).slice(inputs.input_ids.dims[1])));
