package dev.hexforge.signing;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;

/**
 * The OMS "files" manifest of a folder: every file's POSIX relative name and sha256, sorted by name, and the root
 * digest = sha256 of the concatenated raw file digests in that order.
 */
public record Manifest(List<Entry> files) {

    public record Entry(String name, String sha256) {
    }

    public Manifest {
        files = files.stream().sorted(Comparator.comparing(Entry::name)).toList();
    }

    public String rootDigest() {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (Entry e : files) {
                md.update(HexFormat.of().parseHex(e.sha256()));
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
