package dev.hexforge.cli;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.builder.GraphBuilder;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;
import dev.hexforge.onnx.runtime.OrtSessions;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.StoredTensors;
import dev.hexforge.quant.awq.Awq;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.quant.gptq.Gptq;
import dev.hexforge.quant.gptq.GptqRunner;
import dev.hexforge.quant.gptq.Hessian;
import dev.hexforge.tokenizer.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;

@Command(name = "calibrated", mixinStandardHelpOptions = true,
        description = "GPTQ or AWQ over calibration data: wall time and peak heap; the Hessian accumulation's GFLOP/s "
                + "against ONNX Runtime's fp32 MatMul GFLOP/s at the same shapes, in the same run.")
final class BenchCalibrated implements Callable<Integer> {
    @Option(names = "--model", required = true)
    Path model;
    @Option(names = "--method", defaultValue = "gptq", description = "gptq or awq (default ${DEFAULT-VALUE})")
    String method;
    @Option(names = "--bits", defaultValue = "4")
    int bits;
    @Option(names = "--group", defaultValue = "128")
    int group;
    @Option(names = "--samples", defaultValue = "128")
    int samples;
    @Option(names = "--length", defaultValue = "128")
    int length;
    @Option(names = "--calib", description = "JSONL calibration file (default: the bundled calib.jsonl)")
    Path calib;
    @Option(names = "--layers", description = "quantize only the first N decoder layers (default: all)")
    Integer layers;
    @Option(names = "--skip-kernels", description = "skip the Hessian vs ONNX Runtime MatMul comparison")
    boolean skipKernels;

    @Override
    public Integer call() throws IOException {
        int threads = Runtime.getRuntime().availableProcessors();
        Path work = Files.createTempDirectory("hexforge-bench");
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            int hidden = ckpt.config().hiddenSize();
            int inter = ckpt.config().intermediateSize();
            if (!skipKernels) {
                for (int k : new int[]{hidden, inter}) {
                    int rows = 1024;
                    System.out.printf("k=%d, %d rows, %d threads: Hessian XᵀX (upper triangle) %.1f GFLOP/s; ONNX Runtime %s MatMul [%d,%d]x[%d,%d] %.1f GFLOP/s%n",
                            k, rows, threads, hessianGflops(k, rows), OrtSessions.runtimeVersion(), k, rows, rows, k,
                            ortMatMulGflops(k, rows, k, threads, work));
                }
            }
            Path calibFile = calib != null ? calib : BundledData.calibration(work);
            CalibrationSet set;
            try (Tokenizer tok = Tokenizer.load(ckpt.dir())) {
                set = CalibrationSet.load(calibFile, tok, samples, length, 0);
            }
            set.warnings().forEach(w -> System.out.println("warning: " + w));
            int n = layers == null ? ckpt.config().numLayers() : layers;
            LayerSource base = LayerSource.of(ckpt).firstLayers(n);
            QuantSpec spec = new QuantSpec(bits, group, false);
            System.gc();
            BenchCommand.resetPeaks();
            long t0 = System.nanoTime();
            int linears = switch (method) {
                case "gptq" -> GptqRunner.run(base, set, spec, Gptq.Options.defaults(), List.of(), Progress.NONE, StoredTensors.in(work.resolve("q"))).model().linears().size();
                case "awq" -> Awq.run(base, set, spec, List.of(), Progress.NONE, StoredTensors.in(work.resolve("q"))).model().linears().size();
                default -> throw new IllegalArgumentException("--method must be gptq or awq, got " + method);
            };
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.printf("%s %s on %d of %d layers (%d linears), %d samples x %d tokens (%d tokens): %.1fs (%.1fs per layer), peak heap %.0f MB (the float32 model alone: %.0f MB)%n",
                    method, spec.describe(), n, ckpt.config().numLayers(), linears, set.sequences().size(), length,
                    set.tokens(), secs, secs / n, BenchCommand.peakHeap() / 1e6, BenchCommand.floatBytes(ckpt) / 1e6);
        } finally {
            Folders.deleteTree(work);
        }
        return 0;
    }

    /** Best of a few Hessian accumulations of random rows. */
    static double hessianGflops(int k, int rows) {
        float[] x = randomFloats(rows * k, 1);
        double best = 0;
        for (int rep = 0; rep < 5; rep++) {
            Hessian h = new Hessian(k);
            long t0 = System.nanoTime();
            h.add(x, rows);
            h.matrix();
            double secs = (System.nanoTime() - t0) / 1e9;
            best = Math.max(best, h.flops() / secs / 1e9);
        }
        return best;
    }

    /** Best of a few runs of a one-node fp32 MatMul graph [m, k] x [k, n] in ONNX Runtime (CPU EP). */
    static double ortMatMulGflops(int m, int k, int n, int threads, Path work) {
        GraphBuilder g = new GraphBuilder("matmul", 17);
        String a = g.input("a", DataType.FLOAT, (long) m, (long) k);
        String b = g.input("b", DataType.FLOAT, (long) k, (long) n);
        g.output(g.opNamed("y", "mm", "MatMul", List.of(a, b)), DataType.FLOAT, (long) m, (long) n);
        Path file = work.resolve("matmul-" + m + "x" + k + "x" + n + ".onnx");
        try {
            Files.write(file, g.build("hexforge-bench", "0", Map.of()).toByteArray());
            OrtEnvironment env = OrtEnvironment.getEnvironment();
            try (OrtSession s = OrtSessions.open(file, threads);
                 OnnxTensor ta = OnnxTensor.createTensor(env, FloatBuffer.wrap(randomFloats(m * k, 2)), new long[]{m, k});
                 OnnxTensor tb = OnnxTensor.createTensor(env, FloatBuffer.wrap(randomFloats(k * n, 3)), new long[]{k, n})) {
                double best = 0;
                for (int rep = 0; rep < 6; rep++) {
                    long t0 = System.nanoTime();
                    try (OrtSession.Result r = s.run(Map.of("a", ta, "b", tb))) {
                        double secs = (System.nanoTime() - t0) / 1e9;
                        best = Math.max(best, 2.0 * m * k * n / secs / 1e9);
                    }
                }
                return best;
            }
        } catch (IOException | OrtException e) {
            throw new IllegalStateException("ONNX Runtime MatMul benchmark failed: " + e.getMessage(), e);
        }
    }

    private static float[] randomFloats(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) (r.nextDouble() * 2 - 1);
        }
        return x;
    }
}
