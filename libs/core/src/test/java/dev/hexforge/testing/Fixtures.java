package dev.hexforge.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The fixtures bundled with the project (copied from the reference material; tests never read ../shared). */
public final class Fixtures {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Fixtures() {
    }

    public static Path root() {
        String p = System.getProperty("hexforge.fixtures");
        Path root = p != null ? Path.of(p) : locate();
        if (!Files.isDirectory(root)) {
            throw new IllegalStateException("fixtures folder not found at " + root);
        }
        return root;
    }

    private static Path locate() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("fixtures/qwen2-tiny"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("fixtures/ not found above " + Path.of("").toAbsolutePath());
        }
        return dir.resolve("fixtures");
    }

    public static Path qwen2Tiny() {
        return root().resolve("qwen2-tiny");
    }

    public static Path reference(String file) {
        return qwen2Tiny().resolve("reference").resolve(file);
    }

    public static JsonNode json(Path file) {
        try {
            return JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }

    /** The first {@code n} examples of the LoRA task as JSON lines, written to {@code out}. */
    public static Path loraTaskLines(int n, Path out) {
        JsonNode all = json(root().resolve("lora-task/train.json"));
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < n; i++) {
            lines.append(all.get(i).toString()).append('\n');
        }
        try {
            return Files.writeString(out, lines);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static int[] evalTxtIds() {
        return ints(json(reference("eval_txt_ids.json")).path("ids"));
    }
}
