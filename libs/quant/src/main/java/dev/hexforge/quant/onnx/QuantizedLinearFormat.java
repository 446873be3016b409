package dev.hexforge.quant.onnx;

import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.quant.QuantizedLinear;
import dev.hexforge.quant.QuantizedModel;

import java.util.Map;

/**
 * What every quantized format shares: it handles the model's quantized tensors (linears, and the embedding and head
 * when quantized), each under its own spec, and exports its rewritten floats.
 */
abstract class QuantizedLinearFormat implements LinearFormat {
    protected final QuantizedModel model;
    /** Every quantized tensor by weight name. */
    protected final Map<String, QuantizedLinear> tensors;

    QuantizedLinearFormat(QuantizedModel model) {
        this.model = model;
        this.tensors = model.quantized();
    }

    @Override
    public boolean handles(String weight) {
        return tensors.containsKey(weight);
    }

    /** A quantized tensor's shape and spec, without its values. */
    protected QuantizedLinear.Shape shape(String weight) {
        QuantizedLinear.Shape s = model.shape(weight);
        if (s == null) {
            throw new IllegalStateException(weight + " is not quantized");
        }
        return s;
    }

    @Override
    public int weightBits() {
        return model.linears().isEmpty() ? 0 : model.linears().values().iterator().next().spec().bits();
    }

    @Override
    public Map<String, float[]> replacedFloatTensors() {
        return model.replacedFloats();
    }
}
