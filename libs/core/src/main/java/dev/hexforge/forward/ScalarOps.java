package dev.hexforge.forward;

/** Straightforward loops: the readable baseline. */
public final class ScalarOps implements TensorOps {
    public static final ScalarOps INSTANCE = new ScalarOps();

    @Override
    public float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        float s = 0f;
        for (int i = 0; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }

    @Override
    public String name() {
        return "scalar";
    }
}
