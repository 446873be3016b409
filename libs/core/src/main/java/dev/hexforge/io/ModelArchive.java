package dev.hexforge.io;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.contracts.PlainText;
import org.apache.commons.compress.archivers.ArchiveEntry;
import org.apache.commons.compress.archivers.ArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipArchiveInputStream;

import java.io.BufferedInputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.zip.ZipEntry;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

/**
 * A model folder packed as zip, tar or tar.gz (told apart by their first bytes, not their names), read as a stream.
 * Refused, with the entry named: absolute paths, {@code ..} segments, links and device files, duplicate names, more
 * entries or more unpacked bytes than the limits (zip bombs). A folder packed with its own top-level directory is
 * unpacked without it, so {@code config.json} lands at the root either way.
 */
public final class ModelArchive {
    private ModelArchive() {
    }

    public enum Format { ZIP, TAR, TAR_GZ }

    /**
     * Unpacking limits: entries, bytes once unpacked, and how many times the archive's own size those bytes may be
     * (past {@link #RATIO_FLOOR}, so small, very compressible files such as a tokenizer still pass). Model weights
     * barely compress; a bomb compresses a thousandfold.
     */
    /** The longest entry name taken, in characters (Linux's PATH_MAX is 4096 bytes). */
    static final int MAX_NAME = 1024;

    public record Limits(int maxEntries, long maxUnpackedBytes, int maxRatio) {
        public static final long RATIO_FLOOR = 64L << 20;
        public static final Limits DEFAULT = new Limits(10_000, 256L << 30, 20);
    }

    /** What an archive holds. */
    public record Listing(Format format, int files, long unpackedBytes, String commonRoot) {
    }

    /** The stream is not an archive this reads, or holds something refused. */
    public static final class ArchiveException extends HexforgeException {
        public ArchiveException(String message) {
            super(ErrorCode.MODEL_INVALID, message);
        }

        public ArchiveException(String message, Throwable cause) {
            super(ErrorCode.MODEL_INVALID, message, cause);
        }
    }

    /** Reads the whole stream and checks every entry; nothing is written. */
    public static Listing scan(InputStream in, Limits limits) {
        return walk(in, limits, null);
    }

    /**
     * Unpacks into {@code dir} (created; must not exist) through a sibling staging folder, so {@code dir} appears
     * complete or not at all.
     */
    public static Listing extract(InputStream in, Path dir, Limits limits) {
        Path staging = dir.resolveSibling(dir.getFileName() + ".unpacking");
        Folders.deleteTree(staging);
        try {
            Files.createDirectories(staging);
            Listing l = walk(in, limits, staging);
            Path root = l.commonRoot() == null ? staging : staging.resolve(l.commonRoot());
            Files.move(root, dir, StandardCopyOption.ATOMIC_MOVE);
            return l;
        } catch (IOException e) {
            throw new ArchiveException("unpacking into " + dir + ": " + e.getMessage(), e);
        } finally {
            Folders.deleteQuietly(staging);
        }
    }

    /** Packs a folder's regular files as tar.gz (paths relative to it, sorted); links and special files are refused. */
    public static void pack(Path dir, OutputStream out) {
        try (GZIPOutputStream gz = new GZIPOutputStream(out, 1 << 16);
             TarArchiveOutputStream tar =
                     new TarArchiveOutputStream(gz)) {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
            List<Path> files;
            try (var walk = Files.walk(dir)) {
                files = walk.filter(p -> !p.equals(dir)).sorted().toList();
            }
            for (Path f : files) {
                String name = dir.relativize(f).toString().replace('\\', '/');
                if (Files.isSymbolicLink(f) || !(Files.isRegularFile(f) || Files.isDirectory(f))) {
                    throw new ArchiveException("'" + name + "' is a link or special file; only regular files are packed");
                }
                if (Files.isDirectory(f)) {
                    continue;
                }
                TarArchiveEntry e = new TarArchiveEntry(name);
                e.setSize(Files.size(f));
                tar.putArchiveEntry(e);
                Files.copy(f, tar);
                tar.closeArchiveEntry();
            }
        } catch (IOException e) {
            throw new ArchiveException("packing " + dir + ": " + e.getMessage(), e);
        }
    }

    static Format detect(BufferedInputStream in) throws IOException {
        in.mark(512);
        byte[] head = in.readNBytes(262);
        in.reset();
        if (head.length >= 2 && (head[0] & 0xff) == 0x1f && (head[1] & 0xff) == 0x8b) {
            return Format.TAR_GZ;
        }
        if (head.length >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4) {
            return Format.ZIP;
        }
        if (head.length >= 262 && new String(head, 257, 5, StandardCharsets.US_ASCII).equals("ustar")) {
            return Format.TAR;
        }
        throw new ArchiveException("not a zip, tar or tar.gz archive (upload a model folder packed with tar or zip)");
    }

