package dev.hexforge.io;

import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.HostileArchives;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.zip.GZIPOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ModelArchiveTest {
    @TempDir
    Path tmp;

    /** A tar of name → content (null content: a folder); a name starting with "link:" is a symbolic link. */
    static byte[] tar(boolean gzip, List<String[]> entries) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (var out = gzip ? new GZIPOutputStream(bytes) : bytes; TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            for (String[] e : entries) {
                if (e[0].startsWith("link:")) {
                    TarArchiveEntry l = new TarArchiveEntry(e[0].substring(5), TarArchiveEntry.LF_SYMLINK);
                    l.setLinkName(e[1]);
                    t.putArchiveEntry(l);
                    t.closeArchiveEntry();
                    continue;
                }
                TarArchiveEntry te = new TarArchiveEntry(e[0], true); // keep absolute names, as `tar -P` does
                byte[] data = e[1] == null ? new byte[0] : e[1].getBytes(StandardCharsets.ISO_8859_1);
                te.setSize(data.length);
                t.putArchiveEntry(te);
                t.write(data);
                t.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }

    static byte[] zip(List<String[]> entries) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipArchiveOutputStream z = new ZipArchiveOutputStream(bytes)) {
            for (String[] e : entries) {
                ZipArchiveEntry ze = new ZipArchiveEntry(e[0]);
                z.putArchiveEntry(ze);
                z.write(e[1].getBytes(StandardCharsets.UTF_8));
                z.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }

    String refused(byte[] archive) {
        return assertThrows(ModelArchive.ArchiveException.class,
                () -> ModelArchive.scan(new ByteArrayInputStream(archive), ModelArchive.Limits.DEFAULT)).getMessage();
    }

    @Test
    void aModelFolderPackedWithItsTopFolderUnpacksToTheFolderItself() throws Exception {
        List<String[]> entries = new java.util.ArrayList<>();
        entries.add(new String[]{"qwen2-tiny/", null});
        for (String f : new String[]{"config.json", "model.safetensors", "tokenizer.json"}) {
            entries.add(new String[]{"qwen2-tiny/" + f, Files.readString(Fixtures.qwen2Tiny().resolve(f), StandardCharsets.ISO_8859_1)});
        }
        byte[] tgz = tar(true, entries);
        ModelArchive.Listing l = ModelArchive.scan(new ByteArrayInputStream(tgz), ModelArchive.Limits.DEFAULT);
        assertEquals(ModelArchive.Format.TAR_GZ, l.format());
        assertEquals(3, l.files());
        Path out = tmp.resolve("model");
        ModelArchive.extract(new ByteArrayInputStream(tgz), out, ModelArchive.Limits.DEFAULT);
        assertArrayEquals(Files.readAllBytes(Fixtures.qwen2Tiny().resolve("config.json")), Files.readAllBytes(out.resolve("config.json")));
        assertEquals(Files.size(Fixtures.qwen2Tiny().resolve("model.safetensors")), Files.size(out.resolve("model.safetensors")));

        Path flat = tmp.resolve("flat");
        ModelArchive.Listing z = ModelArchive.extract(new ByteArrayInputStream(zip(List.of(new String[]{"config.json", "{}"},
                new String[]{"sub/a.txt", "a"}))), flat, ModelArchive.Limits.DEFAULT);
        assertEquals(ModelArchive.Format.ZIP, z.format());
        assertEquals("{}", Files.readString(flat.resolve("config.json")));
        assertEquals("a", Files.readString(flat.resolve("sub/a.txt")));
        assertEquals(ModelArchive.Format.TAR, ModelArchive.scan(new ByteArrayInputStream(tar(false, List.<String[]>of(
                new String[]{"config.json", "{}"}))), ModelArchive.Limits.DEFAULT).format());
    }

    @Test
    void hostileArchivesAreRefusedNamingTheEntry() throws Exception {
        assertTrue(refused(tar(true, List.<String[]>of(new String[]{"m/config.json", "{}"}, new String[]{"m/../../etc/cron.d/x", "boom"})))
                .contains("'m/../../etc/cron.d/x' climbs out"));
        assertTrue(refused(zip(List.<String[]>of(new String[]{"../evil.sh", "boom"}))).contains("climbs out"));
        assertTrue(refused(tar(false, List.<String[]>of(new String[]{"/etc/passwd", "x"}))).contains("absolute path"));
        assertTrue(refused(tar(false, List.<String[]>of(new String[]{"config.json", "{}"}, new String[]{"link:weights", "/etc/shadow"})))
                .contains("'weights' is a symbolic link"));
        assertTrue(refused(zip(List.<String[]>of(new String[]{"a", "1"}, new String[]{"a", "2"}))).contains("appears twice"));
        // a NUL is no path on this machine (found by ModelArchiveFuzzTest); a bidi override shows a name it is not
        assertTrue(refused(zip(List.<String[]>of(new String[]{"m/conf\u0000.json", "{}"}))).contains("U+0000 at position 6"));
        assertTrue(refused(tar(false, List.<String[]>of(new String[]{"m/x\u202Enosj.exe", "{}"}))).contains("'m/x?nosj.exe'"));
        assertTrue(refused(tar(true, List.<String[]>of(new String[]{"m/" + "a".repeat(1100), "{}"}))).contains("at most 1024"));
        // an entry compressed with zstd (zip method 93) needed a codec the reader has not: an Error escaped (fuzzing found it)
        byte[] zstd = zip(List.<String[]>of(new String[]{"m/config.json", "{}"}));
        zstd[8] = 93;
        zstd[9] = 0;
        assertTrue(refused(zstd).contains("'m/config.json' is compressed with zip method 93"), refused(zstd));
        assertTrue(refused("just some text".getBytes(StandardCharsets.UTF_8)).contains("not a zip, tar or tar.gz"));
        byte[] ok = tar(true, List.<String[]>of(new String[]{"config.json", "x".repeat(200_000)}));
        assertTrue(refused(Arrays.copyOf(ok, ok.length / 2)).contains("damaged or cut off"));
        String bomb = assertThrows(ModelArchive.ArchiveException.class, () -> ModelArchive.scan(new ByteArrayInputStream(ok),
                new ModelArchive.Limits(10, 100_000, 20))).getMessage();
        assertTrue(bomb.contains("more than the limit"), bomb);

        Path out = tmp.resolve("never");
        assertThrows(ModelArchive.ArchiveException.class, () -> ModelArchive.extract(new ByteArrayInputStream(
                tar(false, List.<String[]>of(new String[]{"config.json", "{}"}, new String[]{"../x", "y"}))), out, ModelArchive.Limits.DEFAULT));
        assertFalse(Files.exists(out), "a refused archive leaves no folder behind");
        assertFalse(Files.exists(tmp.resolve("x")));
    }

    @Test
    void bombsByRatioLinksAndSecondSpellingsAreRefused() throws Exception {
        // 100 MB of zeros gzip to about 100 KB: a thousandfold, refused once past the floor
        String bomb = refused(HostileArchives.zerosTarGz(100));
        assertTrue(bomb.contains("more than 20 times (a zip bomb?)"), bomb);

        // a zip symbolic link: its mode lives only in the central directory, which a streaming reader never sees
        byte[] zipped = HostileArchives.zipWithSymlink("weights", "/etc/shadow");
        assertTrue(refused(zipped).contains("'weights' is a symbolic link"));
        Path out = tmp.resolve("linked");
        assertThrows(ModelArchive.ArchiveException.class, () -> ModelArchive.extract(new ByteArrayInputStream(zipped), out,
                ModelArchive.Limits.DEFAULT));
        assertFalse(Files.exists(out));

        // a tar hard link, and a second spelling of a name that is already there
        assertTrue(refused(HostileArchives.tarWith("weights", TarArchiveEntry.LF_LINK, "/etc/shadow")).contains("'weights' is a hard link"));
        assertTrue(refused(tar(false, List.<String[]>of(new String[]{"a/config.json", "{}"}, new String[]{"a/./config.json", "{}"})))
                .contains("'a/./config.json' is not a plain path"));
        assertTrue(refused(tar(false, List.<String[]>of(new String[]{"a//config.json", "{}"}))).contains("not a plain path"));
        // an ordinary zip (a regular file's mode set) still passes, central directory read
        ByteArrayOutputStream plain = new ByteArrayOutputStream();
        try (ZipArchiveOutputStream z = new ZipArchiveOutputStream(plain)) {
            ZipArchiveEntry f = new ZipArchiveEntry("config.json");
            f.setUnixMode(0100644);
            z.putArchiveEntry(f);
            z.write("{}".getBytes(StandardCharsets.UTF_8));
            z.closeArchiveEntry();
        }
        assertEquals(1, ModelArchive.scan(new ByteArrayInputStream(plain.toByteArray()), ModelArchive.Limits.DEFAULT).files());
    }
}
