package dev.hexforge.pass;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.qdq.Activations;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.TokenizerException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every pass that ships a model's tokenizer (export, merge, quantize) checks it before it writes anything: a
 * truncated {@code tokenizer.json} and another model's are refused, naming the file, and no output folder appears.
 */
class ShippedTokenizerTest {
    @TempDir
    Path tmp;

    /** The tiny model's files, with {@code tokenizer.json} replaced by {@code tokenizer}. */
    Path tinyWith(String name, byte[] tokenizer) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        try (Stream<Path> files = Files.list(Fixtures.qwen2Tiny())) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
        Files.write(dir.resolve("tokenizer.json"), tokenizer);
        return dir;
    }

    /** Each pass on {@code model}: refused with a message containing {@code expected}, its output never created. */
    void everyPassRefuses(Path model, String expected) {
        Path out = tmp.resolve(model.getFileName() + "-out");
        List<Runnable> passes = List.of(
                () -> ExportPass.run(model, NonFinite.REFUSE, new ExportPass.Options(ExportOptions.dynamic(), ExportPass.Format.QDQ, 4,
                        false), out, Progress.NONE),
                () -> MergePass.run(model, NonFinite.REFUSE, Fixtures.root().resolve("lora-task/reference_adapter"), out),
                () -> {
                    QuantizeOptions o = new QuantizeOptions("rtn", QuantSpec.int4Group128(), List.of(), QuantSpec.int8PerChannel(),
                            new QuantizeOptions.Calibration(BundledData.calibration(tmp.resolve("bundled")), 4, 64, 0), null,
                            null, 64, 128, 100, 0, null, Activations.FLOAT);
                    try (Checkpoint ckpt = Checkpoint.open(model)) {
                        QuantizePipeline.run(ckpt, o, out, Progress.NONE);
                    }
                });
        for (Runnable pass : passes) {
            TokenizerException e = assertThrows(TokenizerException.class, pass::run);
            assertTrue(e.getMessage().contains("tokenizer.json") && e.getMessage().contains(expected), e.getMessage());
            assertFalse(Files.exists(out), "nothing is written: " + out);
        }
    }

    @Test
    void aTruncatedTokenizerIsRefusedBeforeAnythingIsWritten() throws IOException {
        byte[] whole = Files.readAllBytes(Fixtures.qwen2Tiny().resolve("tokenizer.json"));
        everyPassRefuses(tinyWith("truncated", Arrays.copyOf(whole, whole.length / 2)), "cannot load tokenizer");
    }

    @Test
    void anotherModelsTokenizerIsRefusedNamingTheIdAndTheVocabSize() throws IOException {
        byte[] qwen = Files.readAllBytes(Fixtures.root().resolve("qwen-tokenizer-real/tokenizer.json"));
        everyPassRefuses(tinyWith("other", qwen), "but config.json's vocab_size is 2048");
    }
}
