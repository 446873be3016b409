package dev.hexforge.checkpoint;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

/**
 * The SHA-256 of a model folder's config.json, shard index and weight files (names and contents, in name order):
 * what identifies a model's float values, whatever folder it was unpacked into. About a second a gigabyte.
 */
public final class ModelDigest {
    private ModelDigest() {
    }

    public static String of(Path model) {
        List<Path> files;
        try (Stream<Path> s = Files.list(model)) {
            files = s.filter(p -> {
                String n = p.getFileName().toString();
                return n.equals("config.json") || n.endsWith(".safetensors") || n.endsWith(".safetensors.index.json");
            }).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + model + ": " + e.getMessage(), e);
        }
        return digest(model, files);
    }

    /** The SHA-256 of those of the named files of a folder that are there (names and contents, in name order). */
    public static String ofFiles(Path dir, List<String> names) {
        return digest(dir, names.stream().sorted().map(dir::resolve).filter(Files::isRegularFile).toList());
    }

    private static String digest(Path model, List<Path> files) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 20];
            for (Path f : files) {
                md.update(f.getFileName().toString().getBytes());
                try (InputStream in = new DigestInputStream(Files.newInputStream(f), md)) {
                    while (in.read(buf) >= 0) {
                        // the stream updates the digest
                    }
                }
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + model + ": " + e.getMessage(), e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
