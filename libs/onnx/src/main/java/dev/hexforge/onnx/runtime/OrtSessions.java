package dev.hexforge.onnx.runtime;

import ai.onnxruntime.OnnxTensorLike;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtProvider;
import ai.onnxruntime.OrtSession;

import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.qdq.QuantizedIo;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
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
        return open(model, threads, qnn, profilePrefix, initializers, false);
    }

    /**
     * As {@link #open(Path, int, Map, Path)}, for a graph whose inputs and outputs are in quantized types: the session
     * runs it behind a float boundary ({@link QuantizedIo#floatBoundary}), since this API has no uint16 tensors. The
     * rewritten graph is loaded from memory; its external weights are read from the graph's folder.
     */
    public static OrtSession openFloatBoundary(Path model, int threads, Map<String, String> qnn, Path profilePrefix) {
        return open(model, threads, qnn, profilePrefix, Map.of(), true);
    }

    private static OrtSession open(Path model, int threads, Map<String, String> qnn, Path profilePrefix,
                                   Map<String, ? extends OnnxTensorLike> initializers, boolean floatBoundary) {
        try (OrtSession.SessionOptions so = new OrtSession.SessionOptions()) { // the session keeps a copy of its options
            for (Map.Entry<String, ? extends OnnxTensorLike> e : initializers.entrySet()) {
                so.addInitializer(e.getKey(), e.getValue());
            }
            so.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            so.addConfigEntry("session.qdq_matmulnbits_accuracy_level", "0");
            // the weights outside the session's arena, so they go back to the system with the session: a pass that
            // opens a session per layer or part otherwise keeps the arena's high-water mark for its whole run
            so.addConfigEntry("session.use_device_allocator_for_initializers", "1");
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
            if (floatBoundary) {
                so.addConfigEntry("session.model_external_initializers_file_folder_path",
                        model.toAbsolutePath().getParent().toString());
                return OrtEnvironment.getEnvironment().createSession(floatBoundary(model), so);
            }
            return OrtEnvironment.getEnvironment().createSession(model.toString(), so);
        } catch (OrtException e) {
            throw new OnnxRuntimeException(model + ": ONNX Runtime cannot load the model: " + e.getMessage(), e);
        }
    }

    private static byte[] floatBoundary(Path model) {
        try (InputStream in = Files.newInputStream(model)) {
            return QuantizedIo.floatBoundary(ModelProto.parseFrom(in)).toByteArray();
        } catch (IOException e) {
            throw new OnnxRuntimeException(model + ": cannot read the model: " + e.getMessage(), e);
        }
    }
}
