package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizationReport;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.tokenizer.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.Callable;

@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Run the demo pipeline on the bundled tiny Qwen2 model: export (dynamic and static), QNN pre-flight, "
                + "generation and perplexity on ONNX Runtime checked against the Java reference forward, then INT8 QDQ "
                + "and INT4 MatMulNBits quantization behind the perplexity gate.")
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--out", description = "where the artifacts go (default: ~/.hexforge/demo/<time>)")
    Path out;
    @Option(names = "--model", description = "model folder (default: the bundled qwen2-tiny)")
    Path model;

    @Override
    public Integer call() throws Exception {
        Path home = Path.of(System.getProperty("hexforge.home", "."));
        Path src = model != null ? model : home.resolve("fixtures/qwen2-tiny");
        Path text = home.resolve("fixtures/corpus/eval.txt");
        if (out == null) {
            out = Path.of(System.getProperty("user.home"), ".hexforge", "demo",
                    LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        }
        Files.createDirectories(out);
        String prompt = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\n";
        try (Checkpoint ckpt = Checkpoint.open(src); Tokenizer tok = Tokenizer.load(src)) {
            System.out.println("model    " + src.toAbsolutePath() + " (" + ckpt.config().architecture().modelType() + ", "
                    + ckpt.config().numLayers() + " layers, hidden " + ckpt.config().hiddenSize() + ")");
            DecoderForward reference = new DecoderForward(DecoderWeights.load(ckpt));
            int[] ids = tok.encode(prompt);
            int[] expected = Generator.generate(reference, ids, Generator.Options.greedy(24), null);
            for (ExportOptions opt : new ExportOptions[]{ExportOptions.dynamic(), ExportOptions.staticShapes(128, 512)}) {
                String name = opt.variant().name().toLowerCase();
                Path dir = out.resolve("onnx-" + name);
                long t0 = System.nanoTime();
                try (ProgressBar bar = new ProgressBar("export " + name)) {
                    DecoderExporter.export(ckpt, dir, opt, bar);
                }
                System.out.printf("export   %-8s %s (%.1fs)%n", name, dir, (System.nanoTime() - t0) / 1e9);
                if (opt.variant() == dev.hexforge.onnx.export.Variant.STATIC) {
                    for (String g : new String[]{"prompt.onnx", "token.onnx"}) {
                        QnnPreflight.Report r = QnnPreflight.check(dir.resolve("onnx").resolve(g));
                        System.out.printf("qnn      %-8s %s%n", g, r.clean() ? "clean (HTP ops only, fixed shapes)" : r.problems());
                    }
                }
                try (CausalLm lm = OnnxLm.open(dir, 0)) {
                    int[] got = Generator.generate(lm, ids, Generator.Options.greedy(24), null);
                    System.out.printf("generate %-8s %s%n", name, quote(tok.decode(got, true)));
                    System.out.printf("         %-8s %s%n", "", java.util.Arrays.equals(got, expected)
                            ? "identical to the Java reference forward" : "DIFFERS from the Java reference forward");
                    if (Files.isRegularFile(text)) {
                        int[] evalIds = tok.encode(Files.readString(text));
                        Perplexity.Result r;
                        try (ProgressBar bar = new ProgressBar("ppl " + name)) {
                            int windows = evalIds.length / 128;
                            r = Perplexity.evaluate(lm, evalIds, 128, w -> bar.update("window", w, windows));
                        }
                        System.out.printf("ppl      %-8s %.4f on eval.txt (%d tokens)%n", name, r.perplexity(), r.scoredTokens());
                    }
                }
            }
        }
        quantize(src, text);
        System.out.println("artifacts in " + out.toAbsolutePath());
        return 0;
    }

    /** INT8 QDQ on the static graphs (the NPU path) and INT4 MatMulNBits (the CPU path), each behind the accuracy gate. */
    private void quantize(Path src, Path text) {
        ExportOptions staticShapes = ExportOptions.staticShapes(128, 512);
        QuantizeOptions[] runs = {
                QuantizeOptions.rtn(QuantSpec.int8PerChannel(), "qdq", staticShapes, text),
                QuantizeOptions.rtn(QuantSpec.int4Group128(), "matmulnbits", ExportOptions.dynamic(), text)};
        try (Checkpoint ckpt = Checkpoint.open(src)) {
            for (QuantizeOptions q : runs) {
                Path dir = out.resolve("quant-" + q.spec().bits() + "bit-" + q.format());
                QuantizePipeline.Result r;
                try (ProgressBar bar = new ProgressBar("quantize")) {
                    r = QuantizePipeline.run(ckpt, q, dir, bar);
                }
                QuantizationReport rep = r.report();
                System.out.printf("quantize %-8s %s -> %s: ppl %.4f -> %.4f (gate %s), greedy agreement %.0f%%%n",
                        q.format(), rep.spec(), dir, rep.floatPerplexity(), rep.quantizedPerplexity(),
                        rep.gatePassed() ? "passed" : "FAILED", rep.greedyAgreement() * 100);
                if (q.export().variant() == dev.hexforge.onnx.export.Variant.STATIC && !r.outputs().isEmpty()) {
                    QnnPreflight.Report pre = QnnPreflight.check(r.outputs().get(0).resolve("onnx/prompt.onnx"));
                    System.out.printf("qnn      %-8s %s%n", "int8 qdq", pre.clean() ? "clean" : pre.problems());
                }
            }
        }
    }

    private static String quote(String s) {
        return "\"" + s.replace("\n", "\\n") + "\"";
    }

}
