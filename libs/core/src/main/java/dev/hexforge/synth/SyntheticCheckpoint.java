package dev.hexforge.synth;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Architecture;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.RopeScaling;
import dev.hexforge.io.Folders;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.FloatConversion;
import dev.hexforge.safetensors.SafetensorsWriter;
import dev.hexforge.safetensors.ShardedWriter;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a Hugging Face checkpoint with a real preset's config and shapes, random weights and a real tokenizer,
 * deterministic for a seed: for benchmarks and tests on a machine that cannot download models.
 */
public final class SyntheticCheckpoint {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final int CHUNK = 1 << 18;

    /**
     * @param architecture qwen2 (q/k/v biases), llama (none) or qwen3 (none; per-head q/k norms); a preset's own
     *                     family by default, another one takes its shapes and keeps its RoPE
     * @param tied         share the embedding with the output head
     */
    public record Options(Preset preset, Architecture architecture, boolean tied, DType dtype, long seed) {
        public Options {
            if (dtype != DType.F32 && dtype != DType.BF16 && dtype != DType.F16) {
                throw new IllegalArgumentException("dtype must be f32, bf16 or f16, got " + dtype);
            }
        }

        public static Options of(Preset p, DType dtype, long seed) {
            return new Options(p, p.architecture, p.tied, dtype, seed);
        }
    }

    private SyntheticCheckpoint() {
    }

    public static ModelConfig config(Options o) {
        ObjectNode c = configJson(o);
        return ModelConfig.fromJson(c);
    }

    /** The config.json of the preset's model in the family's own keys (those of the real model's file). */
    private static ObjectNode configJson(Options o) {
        Preset p = o.preset();
        Architecture arch = o.architecture();
        ObjectNode c = JSON.createObjectNode();
        c.putArray("architectures").add(arch.hfClass());
        if (arch != Architecture.QWEN2) {
            c.put("attention_bias", false);
        }
        c.put("attention_dropout", 0.0);
        c.put("bos_token_id", p.bos);
        c.put("eos_token_id", p.eos);
        if (p.headDim > 0) {
            c.put("head_dim", p.headDim);
        }
        c.put("hidden_act", "silu");
        c.put("hidden_size", p.hidden);
        c.put("initializer_range", 0.02);
        c.put("intermediate_size", p.intermediate);
        c.put("max_position_embeddings", p.maxPositions);
        if (arch == Architecture.QWEN3) {
            c.put("max_window_layers", p.layers);
        }
        if (arch == Architecture.LLAMA) {
            c.put("mlp_bias", false);
        }
        c.put("model_type", arch.modelType());
        c.put("num_attention_heads", p.heads);
        c.put("num_hidden_layers", p.layers);
        c.put("num_key_value_heads", p.kvHeads);
        if (arch == Architecture.LLAMA) {
            c.put("pretraining_tp", 1);
        }
        c.put("rms_norm_eps", p.rmsNormEps);
        RopeScaling rs = p.ropeScaling;
        if (rs.type() == RopeScaling.Type.LLAMA3) {
            ObjectNode scaling = c.putObject("rope_scaling");
            scaling.put("factor", rs.factor());
            scaling.put("high_freq_factor", rs.highFreqFactor());
            scaling.put("low_freq_factor", rs.lowFreqFactor());
            scaling.put("original_max_position_embeddings", rs.originalMaxPositionEmbeddings());
            scaling.put("rope_type", "llama3");
        } else if (arch != Architecture.QWEN2) {
            c.putNull("rope_scaling");
        }
        c.put("rope_theta", p.ropeTheta);
        if (arch == Architecture.QWEN3) {
            c.putNull("sliding_window");
        }
        c.put("tie_word_embeddings", o.tied());
        c.put("torch_dtype", switch (o.dtype()) {
            case BF16 -> "bfloat16";
            case F16 -> "float16";
            default -> "float32";
        });
        c.put("use_cache", true);
        if (arch == Architecture.QWEN3) {
            c.put("use_sliding_window", false);
        }
        c.put("vocab_size", p.vocab);
        return c;
    }

