package dev.hexforge.compile;

import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.proto.Onnx.TensorShapeProto;
import dev.hexforge.onnx.proto.Onnx.ValueInfoProto;
import dev.hexforge.onnx.qdq.QuantizedIo;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The inputs and outputs of an ONNX graph with their static dimensions (what the QNN converter must be told), and
 * the encodings of those in quantized types (a graph exported with quantized inputs and outputs; empty otherwise).
 */
public record GraphIo(List<Tensor> inputs, List<Tensor> outputs, Map<String, QuantizedIo.Boundary> quantized) {

    /** A graph input or output; a dimension is -1 when it is not a fixed number. */
    public record Tensor(String name, List<Long> dims) {
        public String dimsArg() {
            return String.join(",", dims.stream().map(String::valueOf).toList());
        }
    }

    public static GraphIo read(Path graph) {
        ModelProto m;
        try (InputStream in = Files.newInputStream(graph)) {
            m = ModelProto.parseFrom(in);
        } catch (IOException e) {
            throw new CompileException("cannot read " + graph + ": " + e.getMessage(), "re-run the export stage", e);
        }
        return new GraphIo(tensors(m.getGraph().getInputList()), tensors(m.getGraph().getOutputList()),
                QuantizedIo.encodings(m.getGraph()));
    }

    private static List<Tensor> tensors(List<ValueInfoProto> values) {
        List<Tensor> out = new ArrayList<>();
        for (ValueInfoProto v : values) {
            List<Long> dims = new ArrayList<>();
            for (TensorShapeProto.Dimension d : v.getType().getTensorType().getShape().getDimList()) {
                dims.add(d.hasDimValue() ? d.getDimValue() : -1L);
            }
            out.add(new Tensor(v.getName(), dims));
        }
        return out;
    }
}
