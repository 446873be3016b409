package dev.hexforge.contracts;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Which server paths a job may name as inputs: only those whose real path (every symbolic link followed, no
 * {@code ..}) lies under a root the operator configured ({@code hexforge.input-roots}), and not under a denied folder
 * ({@code hexforge.input-denied}: the fleet's state and secrets) unless the allowing root is itself inside that
 * folder. Deny by default: with no roots, no path is accepted and inputs must be uploads or artifacts.
 * <p>
 * A path outside the roots gets the same answer whether it exists or not, so the check tells a tenant nothing about
 * the server's files. The gateway checks at submission and every stage service checks again before it reads.
 */
public final class InputPolicy {
    /** Never readable, whatever the operator configured. */
    private static final List<Path> ALWAYS_DENIED = List.of(Path.of("/proc"), Path.of("/sys"), Path.of("/dev"));
    public static final int MAX_PATH_LENGTH = 1024;
    private final List<Path> roots;
    private final List<Path> denied;

    public InputPolicy(List<Path> roots, List<Path> denied) {
        this.roots = roots.stream().map(InputPolicy::real).flatMap(Optional::stream).toList();
        List<Path> d = new ArrayList<>(ALWAYS_DENIED);
        denied.stream().map(p -> real(p).orElse(p.toAbsolutePath().normalize())).forEach(d::add);
        this.denied = List.copyOf(d);
    }

    /** From comma-separated lists, as configuration gives them (blank entries ignored). */
    public static InputPolicy of(String roots, String denied) {
        return new InputPolicy(split(roots), split(denied));
    }

    public static InputPolicy denyAll() {
        return new InputPolicy(List.of(), List.of());
    }

    private static List<Path> split(String csv) {
        return csv == null ? List.of() : Arrays.stream(csv.split(",")).map(String::trim).filter(s -> !s.isEmpty()).map(Path::of).toList();
    }

    private static Optional<Path> real(Path p) {
        try {
            return Optional.of(p.toAbsolutePath().toRealPath());
        } catch (IOException | InvalidPathException e) {
            return Optional.empty();
        }
    }

    public List<Path> roots() {
        return roots;
    }

    /** A refused path, with the field it came from and a message that names no server detail. */
    public static final class RefusedPathException extends HexforgeException {
        private final String field;

        public RefusedPathException(String field, String message) {
            super(ErrorCode.INPUT_REFUSED, field + ": " + message);
            this.field = field;
        }

        public String field() {
            return field;
        }

        public Problem problem() {
            return new Problem(field, getMessage().substring(field.length() + 2));
        }
    }

    /**
     * The real path of an input named by {@code field}, or a refusal. {@code folder} says whether a folder (a model)
     * or a regular file (data) is expected.
     */
    public Path resolve(String field, String value, boolean folder) {
        if (value == null || value.isBlank() || value.length() > MAX_PATH_LENGTH || value.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            throw new RefusedPathException(field, "must be an absolute path of at most " + MAX_PATH_LENGTH + " printable characters");
        }
        Path p;
        try {
            p = Path.of(value);
        } catch (InvalidPathException e) {
            throw new RefusedPathException(field, "is not a valid path");
        }
        if (!p.isAbsolute()) {
            throw new RefusedPathException(field, "must be an absolute path");
        }
        if (roots.isEmpty()) {
            throw new RefusedPathException(field, "this fleet reads no server folders (hexforge.input-roots is empty); "
                    + "upload the input and name it by id");
        }
        // the lexical form first: '..', paths outside the roots and inside denied folders are refused before the file
        // system is asked anything, so whether such a path exists never shows
        Path lexical = p.normalize();
        if (!lexical.equals(p) || !allowed(lexical)) {
            throw new RefusedPathException(field, outside());
        }
        Optional<Path> real = real(p);
        if (real.isEmpty()) {
            throw new RefusedPathException(field, "does not exist");
        }
        if (!allowed(real.get())) {
            throw new RefusedPathException(field, outside()); // a symbolic link out of the roots or into a denied folder
        }
        if (folder ? !Files.isDirectory(real.get()) : !Files.isRegularFile(real.get(), LinkOption.NOFOLLOW_LINKS)) {
            throw new RefusedPathException(field, folder ? "is not a folder" : "is not a regular file");
        }
        return real.get();
    }

    /** Under a root, and not under a denied folder unless that root lies inside it. */
    private boolean allowed(Path p) {
        Optional<Path> root = under(p, roots);
        return root.isPresent() && denied.stream().noneMatch(d -> p.startsWith(d) && !root.get().startsWith(d));
    }

    private String outside() {
        return "is outside the folders this fleet reads inputs from (" + String.join(", ", roots.stream().map(Path::toString).toList())
                + "); upload it and name it by id";
    }

    /** The deepest root that holds the path. */
    private static Optional<Path> under(Path p, List<Path> roots) {
        Path deepest = null;
        for (Path r : roots) {
            if (p.startsWith(r) && (deepest == null || r.getNameCount() > deepest.getNameCount())) {
                deepest = r;
            }
        }
        return Optional.ofNullable(deepest);
    }
}
