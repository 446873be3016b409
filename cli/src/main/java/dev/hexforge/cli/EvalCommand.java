package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.runtime.PartwisePrompt;
import dev.hexforge.quant.gate.FloatScoring;
import dev.hexforge.tokenizer.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.function.IntConsumer;

@Command(name = "eval", mixinStandardHelpOptions = true, description = "Evaluate a model.",
        subcommands = {EvalCommand.Ppl.class})
final class EvalCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "ppl", mixinStandardHelpOptions = true,
            description = "Perplexity of a text: whole text tokenized once, non-overlapping windows, first token of each unscored.")
    static final class Ppl implements Callable<Integer> {
        @Option(names = "--model", required = true, description = "export folder or Hugging Face folder")
        Path model;
        @Option(names = "--text", required = true, description = "UTF-8 text file")
        Path text;
        @Option(names = "--window", defaultValue = "128", description = "window length in tokens (default: ${DEFAULT-VALUE})")
        int window;
        @Option(names = "--threads", defaultValue = "0", description = "ONNX Runtime threads (0: all cores)")
        int threads;
        @Option(names = "--json", description = "print one JSON object")
        boolean json;
        @Option(names = "--adapter", paramLabel = "NAME|FILE", description = "run with this LoRA adapter: one of the export's "
                + "(export --adapter NAME=DIR) or an .onnx_adapter file; without it an export with adapters runs its base model")
        String adapter;

        @Override
        public Integer call() throws IOException {
            model = Models.find(model);
            String content;
            try {
                content = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(Files.readAllBytes(text))).toString();
            } catch (CharacterCodingException e) {
                throw new IllegalArgumentException(text + " is not valid UTF-8 text");
            }
            Perplexity.Result r;
            try (Tokenizer tok = Tokenizer.load(model); ProgressBar bar = new ProgressBar("ppl")) {
                int[] ids = tok.encode(content);
                int windows = ids.length / window;
                IntConsumer progress = w -> bar.update("window " + w + "/" + windows, w, windows);
                if (ExportInfo.isExport(model) && PartwisePrompt.scores(ExportInfo.read(model), window)) {
                    // static graphs whose prompt is the window: a part at a time, so a model of any size fits
                    r = PartwisePrompt.score(model, ids, threads, adapter).result();
                } else if (ExportInfo.isExport(model)) {
                    try (CausalLm lm = Models.open(model, threads, LogitRows.ALL, adapter)) {
                        r = Perplexity.evaluate(lm, ids, window, progress);
                    }
                } else {
                    // a Hugging Face folder: one layer at a time from the checkpoint, any size in a small heap
                    Models.refuseAdapter(model, adapter);
                    try (Checkpoint ckpt = Checkpoint.open(model)) {
                        r = FloatScoring.score(ckpt, ids, window, progress).result();
                    }
                }
                bar.finish();
            }
            if (!Double.isFinite(r.perplexity())) {
                throw new HexforgeException(ErrorCode.MODEL_INVALID, "perplexity " + r.perplexity() + " over " + r.scoredTokens()
                        + " tokens: the model's logits are not finite (NaN or Inf weights, or values past float range)",
                        "check the model's weights: a pass that reads the checkpoint names the tensors with NaN or Inf values", null);
            }
            if (json) {
                new Json().put("perplexity", r.perplexity()).put("mean_nll", r.meanNll()).put("scored_tokens", r.scoredTokens())
                        .put("windows", r.windows()).put("dropped_trailing_tokens", r.droppedTrailingTokens())
                        .put("backend", Models.kind(model)).print();
            } else {
                System.out.printf("perplexity %.4f (mean NLL %.6f over %d tokens in %d windows of %d; %s)%n", r.perplexity(),
                        r.meanNll(), r.scoredTokens(), r.windows(), window, Models.kind(model));
            }
            return 0;
        }
    }
}
