package dev.hexforge.memory;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.contracts.Stage;

import java.util.Locale;
import java.util.function.Supplier;

/**
 * How much heap a pass needs for a model, worked out from its config and the pass's settings before the pass
 * starts, so that a model too big for the process is refused with the figures ("needs 13.1 GB, this process can
 * have 5.9 GB") instead of failing with an OutOfMemoryError minutes in. The passes hold today:
 * <ul>
 *   <li>quantize: one layer at a time, each finished tensor kept in a file (see {@link #quantize(ModelConfig, String,
 *       int, int, boolean, int)});</li>
 *   <li>finetune: a bf16 checkpoint's weights stay in the file, mapped or read as they are used, never on the heap
 *       (measured: the 0.5B shape's batch 1 x 128 runs under -Xmx500m; the 8B shape's batch 1 x 512 peaks at 9.3 GB
 *       resident, its activations); other checkpoints' are held in float32 with the trainer's own buffers
 *       (measured: 2.93 times the bf16 weights at 0.5B, so 6 bytes a parameter); then the activations kept for the
 *       backward pass and the loss's chunk of logits;</li>
 *   <li>export and merge stream tensor by tensor: the largest tensor widened to float32 (measured: a dynamic
 *       export of the 1.5B shape keeps under 10 MB live after collections).</li>
 * </ul>
 * The tiny fixture's fine-tune (batch 16 x 256) runs in a 512 MB stage service and is estimated at 0.35 GB.
 */
public final class MemoryPlan {
    /** What every pass's process holds beside the model on its heap: a stage service's own live set, tokenizer, buffers. */
    static final long BASE = 128L << 20;
    /** A collector needs room to move what is live; below this share of slack a full heap thrashes. */
    static final double HEADROOM = 1.15;

    /**
     * One stage's need for one model; {@code stage} is null for work outside the fleet's stages (the CLI's). The
     * basis, the figures behind it in words, is written only when a refusal needs it: the gateway estimates every
     * submission and refuses few.
     */
    public record Estimate(Stage stage, long bytes, Supplier<String> explained) {
        public String basis() {
            return explained.get();
        }

        /** The heap a process should have for it (the need plus the collector's slack). */
        public long heap() {
            return (long) (bytes * HEADROOM);
        }

        /** What needs it: the stage, or the Java reference forward. */
        public String what() {
            return stage != null ? stage.id() : "the Java reference forward";
        }

        public String describe() {
            return String.format(Locale.ROOT, "%s needs about %s of memory for this model (%s)", what(), gb(heap()), basis());
        }
    }

    private MemoryPlan() {
    }

    public static long parameters(ModelConfig c) {
        long embed = (long) c.vocabSize() * c.hiddenSize();
        long biases = (c.attentionBias() ? (long) (c.numHeads() + 2 * c.numKvHeads()) * c.headDim() : 0)
                + (c.qkNorm() ? 2L * c.headDim() : 0);
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
        return quantize(c, method, samples, length, false, Runtime.getRuntime().availableProcessors());
    }

    /**
     * The quantize pass reads one layer at a time and keeps every finished tensor in a file, so its peak is the
     * larger of two phases: quantizing (RTN: one tensor; GPTQ and AWQ: one layer's float weights twice, the
     * calibration activations and GPTQ's Hessians of the widest input) and the per-tensor reports that follow, which
     * run on every core, each holding a tensor in float32 and quantized (the embedding the largest). The
     * sensitivity scan ({@code scan}) runs the whole float model.
     */
    public static Estimate quantize(ModelConfig c, String method, int samples, int length, boolean scan, int cores) {
        long linear = largestLinear(c);
        long reports = reports(c, cores);
        boolean calibrated = !method.equals("rtn");
        long layer = calibrated ? 2 * layerWeights(c) * Float.BYTES : 0;
        long tokens = calibrated ? (long) samples * Math.min(length, c.maxPositionEmbeddings()) : 0;
        // every sequence's hidden state and its trace through the current layer (GPTQ keeps each part's result until
        // the next subset is quantized; AWQ keeps the whole trace)
        long activations = tokens * (c.hiddenSize() * Float.BYTES + (5L * c.hiddenSize() + c.intermediateSize()) * Float.BYTES);
        int widest = Math.max(c.hiddenSize(), c.intermediateSize());
        // GPTQ: the Hessian (double) beside its reversed, damped copy and that copy's triangular inverse while the
        // factor is made; then the factor and the Hessian's float copy for the reports
        long hessians = method.equals("gptq") ? 24L * widest * widest : 0;
        long quantizing = calibrated ? layer + activations + hessians : 5 * linear;
        long bytes = BASE + Math.max(reports, quantizing) + (scan ? 4 * parameters(c) : 0);
        return new Estimate(Stage.QUANTIZE, bytes, () -> String.format(Locale.ROOT,
                "%s by layer: %s for the largest tensors in float32 and quantized on %d cores", method, gb(reports), cores)
                + (!calibrated ? "" : String.format(Locale.ROOT, "; %s for one layer twice, %s of activations over %d calibration "
                + "tokens%s", gb(layer), gb(activations), tokens, hessians > 0 ? ", " + gb(hessians) + " of Hessians" : ""))
                + (!scan ? "" : String.format(Locale.ROOT, "; the sensitivity scan's %.2f B parameters in float32", parameters(c) / 1e9)));
    }

