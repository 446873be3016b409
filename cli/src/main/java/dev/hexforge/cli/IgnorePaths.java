package dev.hexforge.cli;

import java.nio.file.Path;
import java.util.List;

/** Ignore paths as users write them: relative to the model folder, or paths (from here) that point inside it. */
final class IgnorePaths {
    private IgnorePaths() {
    }

    static List<String> relativeTo(Path dir, List<String> paths) {
        Path root = dir.toAbsolutePath().normalize();
        return paths.stream().map(p -> {
            Path asGiven = Path.of(p).toAbsolutePath().normalize();
            return asGiven.startsWith(root) && !asGiven.equals(root) ? root.relativize(asGiven).toString().replace('\\', '/') : p;
        }).toList();
    }
}
