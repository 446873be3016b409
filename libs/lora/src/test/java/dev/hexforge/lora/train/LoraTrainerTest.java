package dev.hexforge.lora.train;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraConfig;
import dev.hexforge.lora.data.DatasetReader;
import dev.hexforge.lora.data.EncodedExample;
import dev.hexforge.lora.data.ExampleEncoder;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Short runs on a slice of the LoRA task: determinism, resume, accumulation, adapter files, failures. */
class LoraTrainerTest {
    @TempDir
    Path tmp;

    static DecoderWeights base;
    static Tokenizer tok;
    static List<EncodedExample> train;
    static List<EncodedExample> eval;

    @BeforeAll
    static void load() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            base = DecoderWeights.load(ckpt);
        }
        tok = Tokenizer.load(Fixtures.qwen2Tiny());
        ExampleEncoder enc = new ExampleEncoder(tok, 256);
        train = enc.encode(DatasetReader.read(Fixtures.root().resolve("lora-task/train.json"))).examples().subList(0, 48);
        eval = enc.encode(DatasetReader.read(Fixtures.root().resolve("lora-task/eval.json"))).examples().subList(0, 8);
    }

    @AfterAll
    static void close() {
        tok.close();
    }

    static TrainingOptions options(int batch, int accum, int checkpointEvery, int threads) {
        return new TrainingOptions(8, 16, 0.05, List.of("q_proj", "k_proj", "v_proj", "o_proj"), false, batch, accum, 5e-3,
                2, 256, 1, 0.1, "cosine", 0.01, 1.0, checkpointEvery, 0, 4, threads);
    }

    TrainingReport run(TrainingOptions o, Path out, TrainingListener l) {
        return new LoraTrainer(base, tok, o, l).train(train, null, eval, out, "qwen2-tiny");
    }

    static LoraAdapter read(Path dir) {
        return LoraAdapter.read(dir, base.config());
    }

    static void assertSameAdapter(LoraAdapter a, LoraAdapter b) {
        assertEquals(a.deltas().keySet(), b.deltas().keySet());
        a.deltas().forEach((name, d) -> {
            assertArrayEquals(d.a(), b.deltas().get(name).a(), name + " A");
            assertArrayEquals(d.b(), b.deltas().get(name).b(), name + " B");
        });
    }

    @Test
    void sameSeedGivesTheSameLossCurveAndAdapterWhateverTheThreadCount() {
        TrainingReport one = run(options(8, 1, 0, 1), tmp.resolve("a"), TrainingListener.NONE);
        TrainingReport two = run(options(8, 1, 0, 2), tmp.resolve("b"), TrainingListener.NONE);
        assertEquals(12, one.steps());
        for (int i = 0; i < one.lossCurve().size(); i++) {
            assertEquals(one.lossCurve().get(i)[1], two.lossCurve().get(i)[1], 0.0, "step " + i);
        }
        assertSameAdapter(read(tmp.resolve("a")), read(tmp.resolve("b")));
        assertTrue(one.lossCurve().get(11)[1] < one.lossCurve().get(0)[1], "the loss goes down");
    }

    @Test
    void killedAndResumedRunEndsWithTheSameAdapterAsAnUninterruptedOne() {
        run(options(8, 1, 0, 2), tmp.resolve("whole"), TrainingListener.NONE);
        Path out = tmp.resolve("resumed");
        RuntimeException kill = new RuntimeException("killed");
        assertThrows(RuntimeException.class, () -> run(options(8, 1, 4, 2), out, new TrainingListener() {
            @Override
            public void onStep(StepMetrics m) {
                if (m.step() == 9) {
                    throw kill;
                }
            }
        }));
        assertTrue(Files.isDirectory(out.resolve("checkpoints/step-000008")));
        assertFalse(Files.exists(out.resolve(LoraAdapter.WEIGHTS)));
        List<Integer> seen = new ArrayList<>();
        TrainingReport r = run(options(8, 1, 4, 2), out, new TrainingListener() {
            @Override
            public void onStep(StepMetrics m) {
                seen.add(m.step());
            }
        });
        assertEquals(9, seen.get(0), "continues after the last checkpoint");
        assertEquals(8, r.resumedFromStep());
        assertEquals(12, r.lossCurve().size(), "the loss curve of the first part is kept");
        assertEquals(2, r.epochs().size());
        assertSameAdapter(read(tmp.resolve("whole")), read(out));
    }

    @Test
    void resumingWithOtherSettingsIsRefused() {
        Path out = tmp.resolve("x");
        assertThrows(RuntimeException.class, () -> run(options(8, 1, 2, 1), out, new TrainingListener() {
            @Override
            public void onStep(StepMetrics m) {
                if (m.step() == 3) {
                    throw new RuntimeException("stop");
                }
            }
        }));
        TrainingException e = assertThrows(TrainingException.class, () -> run(options(4, 1, 2, 1), out, TrainingListener.NONE));
        assertTrue(e.getMessage().contains("other settings"), e.getMessage());
    }

    @Test
    void accumulationOfMicroBatchesEqualsOneLargeBatch() {
        TrainingReport big = run(options(8, 1, 0, 1), tmp.resolve("big"), TrainingListener.NONE);
        TrainingReport acc = run(new TrainingOptions(8, 16, 0.0, List.of("q_proj", "v_proj"), false, 2, 4, 5e-3, 1, 256, 1,
                0.1, "linear", 0, 1.0, 0, 0, 4, 1), tmp.resolve("acc"), TrainingListener.NONE);
        TrainingReport one = run(new TrainingOptions(8, 16, 0.0, List.of("q_proj", "v_proj"), false, 8, 1, 5e-3, 1, 256, 1,
                0.1, "linear", 0, 1.0, 0, 0, 4, 1), tmp.resolve("one"), TrainingListener.NONE);
        assertEquals(6, acc.steps());
        for (int i = 0; i < 6; i++) {
            assertEquals(one.lossCurve().get(i)[1], acc.lossCurve().get(i)[1], 1e-5, "step " + i);
        }
        LoraAdapter a = read(tmp.resolve("acc"));
        LoraAdapter b = read(tmp.resolve("one"));
        a.deltas().forEach((name, d) -> {
            float[] x = d.a();
            float[] y = b.deltas().get(name).a();
            for (int i = 0; i < x.length; i++) {
                assertEquals(y[i], x[i], 1e-5, name);
            }
        });
        assertNotEquals(big.lossCurve().get(5)[1], one.lossCurve().get(5)[1]);
    }

    @Test
    void adapterFilesRoundTripAndCarryEveryPeftField() throws Exception {
        run(options(16, 1, 0, 2), tmp.resolve("a"), TrainingListener.NONE);
        LoraAdapter written = read(tmp.resolve("a"));
        written.write(tmp.resolve("again"));
        assertSameAdapter(written, read(tmp.resolve("again")));
        ObjectMapper om = new ObjectMapper();
        JsonNode ours = om.readTree(tmp.resolve("a/adapter_config.json").toFile());
        JsonNode peft = om.readTree(Fixtures.root().resolve("lora-task/reference_adapter/adapter_config.json").toFile());
        List<String> ourKeys = new ArrayList<>();
        ours.fieldNames().forEachRemaining(ourKeys::add);
        List<String> peftKeys = new ArrayList<>();
        peft.fieldNames().forEachRemaining(peftKeys::add);
        assertEquals(peftKeys, ourKeys);
        assertEquals(peft, ours, "same settings as the reference adapter give the same adapter_config.json");
        assertEquals(Files.readString(Fixtures.root().resolve("lora-task/reference_adapter/adapter_config.json")).strip(),
                Files.readString(tmp.resolve("a/adapter_config.json")).strip(), "byte-identical to PEFT's file");
        JsonNode report = om.readTree(tmp.resolve("a/" + LoraTrainer.REPORT).toFile());
        assertEquals(6, report.path("steps").asInt());
        assertEquals(2, report.path("epochs").size());
    }

    @Test
    void aTargetModuleThatDoesNotExistIsRefused() {
        TrainingOptions o = new TrainingOptions(8, 16, 0.05, List.of("q_proj", "qkv_proj"), false, 8, 1, 5e-3, 1, 256, 1,
                0.1, "cosine", 0, 1.0, 0, 0, 4, 1);
        TrainingException e = assertThrows(TrainingException.class, () -> run(o, tmp.resolve("t"), TrainingListener.NONE));
        assertTrue(e.getMessage().contains("qkv_proj") && e.getMessage().contains("q_proj"), e.getMessage());
    }

    @Test
    void aDivergingRunStopsWithAClearErrorAndKeepsTheLastGoodCheckpoint() {
        TrainingOptions o = new TrainingOptions(8, 16, 0.0, List.of("q_proj", "v_proj"), false, 8, 1, 1e36, 1, 256, 1,
                0, "linear", 0, 0, 1, 0, 4, 1);
        Path out = tmp.resolve("nan");
        TrainingException e = assertThrows(TrainingException.class, () -> run(o, out, TrainingListener.NONE));
        assertTrue(e.getMessage().contains("diverged") && e.getMessage().contains("last good checkpoint"), e.getMessage());
        Iterator<TrainingCheckpoint.Loaded> last = TrainingCheckpoint.latest(out, base.config()).stream().iterator();
        TrainingCheckpoint.Loaded good = last.next();
        good.adapter().deltas().values().forEach(d -> {
            for (float v : d.b()) {
                assertTrue(Float.isFinite(v));
            }
        });
        assertFalse(Files.exists(out.resolve(LoraAdapter.WEIGHTS)));
    }

    @Test
    void aFinishedOutputFolderIsNotOverwritten() {
        run(options(16, 1, 0, 2), tmp.resolve("done"), TrainingListener.NONE);
        TrainingException e = assertThrows(TrainingException.class,
                () -> run(options(16, 1, 0, 2), tmp.resolve("done"), TrainingListener.NONE));
        assertTrue(e.getMessage().contains("already holds"), e.getMessage());
    }

    @Test
    void scheduleWarmsUpThenDecaysToZero() {
        LearningRateSchedule cos = new LearningRateSchedule(1.0, 20, 400, true);
        assertEquals(0.0, cos.at(0));
        assertEquals(0.5, cos.at(10), 1e-12);
        assertEquals(1.0, cos.at(20), 1e-12);
        assertEquals(0.5, cos.at(210), 1e-12);
        assertTrue(cos.at(399) < 1e-4);
        LearningRateSchedule lin = new LearningRateSchedule(1.0, 0, 10, false);
        assertEquals(1.0, lin.at(0));
        assertEquals(0.5, lin.at(5), 1e-12);
    }

    @Test
    void loraConfigOfTheReferenceRunMatches() {
        assertEquals(LoraConfig.read(Fixtures.root().resolve("lora-task/reference_adapter")),
                options(16, 1, 0, 1).loraConfig("qwen2-tiny"));
    }
}
