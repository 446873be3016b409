package dev.hexforge.onnx.export;

import dev.hexforge.onnx.builder.ExternalDataWriter;
import dev.hexforge.onnx.builder.GraphBuilder;

import java.io.IOException;
import java.util.Map;
import java.util.function.Function;

/**
 * How the decoder's linear layers, token embedding and LM head are stored and computed in the exported graph. The
 * default keeps float32 weights behind Gemm and Gather; quantized formats (QDQ, MatMulNBits) write their own tensors
 * and nodes for the weights they handle (by Hugging Face weight name).
 */
public interface LinearFormat {

    /** Float32 weights, {@code Gemm(x, W, b, transB=1)}. */
    LinearFormat FLOAT = new LinearFormat() {
        @Override
        public boolean handles(String weight) {
            return false;
        }

        @Override
        public void writeWeights(ExternalDataWriter out, WeightFile weights) {
        }

        @Override
        public String emit(GraphBuilder g, Function<String, String> initializer, String scope, String x, String weight,
                           String bias) {
            throw new IllegalStateException("float linears are emitted by the decoder graph");
        }
    };

    /**
     * Whether this format stores and computes the weight of that name (a decoder linear's, the token embedding's or
     * the LM head's); otherwise it stays float.
     */
    boolean handles(String weight);

    /** Writes the tensors of every handled weight, recording them in {@code weights}. */
    void writeWeights(ExternalDataWriter out, WeightFile weights) throws IOException;

    /**
     * Emits nodes computing {@code x · Wᵀ (+ bias)} for a handled [out, in] weight (a linear, or the LM head);
     * {@code x} is [tokens, in].
     *
     * @param initializer declares a tensor recorded in the weight file and returns its graph name
     * @param bias        the bias initializer's name, or null
     */
    String emit(GraphBuilder g, Function<String, String> initializer, String scope, String x, String weight, String bias);

    /**
     * Emits the embedding lookup for a handled [vocab, hidden] weight: the float rows of {@code ids} (a 1-D tensor of
     * token ids), [tokens, hidden]. A tied model's lookup reads the same tensors as its head.
     */
    default String emitLookup(GraphBuilder g, Function<String, String> initializer, String scope, String ids, String weight) {
        throw new IllegalStateException(getClass().getSimpleName() + " does not store embeddings");
    }

    /**
     * Float tensors (by Hugging Face name) the quantizer rewrote and that must be exported in place of the
     * checkpoint's: norms with folded AWQ scales, kept linears whose columns were rescaled.
     */
    default Map<String, float[]> replacedFloatTensors() {
        return Map.of();
    }

    /** The decoder linears' weight bits (8, 4...); 0 when they are float. */
    default int weightBits() {
        return 0;
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
