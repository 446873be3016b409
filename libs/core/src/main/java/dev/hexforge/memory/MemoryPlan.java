package dev.hexforge.memory;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * How much heap a pass needs for a model, worked out from its config and the pass's settings before the pass
 * starts, so that a model too big for the process is refused with the figures ("needs 13.1 GB, this process can
 * have 5.9 GB") instead of failing with an OutOfMemoryError minutes in. The passes hold today:
 * <ul>
 *   <li>quantize: the float32 weights (4 bytes a parameter), the quantized linears (1 byte a weight) and their
 *       fake-quantized float copy the accuracy gate runs (4 bytes a weight); GPTQ and AWQ also the calibration
 *       activations of one layer and GPTQ one Hessian (doubles, inputs squared);</li>
 *   <li>finetune: the float32 weights plus the trainer's own (measured: 2.93 times the bf16 weights at 0.5B, so 6
 *       bytes a parameter) and the activations kept for the backward pass;</li>
 *   <li>export and merge stream tensor by tensor: the largest tensor widened to float32 (measured: a dynamic
 *       export of the 1.5B shape keeps under 10 MB live after collections).</li>
 * </ul>
 * Measured on the synthetic Qwen2.5-0.5B shape (RTN, INT8): 3.7 GB live after collections; the estimate says 3.9 GB.
 * The tiny fixture's fine-tune (batch 16 x 256) runs in a 512 MB stage service and is estimated at 0.35 GB.
 */
public final class MemoryPlan {
    /** What every pass's process holds beside the model on its heap: a stage service's own live set, tokenizer, buffers. */
    static final long BASE = 128L << 20;
    /** A collector needs room to move what is live; below this share of slack a full heap thrashes. */
    static final double HEADROOM = 1.15;

    /** One stage's need for one model. */
    public record Estimate(Stage stage, long bytes, String basis) {
        /** The heap a process should have for it (the need plus the collector's slack). */
        public long heap() {
            return (long) (bytes * HEADROOM);
        }

        public String describe() {
            return String.format(Locale.ROOT, "%s needs about %s of memory for this model (%s)", stage.id(), gb(heap()), basis);
        }
    }

    private MemoryPlan() {
    }

    public static long parameters(ModelConfig c) {
        long embed = (long) c.vocabSize() * c.hiddenSize();
        long biases = c.attentionBias() ? (long) (c.numHeads() + 2 * c.numKvHeads()) * c.headDim() : 0;
        return embed * (c.tieWordEmbeddings() ? 1 : 2) + linearWeights(c)
                + (long) c.numLayers() * (2L * c.hiddenSize() + biases) + c.hiddenSize();
    }

    /** The weights of the decoder's linears, the ones quantization replaces. */
    public static long linearWeights(ModelConfig c) {
        long h = c.hiddenSize();
        long kv = (long) c.numKvHeads() * c.headDim();
        long q = (long) c.numHeads() * c.headDim();
        long perLayer = h * q + 2 * h * kv + q * h + 3 * h * c.intermediateSize();
        return perLayer * c.numLayers();
    }

    private static long largestTensor(ModelConfig c) {
        return Math.max((long) c.vocabSize() * c.hiddenSize(), (long) c.hiddenSize() * c.intermediateSize());
    }

    /** {@code method} rtn, gptq or awq; calibration of {@code samples} sequences of {@code length} tokens. */
    public static Estimate quantize(ModelConfig c, String method, int samples, int length) {
        long p = parameters(c);
        long embeddings = (long) c.vocabSize() * c.hiddenSize() * (c.tieWordEmbeddings() ? 1 : 2);
        long lin = linearWeights(c) + embeddings;
        long bytes = BASE + 4 * p + 5 * lin;
        String basis = String.format(Locale.ROOT, "%s: %.2f B parameters in float32, the quantized linears, embedding "
                + "and head and their fake-quantized copy", method, p / 1e9);
        if (!method.equals("rtn")) {
            long tokens = (long) samples * Math.min(length, c.maxPositionEmbeddings());
            long activations = tokens * (3L * c.hiddenSize() + c.intermediateSize()) * Float.BYTES;
            long hessian = method.equals("gptq") ? (long) c.intermediateSize() * c.intermediateSize() * Double.BYTES : 0;
            bytes += activations + hessian;
            basis += String.format(Locale.ROOT, ", %s of one layer's activations over %d calibration tokens", gb(activations), tokens);
        }
        return new Estimate(Stage.QUANTIZE, bytes, basis);
    }

    public static Estimate finetune(ModelConfig c, int batch, int maxLength) {
        long p = parameters(c);
        long len = Math.min(maxLength, c.maxPositionEmbeddings());
        // kept for the backward pass, per token and layer: the residual, norms, q/k/v and attention output, gate and up
        long perToken = (6L * c.hiddenSize() + 2L * c.intermediateSize()) * Float.BYTES * c.numLayers();
        long attention = (long) batch * c.numHeads() * len * len * Float.BYTES * c.numLayers();
        long activations = batch * len * perToken + attention;
        return new Estimate(Stage.FINETUNE, BASE + 6 * p + activations, String.format(Locale.ROOT,
                "%.2f B parameters held in float32 with the trainer's buffers, %s of activations for %d x %d tokens", p / 1e9,
                gb(activations), batch, len));
    }

    /** Export and merge read and write a tensor at a time. */
    public static Estimate streaming(Stage stage, ModelConfig c) {
        return new Estimate(stage, BASE + largestTensor(c) * Float.BYTES, "tensor by tensor; the largest is "
                + gb(largestTensor(c) * Float.BYTES) + " in float32");
    }

    /** The estimates of a job's stages that run on the model (compile, sign and benchmark need next to nothing). */
    public static List<Estimate> forJob(JobSpec spec, ModelConfig c) {
        List<Estimate> out = new ArrayList<>();
        for (Stage s : spec.stageList()) {
            switch (s) {
                case FINETUNE -> out.add(finetune(c, spec.finetune().batch(), spec.finetune().maxLength()));
                case QUANTIZE -> out.add(quantize(c, spec.quantize().method(), spec.quantize().calibrationSamples(),
                        spec.quantize().calibrationLength()));
                case MERGE, EXPORT -> out.add(streaming(s, c));
                default -> {
                }
            }
        }
        return out;
    }

    /** The heap this process can have at most. */
    public static long available() {
        return Runtime.getRuntime().maxMemory();
    }

    /**
     * Refuses, before any work, a pass this process cannot hold: OUT_OF_MEMORY with both figures and what to do.
     */
    public static void require(Estimate e) {
        require(e, available());
    }

    static void require(Estimate e, long have) {
        if (e.heap() > have) {
            throw new HexforgeException(ErrorCode.OUT_OF_MEMORY, e.describe() + "; this process can have " + gb(have),
                    "give the process more memory (bin/hexforge gives the CLI 75% of the machine's; HEXFORGE_JAVA_OPTS=-Xmx"
                            + (e.heap() + (1L << 30) - 1 >> 30) + "g sets it; in the fleet, the " + e.stage().id()
                            + " service's heap), or use a smaller model, batch or calibration set", null);
        }
    }

    public static String gb(long bytes) {
        return String.format(Locale.ROOT, "%.1f GB", bytes / 1e9);
    }
}
