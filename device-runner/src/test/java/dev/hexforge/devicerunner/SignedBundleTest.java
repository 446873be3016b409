package dev.hexforge.devicerunner;

import dev.hexforge.contracts.BenchmarkResult;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.tokenizer.Tokenizer;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.ModelSignature;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The runner loads only what the fleet signed, and measures what ort-cpu can measure (and says what it cannot). */
class SignedBundleTest {
    @TempDir
    static Path tmp;
    static Path export;
    static KeyPair keys;

    @BeforeAll
    static void exportAndSign() throws Exception {
        export = tmp.resolve("bundle");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, export, new ExportOptions(Variant.DYNAMIC, 32, 128, 17), LinearFormat.FLOAT, (w, d, t) -> { });
        }
        keys = Keys.generate();
        ModelSignature.sign(export, keys.getPrivate(), export.resolve("model.sig"), List.of());
    }

    static Path copy(String name) throws Exception {
        Path to = tmp.resolve(name);
        try (var s = Files.walk(export)) {
            for (Path p : s.toList()) {
                Path t = to.resolve(export.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(p, t);
                }
            }
        }
        return to;
    }

    @Test
    void aSignedBundleIsBenchmarkedWithEveryFigureTheHostCanGive() throws Exception {
        SignedBundle bundle = SignedBundle.verify(export, keys.getPublic());
        DeviceReference ref;
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny()); Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            ref = DeviceReference.compute(new DecoderForward(DecoderWeights.load(ckpt)), tok);
        }
        assertTrue(ref.hasPerplexity() && ref.perplexityWindow() == 64 && ref.perplexityIds().length >= 128, "two windows of text");
        ref.write(tmp);
        DeviceReference back = DeviceReference.read(tmp);
        assertEquals(ref.perplexity(), back.perplexity());
        BenchmarkResult r = OrtBackend.cpu(1).run(bundle, 16, 8, back);
        assertEquals("ort-cpu", r.backend());
        assertEquals(1.0, r.tokenAgreement(), "the float export agrees with the float reference forward");
        assertEquals(ref.perplexity(), r.perplexity(), ref.perplexity() * 1e-4, "the device scores the text as the host did");
        assertEquals(ref.perplexity(), r.referencePerplexity());
        assertTrue(r.memoryBandwidthBytesPerSecond() > 1e9 && r.bandwidthSource().startsWith("measured"), r.toString());
        assertEquals(r.decodeTokensPerSecond() * r.weightBytesPerToken() / r.memoryBandwidthBytesPerSecond(), r.efficiency(), 1e-12);
        assertTrue(r.decodeTokensPerSecond() > 0 && r.prefillTokensPerSecond() > 0 && r.timeToFirstTokenMs() > 0, r.toString());
        assertTrue(r.peakRssBytes() != null && r.peakRssBytes() > 0, "Linux reports peak RSS");
        assertTrue(r.weightBytesPerToken() > 1_000_000, r.toString());
        assertTrue(r.notAvailable().containsKey("energyPerToken") && r.notAvailable().containsKey("thermalState")
                && r.notAvailable().containsKey("opsOffNpu"), r.toString());
        assertNull(r.joulesPerToken(), "not available, not zero");
        assertNull(r.opsOffNpu());
        assertTrue(r.opTimingsMs().containsKey("MatMul") && r.opTimingsMs().values().stream().allMatch(ms -> ms > 0)
                && r.opTimingsMs().values().stream().mapToDouble(Double::doubleValue).sum() < 1e3 / r.decodeTokensPerSecond() * 10,
                "ONNX Runtime's per-op time of one decode step (profiled, cold: a few times the timed step): " + r.opTimingsMs());
        assertEquals(bundle.rootDigest(), r.bundleRootDigest());

        BenchmarkResult bare = OrtBackend.cpu(1).run(bundle, 16, 4, null);
        assertNull(bare.tokenAgreement(), "no reference: not available, not zero");
        assertNull(bare.perplexity());
        assertTrue(bare.notAvailable().containsKey("tokenAgreement") && bare.notAvailable().containsKey("perplexity"));
    }

    @Test
    void theQnnExecutionProviderIsOfferedOnlyWhereTheNativeRuntimeHasIt() {
        List<String> backends = DeviceProfile.host(1, null).backends().stream().map(Backend::name).toList();
        if (OrtBackend.qnnAvailable()) {
            assertEquals(List.of("ort-cpu", "ort-qnn"), backends);
        } else { // this machine: ONNX Runtime's x64 Linux build has no QNN EP
            assertEquals(List.of("ort-cpu"), backends, "never assumed");
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> OrtBackend.qnn(1, "SM8650"));
            assertTrue(e.getMessage().contains("no QNN execution provider"), e.getMessage());
        }
        assertEquals("SM8650", DeviceProfile.host(1, "SM8650").soc());
        assertEquals(75, DeviceProfile.host(1, "SM8650").htpArch());
    }

    @Test
    void aTamperedUnsignedOrForeignBundleIsRefusedBeforeLoading() throws Exception {
        Path tampered = copy("tampered");
        try (RandomAccessFile f = new RandomAccessFile(tampered.resolve("onnx/model.onnx_data").toFile(), "rw")) {
            f.seek(1000);
            int b = f.read();
            f.seek(1000);
            f.write(b ^ 1);
        }
        BundleRefusedException e = assertThrows(BundleRefusedException.class, () -> SignedBundle.verify(tampered, keys.getPublic()));
        assertTrue(e.getMessage().contains("onnx/model.onnx_data") && e.getMessage().contains("modified"), e.getMessage());

        Path unsigned = copy("unsigned");
        Files.delete(unsigned.resolve("model.sig"));
        e = assertThrows(BundleRefusedException.class, () -> SignedBundle.verify(unsigned, keys.getPublic()));
        assertTrue(e.getMessage().contains("unsigned"), e.getMessage());

        e = assertThrows(BundleRefusedException.class, () -> SignedBundle.verify(export, Keys.generate().getPublic()));
        assertTrue(e.getMessage().contains("wrong key"), e.getMessage());

        Path pub = tmp.resolve("key.pub.pem");
        Files.writeString(pub, Keys.publicPem(keys.getPublic()));
        assertEquals(2, Main.run("bench", tampered.toString(), "--key", pub.toString()), "the command refuses with exit 2");
        assertEquals(0, Main.run("bench", export.toString(), "--key", pub.toString(), "--prompt-length", "8", "--new-tokens", "2"));
        assertTrue(Arrays.stream(new String[]{"model.sig"}).allMatch(n -> Files.exists(export.resolve(n))));
    }
}
