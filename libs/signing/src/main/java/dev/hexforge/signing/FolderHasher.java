package dev.hexforge.signing;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Hashes every regular file under a folder for the OMS manifest. Files are streamed (never held in memory) and
 * hashed on all cores when there are several; symbolic links are refused; ignored paths (a file, or a folder and
 * everything in it, relative to the model folder) are skipped.
 */
public final class FolderHasher {
    /** Paths the reference implementation always ignores, besides the signature file. */
    public static final List<String> DEFAULT_IGNORES = List.of(".git", ".gitattributes", ".github", ".gitignore");
    private static final int BUFFER = 1 << 20;

    private FolderHasher() {
    }

    public static List<String> ignoreList(String signatureName, List<String> extra) {
        List<String> all = new ArrayList<>(DEFAULT_IGNORES);
        if (signatureName != null && !all.contains(signatureName)) {
            all.add(signatureName);
        }
        for (String e : extra) {
            String n = normalize(e);
            if (!all.contains(n)) {
                all.add(n);
            }
        }
        return all;
    }

    static String normalize(String p) {
        String n = p.replace('\\', '/');
        while (n.startsWith("./")) {
            n = n.substring(2);
        }
        while (n.endsWith("/")) {
            n = n.substring(0, n.length() - 1);
        }
        return n;
    }

    public static Manifest hash(Path root, List<String> ignore) {
        return hash(root, ignore, Map.of());
    }

    /**
     * As {@link #hash(Path, List)}, taking the digests of some files as known (by relative name) instead of reading
     * them: a downloader that hashed each file as it wrote it. The folder is still listed, so added or missing files
     * show.
     */
    public static Manifest hash(Path root, List<String> ignore, Map<String, String> known) {
        if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
            throw new SigningException(root + " is not a folder");
        }
        Set<String> ignored = Set.copyOf(ignore);
        List<Path> files = new ArrayList<>();
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                    return !dir.equals(root) && ignored.contains(rel(root, dir)) ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                    String name = rel(root, file);
                    if (ignored.contains(name)) {
                        return FileVisitResult.CONTINUE;
                    }
                    if (attrs.isSymbolicLink()) {
                        throw new SigningException("symbolic link '" + name + "' in the model folder: links are not allowed");
                    }
                    if (!attrs.isRegularFile()) {
                        throw new SigningException("'" + name + "' is not a regular file");
                    }
                    files.add(file);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new SigningException("reading " + root + ": " + e.getMessage(), e);
        }
        files.sort(Comparator.comparing(f -> rel(root, f)));
        List<Manifest.Entry> entries = new ArrayList<>();
        if (!known.isEmpty()) {
            List<Path> unknown = files.stream().filter(f -> !known.containsKey(rel(root, f))).toList();
            Map<String, String> digests = new HashMap<>(known);
            for (Manifest.Entry e : hashAll(root, unknown)) {
                digests.put(e.name(), e.sha256());
            }
            files.forEach(f -> entries.add(new Manifest.Entry(rel(root, f), digests.get(rel(root, f)))));
            return new Manifest(entries);
        }
        return new Manifest(hashAll(root, files));
    }

    private static List<Manifest.Entry> hashAll(Path root, List<Path> files) {
        List<Manifest.Entry> entries = new ArrayList<>();
        int threads = Math.min(files.size(), Runtime.getRuntime().availableProcessors());
        if (threads <= 1) {
            for (Path f : files) {
                entries.add(new Manifest.Entry(rel(root, f), sha256(f)));
            }
            return entries;
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<String>> digests = new ArrayList<>();
            for (Path f : files) {
                digests.add(pool.submit(() -> sha256(f)));
            }
            for (int i = 0; i < files.size(); i++) {
                entries.add(new Manifest.Entry(rel(root, files.get(i)), digests.get(i).get()));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SigningException("interrupted while hashing " + root, e);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : new SigningException(e.getCause().getMessage(), e.getCause());
        } finally {
            pool.shutdownNow();
        }
        return entries;
    }

    static String rel(Path root, Path p) {
        return root.relativize(p).toString().replace('\\', '/');
    }

    public static String sha256(Path file) {
        try (FileChannel ch = FileChannel.open(file)) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            ByteBuffer buf = ByteBuffer.allocateDirect(BUFFER);
            while (ch.read(buf) >= 0) {
                buf.flip();
                md.update(buf);
                buf.clear();
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (IOException e) {
            throw new SigningException("reading " + file + ": " + e.getMessage(), e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
