package dev.hexforge.quant.resume;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.onnx.qdq.Activations;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizationException;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.FolderContents;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A quantize killed part way and run again with the same command continues after its last finished layer and writes
 * the checkpoint an uninterrupted run writes, byte for byte; other settings or inputs are refused, named, and the
 * interrupted work is kept.
 */
class QuantizeResumeTest {
    @TempDir
    static Path tmp;
    static Path calib;

    /** What a SIGKILL does to the pass, at a progress report: the run stops there, nothing after it runs. */
    static final class Killed extends RuntimeException {
        Killed(String at) {
            super("killed at " + at);
        }
    }

    static Progress killAt(String label) {
        return (what, done, total) -> {
            if (what.equals(label)) {
                throw new Killed(what);
            }
        };
    }

    @BeforeAll
    static void bundled() {
        calib = BundledData.calibration(tmp.resolve("bundled"));
    }

    static QuantizeOptions options(String method, int samples, boolean activations) {
        return new QuantizeOptions(method, QuantSpec.int4Group128(), List.of(), QuantSpec.int8PerChannel(),
                new QuantizeOptions.Calibration(calib, samples, 128, 0), null, null, 128, 512, 0.5, 0, null,
                activations ? Activations.parse(null, null, true) : Activations.FLOAT);
    }


    static QuantizePipeline.Result run(QuantizeOptions o, Path out, Progress p) {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            return QuantizePipeline.run(ckpt, o, out, p);
        }
    }

    @Test
    void aCalibratedRunKilledAfterItsSecondLayerContinuesFromTheThirdAndWritesTheSameCheckpoint() throws IOException {
        for (String method : List.of("gptq", "awq")) {
            QuantizeOptions o = options(method, 16, method.equals("gptq"));
            Path whole = tmp.resolve(method + "-whole");
            assertTrue(run(o, whole, Progress.NONE).passed());

            Path out = tmp.resolve(method + "-killed");
            assertThrows(Killed.class, () -> run(o, out, killAt(method + " layer 2/4")));
            assertTrue(Files.isRegularFile(out.resolve(QuantizePipeline.WORK).resolve("layers.state")), "the work is kept");
            assertFalse(Files.exists(out.resolve(QuantizePipeline.CHECKPOINT)));

            List<String> layers = new ArrayList<>();
            QuantizePipeline.Result r = run(o, out, (what, done, total) -> {
                if (what.startsWith(method + " layer")) {
                    layers.add(what);
                }
            });
            assertEquals(List.of(method + " layer 3/4", method + " layer 4/4"), layers, "the finished layers are not redone");
            assertTrue(r.passed());
            FolderContents.assertSameFiles(whole.resolve(QuantizePipeline.CHECKPOINT), out.resolve(QuantizePipeline.CHECKPOINT));
            assertFalse(Files.exists(out.resolve(QuantizePipeline.WORK)), "the work folder goes when the run finishes");
        }
    }

    @Test
    void rtnKeepsTheTensorsItFinishedAndRedoesTheRestAndAHalfWrittenFile() throws IOException {
        QuantizeOptions o = options("rtn", 16, false);
        Path whole = tmp.resolve("rtn-whole");
        run(o, whole, Progress.NONE);
        Path out = tmp.resolve("rtn-killed");
        assertThrows(Killed.class, () -> run(o, out, killAt("evaluate")));
        Path linears = out.resolve(QuantizePipeline.WORK).resolve("linears");
        // as if the kill had come while the last tensors were written: the last two files gone, a third half-written
        List<Path> stored;
        try (Stream<Path> s = Files.list(linears)) {
            stored = s.toList();
        }
        assertEquals(28, stored.size(), "4 layers of 7 linears");
        Files.delete(linears.resolve("27.safetensors"));
        Files.delete(linears.resolve("26.safetensors"));
        Files.write(linears.resolve("26.safetensors.partial"), new byte[]{1, 2, 3});

        run(o, out, Progress.NONE);
        FolderContents.assertSameFiles(whole.resolve(QuantizePipeline.CHECKPOINT), out.resolve(QuantizePipeline.CHECKPOINT));
    }

    @Test
    void aRunKilledBeforeItWroteItsKeyStartsOver() throws IOException {
        Path out = tmp.resolve("killed-at-once");
        Files.createDirectories(out.resolve(QuantizePipeline.WORK).resolve("linears"));
        Files.write(out.resolve(QuantizePipeline.WORK).resolve("linears/0.safetensors.partial"), new byte[]{1});
        assertTrue(run(options("rtn", 16, false), out, Progress.NONE).passed());
        assertFalse(Files.exists(out.resolve(QuantizePipeline.WORK)));
    }

    @Test
    void otherSettingsOrInputsAreRefusedByNameAndTheInterruptedWorkIsKept() throws IOException {
        QuantizeOptions o = options("gptq", 16, false);
        Path out = tmp.resolve("gptq-changed");
        assertThrows(Killed.class, () -> run(o, out, killAt("gptq layer 1/4")));
        Path state = out.resolve(QuantizePipeline.WORK).resolve("layers.state");
        byte[] saved = Files.readAllBytes(state);

        String m = assertThrows(QuantizationException.class, () -> run(options("gptq", 24, false), out, Progress.NONE)).getMessage();
        assertTrue(m.contains("interrupted") && m.contains("calibration: digest"), m);
        QuantizeOptions int8 = new QuantizeOptions("gptq", QuantSpec.int8PerChannel(), List.of(), QuantSpec.int8PerChannel(),
                o.calibration(), null, null, 128, 512, 0.5, 0, null, Activations.FLOAT);
        m = assertThrows(QuantizationException.class, () -> run(int8, out, Progress.NONE)).getMessage();
        assertTrue(m.contains("weights: " + QuantSpec.int4Group128().describe() + " in the interrupted run, "
                + QuantSpec.int8PerChannel().describe() + " now"), m);
        assertArrayEquals(saved, Files.readAllBytes(state), "a refused run leaves the interrupted one as it was");

        // the same command continues it, and afterwards the finished folder is its result
        QuantizePipeline.Result r = run(o, out, Progress.NONE);
        List<String> calls = new ArrayList<>();
        QuantizePipeline.Result again = run(o, out, (what, done, total) -> calls.add(what));
        assertEquals(List.of(), calls, "a finished run is not run again");
        assertEquals(r.report().quantizedPerplexity(), again.report().quantizedPerplexity());
        assertEquals(r.checkpoint(), again.checkpoint());
        m = assertThrows(QuantizationException.class, () -> run(int8, out, Progress.NONE)).getMessage();
        assertTrue(m.contains("a finished quantize") && m.contains("weights:"), m);
    }
}
