package dev.hexforge.pass;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportException;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.qdq.Activations;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.FolderContents;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An export killed part way and run again with the same command into the same folder continues after the last
 * group of tensors it finished and leaves the folder an uninterrupted export leaves, byte for byte; other settings
 * are refused, named, with the interrupted work kept; a refused export leaves nothing.
 */
class ExportResumeTest {
    @TempDir
    static Path tmp;
    /** The tiny model quantized to 4 bits (weights only), as the quantize stage hands it to the export. */
    static Path quantized;

    /** What a SIGKILL does to the pass, at a progress report: the run stops there, nothing after it runs. */
    static final class Killed extends RuntimeException {
        Killed() {
            super("killed");
        }
    }

    /** Stops the run at its {@code n}-th finished group of weights. */
    static Progress killAfter(int n) {
        AtomicInteger seen = new AtomicInteger();
        return (what, done, total) -> {
            if (what.equals("weights") && seen.incrementAndGet() == n) {
                throw new Killed();
            }
        };
    }

    @BeforeAll
    static void quantize() {
        QuantizeOptions o = new QuantizeOptions("rtn", QuantSpec.int4Group128(), List.of(), QuantSpec.int8PerChannel(),
                new QuantizeOptions.Calibration(BundledData.calibration(tmp.resolve("bundled")), 4, 64, 0), null, null, 64,
                128, 100, 0, null, Activations.FLOAT);
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            QuantizePipeline.run(ckpt, o, tmp.resolve("q"), Progress.NONE);
        }
        quantized = tmp.resolve("q").resolve(QuantizePipeline.CHECKPOINT);
    }

    static ExportPass.Options both(int ctx) {
        return new ExportPass.Options(ExportOptions.staticShapes(32, ctx), ExportPass.Format.BOTH, 4, false);
    }

    static List<Long> reports(Path model, ExportPass.Options o, Path out) {
        List<Long> done = new ArrayList<>();
        ExportPass.run(model, NonFinite.REFUSE, o, out, (what, d, total) -> {
            if (what.equals("weights")) {
                done.add(d);
            }
        });
        return done;
    }

    @Test
    void anExportKilledAfterAnyGroupOfWeightsContinuesThereAndWritesTheSameFolder() throws IOException {
        record Case(String name, Path model, ExportPass.Options options) {
        }
        for (Case c : List.of(new Case("quantized", quantized, both(64)),
                new Case("float", Fixtures.qwen2Tiny(), new ExportPass.Options(ExportOptions.dynamic(),
                        ExportPass.Format.QDQ, 4, false)))) {
            Path whole = tmp.resolve(c.name() + "-whole");
            beside(c.name(), whole);
            int groups = reports(c.model(), c.options(), whole).size();
            assertTrue(groups > 10, c.name() + ": " + groups + " groups");
            for (int k : new int[]{1, groups / 2, groups - 1}) {
                Path out = tmp.resolve(c.name() + "-killed-" + k);
                beside(c.name(), out);
                assertThrows(Killed.class, () -> ExportPass.run(c.model(), NonFinite.REFUSE, c.options(), out, killAfter(k)));
                assertTrue(Files.isRegularFile(out.resolve(ExportRun.WORK).resolve("run.json")), "the work is kept");
                cutShortAsAKillMidGroupWould(out);

                List<Long> resumed = reports(c.model(), c.options(), out);
                assertEquals(groups - k, resumed.size(), c.name() + " killed after " + k + ": the finished groups are not redone");
                FolderContents.assertSameFiles(whole, out);
                assertFalse(Files.exists(out.resolve(ExportRun.WORK)), "the work folder goes when the export finishes");
            }
        }
    }

    /**
     * An export in both formats writes a folder per format into a folder that may hold other things (the quantize
     * command's report and checkpoint): one is put there first.
     */
    static void beside(String name, Path out) throws IOException {
        if (name.equals("quantized")) {
            Files.createDirectories(out);
            Files.writeString(out.resolve("quantization_report.json"), "{}");
        }
    }

    /** Bytes of the next group half written after the last finished one, and its first journal line cut short. */
    static void cutShortAsAKillMidGroupWould(Path out) throws IOException {
        try (Stream<Path> s = Files.walk(out)) {
            for (Path p : s.filter(Files::isRegularFile).toList()) {
                String name = p.getFileName().toString();
                if (name.equals(DecoderExporter.WEIGHTS)) {
                    Files.write(p, new byte[5000], StandardOpenOption.APPEND);
                } else if (name.endsWith(".weights")) {
                    Files.writeString(p, "t\tmodel.layers.1.mlp.up_proj.weight\tFLO", StandardCharsets.UTF_8,
                            StandardOpenOption.APPEND);
                }
            }
        }
    }

    @Test
    void otherSettingsAreRefusedNamingWhatDiffersAndTheSameOnesFinishIt() throws IOException {
        Path whole = tmp.resolve("settings-whole");
        ExportPass.run(quantized, NonFinite.REFUSE, both(64), whole, Progress.NONE);
        Path out = tmp.resolve("settings-killed");
        assertThrows(Killed.class, () -> ExportPass.run(quantized, NonFinite.REFUSE, both(64), out, killAfter(5)));
        Map<String, byte[]> before = FolderContents.files(out);

        ExportException e = assertThrows(ExportException.class, () -> ExportPass.run(quantized, NonFinite.REFUSE, both(128), out, Progress.NONE));
        assertTrue(e.getMessage().contains("interrupted export of other inputs or settings (export: "), e.getMessage());
        assertTrue(e.getMessage().contains("contextLength=64") && e.getMessage().contains("contextLength=128"), e.getMessage());
        e = assertThrows(ExportException.class, () -> ExportPass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE, both(64), out, Progress.NONE));
        assertTrue(e.getMessage().contains("model: digest "), "another model is named: " + e.getMessage());
        assertEquals(before.keySet(), FolderContents.files(out).keySet(), "the interrupted work is untouched");

        ExportPass.run(quantized, NonFinite.REFUSE, both(64), out, Progress.NONE);
        FolderContents.assertSameFiles(whole, out);
    }

    @Test
    void aFinishedExportIsNotWrittenAgain() throws IOException {
        Path out = tmp.resolve("finished");
        ExportPass.Options o = new ExportPass.Options(ExportOptions.dynamic(), ExportPass.Format.QDQ, 4, false);
        ExportPass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE, o, out, Progress.NONE);
        Map<String, byte[]> before = FolderContents.files(out);
        ExportException e = assertThrows(ExportException.class, () -> ExportPass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE, o, out, Progress.NONE));
        assertTrue(e.getMessage().contains("holds a finished export"), e.getMessage());
        assertEquals(before.keySet(), FolderContents.files(out).keySet());
    }

    /** A static QDQ export whole and one killed half way, in folders named for the case. */
    record HalfWay(ExportPass.Options options, Path whole, Path killed, int groups) {
        static HalfWay of(String name) {
            ExportPass.Options o = new ExportPass.Options(ExportOptions.staticShapes(32, 64), ExportPass.Format.QDQ, 4, false);
            Path whole = tmp.resolve(name + "-whole");
            int groups = reports(quantized, o, whole).size();
            Path out = tmp.resolve(name + "-killed");
            assertThrows(Killed.class, () -> ExportPass.run(quantized, NonFinite.REFUSE, o, out, killAfter(groups / 2)));
            return new HalfWay(o, whole, out, groups);
        }

        /** The same command again writes every group and the whole run's files. */
        void startsOver() throws IOException {
            assertEquals(groups, reports(quantized, options, killed).size(), "every group written again");
            FolderContents.assertSameFiles(whole, killed);
        }
    }

    @Test
    void aWeightFileShorterThanItsJournalIsWrittenAgainFromItsStart() throws IOException {
        HalfWay h = HalfWay.of("short");
        try (var ch = java.nio.channels.FileChannel.open(h.killed().resolve("onnx").resolve(DecoderExporter.WEIGHTS),
                StandardOpenOption.WRITE)) {
            ch.truncate(100);
        }
        h.startsOver();
    }

    @Test
    void aRunKilledBeforeItKnewItsModelsDigestIsStartedOver() throws IOException {
        HalfWay h = HalfWay.of("pending");
        Path key = h.killed().resolve(ExportRun.WORK).resolve("run.json");
        String k = Files.readString(key);
        assertTrue(k.matches("(?s).*\"model\" : \"[0-9a-f]{64}\".*"), "the digest is in the key once known: " + k);
        Files.writeString(key, k.replaceAll("\"model\" : \"[0-9a-f]{64}\"", "\"model\" : \"pending\""));
        h.startsOver();
    }

    @Test
    void aRefusedExportLeavesNothingBehind() {
        Path out = tmp.resolve("refused");
        ExportPass.Options genie = new ExportPass.Options(new ExportOptions(Variant.GENIE, 64,
                ExportOptions.MAX_CONTEXT_LENGTH, ExportOptions.DEFAULT_OPSET), ExportPass.Format.QDQ, 4, false);
        ExportException e = assertThrows(ExportException.class, () -> ExportPass.run(quantized, NonFinite.REFUSE, genie, out, Progress.NONE));
        assertTrue(e.getMessage().contains("max_position_embeddings"), e.getMessage());
        assertFalse(Files.exists(out), "nothing is left to continue or to clean up");
    }
}
