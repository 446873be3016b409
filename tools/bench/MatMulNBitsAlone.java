import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import dev.hexforge.onnx.builder.GraphBuilder;
import dev.hexforge.onnx.builder.GraphBuilder.Attr;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The floor of a decode step on ONNX Runtime's CPU kernels: the 169 MatMulNBits of the Qwen2.5-0.5B shape (24 layers
 * of q, k, v, o, gate, up, down, and the LM head) alone in one graph, one token, random weights in the layout
 * Hexforge's exports use (symmetric, float scales, block 128; the head INT8 per channel as in the default export).
 * Nothing else runs: no attention, norms or cache, no Java beyond one run call. Compare its time with a whole
 * decode step (`bench generate`) and with llama.cpp's.
 *
 * java -cp "cli/target/lib/*" tools/bench/MatMulNBitsAlone.java BITS THREADS [ROUNDS]
 */
public class MatMulNBitsAlone {
    private static final Random RANDOM = new Random(1);
    private static final int BLOCK = 128;
    private static long bytes;

    private static String linear(GraphBuilder g, String name, String x, int k, int n, int bits) {
        int blocks = (k + BLOCK - 1) / BLOCK;
        byte[] w = new byte[n * blocks * BLOCK * bits / 8];
        RANDOM.nextBytes(w);
        ByteBuffer s = ByteBuffer.allocate(n * blocks * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n * blocks; i++) {
            s.putFloat(0.01f);
        }
        bytes += w.length + s.capacity();
        String wn = g.inlineInitializer(name + "_nbits", DataType.UINT8, new long[]{n, blocks, BLOCK * bits / 8}, w);
        String sn = g.inlineInitializer(name + "_nbits_scales", DataType.FLOAT, new long[]{n, blocks}, s.array());
        return g.opIn("com.microsoft", "/" + name, "MatMulNBits", List.of(x, wn, sn), 1, Attr.i("K", k), Attr.i("N", n),
                Attr.i("bits", bits), Attr.i("block_size", BLOCK), Attr.i("accuracy_level", 4))[0];
    }

    public static void main(String[] args) throws Exception {
        int bits = Integer.parseInt(args[0]);
        int threads = Integer.parseInt(args[1]);
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        int hidden = 896, kv = 128, inter = 4864, vocab = 151936, layers = 24;
        GraphBuilder g = new GraphBuilder("matmulnbits-alone", 17);
        g.addDomain("com.microsoft", 1);
        String x = g.input("x", DataType.FLOAT, 1L, (long) hidden);
        List<String> outs = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            String q = linear(g, "q" + l, x, hidden, hidden, bits);
            outs.add(linear(g, "k" + l, x, hidden, kv, bits));
            outs.add(linear(g, "v" + l, x, hidden, kv, bits));
            String o = linear(g, "o" + l, q, hidden, hidden, bits);
            String up = g.op("/mul" + l, "Mul", linear(g, "gate" + l, x, hidden, inter, bits), linear(g, "up" + l, x, hidden, inter, bits));
            String down = linear(g, "down" + l, up, inter, hidden, bits);
            // keeps the next layer's input small, as a norm would
            x = g.op("/scale" + l, "Mul", g.op("/res" + l, "Add", g.op("/res_o" + l, "Add", x, o), down), g.scalarFloat(1e-3f));
        }
        outs.add(linear(g, "lm_head", x, hidden, vocab, 8));
        for (int i = 0; i < outs.size(); i++) {
            g.opNamed("y" + i, "/out" + i, "Identity", List.of(outs.get(i)));
            g.output("y" + i, DataType.FLOAT, 1L, "n");
        }
        byte[] model = g.build("hexforge-bench", "1", Map.of()).toByteArray();
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        try (OrtSession.SessionOptions so = new OrtSession.SessionOptions()) {
            so.setIntraOpNumThreads(threads);
            so.setInterOpNumThreads(1);
            so.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            try (OrtSession s = env.createSession(model, so)) {
                float[] xv = new float[hidden];
                for (int i = 0; i < hidden; i++) {
                    xv[i] = (float) Math.sin(i);
                }
                try (OnnxTensor xt = OnnxTensor.createTensor(env, FloatBuffer.wrap(xv), new long[]{1, hidden})) {
                    for (int i = 0; i < 10; i++) {
                        s.run(Map.of("x", xt)).close();
                    }
                    for (int r = 0; r < rounds; r++) {
                        long[] t = new long[31];
                        for (int i = 0; i < t.length; i++) {
                            long t0 = System.nanoTime();
                            s.run(Map.of("x", xt)).close();
                            t[i] = System.nanoTime() - t0;
                        }
                        Arrays.sort(t);
                        double ms = t[t.length / 2] / 1e6;
                        System.out.printf("INT%d linears + INT8 head, %d thread(s): median %.2f ms (min %.2f, max %.2f) of 31 runs, "
                                        + "%.1f MB of weights and scales, %.1f GB/s, i.e. at most %.1f tokens/s%n",
                                bits, threads, ms, t[0] / 1e6, t[t.length - 1] / 1e6, bytes / 1e6, bytes / (ms / 1e3) / 1e9, 1e3 / ms);
                    }
                }
            }
        }
    }
}
