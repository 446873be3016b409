package dev.hexforge.safetensors;

import java.util.Arrays;

/** One tensor entry of a safetensors header; offsets are relative to the start of the data buffer. */
public record TensorInfo(String name, DType dtype, long[] shape, long begin, long end) {

    public TensorInfo {
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public int rank() {
        return shape.length;
    }

    public long dim(int axis) {
        return shape[axis];
    }

    public long numel() {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    public long byteSize() {
        return end - begin;
    }

    public String shapeString() {
        return Arrays.toString(shape);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorInfo t && name.equals(t.name) && dtype == t.dtype
                && Arrays.equals(shape, t.shape) && begin == t.begin && end == t.end;
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Arrays.hashCode(shape);
    }

    @Override
    public String toString() {
        return name + " " + dtype + shapeString();
    }
}
