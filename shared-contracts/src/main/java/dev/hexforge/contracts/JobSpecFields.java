package dev.hexforge.contracts;

import java.util.List;

import static dev.hexforge.contracts.FieldSpec.bool;
import static dev.hexforge.contracts.FieldSpec.input;
import static dev.hexforge.contracts.FieldSpec.integer;
import static dev.hexforge.contracts.FieldSpec.integerOneOf;
import static dev.hexforge.contracts.FieldSpec.matching;
import static dev.hexforge.contracts.FieldSpec.number;
import static dev.hexforge.contracts.FieldSpec.object;
import static dev.hexforge.contracts.FieldSpec.oneOf;
import static dev.hexforge.contracts.FieldSpec.string;
import static dev.hexforge.contracts.FieldSpec.strings;

/**
 * The job spec's fields, version {@value JobSpecSchema#VERSION}: every field with its type, default (the seed
 * pipeline's values), limits and description. {@link JobSpecSchema} validates against them; the CLI's flags and the
 * JSON Schema are made from them.
 */
public final class JobSpecFields {
    private JobSpecFields() {
    }

    public static final FieldSpec ROOT = object("", "A Hexforge conversion job.",
            integer("schemaVersion", JobSpecSchema.VERSION, JobSpecSchema.VERSION, JobSpecSchema.VERSION, "Version of this document format."),
            string("name", null, "A label for the job (default: the model's name); at most 200 printable characters."),
            input("model", "The base model (a Hugging Face folder): {upload: ID} of a model archive uploaded to the fleet "
                    + "(POST /api/v1/uploads), {artifact: ID} of a model one of your jobs made, or {path: P} (or P alone) of a "
                    + "folder under the fleet's input roots (hexforge.input-roots; none by default).",
                    "upload", "artifact", "path").asRequired(),
            bool("allowNonFinite", false, "Go on with a model whose weights hold NaN or Inf values, saying so in the reports "
                    + "(refused by default, naming the tensors: such a model computes NaN)."),
            strings("stages", List.of("export", "sign"), "Stages to run, in pipeline order.",
                    "finetune", "merge", "quantize", "export", "compile", "sign", "benchmark"),
            object("finetune", "LoRA fine-tuning (the seed's PEFT settings).",
                    input("data", "The training data (Alpaca JSON/JSONL, chat JSONL or text): {upload: ID} of a data file "
                            + "uploaded to the fleet, or {path: P} (or P alone) of a file under its input roots.", "upload", "path"),
                    input("evalData", "Evaluation data, named like data (default: a split of data).", "upload", "path"),
                    integer("r", 8, 1, 256, "LoRA rank."),
                    number("alpha", 16, 0.0001, 10000, "LoRA alpha (scale = alpha / r)."),
                    number("dropout", 0.05, 0, 0.9, "Dropout on the LoRA input."),
                    strings("targets", List.of("q_proj", "k_proj", "v_proj", "o_proj"), "Linears that get adapters.",
                            "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
                    integer("batch", 4, 1, 1024, "Examples per micro-batch."),
                    integer("accumulation", 8, 1, 1024, "Micro-batches per optimizer step."),
                    number("learningRate", 2e-4, 1e-8, 1, "Peak learning rate (AdamW)."),
                    integer("epochs", 3, 1, 1000, "Passes over the training data."),
                    integer("maxLength", 256, 8, 32768, "Tokens per example; longer ones are truncated."),
                    integer("seed", 0, 0, Long.MAX_VALUE, "Seed for initialisation, shuffling and dropout."),
                    oneOf("chatFormat", "auto", "How instructions and chats become token sequences: auto (as the model's "
                            + "tokenizer files say), chatml (Qwen2, Qwen3) or llama3 (Llama 3's header format).",
                            "auto", "chatml", "llama3")),
            object("quantize", "Weight quantization and its accuracy gate.",
                    oneOf("method", "rtn", "rtn (round to nearest: seconds, near-lossless at 8 bits), awq or gptq "
                            + "(calibrated: better at 4 bits).", "rtn", "awq", "gptq"),
                    integer("bits", 8, 2, 8, "Weight bits."),
                    integer("group", 0, 8192, "Input columns per scale; 0 for per channel (default: 0 at 8 bits, 128 below)."),
                    bool("symmetric", "Symmetric (no zero point) (default: true at 8 bits per channel, the NPU's INT8 weights; "
                            + "false otherwise)."),
                    input("calibration", "Calibration JSONL, named like finetune.data (default: the bundled set).", "upload", "path"),
                    integer("calibrationSamples", 128, 1, 100000, "Calibration samples."),
                    integer("calibrationLength", 512, 2, 32768, "Tokens per calibration sample."),
                    strings("keep", List.of(), "Module patterns kept in float, e.g. q_proj."),
                    oneOf("head", JobSpec.Quantize.DEFAULT_HEAD, "Token embedding and LM head (one tensor when tied): int8 (per channel, "
                            + "symmetric), int4 (the 4-bit rule: groups of 128 with zero points) or keep (float).", "int8", "int4", "keep"),
                    object("auto", "Automatic mixed precision: keep the most sensitive linears in FP16.",
                            number("maxExtraBytesPercent", 0, 0, 1000,
                                    "Extra bytes allowed for float layers, in percent of the quantized linears (0: off).")),
                    oneOf("format", "qdq", "qdq (NPU), matmulnbits (CPU) or both.", "qdq", "matmulnbits", "both"),
                    integer("accuracyLevel", 4, 0, 4, "MatMulNBits compute on the CPU (ONNX Runtime's accuracy_level): 4 = int8 "
                            + "activations, the fast path; 0 = float32, identical to the fake-quantized reference."),
                    integer("evalTokens", JobSpec.Quantize.DEFAULT_EVAL_TOKENS, 2, 10_000_000, "Gate: tokens of the evaluation text "
                            + "scored (its first windows of 128), on the float and the quantized model as ONNX Runtime runs them."),
                    number("maxDeltaPpl", 0.5, 0, 1e9, "Gate: largest allowed perplexity rise."),
                    oneOf("activations", JobSpec.Quantize.DEFAULT_ACTIVATIONS, "The static graph's activations: 16 (uint16, "
                            + "the HTP's w8a16 / w4a16), 8 (uint8: w8a8), float (weights only: the HTP would run it in fp16); "
                            + "auto is 16 for a static QDQ export and float for a dynamic or a MatMulNBits (CPU) one. Quantized activations are "
                            + "calibrated on quantize.calibration and gated on the fully quantized graph.",
                            "auto", "16", "8", "float"),
                    integerOneOf("kvBits", 8, "KV cache bits when activations are quantized: 8 (as AI Hub ships) or 16.", 8, 16),
                    bool("quantizeIo", false, "The static graphs' inputs and outputs in their quantized types (AI Hub's "
                            + "--quantize_io): the mask, KV cache, hidden states between parts and logits cross the graph as "
                            + "uint16 / uint8 at their encodings, which the bundle's manifest lists. Needs quantized "
                            + "activations and the static layout.")),
            object("export", "ONNX export.",
                    oneOf("variant", "static", "static (NPU graphs), dynamic (Hugging Face convention) or genie (NPU graphs in the "
                            + "layout Qualcomm's Genie runtime loads, for compile.target genie: seq 64 or 128, ctx at least 512).",
                            "static", "dynamic", "genie"),
                    integer("opset", 17, 17, 21, "ONNX opset (21 is used where INT4 needs it)."),
                    integer("seq", 128, 1, 4096, "Static prompt-graph length."),
                    integer("ctx", 512, 2, 4096, "Static context length."),
                    integer("maxGraphMb", NpuLimits.GRAPH_WEIGHT_MB, 16, NpuLimits.GRAPH_WEIGHT_MB,
                            "The most weights one NPU graph holds, in MiB (the HTP's limit is 2048): a static or Genie export over it is cut by layers into parts; lower gives more, smaller parts.")),
            object("compile", "NPU compilation.",
                    oneOf("target", "ort-qnn", "ort-qnn, qnn-context-binary, qnn-model-lib or genie (a Genie bundle: one weight-shared "
                            + "context binary per part and genie_config.json). All but ort-qnn run the QNN SDK's tools. ort-cpu is "
                            + "the CPU's: a MatMulNBits export with nothing to compile. A job that names a target and leaves out "
                            + "stages, export.variant, quantize.format, quantize.group or quantize.activations gets the ones the "
                            + "target needs.",
                            "ort-qnn", "qnn-context-binary", "qnn-model-lib", "genie", "ort-cpu"),
                    matching("soc", "SM8650", "[A-Za-z0-9_-]{1,32}", 32, "Target chipset (e.g. SM8650 = Snapdragon 8 Gen 3)."),
                    integer("htpArch", 0, 0, 99, "Hexagon HTP architecture; 0 takes it from the SoC (v75 for SM8650), give it for a SoC Hexforge does not know."),
                    object("sampler", "How a Genie bundle samples (its genie_config.json).",
                            integer("seed", 42, 0, 4_294_967_295L, "Sampler seed."),
                            number("temperature", 0.8, 0, 100, "Sampling temperature."),
                            integer("topK", 40, 1, 1_000_000, "Top-k: the most likely tokens sampled from."),
                            number("topP", 0.95, 0.001, 1, "Top-p: the probability mass sampled from."))),
            object("sign", "Signing of stored artifacts.",
                    bool("provenance", true, "Attach a signed provenance statement.")),
            object("benchmark", "On-device benchmark.",
                    matching("device", null, "[A-Za-z0-9._-]{1,100}", 100, "Device name or chipset to run on (default: any capable runner)."),
                    strings("backends", List.of("ort-cpu"), "Backends to measure: ort-cpu, ort-qnn (ONNX Runtime on the CPU or the QNN EP), "
                            + "adb-qnn (a phone running a qnn-context-binary bundle with qnn-net-run) or genie (a phone running a Genie "
                            + "bundle with genie-t2t-run).", "ort-cpu", "ort-qnn", "adb-qnn", "genie"),
                    integer("promptLength", 128, 1, 4096, "Prompt tokens."),
                    integer("newTokens", 64, 1, 4096, "Decoded tokens.")));
}
