package dev.hexforge.resume;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * What decides a long pass's bytes, by name: the input's digest, every setting, and the version of the rules that
 * make the bytes. A run continues an interrupted one only when their keys are equal; otherwise the differences are
 * named.
 */
public record RunKey(Map<String, String> fields) {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public RunKey {
        fields = Map.copyOf(fields);
    }

    /** The settings and inputs that differ, each as "name: X in the interrupted run, Y now" (empty when equal). */
    public List<String> differences(RunKey now) {
        Set<String> names = new TreeSet<>(fields.keySet());
        names.addAll(now.fields.keySet());
        List<String> out = new ArrayList<>();
        for (String n : names) {
            String then = fields.getOrDefault(n, "(none)");
            String current = now.fields.getOrDefault(n, "(none)");
            if (!then.equals(current)) {
                out.add(n + ": " + abbreviate(then) + " in the interrupted run, " + abbreviate(current) + " now");
            }
        }
        return out;
    }

    private static String abbreviate(String v) {
        return v.matches("[0-9a-f]{64}") ? "digest " + v.substring(0, 12) : v;
    }

    /** Writes the key atomically: a kill while writing leaves no key, or the whole one. */
    public void write(Path file) {
        Path tmp = file.resolveSibling(file.getFileName() + ".partial");
        try {
            JSON.writeValue(tmp.toFile(), new TreeMap<>(fields));
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + file + ": " + e.getMessage(), e);
        }
    }

    /** The key in {@code file}; one that cannot be read is {@code error}'s exception, given what went wrong. */
    public static RunKey read(Path file, Function<String, ? extends RuntimeException> error) {
        try {
            return new RunKey(JSON.readValue(file.toFile(), new TypeReference<Map<String, String>>() { }));
        } catch (IOException e) {
            throw error.apply(file + " (the key of an interrupted run) cannot be read: " + e.getMessage()
                    + "; delete the output folder to start over");
        }
    }

    /** The SHA-256 of token sequences (a calibration set, a gate's text), as hex. */
    public static String digest(List<int[]> sequences) {
        MessageDigest md = sha256();
        for (int[] s : sequences) {
            md.update(intBytes(s.length));
            for (int id : s) {
                md.update(intBytes(id));
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] intBytes(int v) {
        return new byte[]{(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
    }
}
