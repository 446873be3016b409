package dev.hexforge.onnx.runtime;

import ai.onnxruntime.OnnxTensorLike;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtProvider;
import ai.onnxruntime.OrtSession;

import java.nio.file.Path;
import java.util.Map;

/** Session settings shared by every Hexforge ONNX Runtime session. */
public final class OrtSessions {
    private OrtSessions() {
    }

    /** The ONNX Runtime version on the class path (its jar's Implementation-Version), or "unknown". */
    public static String runtimeVersion() {
        String v = OrtEnvironment.class.getPackage().getImplementationVersion();
        return v == null ? "unknown" : v;
    }

    /**
     * A CPU session with exact arithmetic: ONNX Runtime's default rewrite of DequantizeLinear→MatMul into
     * MatMulNBits with int8 activations is turned off so results match the reference.
     *
     * @param threads intra-op threads; 0 lets ONNX Runtime choose
     */
    public static OrtSession open(Path model, int threads) {
        return open(model, threads, null);
    }

    /** Whether this ONNX Runtime build has the QNN execution provider (Snapdragon builds); never assumed. */
    public static boolean qnnAvailable() {
        return OrtEnvironment.getAvailableProviders().contains(OrtProvider.QNN);
    }

    /**
     * A session on the QNN execution provider with {@code qnn}'s provider options and the CPU fallback disabled, so an
     * op the NPU cannot run fails the load instead of running on the CPU; with {@code qnn} null, a CPU session.
     */
    public static OrtSession open(Path model, int threads, Map<String, String> qnn) {
        return open(model, threads, qnn, null);
    }

    /** @param profilePrefix where ONNX Runtime writes this session's per-node profile when it closes, or null */
    public static OrtSession open(Path model, int threads, Map<String, String> qnn, Path profilePrefix) {
        return open(model, threads, qnn, profilePrefix, Map.of());
    }

    /**
     * @param initializers values that replace the model's initializers of the same names for this session; ONNX Runtime
     *                     reads them in place, so the caller keeps them open until the session is closed
     */
    public static OrtSession open(Path model, int threads, Map<String, String> qnn, Path profilePrefix,
                                  Map<String, ? extends OnnxTensorLike> initializers) {
        try (OrtSession.SessionOptions so = new OrtSession.SessionOptions()) { // the session keeps a copy of its options
            for (Map.Entry<String, ? extends OnnxTensorLike> e : initializers.entrySet()) {
                so.addInitializer(e.getKey(), e.getValue());
            }
            so.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            so.addConfigEntry("session.qdq_matmulnbits_accuracy_level", "0");
            if (threads > 0) {
                so.setIntraOpNumThreads(threads);
            }
            so.setInterOpNumThreads(1);
            if (profilePrefix != null) {
                so.enableProfiling(profilePrefix.toString());
            }
            if (qnn != null) {
                so.addConfigEntry("session.disable_cpu_ep_fallback", "1");
                so.addQnn(qnn);
            }
            return OrtEnvironment.getEnvironment().createSession(model.toString(), so);
        } catch (OrtException e) {
            throw new OnnxRuntimeException(model + ": ONNX Runtime cannot load the model: " + e.getMessage(), e);
        }
    }
}
