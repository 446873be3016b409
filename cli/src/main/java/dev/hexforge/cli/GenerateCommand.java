package dev.hexforge.cli;

import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.generate.Generator;
import dev.hexforge.tokenizer.ChatTemplate;
import dev.hexforge.tokenizer.Tokenizer;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.Callable;

@Command(name = "generate", mixinStandardHelpOptions = true,
        description = "Generate text with an ONNX export (or a Hugging Face folder, on the Java reference forward).")
final class GenerateCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "export folder or Hugging Face folder")
    Path model;

    @ArgGroup(multiplicity = "1")
    PromptSource prompt;

    static final class PromptSource {
        @Option(names = "--prompt", description = "prompt text")
        String text;
        @Option(names = "--prompt-ids", split = ",", description = "prompt token ids, comma separated")
        int[] ids;
    }

    @Option(names = "--chat", description = "wrap the prompt in the model's chat template as one user message")
    boolean chat;
    @Option(names = "--chat-format", description = "with --chat: chatml or llama3 instead of what the model's tokenizer files say")
    String chatFormat;
    @Option(names = "--max-new", defaultValue = "32", description = "new tokens at most (default: ${DEFAULT-VALUE})")
    int maxNew;
    @Option(names = "--greedy", description = "argmax decoding (the default unless --temperature is given)")
    boolean greedy;
    @Option(names = "--temperature", description = "sample with this temperature")
    Double temperature;
    @Option(names = "--top-k", defaultValue = "0", description = "sample from the k most likely tokens (0: all)")
    int topK;
    @Option(names = "--top-p", defaultValue = "1.0", description = "nucleus sampling mass (default: ${DEFAULT-VALUE})")
    double topP;
    @Option(names = "--seed", defaultValue = "0", description = "sampling seed (default: ${DEFAULT-VALUE})")
    long seed;
    @Option(names = "--no-stop", description = "do not stop at an end-of-sequence token")
    boolean noStop;
    @Option(names = "--adapter", paramLabel = "NAME|FILE", description = "run with this LoRA adapter: one of the export's "
            + "(export --adapter NAME=DIR) or an .onnx_adapter file; without it an export with adapters runs its base model")
    String adapter;
    @Option(names = "--threads", defaultValue = "0", description = "ONNX Runtime threads (0: all cores)")
    int threads;
    @Option(names = "--json", description = "print one JSON object: {\"ids\": [...], \"text\": \"...\"}")
    boolean json;

    @Override
    public Integer call() {
        model = Models.find(model);
        boolean sample = temperature != null && !greedy;
        ChatTemplate.Format format = chatFormat == null ? null : ChatTemplate.Format.parse(chatFormat);
        try (Tokenizer tok = Tokenizer.load(model, format); CausalLm lm = Models.open(model, threads, LogitRows.LAST, adapter)) {
            int[] input;
            if (prompt.ids != null) {
                input = prompt.ids;
            } else {
                input = tok.encode(chat ? tok.chatTemplate().userPrompt(prompt.text) : prompt.text);
            }
            Set<Integer> stop = noStop ? Set.of() : new HashSet<>(StopTokens.of(model));
            Generator.Options opt = new Generator.Options(maxNew, !sample, sample ? temperature : 1.0, topK, topP, seed, stop);
            long t0 = System.nanoTime();
            int[] ids = Generator.generate(lm, input, opt, json ? null : id -> { });
            double secs = (System.nanoTime() - t0) / 1e9;
            String text = tok.decode(ids, true);
            if (json) {
                new Json().put("ids", ids).put("text", text).put("prompt_tokens", input.length)
                        .put("seconds", secs).print();
            } else {
                System.out.println(text);
                System.err.printf("[%d prompt + %d new tokens in %.2fs on %s]%n", input.length, ids.length, secs, Models.kind(model));
            }
        }
        return 0;
    }

    static String ids(int[] ids) {
        return Arrays.toString(ids);
    }
}
