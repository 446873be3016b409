package dev.hexforge.onnx.export;

import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.onnx.builder.ExternalDataWriter;
import dev.hexforge.onnx.builder.GraphBuilder;

import java.io.IOException;
import java.util.Map;
import java.util.function.Function;

/**
 * How the decoder's linear layers are stored and computed in the exported graph. The default keeps float32
 * weights behind Gemm; quantized formats (QDQ, MatMulNBits) write their own tensors and nodes for the linears
 * they handle.
 */
public interface LinearFormat {

    /** Float32 weights, {@code Gemm(x, W, b, transB=1)}. */
    LinearFormat FLOAT = new LinearFormat() {
        @Override
        public boolean handles(int layer, Linear linear) {
            return false;
        }

        @Override
        public void writeWeights(ExternalDataWriter out, WeightFile weights) {
        }

        @Override
        public String emit(GraphBuilder g, Function<String, String> initializer, String scope, String x, int layer,
                           Linear linear, String bias) {
            throw new IllegalStateException("float linears are emitted by the decoder graph");
        }
    };

    /** Whether this format stores and computes the given linear (otherwise it stays float). */
    boolean handles(int layer, Linear linear);

    /** Writes the tensors of every handled linear, recording them in {@code weights}. */
    void writeWeights(ExternalDataWriter out, WeightFile weights) throws IOException;

    /**
     * Emits nodes computing {@code x · Wᵀ (+ bias)} for a handled linear; {@code x} is [tokens, in].
     *
     * @param initializer declares a tensor recorded in the weight file and returns its graph name
     * @param bias        the bias initializer's name, or null
     */
    String emit(GraphBuilder g, Function<String, String> initializer, String scope, String x, int layer, Linear linear,
                String bias);

    /**
     * Float tensors (by Hugging Face name) the quantizer rewrote and that must be exported in place of the
     * checkpoint's: norms with folded AWQ scales, kept linears whose columns were rescaled.
     */
    default Map<String, float[]> replacedFloatTensors() {
        return Map.of();
    }

    /** Lowest default-domain opset the format's nodes need. */
    default int minOpset() {
        return 17;
    }

    /** Extra operator-set domains (e.g. com.microsoft) and their versions. */
    default Map<String, Integer> domains() {
        return Map.of();
    }
}
