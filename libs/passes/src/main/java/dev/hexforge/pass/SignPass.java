package dev.hexforge.pass;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.compile.OrtQnnBundler;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.signing.Provenance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The sign stage's work on a folder: a copy of the model with a signed provenance statement
 * ({@link Provenance}) stating the versions of the tools that made it. The model signature over the result (OpenSSF
 * model signing) is the caller's last step: {@code hexforge sign} writes it beside the files, the artifact service
 * keeps it beside the stored folder.
 */
public final class SignPass {
    private SignPass() {
    }

    /** Copies {@code model} to {@code out} and, with {@code facts}, signs a provenance statement into it. */
    public static Path run(Path model, Path out, PrivateKey key, Provenance.Facts facts) {
        Folders.copyTree(model, out);
        if (facts != null) {
            Provenance.sign(out, key, facts);
        }
        return out;
    }

    /**
     * The versions a provenance statement names: Hexforge's and Java's, and those the folder records itself (the
     * exporter and opset of its {@code export.json}, the tools of a compiled bundle's manifest).
     */
    public static Map<String, String> versions(Path folder) {
        Map<String, String> out = new LinkedHashMap<>();
        String v = SignPass.class.getPackage().getImplementationVersion();
        out.put("hexforge", v == null ? "development" : v);
        out.put("java", System.getProperty("java.version"));
        ObjectMapper json = new ObjectMapper();
        try {
            Path export = folder.resolve(ExportInfo.FILE);
            if (Files.isRegularFile(export)) {
                JsonNode e = json.readTree(export.toFile());
                out.put("exporter", e.path("hexforgeVersion").asText());
                out.put("onnxOpset", e.path("opset").asText());
            }
            Path manifest = folder.resolve(OrtQnnBundler.MANIFEST);
            if (Files.isRegularFile(manifest)) {
                JsonNode m = json.readTree(manifest.toFile());
                m.path("tools").fields().forEachRemaining(t -> out.put(t.getKey(), t.getValue().asText()));
                if (m.has("qnnSdk")) {
                    out.put("qnnSdk", m.path("qnnSdk").asText());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading the versions in " + folder + ": " + e.getMessage(), e);
        }
        return out;
    }
}
