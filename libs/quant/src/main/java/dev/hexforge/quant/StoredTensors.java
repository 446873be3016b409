package dev.hexforge.quant;

import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.SafetensorsWriter;
import dev.hexforge.safetensors.TensorInfo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * Quantized tensors by weight name, kept in files instead of on the heap, so that a model's quantized tensors cost
 * the heap one tensor at a time whatever the model's size. A pass puts each tensor as it finishes it (written at once
 * to a file of its own under a folder); every {@code get} reads the tensor back from its mapped file. A quantized
 * checkpoint's {@code hexforge_quant.safetensors} is read the same way ({@link #of}). Iteration follows the order
 * of the puts; entries read their value only when asked. Puts come from one thread; gets may come from many.
 *
 * <p>The file layout per tensor is the quantized checkpoint's: {@code <module>.q} [out, in] (I8 when symmetric, U8
 * otherwise), {@code <module>.scale} [out, groups] F32 and, when asymmetric, {@code <module>.zero} [out, groups] U8.
 */
public final class StoredTensors extends AbstractMap<String, QuantizedLinear> {
    private record Location(Path file, String base, QuantizedLinear.Shape shape) {
    }

    private final Path dir;
    private final Map<String, Location> index = new LinkedHashMap<>();

    private StoredTensors(Path dir) {
        this.dir = dir;
    }

