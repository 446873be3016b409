package dev.hexforge.onnx.builder;

import dev.hexforge.onnx.proto.Onnx.TensorProto;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

class GraphBuilderTest {

    private static byte[] model(Map<String, String> metadata) {
        GraphBuilder g = new GraphBuilder("g", 17);
        String x = g.input("x", TensorProto.DataType.FLOAT, 1, 4);
        g.output(g.op("n", "Relu", x), TensorProto.DataType.FLOAT, 1, 4);
        return g.build("hexforge", "test", metadata).toByteArray();
    }

    /** Exports pass Map.of metadata, whose order changes from one JVM to the next: the bytes must not. */
    @Test
    void theSameMetadataInAnyOrderGivesTheSameBytes() {
        Map<String, String> one = new LinkedHashMap<>();
        one.put("hexforge.variant", "static");
        one.put("hexforge.source", "q05");
        Map<String, String> other = new LinkedHashMap<>();
        other.put("hexforge.source", "q05");
        other.put("hexforge.variant", "static");
        assertArrayEquals(model(one), model(other));
    }
}
