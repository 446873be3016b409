package dev.hexforge.pass;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.compile.QnnSdk;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.lora.train.TrainingOptions;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each pass's one mapping from a job spec to its options (what the CLI and the stage services both call), and the
 * passes run on the bundled tiny model.
 */
class PassesTest {
    @TempDir
    Path tmp;

    @Test
    void quantizeOptionsFollowTheSpecAndItsRules() {
        JobSpec spec = JobSpecReader.read("model: m\nstages: [quantize, export]\nquantize: {method: gptq, bits: 4, evalTokens: 256}\n");
        QuantizeOptions o = QuantizePass.options(spec, tmp.resolve("calib.jsonl"), tmp.resolve("eval.txt"), null);
        assertEquals("gptq", o.method());
        assertEquals(new QuantSpec(4, 128, false), o.spec(), "the 4-bit rule: groups of 128 with zero points");
        assertEquals(QuantSpec.int8PerChannel(), o.head(), "the INT8 head by default");
        assertEquals(QuantizePass.EVAL_WINDOW, o.evalWindow());
        assertEquals(256, o.evalTokens());
        assertEquals("w4a16", o.activations().precision(4), "an NPU export quantizes its activations by default");
        assertEquals(8, o.activations().kvBits());
        JobSpec cpu = JobSpecReader.read("model: m\nstages: [quantize, export]\nexport: {variant: dynamic}\n");
        assertFalse(QuantizePass.options(cpu, tmp.resolve("c"), tmp.resolve("e"), null).activations().quantized(),
                "the CPU's dynamic export keeps float activations");
    }

    @Test
    void exportOptionsFollowTheSpecAndWriteAReferenceForABenchmark() {
        ExportPass.Options plain = ExportPass.options(JobSpecReader.read("model: m\nstages: [export]\n"));
        assertFalse(plain.reference());
        assertEquals(Variant.STATIC, plain.export().variant());
        ExportPass.Options genie = ExportPass.options(JobSpecReader.read("model: m\nstages: [export, compile]\n"
                + "export: {variant: genie, seq: 64, ctx: 1024, maxGraphMb: 512}\ncompile: {target: genie}\n"));
        assertEquals(Variant.GENIE, genie.export().variant());
        assertEquals(512L << 20, genie.export().maxGraphBytes());
        assertTrue(ExportPass.options(JobSpecReader.read("model: m\nstages: [export, benchmark]\n")).reference());
        assertTrue(plain.orAsked(true).reference(), "the CLI's --reference");
    }

    @Test
    void compileAndFinetuneOptionsFollowTheSpec() {
        JobSpec spec = JobSpecReader.read("model: m\nfinetune: {r: 16, alpha: 32, chatFormat: llama3}\n"
                + "compile: {target: genie, soc: SM8750, sampler: {topK: 5}}\n");
        CompilePass.Options c = CompilePass.options(spec.compile(), null);
        assertEquals(QnnSdk.GENIE, c.target());
        assertEquals("SM8750", c.compile().soc());
        assertEquals(5, c.compile().sampler().topK());
        CompilePass.Options stored = CompilePass.options(new JobSpec.Compile("ort-qnn", "SM8650", 0, null), null);
        assertEquals(0.8, stored.compile().sampler().temperature(), "a spec stored before the sampler: Genie's defaults");
        TrainingOptions t = FinetunePass.options(spec.finetune());
        assertEquals(16, t.r());
        assertEquals(32.0, t.alpha());
        assertEquals("llama3", t.chatFormat());
        assertEquals(TrainingOptions.CHECKPOINT_EVERY, t.checkpointEvery(), "what a spec does not carry: the trainer's defaults");
    }

    @Test
    void theMergePassGivesTheReferenceMergeAndTheExportPassTheGenieLayout() throws Exception {
        Path merged = tmp.resolve("merged");
        MergePass.Result m = MergePass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE, Fixtures.root().resolve("lora-task/reference_adapter"), merged);
        assertTrue(m.report().mergedLinears() > 0, m.report().toString());
        try (SafetensorsFile got = SafetensorsFile.open(merged.resolve("model.safetensors"));
             SafetensorsFile want = SafetensorsFile.open(Fixtures.root().resolve("lora-task/merged/model.safetensors"))) {
            String name = "model.layers.0.self_attn.q_proj.weight";
            float[] a = got.floats(name);
            float[] b = want.floats(name);
            float max = 0;
            for (int i = 0; i < a.length; i++) {
                max = Math.max(max, Math.abs(a[i] - b[i]));
            }
            assertTrue(max < 1e-5, "merged as PEFT merges: max |dw| " + max);
        }

        ExportPass.Result r = ExportPass.run(merged, NonFinite.REFUSE, ExportPass.options(JobSpecReader.read("model: m\nstages: [export]\n"
                + "export: {variant: genie, seq: 64, ctx: 512}\n")), tmp.resolve("genie"), Progress.NONE);
        assertEquals(List.of("onnx-genie"), r.report().formats());
        ExportInfo info = ExportInfo.read(tmp.resolve("genie"));
        assertEquals(Variant.GENIE, info.variant());
        assertTrue(Files.isRegularFile(tmp.resolve("genie/onnx/prompt_ar64_cl512_1_of_2.onnx")), info.graphs().toString());
    }
}
