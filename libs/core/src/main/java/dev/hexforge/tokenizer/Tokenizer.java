package dev.hexforge.tokenizer;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

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
     * there must be whole JSON with a vocabulary, and every token id it defines (its vocabulary and added tokens) must be
     * one of the model's {@code vocabSize} embeddings — a truncated file or another model's tokenizer would ship a model
     * that cannot be prompted. Read as a stream of JSON tokens (a tenth of a second for Qwen's 7 MB). A folder without
     * one ships none, and is not refused here.
     */
    public static void check(Path dir, int vocabSize) {
        Path json = dir.resolve("tokenizer.json");
        if (!Files.isRegularFile(json)) {
            return;
        }
        long top = -1;
        long vocab = 0;
        try (JsonParser p = new JsonFactory().createParser(json.toFile())) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new TokenizerException(json + ": not a tokenizer (a JSON object was expected)");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (field.equals("model") && value == JsonToken.START_OBJECT) {
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String inner = p.currentName();
                        JsonToken v = p.nextToken();
                        if (inner.equals("vocab") && v == JsonToken.START_OBJECT) {
                            while (p.nextToken() == JsonToken.FIELD_NAME) {
                                p.nextToken();
                                top = Math.max(top, p.getValueAsLong(-1));
                                vocab++;
                            }
                        } else {
                            p.skipChildren();
                        }
                    }
                } else if (field.equals("added_tokens") && value == JsonToken.START_ARRAY) {
                    while (p.nextToken() == JsonToken.START_OBJECT) {
                        while (p.nextToken() == JsonToken.FIELD_NAME) {
                            String inner = p.currentName();
                            p.nextToken();
                            if (inner.equals("id")) {
                                top = Math.max(top, p.getValueAsLong(-1));
                            } else {
                                p.skipChildren();
                            }
                        }
                    }
                } else {
                    p.skipChildren();
                }
            }
            if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
                throw new TokenizerException(json + ": cannot load tokenizer: the JSON does not end where it should");
            }
        } catch (IOException e) {
            throw new TokenizerException(json + ": cannot load tokenizer: " + e.getMessage(), e);
        }
        if (vocab == 0) {
            throw new TokenizerException(json + ": cannot load tokenizer: it has no model.vocab");
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
