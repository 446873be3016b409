package dev.hexforge.quant;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.onnx.MatMulNBitsFormat;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QuantizedCheckpointTest {
    @TempDir
    Path tmp;

    @Test
    void aQuantizedCheckpointRoundTripsAndExportsLikeTheInMemoryModel() {
        Path q4 = tmp.resolve("q4");
        QuantizedModel qm;
        DecoderForward reference;
        try (Checkpoint base = Checkpoint.open(Fixtures.qwen2Tiny())) {
            qm = QuantizedModel.rtn(base, QuantSpec.int4Group128(), List.of("q_proj"));
            reference = new DecoderForward(qm.fakeQuantized(DecoderWeights.load(base)));
            QuantizedCheckpoint.write(base, qm, "rtn", q4);
        }
        assertTrue(QuantizedCheckpoint.isQuantized(q4));
        try (Checkpoint ckpt = Checkpoint.open(q4)) {
            QuantizedModel back = QuantizedCheckpoint.read(ckpt);
            assertEquals(qm.linears().keySet(), back.linears().keySet());
            for (String name : qm.linears().keySet()) {
                assertArrayEquals(qm.linears().get(name).q(), back.linears().get(name).q(), name);
                assertArrayEquals(qm.linears().get(name).scales(), back.linears().get(name).scales(), name);
                assertArrayEquals(qm.linears().get(name).zeros(), back.linears().get(name).zeros(), name);
            }
            // the folder is itself the fake-quantized model
            DecoderForward fromFolder = new DecoderForward(DecoderWeights.load(ckpt));
            Path onnx = tmp.resolve("onnx");
            DecoderExporter.export(ckpt, onnx, ExportOptions.dynamic(), new MatMulNBitsFormat(back, MatMulNBitsFormat.EXACT), Progress.NONE);
            try (CausalLm lm = OnnxLm.open(onnx, 1)) {
                for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
                    int[] ids = Fixtures.ints(p.path("input_ids"));
                    int[] expected = Generator.generate(reference, ids, Generator.Options.greedy(12), null);
                    assertArrayEquals(expected, Generator.generate(fromFolder, ids, Generator.Options.greedy(12), null));
                    assertArrayEquals(expected, Generator.generate(lm, ids, Generator.Options.greedy(12), null));
                }
            }
        }
    }
}