    /** An empty store writing under {@code dir} (created if missing). */
    public static StoredTensors in(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("creating " + dir + ": " + e.getMessage(), e);
        }
        return new StoredTensors(dir);
    }

    /**
     * The store an interrupted run left under {@code dir}, reopened to go on putting: its first {@code keep} tensors
     * (every one when negative) stay, in the order they were put, and files past them or half-written are deleted.
     * Each tensor's file appears whole or not at all, so what stays is what was finished.
     */
    public static StoredTensors reopen(Path dir, QuantSpec spec, int keep) {
        StoredTensors s = in(dir);
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.sorted().toList()) {
                String n = f.getFileName().toString();
                if (!n.matches("[0-9]+\\.safetensors")) {
                    Files.delete(f); // a write the kill cut short
                }
            }
            for (int i = 0; ; i++) {
                Path f = dir.resolve(i + ".safetensors");
                if (!Files.isRegularFile(f)) {
                    break;
                }
                if (keep >= 0 && i >= keep) {
                    Files.delete(f);
                    continue;
                }
                try (SafetensorsFile file = SafetensorsFile.open(f)) {
                    TensorInfo q = file.tensors().stream().filter(t -> t.name().endsWith(".q")).findFirst()
                            .orElseThrow(() -> new QuantizationException(f + " holds no quantized tensor"));
                    String base = q.name().substring(0, q.name().length() - ".q".length());
                    s.index.put(base + ".weight", new Location(f, base, new QuantizedLinear.Shape((int) q.dim(0), (int) q.dim(1), spec)));
                }
            }
            if (keep >= 0 && s.index.size() < keep) {
                throw new QuantizationException(dir + " holds " + s.index.size() + " finished tensors, the saved state "
                        + keep + "; delete the output folder to start over");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reopening " + dir + ": " + e.getMessage(), e);
        }
        return s;
    }

    /** The tensors of one file written in this layout, read-only; {@code shapes} by weight name, in order. */
    static StoredTensors of(Path file, Map<String, QuantizedLinear.Shape> shapes) {
        StoredTensors s = new StoredTensors(null);
        shapes.forEach((name, shape) -> s.index.put(name, new Location(file, base(name), shape)));
        return s;
    }

    static String base(String weightName) {
        return weightName.substring(0, weightName.length() - ".weight".length());
    }

    @Override
    public synchronized QuantizedLinear put(String name, QuantizedLinear q) {
        if (dir == null) {
            throw new UnsupportedOperationException("a quantized checkpoint's tensors are read-only");
        }
        if (index.containsKey(name)) {
            throw new IllegalArgumentException(name + " is already stored");
        }
        Path file = dir.resolve(index.size() + ".safetensors");
        SafetensorsWriter.write(file, Map.of(), entries(base(name), q.out(), q.in(), q.spec(), () -> q));
        index.put(name, new Location(file, base(name), q.shape()));
        return null;
    }

    @Override
    public QuantizedLinear get(Object name) {
        Location at;
        synchronized (this) {
            at = index.get(name);
        }
        if (at == null) {
            return null;
        }
        try (SafetensorsFile f = SafetensorsFile.open(at.file())) {
            return read(f, at.base(), at.shape().spec());
        }
    }

    /** A stored tensor's shape and spec without reading it, or null when not stored. */
    public synchronized QuantizedLinear.Shape shape(String name) {
        Location at = index.get(name);
        return at == null ? null : at.shape();
    }

    @Override
    public synchronized boolean containsKey(Object name) {
        return index.containsKey(name);
    }

    @Override
    public synchronized int size() {
        return index.size();
    }

    @Override
    public Set<Entry<String, QuantizedLinear>> entrySet() {
        List<String> names;
        synchronized (this) {
            names = new ArrayList<>(index.keySet());
        }
        return new AbstractSet<>() {
            @Override
            public Iterator<Entry<String, QuantizedLinear>> iterator() {
                Iterator<String> it = names.iterator();
                return new Iterator<>() {
                    @Override
                    public boolean hasNext() {
                        return it.hasNext();
                    }

                    @Override
                    public Entry<String, QuantizedLinear> next() {
                        return lazyEntry(it.next());
                    }
                };
            }

            @Override
            public int size() {
                return names.size();
            }
        };
    }

    private Entry<String, QuantizedLinear> lazyEntry(String name) {
        return new Entry<>() {
            @Override
            public String getKey() {
                return name;
            }

            @Override
            public QuantizedLinear getValue() {
                return get(name);
            }

            @Override
            public QuantizedLinear setValue(QuantizedLinear value) {
                throw new UnsupportedOperationException();
            }
        };
    }

    /**
     * A tensor's entries in this layout, for a safetensors file: shapes from {@code out}, {@code in} and the spec,
     * the values from {@code value} when each entry is written.
     */
    static List<SafetensorsWriter.Entry> entries(String base, int out, int in, QuantSpec spec, Supplier<QuantizedLinear> value) {
        long[] groups = {out, spec.groups(in)};
        List<SafetensorsWriter.Entry> list = new ArrayList<>(3);
        list.add(new SafetensorsWriter.Entry(base + ".q", spec.symmetric() ? DType.I8 : DType.U8, new long[]{out, in},
                ch -> SafetensorsWriter.writeFully(ch, ByteBuffer.wrap(value.get().q()))));
        list.add(new SafetensorsWriter.Entry(base + ".scale", DType.F32, groups,
                ch -> SafetensorsWriter.writeFully(ch, SafetensorsWriter.encode(value.get().scales(), DType.F32))));
        if (!spec.symmetric()) {
            list.add(new SafetensorsWriter.Entry(base + ".zero", DType.U8, groups,
                    ch -> SafetensorsWriter.writeFully(ch, ByteBuffer.wrap(value.get().zeros()))));
        }
        return list;
    }

    /** One tensor of a file in this layout, checked against its spec. */
    static QuantizedLinear read(SafetensorsFile p, String base, QuantSpec s) {
        String file = p.path().getFileName().toString();
        var t = p.info(base + ".q");
        int out = (int) t.dim(0);
        int in = (int) t.dim(1);
        if (s.groups(in) != p.info(base + ".scale").dim(1)) {
            throw new QuantizationException(file + ": " + base + ".scale has " + p.info(base + ".scale").dim(1)
                    + " groups, the spec needs " + s.groups(in));
        }
        byte[] q = new byte[out * in];
        p.bytes(t.name()).get(q);
        byte[] zeros = null;
        if (!s.symmetric()) {
            zeros = new byte[(int) p.info(base + ".zero").numel()];
            p.bytes(base + ".zero").get(zeros);
        }
        return new QuantizedLinear(out, in, s, q, p.floats(base + ".scale"), zeros);
    }
}
