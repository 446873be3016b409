package dev.hexforge.quant.onnx;

import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.quant.QuantizedModel;

import java.util.Map;

/** What every quantized linear format shares: it handles the model's quantized linears and exports its rewritten floats. */
abstract class QuantizedLinearFormat implements LinearFormat {
    protected final QuantizedModel model;

    QuantizedLinearFormat(QuantizedModel model) {
        this.model = model;
    }

    @Override
    public boolean handles(int layer, Linear linear) {
        return model.get(layer, linear) != null;
    }

    @Override
    public Map<String, float[]> replacedFloatTensors() {
        return model.replacedFloats();
    }
}
