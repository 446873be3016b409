package dev.hexforge.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Folders compared file by file: what a resumed pass leaves against what an uninterrupted one leaves. */
public final class FolderContents {
    private FolderContents() {
    }

    /** Every file of a folder (its name relative to the folder, to its bytes). */
    public static Map<String, byte[]> files(Path dir) throws IOException {
        Map<String, byte[]> m = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.filter(Files::isRegularFile).toList()) {
                m.put(dir.relativize(p).toString(), Files.readAllBytes(p));
            }
        }
        return m;
    }

    /** The same files with the same bytes in both folders. */
    public static void assertSameFiles(Path expected, Path actual) throws IOException {
        Map<String, byte[]> e = files(expected);
        Map<String, byte[]> a = files(actual);
        assertEquals(e.keySet(), a.keySet());
        e.forEach((name, bytes) -> assertArrayEquals(bytes, a.get(name), name));
    }
}
