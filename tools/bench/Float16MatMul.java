import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import dev.hexforge.onnx.builder.GraphBuilder;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;

import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Whether ONNX Runtime's CPU provider on this machine multiplies 16-bit float weights fast enough for a 16-bit float
 * export (issue 19 item 2): 8 MLP pairs of the Qwen2.5-0.5B shape (896 -> 4864 -> 896), one token, as standard
 * MatMul with float32, float16 and bfloat16 weights (activations cast to the weights' type and back).
 *
 * java -cp "cli/target/lib/*" tools/bench/Float16MatMul.java THREADS
 */
public class Float16MatMul {
    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        for (DataType type : List.of(DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16)) {
            System.out.println(type + ": " + measure(type, threads));
        }
    }

    private static String measure(DataType type, int threads) throws OrtException {
        int hidden = 896, inter = 4864, pairs = 8, width = type == DataType.FLOAT ? 4 : 2;
        Random random = new Random(1);
        GraphBuilder g = new GraphBuilder("float16-matmul", 17);
        String x = g.input("x", DataType.FLOAT, 1L, (long) hidden);
        String xc = type == DataType.FLOAT ? x : g.op("/in", "Cast", List.of(x), GraphBuilder.Attr.i("to", type.getNumber()));
        String sum = null;
        for (int p = 0; p < pairs; p++) {
            String up = g.op("/up" + p, "MatMul", xc, g.inlineInitializer("up" + p, type, new long[]{hidden, inter}, weights(random, hidden * inter, width)));
            String down = g.op("/down" + p, "MatMul", up, g.inlineInitializer("down" + p, type, new long[]{inter, hidden}, weights(random, inter * hidden, width)));
            sum = sum == null ? down : g.op("/sum" + p, "Add", sum, down);
        }
        String y = type == DataType.FLOAT ? sum : g.op("/out", "Cast", List.of(sum), GraphBuilder.Attr.i("to", DataType.FLOAT.getNumber()));
        g.opNamed("y", "/y", "Identity", List.of(y));
        g.output("y", DataType.FLOAT, 1L, (long) hidden);
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        try (OrtSession.SessionOptions so = new OrtSession.SessionOptions()) {
            so.setIntraOpNumThreads(threads);
            so.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            try (OrtSession s = env.createSession(g.build("hexforge-bench", "1", Map.of()).toByteArray(), so);
                 OnnxTensor xt = OnnxTensor.createTensor(env, FloatBuffer.wrap(new float[hidden]), new long[]{1, hidden})) {
                for (int i = 0; i < 3; i++) {
                    s.run(Map.of("x", xt)).close();
                }
                long[] t = new long[7];
                for (int i = 0; i < t.length; i++) {
                    long t0 = System.nanoTime();
                    s.run(Map.of("x", xt)).close();
                    t[i] = System.nanoTime() - t0;
                }
                Arrays.sort(t);
                double ms = t[t.length / 2] / 1e6, mb = 2.0 * pairs * hidden * inter * width / 1e6;
                return String.format("median %.2f ms of 7 runs for %.0f MB of weights, %.1f GB/s", ms, mb, mb / ms);
            }
        } catch (OrtException e) {
            return "not run: " + e.getMessage();
        }
    }

    /** Random small weights: float32 with its exponent bits masked, 16-bit floats likewise, so no value is NaN or huge. */
    private static byte[] weights(Random random, int count, int width) {
        byte[] w = new byte[count * width];
        random.nextBytes(w);
        for (int i = width - 1; i < w.length; i += width) {
            w[i] = (byte) (w[i] & (width == 4 ? 0x3c : 0x3b));
        }
        return w;
    }
}
