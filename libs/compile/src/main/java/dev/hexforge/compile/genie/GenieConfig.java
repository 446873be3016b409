package dev.hexforge.compile.genie;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.RopeScaling;
import dev.hexforge.compile.CompileException;

import java.util.List;

/**
 * {@code genie_config.json} of a Genie bundle: a basic dialog on one HTP engine whose model is the bundle's context
 * binaries in part order. RoPE is described under the model's {@code positional-encoding} (with Llama 3's
 * {@code rope-scaling} when the model has it), never as the backend's {@code pos-id-dim} / {@code rope-theta}: Genie
 * takes one or the other, and only the former carries a scaling.
 */
public final class GenieConfig {
    public static final String FILE = "genie_config.json";
    public static final String TOKENIZER = "tokenizer.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** How Genie samples: its defaults are AI Hub's bundles' (seed 42, temperature 0.8, top-k 40, top-p 0.95). */
    public record Sampler(long seed, double temperature, int topK, double topP) {
        public static final Sampler DEFAULT = new Sampler(42, 0.8, 40, 0.95);

        public Sampler {
            if (seed < 0 || seed > 0xFFFF_FFFFL) {
                throw new IllegalArgumentException("sampler seed must be between 0 and 2^32 - 1, got " + seed);
            }
            if (!(temperature >= 0 && temperature <= 100)) {
                throw new IllegalArgumentException("sampler temperature must be between 0 and 100, got " + temperature);
            }
            if (topK < 1 || topK > 1_000_000) {
                throw new IllegalArgumentException("sampler top-k must be between 1 and 1000000, got " + topK);
            }
            if (!(topP > 0 && topP <= 1)) {
                throw new IllegalArgumentException("sampler top-p must be in (0, 1], got " + topP);
            }
        }
    }

    private GenieConfig() {
    }

    /**
     * @param contextLength the context the bundle's graphs were built for (at most the model's maximum positions)
     * @param ctxBins       the context binaries, one per part, in order, relative to the bundle
     */
    public static ObjectNode of(ModelConfig c, int contextLength, Sampler sampler, List<String> ctxBins) {
        if (contextLength < 1 || contextLength > c.maxPositionEmbeddings()) {
            throw new CompileException("context length " + contextLength + " is outside 1.." + c.maxPositionEmbeddings()
                    + " (the model's max_position_embeddings)", "choose a context length the model was trained for");
        }
        if (ctxBins.isEmpty()) {
            throw new IllegalArgumentException("a Genie bundle has at least one context binary");
        }
        ObjectNode root = JSON.createObjectNode();
        ObjectNode dialog = root.putObject("dialog");
        dialog.put("version", 1);
        dialog.put("type", "basic");
        ObjectNode context = dialog.putObject("context");
        context.put("version", 1);
        context.put("size", contextLength);
        context.put("n-vocab", c.vocabSize());
        context.put("bos-token", c.bosTokenId());
        if (c.eosTokenIds().size() == 1) {
            context.put("eos-token", c.eosTokenIds().get(0));
        } else {
            ArrayNode eos = context.putArray("eos-token");
            c.eosTokenIds().forEach(eos::add);
        }
        ObjectNode s = dialog.putObject("sampler");
        s.put("version", 1);
        s.put("seed", sampler.seed());
        s.put("temp", sampler.temperature());
        s.put("top-k", sampler.topK());
        s.put("top-p", sampler.topP());
        ObjectNode tok = dialog.putObject("tokenizer");
        tok.put("version", 1);
        tok.put("path", TOKENIZER);
        ObjectNode engine = dialog.putObject("engine");
        engine.put("version", 1);
        engine.put("n-threads", 3);
        ObjectNode backend = engine.putObject("backend");
        backend.put("version", 1);
        backend.put("type", "QnnHtp");
        ObjectNode htp = backend.putObject("QnnHtp");
        htp.put("version", 1);
        htp.put("use-mmap", true);
        htp.put("spill-fill-bufsize", 0);
        htp.put("mmap-budget", 0);
        htp.put("poll", true);
        htp.put("cpu-mask", "0xe0");
        htp.put("kv-dim", c.headDim());
        htp.put("allow-async-init", false);
        backend.put("extensions", HtpExtConfig.FILE);
        ObjectNode model = engine.putObject("model");
        model.put("version", 1);
        model.put("type", "binary");
        ObjectNode binary = model.putObject("binary");
        binary.put("version", 1);
        ArrayNode bins = binary.putArray("ctx-bins");
        ctxBins.forEach(bins::add);
        ObjectNode rope = model.putObject("positional-encoding");
        rope.put("type", "rope");
        rope.put("rope-dim", c.headDim() / 2);
        rope.put("rope-theta", c.ropeTheta());
        RopeScaling rs = c.ropeScaling();
        if (rs.type() == RopeScaling.Type.LLAMA3) {
            ObjectNode scaling = rope.putObject("rope-scaling");
            scaling.put("rope-type", "llama3");
            scaling.put("factor", rs.factor());
            scaling.put("low-freq-factor", rs.lowFreqFactor());
            scaling.put("high-freq-factor", rs.highFreqFactor());
            scaling.put("original-max-position-embeddings", rs.originalMaxPositionEmbeddings());
        }
        List<String> problems = GenieConfigRules.check(root);
        if (!problems.isEmpty()) {
            throw new IllegalStateException("the Genie config breaks Genie's rules: " + problems);
        }
        return root;
    }
}
