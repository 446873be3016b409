package dev.hexforge.onnx.runtime;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;

import java.nio.file.Path;

/** Session settings shared by every Hexforge ONNX Runtime session. */
public final class OrtSessions {
    private OrtSessions() {
    }

    /** The ONNX Runtime version on the class path (its jar's Implementation-Version), or "unknown". */
    public static String runtimeVersion() {
        String v = ai.onnxruntime.OrtEnvironment.class.getPackage().getImplementationVersion();
        return v == null ? "unknown" : v;
    }

    /**
     * A CPU session with exact arithmetic: ONNX Runtime's default rewrite of DequantizeLinear→MatMul into
     * MatMulNBits with int8 activations is turned off so results match the reference.
     *
     * @param threads intra-op threads; 0 lets ONNX Runtime choose
     */
    public static OrtSession open(Path model, int threads) {
        try {
            OrtSession.SessionOptions so = new OrtSession.SessionOptions();
            so.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            so.addConfigEntry("session.qdq_matmulnbits_accuracy_level", "0");
            if (threads > 0) {
                so.setIntraOpNumThreads(threads);
            }
            so.setInterOpNumThreads(1);
            return OrtEnvironment.getEnvironment().createSession(model.toString(), so);
        } catch (OrtException e) {
            throw new OnnxRuntimeException(model + ": ONNX Runtime cannot load the model: " + e.getMessage(), e);
        }
    }
}
