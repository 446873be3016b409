package dev.hexforge.quant.resume;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.quant.QuantizationException;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.gate.GateText;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What decides a quantize run's bytes: the model's digest, the calibration and gate tokens, every setting, and the
 * version of this key's rules. A run continues an interrupted one only when their keys are equal; otherwise the
 * differences are named.
 */
public record RunKey(Map<String, String> fields) {
    /** Raised when the rules that make a run's bytes change, so an older run's state is not continued. */
    static final String VERSION = "1";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public RunKey {
        fields = Map.copyOf(fields);
    }

    public static RunKey of(String modelDigest, QuantizeOptions o, GateText text, CalibrationSet calibration) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("rules", VERSION);
        f.put("model", modelDigest);
        f.put("method", o.method());
        f.put("weights", o.spec().describe());
        f.put("keep", String.join(",", o.keep()));
        f.put("head", o.head() == null ? "float" : o.head().describe());
        f.put("gptq", o.method().equals("gptq") ? o.gptq().toString() : "-");
        f.put("calibration", calibration == null ? "none" : digest(calibration.sequences()));
        f.put("gate text", text.digest());
        f.put("max delta perplexity", Double.toString(o.maxDeltaPpl()));
        f.put("auto keep percent", Double.toString(o.autoKeepPercent()));
        f.put("activations", o.activations().toString());
        return new RunKey(f);
    }

    /** The settings and inputs that differ, each as "name: then X, now Y" (empty when the keys are equal). */
    public List<String> differences(RunKey now) {
        Set<String> names = new LinkedHashSet<>(fields.keySet());
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

    public void write(Path file) {
        Path tmp = file.resolveSibling(file.getFileName() + ".partial");
        try {
            JSON.writeValue(tmp.toFile(), new TreeMap<>(fields));
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + file + ": " + e.getMessage(), e);
        }
    }

    public static RunKey read(Path file) {
        try {
            return new RunKey(JSON.readValue(file.toFile(), new TypeReference<Map<String, String>>() { }));
        } catch (IOException e) {
            throw new QuantizationException(file + " (the key of an interrupted run) cannot be read: " + e.getMessage()
                    + "; delete the output folder to start over");
        }
    }

    private static String digest(List<int[]> sequences) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (int[] s : sequences) {
                md.update(intBytes(s.length));
                for (int id : s) {
                    md.update(intBytes(id));
                }
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] intBytes(int v) {
        return new byte[]{(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
    }
}
