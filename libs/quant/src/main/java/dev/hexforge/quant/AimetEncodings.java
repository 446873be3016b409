package dev.hexforge.quant;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.onnx.qdq.ActivationEncodings;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeMap;

/**
 * The quantization parameters as QNN quantization overrides (AIMET encodings, version 0.5.0) for
 * {@code qnn-onnx-converter --quantization_overrides}: one entry per output channel of every quantized linear,
 * keyed by the weight's tensor name in the export (the quantized embedding and LM head too), and {@code {"dtype": "float", "bitwidth": 16}} for linears kept in
 * float; and, for a fully quantized graph, every activation's calibrated encoding by tensor name. Version 0.5.0 has no block encodings, so only
 * per-channel specs can be written; {@link #supports} says so.
 */
public final class AimetEncodings {
    public static final String FILE = "encodings.json";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private AimetEncodings() {
    }

    /** Whether every quantized tensor of the model (linears, embedding and head) is per channel. */
    public static boolean supports(QuantizedModel qm) {
        return qm.quantized().keySet().stream().allMatch(name -> qm.shape(name).spec().groupSize() == 0);
    }

    public static ObjectNode of(QuantizedModel qm, List<String> keep) {
        return of(qm, keep, null);
    }

    /** With {@code activations}, every activation's calibrated encoding too (the converter then needs no input list). */
    public static ObjectNode of(QuantizedModel qm, List<String> keep, ActivationEncodings activations) {
        if (!supports(qm)) {
            throw new QuantizationException("AIMET encodings 0.5.0 cannot express groups of columns; quantize per channel "
                    + "(group 0), with an int8 head, for the QNN converter path");
        }
        ObjectNode root = JSON.createObjectNode();
        root.put("version", "0.5.0");
        ObjectNode acts = root.putObject("activation_encodings");
        if (activations != null) {
            new TreeMap<>(activations.tensors()).forEach((name, e) -> acts.putArray(name).addObject()
                    .put("bitwidth", e.bits())
                    .put("dtype", "int")
                    .put("is_symmetric", "False")
                    .put("min", e.min())
                    .put("max", e.max())
                    .put("scale", e.scale())
                    .put("offset", -e.zeroPoint()));
        }
        ObjectNode params = root.putObject("param_encodings");
        ModelConfig c = qm.config();
        for (int l = 0; l < c.numLayers(); l++) {
            for (Linear lin : Linear.values()) {
                String name = TensorNames.weight(l, lin);
                QuantizedLinear q = qm.linears().get(name);
                ArrayNode channels = params.putArray(name);
                if (q == null) {
                    channels.addObject().put("dtype", "float").put("bitwidth", 16);
                } else {
                    channels(q, channels);
                }
            }
        }
        qm.embeddings().forEach((name, q) -> channels(q, params.putArray(name)));
        return root;
    }

    private static void channels(QuantizedLinear q, ArrayNode channels) {
        QuantSpec s = q.spec();
        for (int o = 0; o < q.out(); o++) {
            float scale = q.scale(o, 0);
            int offset = s.symmetric() ? -(1 << (s.bits() - 1)) : -q.zero(o, 0);
            int levels = (1 << s.bits()) - 1;
            channels.addObject()
                    .put("dtype", "int")
                    .put("bitwidth", s.bits())
                    .put("is_symmetric", s.symmetric() ? "True" : "False")
                    .put("min", (double) offset * scale)
                    .put("max", (double) (offset + levels) * scale)
                    .put("scale", scale)
                    .put("offset", offset);
        }
    }

    public static void write(QuantizedModel qm, List<String> keep, ActivationEncodings activations, Path file) {
        try {
            JSON.writeValue(file.toFile(), of(qm, keep, activations));
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + file + ": " + e.getMessage(), e);
        }
    }
}
