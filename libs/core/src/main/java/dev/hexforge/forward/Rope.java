package dev.hexforge.forward;

import dev.hexforge.checkpoint.ModelConfig;

/**
 * Rotary position tables computed exactly as Hugging Face does in float32: {@code inv_freq = 1/theta^(2i/d)},
 * rescaled by the config's {@link dev.hexforge.checkpoint.RopeScaling} (Llama 3's), {@code freqs = pos * inv_freq},
 * {@code emb = cat(freqs, freqs)}. Shared by the Java forward, training, calibration and the ONNX exporter so all
 * use bit-identical cos/sin values.
 */
public record Rope(int headDim, int positions, float[] cos, float[] sin) {

    public static Rope of(ModelConfig config, int positions) {
        int d = config.headDim();
        int half = d / 2;
        float[] invFreq = new float[half];
        for (int i = 0; i < half; i++) {
            float exponent = (float) (2 * i) / d;
            invFreq[i] = (float) (1.0 / (float) Math.pow(config.ropeTheta(), exponent));
        }
        invFreq = config.ropeScaling().apply(invFreq);
        float[] cos = new float[positions * d];
        float[] sin = new float[positions * d];
        for (int p = 0; p < positions; p++) {
            for (int i = 0; i < half; i++) {
                float f = (float) p * invFreq[i];
                float c = (float) Math.cos(f);
                float s = (float) Math.sin(f);
                cos[p * d + i] = c;
                cos[p * d + i + half] = c;
                sin[p * d + i] = s;
                sin[p * d + i + half] = s;
            }
        }
        return new Rope(d, positions, cos, sin);
    }

    /** Rotates one head vector in place: {@code x*cos + rotate_half(x)*sin}. */
    public void apply(float[] x, int off, int position) {
        int d = headDim;
        int half = d / 2;
        int base = position * d;
        for (int i = 0; i < half; i++) {
            float x1 = x[off + i];
            float x2 = x[off + i + half];
            x[off + i] = x1 * cos[base + i] - x2 * sin[base + i];
            x[off + i + half] = x2 * cos[base + i + half] + x1 * sin[base + i + half];
        }
    }
}
