package dev.hexforge.tokenizer;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

/**
 * A Hugging Face {@code tokenizer.json} run by the reference Rust tokenizer (through DJL's binding): no special
 * tokens added, no truncation, special tokens written in the text are recognised.
 */
public final class Tokenizer implements AutoCloseable {
    static {
        // DJL picks a CUDA build of the tokenizer library on a machine with a GPU and downloads it; only the CPU build
        // is bundled, and a fleet may have no network (every tokenizer load failed on a CUDA machine: "Failed to load
        // Huggingface native library"). An operator's own RUST_FLAVOR / ai.djl.offline still wins.
        if (System.getenv("RUST_FLAVOR") == null && System.getProperty("RUST_FLAVOR") == null) {
            System.setProperty("RUST_FLAVOR", "cpu");
        }
        if (System.getenv("DJL_OFFLINE") == null && System.getProperty("ai.djl.offline") == null) {
            System.setProperty("ai.djl.offline", "true");
        }
    }

    private final HuggingFaceTokenizer hf;
    private final ChatTemplate chatTemplate;

    private Tokenizer(HuggingFaceTokenizer hf, ChatTemplate chatTemplate) {
        this.hf = hf;
        this.chatTemplate = chatTemplate;
    }

    /** Loads {@code tokenizer.json} (and {@code tokenizer_config.json} when present) from a model folder. */
    public static Tokenizer load(Path dir) {
        return load(dir, null);
    }

    /** As {@link #load(Path)}, rendering chats in {@code chatFormat} whatever the folder says (null: as it says). */
    public static Tokenizer load(Path dir, ChatTemplate.Format chatFormat) {
        Path json = dir.resolve("tokenizer.json");
        if (!Files.isRegularFile(json)) {
            throw new TokenizerException(dir + ": no tokenizer.json");
        }
        try {
            HuggingFaceTokenizer hf = HuggingFaceTokenizer.newInstance(json, Map.of(
                    "addSpecialTokens", "false",
                    "truncation", "false",
                    "padding", "false",
                    "maxLength", String.valueOf(Integer.MAX_VALUE / 2)));
            return new Tokenizer(hf, ChatTemplate.load(dir, chatFormat));
        } catch (IOException | RuntimeException e) {
            throw new TokenizerException(json + ": cannot load tokenizer: " + e.getMessage(), e);
        }
    }

    /**
     * Checks the tokenizer a pass ships with a model before the pass writes anything: a {@code tokenizer.json} that is
     * there must load, and every token id it defines (its vocabulary and added tokens) must be one of the model's
     * {@code vocabSize} embeddings — a truncated file or another model's tokenizer would ship a model that cannot be
     * prompted. A folder without one ships none, and is not refused here.
     */
    public static void check(Path dir, int vocabSize) {
        Path json = dir.resolve("tokenizer.json");
        if (!Files.isRegularFile(json)) {
            return;
        }
        load(dir).close();
        long top;
        try {
            JsonNode root = new ObjectMapper().readTree(json.toFile());
            top = -1;
            for (JsonNode id : root.path("model").path("vocab")) {
                top = Math.max(top, id.asLong(-1));
            }
            for (JsonNode t : root.path("added_tokens")) {
                top = Math.max(top, t.path("id").asLong(-1));
            }
        } catch (IOException e) {
            throw new TokenizerException(json + ": cannot read: " + e.getMessage(), e);
        }
        if (top >= vocabSize) {
            throw new TokenizerException(json + " defines token id " + top + ", but config.json's vocab_size is " + vocabSize
                    + ": the tokenizer is not this model's; put the model's own tokenizer files in the folder");
        }
    }

    public int[] encode(String text) {
        Encoding enc = hf.encode(text, false, false);
        return Arrays.stream(enc.getIds()).mapToInt(v -> (int) v).toArray();
    }

    public String decode(int[] ids) {
        return decode(ids, false);
    }

    public String decode(int[] ids, boolean skipSpecialTokens) {
        return hf.decode(Arrays.stream(ids).asLongStream().toArray(), skipSpecialTokens);
    }

    public ChatTemplate chatTemplate() {
        return chatTemplate;
    }

    @Override
    public void close() {
        hf.close();
    }
}