    /** Writes the checkpoint folder in shards of Hugging Face's default size; refuses a non-empty destination. */
    public static void write(Options o, Path out, Progress progress) {
        write(o, out, ShardedWriter.DEFAULT_SHARD_BYTES, progress);
    }

    /**
     * Writes the checkpoint folder: one {@code model.safetensors} when the weights fit in {@code maxShardBytes}, else
     * shards of at most that size and their index, as {@code save_pretrained} writes them; refuses a non-empty
     * destination.
     */
    public static void write(Options o, Path out, long maxShardBytes, Progress progress) {
        try {
            if (!Folders.isMissingOrEmpty(out)) {
                throw new IllegalArgumentException(out + " already exists and is not empty");
            }
            Files.createDirectories(out);
            ObjectNode cfg = configJson(o);
            JSON.writeValue(out.resolve("config.json").toFile(), cfg);
            ObjectNode gen = JSON.createObjectNode();
            gen.put("bos_token_id", o.preset().bos);
            gen.put("eos_token_id", o.preset().eos);
            gen.put("do_sample", false);
            JSON.writeValue(out.resolve("generation_config.json").toFile(), gen);
            for (String f : List.of("tokenizer.json", "tokenizer_config.json")) {
                String res = "/dev/hexforge/synth/" + o.preset().tokenizer + "/" + f;
                try (InputStream in = SyntheticCheckpoint.class.getResourceAsStream(res)) {
                    if (in == null) {
                        throw new IllegalStateException("bundled tokenizer resource " + res + " is missing from the build");
                    }
                    Files.copy(in, out.resolve(f), StandardCopyOption.REPLACE_EXISTING);
                }
            }
            ModelConfig config = ModelConfig.fromJson(cfg);
            Map<String, long[]> tensors = Checkpoint.expectedTensors(config);
            long total = tensors.values().stream().mapToLong(SyntheticCheckpoint::numel).sum();
            long[] done = {0};
            List<SafetensorsWriter.Entry> entries = new ArrayList<>();
            for (Map.Entry<String, long[]> e : tensors.entrySet()) {
                String name = e.getKey();
                long n = numel(e.getValue());
                entries.add(new SafetensorsWriter.Entry(name, o.dtype(), e.getValue(), ch -> {
                    SplittableRandom rng = new SplittableRandom(o.seed() * 0x9E3779B97F4A7C15L + name.hashCode());
                    boolean norm = name.endsWith("norm.weight");
                    boolean bias = name.endsWith(".bias");
                    double range = 0.02 * Math.sqrt(3);
                    ByteBuffer buf = ByteBuffer.allocate(CHUNK * o.dtype().bytes()).order(ByteOrder.LITTLE_ENDIAN);
                    for (long i = 0; i < n; i += CHUNK) {
                        int m = (int) Math.min(CHUNK, n - i);
                        buf.clear();
                        for (int j = 0; j < m; j++) {
                            double u = rng.nextDouble() * 2 - 1;
                            float v = (float) (norm ? 1 + 0.1 * u : bias ? 0.1 * u : range * u);
                            switch (o.dtype()) {
                                case F32 -> buf.putFloat(v);
                                case BF16 -> buf.putShort(FloatConversion.floatToBf16(v));
                                default -> buf.putShort(FloatConversion.floatToF16(v));
                            }
                        }
                        buf.flip();
                        SafetensorsWriter.writeFully(ch, buf);
                        done[0] += m;
                        progress.update("weights", done[0], total);
                    }
                }));
            }
            ShardedWriter.write(out, Map.of("format", "pt"), entries, maxShardBytes);
        } catch (IOException e) {
            throw new UncheckedIOException("writing synthetic checkpoint to " + out + ": " + e.getMessage(), e);
        }
    }

    private static long numel(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        return n;
    }
}