    private static Listing walk(InputStream source, Limits limits, Path into) {
        Tail raw = new Tail(source);
        try {
            BufferedInputStream in = new BufferedInputStream(raw, 1 << 16);
            Format format = detect(in);
            if (format == Format.TAR_GZ) {
                BufferedInputStream gz = new BufferedInputStream(new GZIPInputStream(in, 1 << 16), 1 << 16);
                gz.mark(512);
                byte[] head = gz.readNBytes(262);
                gz.reset();
                if (head.length < 262 || !new String(head, 257, 5, StandardCharsets.US_ASCII).equals("ustar")) {
                    throw new ArchiveException("a gzip stream that does not hold a tar archive");
                }
                in = gz;
            }
            ArchiveInputStream<? extends ArchiveEntry> archive = format == Format.ZIP ? new ZipArchiveInputStream(in)
                    : new TarArchiveInputStream(in);
            Set<String> names = new HashSet<>();
            String root = null;
            boolean rootShared = true;
            int files = 0;
            long bytes = 0;
            ArchiveEntry e;
            while ((e = archive.getNextEntry()) != null) {
                String name = e.getName().replace('\\', '/');
                check(e, name);
                String clean = name.endsWith("/") ? name.substring(0, name.length() - 1) : name;
                if (clean.isEmpty() || clean.equals(".")) {
                    continue;
                }
                if (clean.startsWith("./")) {
                    clean = clean.substring(2);
                }
                for (String seg : clean.split("/", -1)) {
                    if (seg.isEmpty() || seg.equals(".")) { // a/./b and a//b would name a/b a second time
                        throw new ArchiveException("entry '" + name + "' is not a plain path (empty or '.' segment)");
                    }
                }
                if (!names.add(clean)) {
                    throw new ArchiveException("entry '" + name + "' appears twice");
                }
                if (names.size() > limits.maxEntries()) {
                    throw new ArchiveException("more than " + limits.maxEntries() + " entries");
                }
                String first = clean.contains("/") ? clean.substring(0, clean.indexOf('/')) : null;
                if (!e.isDirectory()) {
                    if (first == null) {
                        rootShared = false;
                    } else if (root == null) {
                        root = first;
                    } else if (!root.equals(first)) {
                        rootShared = false;
                    }
                }
                if (e.isDirectory()) {
                    if (into != null) {
                        Files.createDirectories(into.resolve(clean));
                    }
                    continue;
                }
                files++;
                long remaining = limits.maxUnpackedBytes() - bytes;
                Ratio ratio = new Ratio(raw, limits, bytes);
                long n = into == null ? skip(archive, remaining, name, ratio) : write(archive, into.resolve(clean), remaining, name, ratio);
                bytes += n;
            }
            if (format == Format.ZIP) {
                in.transferTo(OutputStream.nullOutputStream()); // the central directory, which the streaming reader skips
                raw.checkZipCentralDirectory();
            }
            if (files == 0) {
                throw new ArchiveException("the archive holds no files");
            }
            return new Listing(format, files, bytes, rootShared ? root : null);
        } catch (ArchiveException e) {
            throw e;
        } catch (IOException e) {
            throw new ArchiveException("the archive is damaged or cut off: " + e.getMessage(), e);
        } catch (LinkageError e) {
            // the zip reader opens an entry's decoder as it meets the entry: one needing an absent codec (zstd) fails so
            throw new ArchiveException("an entry is compressed with a method this reader has no codec for; only stored and "
                    + "deflated zip entries are accepted", e);
        }
    }

