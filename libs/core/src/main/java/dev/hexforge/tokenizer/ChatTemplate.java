package dev.hexforge.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A model's chat format, as its template renders a conversation:
 * <ul>
 *   <li>{@link Format#CHATML} (Qwen2, Qwen3): {@code <|im_start|>{role}\n{content}<|im_end|>\n} per message, then
 *   {@code <|im_start|>assistant\n} as the generation prompt. A template that inserts a default system message when
 *   the conversation has none (Qwen2.5's) is honoured: the default text is read from the template itself.</li>
 *   <li>{@link Format#LLAMA3}: {@code <|begin_of_text|>}, then
 *   {@code <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>} per message (content trimmed, as the
 *   template does), then {@code <|start_header_id|>assistant<|end_header_id|>\n\n} as the generation prompt.</li>
 * </ul>
 * The format is read from {@code tokenizer_config.json}'s template, else from the tokenizer's special tokens; ChatML
 * when neither says.
 */
public record ChatTemplate(Format format, String defaultSystemPrompt) {
    private static final Pattern DEFAULT_SYSTEM =
            Pattern.compile("'<\\|im_start\\|>system\\\\n([^'<]*)<\\|im_end\\|>\\\\n'");
    private static final String LLAMA3_HEADER = "<|start_header_id|>";

    /** The chat formats Hexforge renders. */
    public enum Format {
        CHATML("chatml", "<|im_end|>"),
        LLAMA3("llama3", "<|eot_id|>");

        private final String id;
        private final String endOfTurn;

        Format(String id, String endOfTurn) {
            this.id = id;
            this.endOfTurn = endOfTurn;
        }

        public String id() {
            return id;
        }

        /** The text that ends an assistant's turn, learnt with the answer in fine-tuning. */
        public String endOfTurn() {
            return endOfTurn;
        }

        /** {@code chatml} or {@code llama3}; anything else is refused naming the choices. */
        public static Format parse(String id) {
            for (Format f : values()) {
                if (f.id.equals(id.toLowerCase(Locale.ROOT))) {
                    return f;
                }
            }
            throw new TokenizerException("unknown chat format '" + id + "'; choose one of "
                    + Arrays.stream(values()).map(Format::id).collect(Collectors.joining(", ")));
        }
    }

    public record Message(String role, String content) {
    }

    public ChatTemplate {
        if (format == null) {
            throw new IllegalArgumentException("a chat template needs a format");
        }
    }

    /** The format the model folder's tokenizer files say (see the class comment). */
    public static ChatTemplate load(Path dir) {
        Path cfg = dir.resolve("tokenizer_config.json");
        String template = "";
        if (Files.isRegularFile(cfg)) {
            try {
                JsonNode root = new ObjectMapper().readTree(cfg.toFile());
                template = root == null ? "" : root.path("chat_template").asText("");
            } catch (IOException e) {
                throw new TokenizerException(cfg + ": not valid JSON: " + e.getMessage(), e);
            }
        }
        if (template.contains(LLAMA3_HEADER)) {
            return new ChatTemplate(Format.LLAMA3, null);
        }
        if (template.isEmpty()) {
            Set<String> special = specialTokens(dir.resolve("tokenizer.json"));
            if (special.contains(LLAMA3_HEADER) && !special.contains("<|im_start|>")) {
                return new ChatTemplate(Format.LLAMA3, null);
            }
        }
        Matcher m = DEFAULT_SYSTEM.matcher(template);
        return new ChatTemplate(Format.CHATML, m.find() ? m.group(1) : null);
    }

    /** The folder's template, or the named format when {@code override} is not null (no default system prompt then). */
    public static ChatTemplate load(Path dir, Format override) {
        ChatTemplate found = load(dir);
        return override == null || override == found.format ? found : new ChatTemplate(override, null);
    }

    /** The contents of the tokenizer's added tokens; none when there is no tokenizer.json. */
    private static Set<String> specialTokens(Path tokenizerJson) {
        if (!Files.isRegularFile(tokenizerJson)) {
            return Set.of();
        }
        try {
            Set<String> out = new HashSet<>();
            new ObjectMapper().readTree(tokenizerJson.toFile()).path("added_tokens")
                    .forEach(t -> out.add(t.path("content").asText()));
            return out;
        } catch (IOException e) {
            throw new TokenizerException(tokenizerJson + ": not valid JSON: " + e.getMessage(), e);
        }
    }

    /** The text that ends an assistant's turn. */
    public String endOfTurn() {
        return format.endOfTurn();
    }

    /** An assistant's answer as the template writes it into the conversation (Llama 3's trims it). */
    public String answer(String content) {
        return format == Format.LLAMA3 ? content.strip() : content;
    }

    public String render(List<Message> messages, boolean addGenerationPrompt) {
        return format == Format.LLAMA3 ? renderLlama3(messages, addGenerationPrompt) : renderChatMl(messages, addGenerationPrompt);
    }

    private String renderChatMl(List<Message> messages, boolean addGenerationPrompt) {
        StringBuilder sb = new StringBuilder();
        if (defaultSystemPrompt != null && (messages.isEmpty() || !messages.get(0).role().equals("system"))) {
            sb.append("<|im_start|>system\n").append(defaultSystemPrompt).append("<|im_end|>\n");
        }
        for (Message m : messages) {
            sb.append("<|im_start|>").append(m.role()).append('\n').append(m.content()).append("<|im_end|>\n");
        }
        if (addGenerationPrompt) {
            sb.append("<|im_start|>assistant\n");
        }
        return sb.toString();
    }

    private static String renderLlama3(List<Message> messages, boolean addGenerationPrompt) {
        StringBuilder sb = new StringBuilder("<|begin_of_text|>");
        for (Message m : messages) {
            sb.append(LLAMA3_HEADER).append(m.role()).append("<|end_header_id|>\n\n").append(m.content().strip())
                    .append("<|eot_id|>");
        }
        if (addGenerationPrompt) {
            sb.append(LLAMA3_HEADER).append("assistant<|end_header_id|>\n\n");
        }
        return sb.toString();
    }

    public String userPrompt(String text) {
        return render(List.of(new Message("user", text)), true);
    }
}
