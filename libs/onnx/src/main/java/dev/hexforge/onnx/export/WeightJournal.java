package dev.hexforge.onnx.export;

import dev.hexforge.onnx.builder.ExternalDataWriter;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Where a weight file's writing stands: after each finished group of tensors (one float tensor, one quantized
 * linear's values, scales and zero points), a line per tensor and a commit line with the data file's length then.
 * A run killed at any moment leaves the groups committed before it; the next run cuts the data file back to the last
 * commit and writes on from there, so its bytes are those of an uninterrupted run. Lines after the last commit (a
 * group the kill cut short, a line half written) are ignored.
 */
public final class WeightJournal {
    /** No journal: the weight file is written whole. */
    public static final WeightJournal NONE = new WeightJournal(null);

    private final Path file;

    private WeightJournal(Path file) {
        this.file = file;
    }

    public static WeightJournal in(Path file) {
        return new WeightJournal(file);
    }

    /** The groups an earlier run finished, in order, and the data file's length after the last. */
    record Committed(Map<String, List<WeightFile.Stored>> groups, long end) {
        static final Committed NOTHING = new Committed(Map.of(), 0);
    }

    /** What an earlier run committed, or nothing (no journal, or none yet). */
    Committed committed() {
        if (file == null || !Files.isRegularFile(file)) {
            return Committed.NOTHING;
        }
        List<String> lines;
        try {
            String text = Files.readString(file, StandardCharsets.UTF_8);
            // a line without its end was cut short by the kill
            lines = text.substring(0, text.lastIndexOf('\n') + 1).lines().toList();
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + file + ": " + e.getMessage(), e);
        }
        Map<String, List<WeightFile.Stored>> groups = new LinkedHashMap<>();
        List<WeightFile.Stored> pending = new ArrayList<>();
        long end = 0;
        for (String line : lines) {
            String[] f = line.split("\t", -1);
            try {
                if (f.length == 7 && f[0].equals("t")) {
                    long[] shape = f[3].isEmpty() ? new long[0] : Arrays.stream(f[3].split(",")).mapToLong(Long::parseLong).toArray();
                    pending.add(new WeightFile.Stored(f[1], DataType.valueOf(f[2]), shape,
                            new ExternalDataWriter.Location(f[4], Long.parseLong(f[5]), Long.parseLong(f[6]))));
                } else if (f.length == 3 && f[0].equals("c")) {
                    groups.put(f[1], List.copyOf(pending));
                    pending.clear();
                    end = Long.parseLong(f[2]);
                } else {
                    break; // a line the kill cut short: what follows it was never committed
                }
            } catch (IllegalArgumentException e) {
                break;
            }
        }
        return new Committed(groups, end);
    }

    /** Records a finished group: its tensors, then the commit with the data file's length after them. */
    void commit(String group, List<WeightFile.Stored> tensors, long end) {
        if (file == null) {
            return;
        }
        StringBuilder b = new StringBuilder();
        for (WeightFile.Stored s : tensors) {
            b.append("t\t").append(s.name()).append('\t').append(s.type().name()).append('\t')
                    .append(Arrays.stream(s.shape()).mapToObj(Long::toString).collect(Collectors.joining(","))).append('\t')
                    .append(s.location().file()).append('\t').append(s.location().offset()).append('\t')
                    .append(s.location().length()).append('\n');
        }
        b.append("c\t").append(group).append('\t').append(end).append('\n');
        try {
            Files.writeString(file, b, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + file + ": " + e.getMessage(), e);
        }
    }

    /** Forgets every commit: the data file is written from its start. */
    void clear() {
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                throw new UncheckedIOException("deleting " + file + ": " + e.getMessage(), e);
            }
        }
    }
}