    private static void check(ArchiveEntry e, String name) {
        // a name is a path on this machine and text in messages: no NUL or other hidden characters, bounded
        String unreadable = PlainText.problem(name, MAX_NAME);
        if (unreadable != null) {
            String shown = name.codePoints().limit(60).map(c -> PlainText.problem(Character.toString(c), 1) == null ? c : '?')
                    .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append).toString();
            throw new ArchiveException("entry '" + shown + (name.length() > 60 ? "..." : "") + "' has a name that " + unreadable);
        }
        if (e instanceof TarArchiveEntry t) { // isFile() is true for links too: ask about links first
            String what = t.isSymbolicLink() ? "a symbolic link" : t.isLink() ? "a hard link"
                    : t.isCharacterDevice() || t.isBlockDevice() || t.isFIFO() || !(t.isFile() || t.isDirectory())
                    ? "a device or special file" : null;
            if (what != null) {
                throw new ArchiveException("entry '" + name + "' is " + what + "; only regular files and folders are accepted");
            }
        }
        if (e instanceof ZipArchiveEntry z && z.isUnixSymlink()) {
            throw new ArchiveException("entry '" + name + "' is a symbolic link; only regular files and folders are accepted");
        }
        // what zip tools write for a folder of files; other methods (zstd, xz, bzip2...) need codecs this reader has not
        if (e instanceof ZipArchiveEntry z && z.getMethod() != ZipEntry.STORED && z.getMethod() != ZipEntry.DEFLATED) {
            throw new ArchiveException("entry '" + name + "' is compressed with zip method " + z.getMethod()
                    + "; only stored and deflated entries are accepted");
        }
        if (name.startsWith("/") || name.matches("^[A-Za-z]:.*")) {
            throw new ArchiveException("entry '" + name + "' has an absolute path");
        }
        for (String seg : name.split("/")) {
            if (seg.equals("..")) {
                throw new ArchiveException("entry '" + name + "' climbs out of the folder with '..'");
            }
        }
    }

    /** Checks unpacked bytes against the compressed bytes read so far. */
    private record Ratio(Tail raw, Limits limits, long before) {
        void check(long entryBytes, String name) {
            long total = before + entryBytes;
            if (total > Limits.RATIO_FLOOR && total > (long) limits.maxRatio() * raw.count) {
                throw new ArchiveException("unpacking stops at '" + name + "': " + total + " bytes from " + raw.count
                        + " compressed, more than " + limits.maxRatio() + " times (a zip bomb?)");
            }
        }
    }

    private static long skip(InputStream in, long remaining, String name, Ratio ratio) throws IOException {
        byte[] buf = new byte[1 << 16];
        long n = 0;
        int r;
        while ((r = in.read(buf)) > 0) {
            n += r;
            if (n > remaining) {
                throw tooBig(name);
            }
            ratio.check(n, name);
        }
        return n;
    }

    private static long write(InputStream in, Path target, long remaining, String name, Ratio ratio) throws IOException {
        Files.createDirectories(target.getParent());
        byte[] buf = new byte[1 << 16];
        long n = 0;
        try (OutputStream out = Files.newOutputStream(target)) {
            int r;
            while ((r = in.read(buf)) > 0) {
                n += r;
                if (n > remaining) {
                    throw tooBig(name);
                }
                ratio.check(n, name);
                out.write(buf, 0, r);
            }
        }
        return n;
    }

    private static ArchiveException tooBig(String name) {
        return new ArchiveException("unpacking stops at '" + name + "': the archive unpacks to more than the limit (a zip bomb?)");
    }

    /**
     * The raw archive stream, counted, keeping its last bytes: a zip's central directory (where the entries' Unix
     * modes live, so symbolic links show) is at its end, past what a streaming reader looks at.
     */
    private static final class Tail extends FilterInputStream {
        private static final int KEEP = 1 << 20;
        private final byte[] ring = new byte[KEEP];
        long count;

        Tail(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                ring[(int) (count++ % KEEP)] = (byte) b;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n <= 0) {
                return n;
            }
            // the last KEEP bytes of the chunk, in at most two copies around the ring (this is every upload's hot path)
            int skip = Math.max(0, n - KEEP);
            int at = (int) ((count + skip) % KEEP);
            int first = Math.min(n - skip, KEEP - at);
            System.arraycopy(b, off + skip, ring, at, first);
            System.arraycopy(b, off + skip + first, ring, 0, n - skip - first);
            count += n;
            return n;
        }

        /** The last {@code min(count, KEEP)} bytes, in order. */
        private byte[] last() {
            int n = (int) Math.min(count, KEEP);
            byte[] out = new byte[n];
            for (int i = 0; i < n; i++) {
                out[i] = ring[(int) ((count - n + i) % KEEP)];
            }
            return out;
        }

        /** Refuses symbolic links (and other non-regular Unix modes) recorded in the central directory. */
        void checkZipCentralDirectory() {
            byte[] t = last();
            int eocd = -1;
            for (int i = t.length - 22; i >= 0 && i >= t.length - 22 - 65535; i--) {
                if (le32(t, i) == 0x06054b50L) {
                    eocd = i;
                    break;
                }
            }
            if (eocd < 0) {
                throw new ArchiveException("the zip's central directory is missing or larger than " + KEEP + " bytes");
            }
            long size = le32(t, eocd + 12);
            if (size > eocd) {
                throw new ArchiveException("the zip's central directory is larger than " + KEEP + " bytes");
            }
            int p = (int) (eocd - size);
            while (p + 46 <= eocd && le32(t, p) == 0x02014b50L) {
                int madeBy = (t[p + 5] & 0xff);
                long external = le32(t, p + 38);
                int nameLen = le16(t, p + 28);
                String name = new String(t, p + 46, Math.min(nameLen, Math.max(0, eocd - p - 46)), StandardCharsets.UTF_8);
                int type = (int) (external >>> 16) & 0170000;
                if (madeBy == 3 && type != 0 && type != 0100000 && type != 040000) {
                    throw new ArchiveException("entry '" + name + "' is " + (type == 0120000 ? "a symbolic link" : "a special file")
                            + "; only regular files and folders are accepted");
                }
                p += 46 + nameLen + le16(t, p + 30) + le16(t, p + 32);
            }
        }

        private static long le32(byte[] b, int i) {
            return (b[i] & 0xffL) | (b[i + 1] & 0xffL) << 8 | (b[i + 2] & 0xffL) << 16 | (b[i + 3] & 0xffL) << 24;
        }

        private static int le16(byte[] b, int i) {
            return (b[i] & 0xff) | (b[i + 1] & 0xff) << 8;
        }
    }
}
