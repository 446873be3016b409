package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.io.Folders;
import dev.hexforge.kernels.CTriad;
import dev.hexforge.kernels.Kernels;
import dev.hexforge.kernels.MemoryBandwidth;
import dev.hexforge.lora.LoraConfig;
import dev.hexforge.lora.train.AdamW;
import dev.hexforge.lora.train.LoraParams;
import dev.hexforge.lora.train.LoraTrainingModel;
import dev.hexforge.lora.train.TrainingExample;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.runtime.OpProfile;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedModel;
import dev.hexforge.quant.rtn.Rtn;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;

@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmarks that print figures.",
        subcommands = {BenchCommand.Export.class, BenchCommand.Generate.class, BenchCommand.Quantize.class,
                BenchCommand.Finetune.class, BenchCalibrated.class, BenchResume.class, BenchCommand.Bandwidth.class, BenchAdapter.class})
final class BenchCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "export", mixinStandardHelpOptions = true,
            description = "Export each variant against cp of the same bytes run as a process on the same filesystem: "
                    + "alternating, after a warm-up, median of the rounds; and the export's peak heap.")
    static final class Export implements Callable<Integer> {
        @Option(names = "--model", required = true)
        Path model;
        @Option(names = "--work", required = true, description = "scratch folder on the disk to measure (emptied)")
        Path work;
        @Option(names = "--rounds", defaultValue = "3", description = "timed rounds (default ${DEFAULT-VALUE})")
        int rounds;

        @Override
        public Integer call() throws Exception {
            Files.createDirectories(work);
            for (ExportOptions opt : new ExportOptions[]{ExportOptions.dynamic(), ExportOptions.staticShapes(128, 512)}) {
                String variant = opt.variant().name().toLowerCase();
                Path out = work.resolve(variant);
                double[] export = new double[rounds];
                double[] cp = new double[rounds];
                long peak = 0;
                long written = 0;
                for (int r = -1; r < rounds; r++) { // round -1 warms up both
                    Folders.deleteTree(out);
                    System.gc();
                    resetPeaks();
                    long t0 = System.nanoTime();
                    try (Checkpoint ckpt = Checkpoint.open(model)) {
                        DecoderExporter.export(ckpt, out, opt, Progress.NONE);
                    }
                    double secs = (System.nanoTime() - t0) / 1e9;
                    peak = Math.max(peak, peakHeap());
                    written = Folders.size(out);
                    double copy = cp(out, work.resolve("cp-" + variant));
                    if (r >= 0) {
                        export[r] = secs;
                        cp[r] = copy;
                        System.out.printf("%s round %d: export %.2fs, cp -r of its %.1f MB %.2fs%n", variant, r + 1, secs, written / 1e6, copy);
                    }
                }
                double em = median(export);
                double cm = median(cp);
                System.out.printf("export %-7s median %.2fs (%.0f MB/s), cp median %.2fs: export = %.2fx cp; peak heap %.0f MB%n",
                        variant, em, written / 1e6 / em, cm, em / cm, peak / 1e6);
                Folders.deleteTree(out);
            }
            return 0;
        }

        /** {@code cp -r} of a folder as its own process, timed; the copy is removed again. */
        private static double cp(Path from, Path to) throws Exception {
            Folders.deleteTree(to);
            long t0 = System.nanoTime();
            Process p = new ProcessBuilder("cp", "-r", from.toString(), to.toString()).inheritIO().start();
            if (p.waitFor() != 0) {
                throw new IllegalStateException("cp failed");
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            Folders.deleteTree(to);
            return secs;
        }
    }

    @Command(name = "bandwidth", mixinStandardHelpOptions = true,
            description = "The JVM's triad against the same triad in C (which bench generate divides by where it compiles), "
                    + "compiled here with the system compiler and run as a process: alternating, after a warm-up, median of the rounds.")
    static final class Bandwidth implements Callable<Integer> {
        @Option(names = "--threads", split = ",", description = "thread counts (default 1,2)")
        int[] threads = {1, 2};
        @Option(names = "--rounds", defaultValue = "3", description = "timed rounds of each (default ${DEFAULT-VALUE})")
        int rounds;

        @Override
        public Integer call() throws Exception {
            try (var cTriad = CTriad.build()) {
                for (int t : threads) {
                    MemoryBandwidth.triad(t); // warm-up: the JIT, and the C binary's first run
                    cTriad.run(t);
                    double[] java = new double[rounds];
                    double[] c = new double[rounds];
                    for (int r = 0; r < rounds; r++) {
                        java[r] = MemoryBandwidth.triad(t);
                        c[r] = cTriad.run(t);
                        System.out.printf("threads %d round %d: java %.1f GB/s, C %.1f GB/s%n", t, r + 1, java[r] / 1e9, c[r] / 1e9);
                    }
                    double jm = median(java);
                    double cm = median(c);
                    System.out.printf("threads %d: java median %.1f GB/s, C median %.1f GB/s: java/C = %.2f%n", t, jm / 1e9, cm / 1e9, jm / cm);
                }
            }
            return 0;
        }
    }

    /** {@link dev.hexforge.kernels.MemoryBandwidth#measure}, printed: the C triad's figure, and the JVM's beside it. */
    private static double bandwidth(int threads) {
        var m = MemoryBandwidth.measure(threads);
        System.out.printf("memory bandwidth (%s, this run): %.1f GB/s; the JVM's triad: %.1f GB/s%n",
                m.describe(threads), m.bytesPerSecond() / 1e9, m.jvmBytesPerSecond() / 1e9);
        return m.bytesPerSecond();
    }

    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    @Command(name = "generate", mixinStandardHelpOptions = true,
            description = "Prefill and decode tokens/s of an export on the host CPU, with decode efficiency against measured memory bandwidth.")
    static final class Generate implements Callable<Integer> {
        @Option(names = "--model", required = true, description = "export folder (or Hugging Face folder: Java forward)")
        Path model;
        @Option(names = "--prompt-len", defaultValue = "128")
        int promptLen;
        @Option(names = "--new", defaultValue = "32")
        int newTokens;
        @Option(names = "--threads", defaultValue = "1")
        int threads;
        @Option(names = "--reps", defaultValue = "3", description = "timed repetitions after two warm-ups of the same prompt and length (default ${DEFAULT-VALUE})")
        int reps;
        @Option(names = "--profile", description = "after the timed runs, ONNX Runtime's time per op type of one decode step (a separate profiled run)")
        boolean profile;

        @Override
        public Integer call() {
            model = Models.find(model);
            if (profile && !ExportInfo.isExport(model)) {
                throw new IllegalArgumentException("--profile: " + model + " is not an ONNX export (the profile is ONNX Runtime's)");
            }
            double bandwidth = bandwidth(threads);
            long weightBytes = weightBytesPerToken(model);
            int[] prompt = new SplittableRandom(1).ints(promptLen, 10, 1000).toArray();
            try (CausalLm lm = Models.open(model, threads, LogitRows.LAST)) {
                // warm-ups of the timed workload itself: ONNX Runtime takes each step's cache and logits from an arena that
                // grows with the sequence, so a run after a shorter warm-up pays for that growth (llama.cpp allocates its
                // cache when the context is made, before its timed runs)
                double[] prefill = new double[reps];
                double[] decode = new double[reps];
                for (int r = -2; r < reps; r++) { // runs -2 and -1 are the warm-ups
                    try (DecodeSession s = lm.start(promptLen + newTokens)) {
                        long t0 = System.nanoTime();
                        s.append(prompt);
                        long t1 = System.nanoTime();
                        for (int i = 0; i < newTokens; i++) {
                            s.append(new int[]{7 + i});
                        }
                        if (r >= 0) {
                            prefill[r] = promptLen / ((t1 - t0) / 1e9);
                            decode[r] = newTokens / ((System.nanoTime() - t1) / 1e9);
                        }
                    }
                }
                double[] p = prefill.clone();
                double[] d = decode.clone();
                Arrays.sort(p);
                Arrays.sort(d);
                System.out.printf("prefill %d tokens: min %.1f / median %.1f / max %.1f tokens/s (%d runs)%n", promptLen, p[0],
                        median(p), p[p.length - 1], reps);
                System.out.printf("decode %d tokens: min %.2f / median %.2f / max %.2f tokens/s%n", newTokens, d[0], median(d), d[d.length - 1]);
                System.out.printf("weights read per token: %.1f MB; decode efficiency (median): %.0f%% of the bandwidth limit%n",
                        weightBytes / 1e6, 100.0 * median(d) * weightBytes / bandwidth);
            }
            if (profile) {
                Map<String, Double> ops = OpProfile.profileDecode(model, threads, null, promptLen, 8);
                double total = ops.values().stream().mapToDouble(Double::doubleValue).sum();
                System.out.printf("one decode step, profiled (ONNX Runtime kernel time, %.2f ms in all):%n", total);
                ops.forEach((op, ms) -> System.out.printf("  %-22s %8.3f ms  %5.1f%%%n", op, ms, 100 * ms / total));
            }
            return 0;
        }
    }

    @Command(name = "quantize", mixinStandardHelpOptions = true,
            description = "RTN over every decoder linear on one thread: GB/s of float32 weights processed, peak heap, against measured bandwidth.")
    static final class Quantize implements Callable<Integer> {
        @Option(names = "--model", required = true)
        Path model;
        @Option(names = "--bits", defaultValue = "8")
        int bits;

        @Override
        public Integer call() {
            double bandwidth = bandwidth(1);
            QuantSpec spec = bits == 8 ? QuantSpec.int8PerChannel()
                    : new QuantSpec(bits, 128, false);
            try (Checkpoint ckpt = Checkpoint.open(model)) {
                long floats = 0;
                for (int l = 0; l < ckpt.config().numLayers(); l++) {
                    for (var lin : TensorNames.Linear.values()) {
                        long[] s = ckpt.tensors().get(TensorNames.weight(l, lin));
                        floats += s[0] * s[1];
                    }
                }
                for (int run = 1; run <= 3; run++) {
                    System.gc();
                    resetPeaks();
                    long t0 = System.nanoTime();
                    QuantizedModel qm = QuantizedModel.rtn(ckpt, spec, List.of());
                    double secs = (System.nanoTime() - t0) / 1e9;
                    System.out.printf("run %d%s: rtn %s: %d linears, %.2f GB of float32 weights in %.2fs = %.2f GB/s, peak heap %.0f MB%n",
                            run, run == 1 ? " (cold: JIT warm-up, first touch of the mapped file)" : "", spec.describe(),
                            qm.linears().size(), floats * 4 / 1e9, secs, floats * 4 / 1e9 / secs, peakHeap() / 1e6);
                }
                double read = 0;
                double quantize = 0;
                for (int l = 0; l < ckpt.config().numLayers(); l++) {
                    for (var lin : TensorNames.Linear.values()) {
                        String name = TensorNames.weight(l, lin);
                        long[] s = ckpt.tensors().get(name);
                        long r0 = System.nanoTime();
                        float[] w = ckpt.floats(name);
                        long r1 = System.nanoTime();
                        Rtn.quantize(w, (int) s[0], (int) s[1], spec);
                        read += (r1 - r0) / 1e9;
                        quantize += (System.nanoTime() - r1) / 1e9;
                    }
                }
                System.out.printf("split (warm): reading + widening %.2fs (%.2f GB/s), quantizing %.2fs (%.2f GB/s)%n",
                        read, floats * 4 / 1e9 / read, quantize, floats * 4 / 1e9 / quantize);
            }
            return 0;
        }
    }

    /**
     * Bytes of weights a decode step reads: the export's weight file, or for a Hugging Face folder every decoder
     * tensor as float32 (the Java forward holds them so). A tied embedding is read once, as the head.
     */
    static long weightBytesPerToken(Path model) {
        if (ExportInfo.isExport(model)) {
            return ExportInfo.read(model).weightBytes(model);
        }
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            return floatBytes(ckpt);
        }
    }

    /** Every decoder tensor's size as float32. */
    static long floatBytes(Checkpoint ckpt) {
        return ckpt.tensors().values().stream().mapToLong(s -> Arrays.stream(s).reduce(4, (a, b) -> a * b)).sum();
    }

    @Command(name = "finetune", mixinStandardHelpOptions = true,
            description = "LoRA training tokens/s (forward + backward + AdamW) on batch x seq random-token sequences "
                    + "with the loss on every token, per thread count; and peak heap against the checkpoint's size.")
    static final class Finetune implements Callable<Integer> {
        @Option(names = "--model", required = true)
        Path model;
        @Option(names = "--batch", description = "default ${DEFAULT-VALUE}")
        int batch = 4;
        @Option(names = "--seq", description = "default ${DEFAULT-VALUE}")
        int seq = 128;
        @Option(names = "--steps", description = "timed steps after the warm-up steps (default ${DEFAULT-VALUE})")
        int steps = 20;
        @Option(names = "--warmup", description = "untimed steps first (default ${DEFAULT-VALUE})")
        int warmup = 10;
        @Option(names = "--rank", description = "LoRA rank; alpha is twice it (default ${DEFAULT-VALUE})")
        int rank = 8;
        @Option(names = "--threads", split = ",", description = "thread counts to try (default 1,2)")
        int[] threads = {1, 2};
        @Option(names = "--targets", split = ",", description = "default q_proj,k_proj,v_proj,o_proj")
        List<String> targets = List.of("q_proj", "k_proj", "v_proj", "o_proj");
        @Option(names = "--dropout", description = "LoRA dropout (default ${DEFAULT-VALUE})")
        double dropout = 0.05;

        @Override
        public Integer call() throws IOException {
            long fileBytes;
            try (var files = Files.list(model)) {
                fileBytes = files.filter(p -> p.getFileName().toString().endsWith(".safetensors")).mapToLong(p -> {
                    try {
                        return Files.size(p);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }).sum();
            }
            System.gc();
            resetPeaks();
            try (Checkpoint ckpt = Checkpoint.open(model)) {
                // refused up front as the finetune pass refuses it, not by an OutOfMemoryError half-way
                MemoryPlan.require(MemoryPlan.finetune(ckpt.config(), ckpt.mapsBf16(), batch, seq + 1));
                run(DecoderWeights.frozen(ckpt), fileBytes); // as the finetune pass holds them, while the files are open
            }
            return 0;
        }

        private void run(DecoderWeights base, long fileBytes) {
            var cfg = base.config();
            SplittableRandom rng = new SplittableRandom(0);
            List<TrainingExample> data = new ArrayList<>();
            for (int i = 0; i < batch; i++) {
                int[] ids = rng.ints(seq + 1, 0, cfg.vocabSize()).toArray();
                boolean[] target = new boolean[seq + 1];
                Arrays.fill(target, 1, seq + 1, true);
                data.add(new TrainingExample(ids, target));
            }
            var lora = new LoraConfig(rank, 2 * rank, dropout, targets, false, null);
            System.out.printf("model %s: %d layers, hidden %d, vocab %d; checkpoint %.1f MB; LoRA r %d on %s; batch %d x %d tokens%n",
                    model.getFileName(), cfg.numLayers(), cfg.hiddenSize(), cfg.vocabSize(), fileBytes / 1e6, rank, targets,
                    batch, seq);
            for (int t : threads) {
                try (var k = Kernels.float32(t)) {
                    var params = LoraParams.init(k, cfg, lora, 0);
                    var m = new LoraTrainingModel<>(k, base, params);
                    var adam = new AdamW<>(k, params, 0);
                    int targetsPerStep = batch * seq;
                    double loss = 0;
                    long t0 = 0;
                    for (int s = 0; s < steps + warmup; s++) {
                        if (s == warmup) {
                            t0 = System.nanoTime();
                        }
                        params.zeroGradients();
                        loss = m.forwardBackward(data, 1.0 / targetsPerStep, s).mean();
                        adam.step(1e-3, 1);
                    }
                    double secs = (System.nanoTime() - t0) / 1e9;
                    System.out.printf("threads %d (%s): %.0f tokens/s, %.1f ms/step, last loss %.3f%n", t, k.name(),
                            (double) targetsPerStep * steps / secs, secs / steps * 1e3, loss);
                }
            }
            long peak = peakHeap();
            System.out.printf("peak heap %.0f MB = %.2fx the checkpoint file (%.0f MB)%n", peak / 1e6, (double) peak / fileBytes,
                    fileBytes / 1e6);
        }
    }

    static void resetPeaks() {
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP) {
                p.resetPeakUsage();
            }
        }
    }

    static long peakHeap() {
        long sum = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP) {
                sum += p.getPeakUsage().getUsed();
            }
        }
        return sum;
    }

}