    /** The reports of the largest tensors at once, one per core: the embedding, an untied head, then linears. */
    private static long reports(ModelConfig c, int cores) {
        long embedding = (long) c.vocabSize() * c.hiddenSize();
        long reports = 0;
        for (int i = 0; i < Math.max(1, cores); i++) {
            reports += 5 * (i == 0 || i == 1 && !c.tieWordEmbeddings() ? embedding : largestLinear(c));
        }
        return reports;
    }

    private static long layerWeights(ModelConfig c) {
        return linearWeights(c) / c.numLayers();
    }

    private static long largestLinear(ModelConfig c) {
        return (long) c.hiddenSize() * c.intermediateSize();
    }

    /**
     * {@code mappedBf16}: the checkpoint's matrices are bf16 ({@code Checkpoint#mapsBf16}; config.json's
     * torch_dtype where only the config is at hand), so the reference forward and the trainer map them from the file.
     */
    public static Estimate finetune(ModelConfig c, boolean mappedBf16, int batch, int maxLength) {
        long p = parameters(c);
        long len = Math.min(maxLength, c.maxPositionEmbeddings());
        // kept for the backward pass, per token and layer: the residual, norms, q/k/v and attention output, gate and up
        long perToken = (6L * c.hiddenSize() + 2L * c.intermediateSize()) * Float.BYTES * c.numLayers();
        long attention = (long) batch * c.numHeads() * len * len * Float.BYTES * c.numLayers();
        long activations = batch * len * perToken + attention;
        // bf16: only the trainer's buffers, the largest a chunk of logits and its gradient (2^24 values at most);
        // float32: the weights and those buffers, measured together
        long held = mappedBf16 ? 2L * Float.BYTES * Math.min(1L << 24, batch * len * c.vocabSize()) : 6 * p;
        return new Estimate(Stage.FINETUNE, BASE + held + activations, () -> String.format(Locale.ROOT,
                "%.2f B parameters %s, %s of activations for %d x %d tokens", p / 1e9,
                mappedBf16 ? "in the bf16 file, not on the heap" : "held in float32 with the trainer's buffers",
                gb(activations), batch, len));
    }

    /**
     * The Java reference forward on a Hugging Face folder (`hexforge generate` / `eval` / `bench generate` without an
     * export): the model's matrices mapped from a bf16 file or held in float32, beside which a prompt's activations
     * and logits are small.
     */
    public static Estimate referenceForward(ModelConfig c, boolean mappedBf16) {
        long p = parameters(c);
        long held = mappedBf16 ? p - linearWeights(c) - (long) c.vocabSize() * c.hiddenSize() * (c.tieWordEmbeddings() ? 1 : 2) : p;
        return new Estimate(null, BASE + 4 * held, () -> String.format(Locale.ROOT, "%.2f B parameters %s", p / 1e9,
                mappedBf16 ? "mapped from the bf16 file, the norms in float32" : "in float32"));
    }

    /** Export and merge read and write a tensor at a time. */
    public static Estimate streaming(Stage stage, ModelConfig c) {
        return new Estimate(stage, BASE + largestTensor(c) * Float.BYTES, () -> "tensor by tensor; the largest is "
                + gb(largestTensor(c) * Float.BYTES) + " in float32");
    }

    /**
     * Refuses, before any work, a pass this process cannot hold: OUT_OF_MEMORY with both figures and what to do. What
     * it can hold is the heap's limit, or less where the machine's available memory or the container's limit cannot
     * give the heap room to grow ({@link SystemMemory}): a heap sized for the machine grows into memory other work
     * holds, and the kernel ends the process without a word.
     */
    public static void require(Estimate e) {
        require(e, SystemMemory.now());
    }

    static void require(Estimate e, SystemMemory m) {
        if (e.heap() > m.heapCanHave() && m.boundByMachine()) {
            throw new HexforgeException(ErrorCode.OUT_OF_MEMORY, e.describe() + "; this process can have "
                    + gb(m.heapCanHave()) + " (" + m.describe() + ")",
                    "free memory on the machine (files on tmpfs such as /dev/shm, other processes) or run where more is "
                            + "available; the pass needs about " + gb(e.heap()) + " of heap", null);
        }
        require(e, m.heapMax());
    }

    static void require(Estimate e, long have) {
        if (e.heap() > have) {
            throw new HexforgeException(ErrorCode.OUT_OF_MEMORY, e.describe() + "; this process can have " + gb(have),
                    "give the process more memory (bin/hexforge gives the CLI 75% of the machine's available memory; HEXFORGE_JAVA_OPTS=-Xmx"
                            + xmxGigabytes(e) + "g sets it" + (e.stage() == null
                            ? "), or run an ONNX export of the model (hexforge export) or a smaller model"
                            : "; in the fleet, the " + e.stage().id() + " service's heap), or use a smaller model, batch or "
                            + "calibration set"), null);
        }
    }

    /** Whole GiB of -Xmx that give at least the estimate's heap: the JVM keeps about a tenth of -Xmx from the program. */
    static long xmxGigabytes(Estimate e) {
        return ((long) (e.heap() * 1.1) + (1L << 30) - 1) >> 30;
    }

    public static String gb(long bytes) {
        return String.format(Locale.ROOT, "%.1f GB", bytes / 1e9);
    }
}
