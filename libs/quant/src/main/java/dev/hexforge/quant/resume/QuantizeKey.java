package dev.hexforge.quant.resume;

import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.gate.GateText;
import dev.hexforge.resume.RunKey;

import java.util.LinkedHashMap;
import java.util.Map;

/** What decides a quantize run's bytes: the model's digest, the calibration and gate tokens and every setting. */
public final class QuantizeKey {
    /** Raised when the rules that make a quantize's bytes change, so an older run's state is not continued. */
    static final String VERSION = "1";

    private QuantizeKey() {
    }

    public static RunKey of(String modelDigest, QuantizeOptions o, GateText text, CalibrationSet calibration) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("rules", VERSION);
        f.put("model", modelDigest);
        f.put("method", o.method());
        f.put("weights", o.spec().describe());
        f.put("keep", String.join(",", o.keep()));
        f.put("head", o.head() == null ? "float" : o.head().describe());
        f.put("gptq", o.method().equals("gptq") ? o.gptq().toString() : "-");
        f.put("calibration", calibration == null ? "none" : RunKey.digest(calibration.sequences()));
        f.put("gate text", text.digest());
        f.put("max delta perplexity", Double.toString(o.maxDeltaPpl()));
        f.put("auto keep percent", Double.toString(o.autoKeepPercent()));
        f.put("activations", o.activations().toString());
        if (o.lora() != null) {
            f.put("lora adapters", o.lora().digest());
        }
        return new RunKey(f);
    }
}
