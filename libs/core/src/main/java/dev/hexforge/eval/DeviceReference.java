package dev.hexforge.eval;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The host's answers a device's run is checked against, shipped in a bundle as {@code reference.json}: a fixed prompt
 * with the greedy continuation of the host's reference forward (token agreement), and a short text's token ids with
 * the host's perplexity on them (the device scores the same ids). Computed over the weights the graphs hold, so a
 * quantized model is compared with its fake-quantized reference.
 */
public record DeviceReference(int[] prompt, int[] continuation, int[] perplexityIds, int perplexityWindow, double perplexity) {
    public static final String FILE = "reference.json";
    public static final String PROMPT = "The quick brown fox jumps over the lazy dog. Once upon a time";
    /** A short plain-English text for the on-device perplexity (about 150 tokens with the Qwen2 tokenizer). */
    public static final String PERPLEXITY_TEXT = "The river ran past the old mill, where the miller and his daughter lived. Every "
            + "morning she walked to the market with a basket of bread, and every evening she came home with apples, cheese "
            + "and news from the town. One day a stranger asked her the way to the castle on the hill. She pointed along the "
            + "road and told him to follow the river until he reached the bridge, then to climb the path through the forest. "
            + "He thanked her, gave her a silver coin, and went on his way. That night the miller asked where the coin had "
            + "come from, and she told him about the stranger, the road, the bridge and the forest path.";
    private static final int WINDOW = 64;
    private static final int CONTINUATION = 16;
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** Runs the reference model on the fixed prompt and text. */
    public static DeviceReference compute(CausalLm model, Tokenizer tokenizer) {
        int[] prompt = tokenizer.encode(PROMPT);
        int[] continuation = Generator.generate(model, prompt, Generator.Options.greedy(CONTINUATION), null);
        int[] text = tokenizer.encode(PERPLEXITY_TEXT);
        int window = Math.min(Math.min(WINDOW, text.length), model.maxContext());
        double ppl = Perplexity.evaluate(model, text, window, null).perplexity();
        return new DeviceReference(prompt, continuation, text, window, ppl);
    }

    public void write(Path dir) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("prompt", prompt);
        m.put("continuation", continuation);
        m.put("perplexityIds", perplexityIds);
        m.put("perplexityWindow", perplexityWindow);
        m.put("perplexity", perplexity);
        m.put("note", "greedy continuation and perplexity of the host's reference forward over the graphs' weights");
        try {
            JSON.writeValue(dir.resolve(FILE).toFile(), m);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + dir.resolve(FILE) + ": " + e.getMessage(), e);
        }
    }

    /** The bundle's reference, or null when it has none (an export from before references carried a perplexity has only the prompt). */
    public static DeviceReference read(Path dir) {
        Path file = dir.resolve(FILE);
        if (!Files.isRegularFile(file)) {
            return null;
        }
        try {
            JsonNode r = JSON.readTree(file.toFile());
            return new DeviceReference(ints(r.path("prompt")), ints(r.path("continuation")), ints(r.path("perplexityIds")),
                    r.path("perplexityWindow").asInt(0), r.path("perplexity").asDouble(Double.NaN));
        } catch (IOException e) {
            throw new IllegalArgumentException("the bundle's " + FILE + " is not readable JSON: " + e.getMessage(), e);
        }
    }

    /** The prompt followed by all but the last continuation token: one run of it gives every greedy prediction. */
    public int[] teacherForcedSequence() {
        int[] seq = Arrays.copyOf(prompt, prompt.length + Math.max(0, continuation.length - 1));
        System.arraycopy(continuation, 0, seq, prompt.length, Math.max(0, continuation.length - 1));
        return seq;
    }

    /**
     * Share of the continuation that the greedy choice of these logits repeats; {@code logits} are a model's rows for
     * {@link #teacherForcedSequence()} (at least its length), each ending in the vocabulary's scores.
     */
    public double agreement(float[][] logits, int vocab) {
        int n = continuation.length;
        if (n == 0) {
            return 1.0;
        }
        int same = 0;
        for (int i = 0; i < n; i++) {
            if (argmax(logits[prompt.length - 1 + i], vocab) == continuation[i]) {
                same++;
            }
        }
        return (double) same / n;
    }

    /** The index of the largest of the last {@code vocab} values. */
    public static int argmax(float[] logits, int vocab) {
        int off = logits.length - vocab;
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (logits[off + i] > logits[off + best]) {
                best = i;
            }
        }
        return best;
    }

    /** Whether this reference carries a text to score (window of at least two tokens). */
    public boolean hasPerplexity() {
        return perplexityWindow >= 2 && perplexityIds.length >= perplexityWindow;
    }

    private static int[] ints(JsonNode a) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asInt();
        }
        return out;
    }
}
