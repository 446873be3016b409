package dev.hexforge.cli;

import dev.hexforge.generate.DecodeSession;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.lora.LoraInputs;
import dev.hexforge.onnx.runtime.OnnxCausalLm;
import dev.hexforge.onnx.runtime.OnnxLm;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;

/**
 * What an adapter costs against a whole fine-tuned model: its file's bytes against the export's, and the time to
 * switch to it on an open export (load the adapter, then the first answer) against the time to open the model again,
 * which is what a merged model per task costs to switch to; alternating in one run, medians.
 */
@Command(name = "adapter", mixinStandardHelpOptions = true,
        description = {"LoRA adapters on an export made with --adapter: bytes against the export's, and switching adapters on the open",
                "model against opening it again (a merged model per task), alternating, medians."})
final class BenchAdapter implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "an export with adapters (export --adapter NAME=PEFT_DIR)")
    Path model;
    @Option(names = "--rounds", defaultValue = "5", description = "timed rounds after a warm-up (default ${DEFAULT-VALUE})")
    int rounds;
    @Option(names = "--prompt-len", defaultValue = "32", description = "the first answer's prompt (default ${DEFAULT-VALUE})")
    int promptLen;
    @Option(names = "--threads", defaultValue = "2")
    int threads;

    @Override
    public Integer call() {
        if (rounds < 1 || promptLen < 1) {
            throw new IllegalArgumentException("--rounds and --prompt-len must be at least 1");
        }
        ExportInfo info = ExportInfo.read(model);
        LoraInputs lora = info.lora();
        if (lora == null || lora.adapters().isEmpty()) {
            throw new IllegalArgumentException(model + " has no adapters: export it with --adapter NAME=PEFT_DIR");
        }
        List<String> names = new ArrayList<>(lora.adapters().keySet());
        long exportBytes = folderBytes(model.resolve("onnx"));
        System.out.printf("export: %s of graphs and weights (a merged model's export of this base is as large: merging changes "
                + "values, not sizes)%n", mb(exportBytes));
        for (String n : names) {
            long b = size(lora.adapterFile(model, n));
            System.out.printf("adapter %s: %s, %.3f%% of the export (rank %d on %s)%n", n, mb(b), 100.0 * b / exportBytes,
                    lora.rank(), lora.modules());
        }
        List<String> rotation = new ArrayList<>(names);
        rotation.add(null); // the base: each switch changes what the graphs compute
        int[] prompt = new SplittableRandom(1).ints(promptLen, 10, Math.min(1000, info.vocabSize())).toArray();
        double[] switchMs = new double[rounds];
        double[] switchFirstMs = new double[rounds];
        double[] openMs = new double[rounds];
        double[] openFirstMs = new double[rounds];
        try (OnnxCausalLm lm = OnnxLm.open(model, threads, null, null, LogitRows.LAST, null)) {
            for (int r = -1; r < rounds; r++) { // round -1 is the warm-up
                String next = rotation.get(Math.floorMod(r, rotation.size()));
                // switch the open model's adapter, then its first answer
                long t0 = System.nanoTime();
                lm.useAdapter(next);
                long t1 = System.nanoTime();
                firstAnswer(lm, prompt);
                long t2 = System.nanoTime();
                // the model opened again with the adapter (what switching between merged models costs), its first answer
                long t3 = System.nanoTime();
                try (OnnxCausalLm other = OnnxLm.open(model, threads, null, null, LogitRows.LAST, next)) {
                    long t4 = System.nanoTime();
                    firstAnswer(other, prompt);
                    long t5 = System.nanoTime();
                    if (r >= 0) {
                        switchMs[r] = (t1 - t0) / 1e6;
                        switchFirstMs[r] = (t2 - t0) / 1e6;
                        openMs[r] = (t4 - t3) / 1e6;
                        openFirstMs[r] = (t5 - t3) / 1e6;
                    }
                }
            }
        }
        System.out.printf("switch an open model's adapter: %.1f ms; to its first answer (%d-token prompt + 1 token): %.1f ms "
                + "(median of %d, min %.1f / max %.1f)%n", BenchCommand.median(switchMs), promptLen, BenchCommand.median(switchFirstMs),
                rounds, min(switchFirstMs), max(switchFirstMs));
        System.out.printf("open the model again with it: %.1f ms; to its first answer: %.1f ms (median of %d, min %.1f / max %.1f)%n",
                BenchCommand.median(openMs), BenchCommand.median(openFirstMs), rounds, min(openFirstMs), max(openFirstMs));
        return 0;
    }

    private static void firstAnswer(OnnxCausalLm lm, int[] prompt) {
        try (DecodeSession s = lm.start(prompt.length + 1)) {
            s.append(prompt);
            s.append(new int[]{7});
        }
    }

    private static double min(double[] v) {
        return Arrays.stream(v).min().orElse(Double.NaN);
    }

    private static double max(double[] v) {
        return Arrays.stream(v).max().orElse(Double.NaN);
    }

    private static String mb(long bytes) {
        return String.format("%.2f MB", bytes / 1e6);
    }

    private static long size(Path f) {
        try {
            return Files.size(f);
        } catch (IOException e) {
            throw new UncheckedIOException(f + ": " + e.getMessage(), e);
        }
    }

    private static long folderBytes(Path dir) {
        try (var files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(BenchAdapter::size).sum();
        } catch (IOException e) {
            throw new UncheckedIOException(dir + ": " + e.getMessage(), e);
        }
    }
}
