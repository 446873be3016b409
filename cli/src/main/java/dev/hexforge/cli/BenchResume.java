package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.io.Folders;
import dev.hexforge.pass.QuantizePass;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "resume", mixinStandardHelpOptions = true,
        description = {"A quantize stopped half way through its layers and run again, against the same quantize run whole: "
                + "the resumed run's time as a share of the whole run's, alternating which goes first, median of the rounds.",
                "The stop is what a SIGKILL leaves: the pass stops at a layer's end, with nothing after it run."})
final class BenchResume implements Callable<Integer> {
    @Option(names = "--model", required = true)
    Path model;
    @Option(names = "--method", defaultValue = "gptq", description = "rtn, gptq or awq (default ${DEFAULT-VALUE})")
    String method;
    @Option(names = "--bits", defaultValue = "8", description = "weight bits (default ${DEFAULT-VALUE}, the quantize command's)")
    int bits;
    @Option(names = "--work", required = true, description = "scratch folder on the disk to measure (emptied)")
    Path work;
    @Option(names = "--rounds", defaultValue = "1", description = "timed rounds (default ${DEFAULT-VALUE})")
    int rounds;

    /** The run stopping at a progress report, as a killed process stops: nothing after it runs. */
    private static final class Stopped extends RuntimeException {
        Stopped() {
            super(null, null, false, false);
        }
    }

    @Override
    public Integer call() throws Exception {
        if (rounds < 1 || rounds > 20) {
            throw new IllegalArgumentException("--rounds must be between 1 and 20, got " + rounds);
        }
        JobSpec spec = JobSpecReader.read("{\"model\": \"/model\", \"stages\": [\"quantize\", \"export\"], \"quantize\": {\"method\": \""
                + method + "\", \"bits\": " + bits + "}}");
        Folders.deleteTree(work);
        Files.createDirectories(work);
        Path bundled = Files.createDirectories(work.resolve("bundled"));
        // the quantize command's defaults: the bundled calibration and gate text, the state folder's baseline cache
        QuantizeOptions opt = QuantizePass.options(spec, BundledData.calibration(bundled), BundledData.evalText(bundled),
                GatewayClient.stateFolder().resolve("cache"));
        int layers;
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            layers = ckpt.config().numLayers();
        }
        String stopAt = method + " layer " + (layers / 2) + "/" + layers;
        double[] whole = new double[rounds];
        double[] resumed = new double[rounds];
        double[] stopped = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            for (int order = 0; order < 2; order++) {
                boolean wholeNow = (order == 0) == (r % 2 == 0);
                Path out = work.resolve("out");
                Folders.deleteTree(out);
                if (wholeNow) {
                    whole[r] = seconds(() -> run(opt, out, Progress.NONE));
                } else {
                    stopped[r] = seconds(() -> {
                        try {
                            run(opt, out, (what, done, total) -> {
                                if (what.equals(stopAt)) {
                                    throw new Stopped();
                                }
                            });
                            throw new IllegalStateException("the run did not report '" + stopAt + "'; rtn has no layer reports");
                        } catch (Stopped s) {
                            // stopped where a kill would have
                        }
                    });
                    resumed[r] = seconds(() -> run(opt, out, Progress.NONE));
                }
            }
            System.out.printf(Locale.ROOT, "round %d: whole %.1fs; stopped after layer %d/%d at %.1fs, resumed in %.1fs (%.0f%% of whole)%n",
                    r + 1, whole[r], layers / 2, layers, stopped[r], resumed[r], 100 * resumed[r] / whole[r]);
        }
        System.out.printf(Locale.ROOT, "%s %d-bit, %d round(s): whole %.1fs, resumed %.1fs: %.0f%% (median)%n", method, bits,
                rounds, median(whole), median(resumed), 100 * median(resumed) / median(whole));
        Folders.deleteTree(work);
        return 0;
    }

    private void run(QuantizeOptions opt, Path out, Progress progress) {
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            QuantizePipeline.run(ckpt, opt, out, progress);
        }
    }

    private static double seconds(Runnable r) {
        long t0 = System.nanoTime();
        r.run();
        return (System.nanoTime() - t0) / 1e9;
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
