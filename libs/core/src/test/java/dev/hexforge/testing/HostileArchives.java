package dev.hexforge.testing;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipArchiveOutputStream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.zip.GZIPOutputStream;

/** Archives an attacker would upload, built in memory: a compression bomb, links, a second spelling of a name. */
public final class HostileArchives {
    private HostileArchives() {
    }

    /** A tar.gz holding one file of {@code mb} MiB of zeros: about a thousandfold compression. */
    public static byte[] zerosTarGz(int mb) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(bytes); TarArchiveOutputStream t = new TarArchiveOutputStream(gz)) {
            TarArchiveEntry e = new TarArchiveEntry("model.safetensors");
            e.setSize((long) mb << 20);
            t.putArchiveEntry(e);
            byte[] zeros = new byte[1 << 20];
            for (int i = 0; i < mb; i++) {
                t.write(zeros);
            }
            t.closeArchiveEntry();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** A zip with config.json and an entry whose Unix mode (in the central directory only) makes it a link. */
    public static byte[] zipWithSymlink(String name, String target) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipArchiveOutputStream z = new ZipArchiveOutputStream(bytes)) {
            z.putArchiveEntry(new ZipArchiveEntry("config.json"));
            z.write("{}".getBytes(StandardCharsets.UTF_8));
            z.closeArchiveEntry();
            ZipArchiveEntry link = new ZipArchiveEntry(name);
            link.setUnixMode(0120777);
            z.putArchiveEntry(link);
            z.write(target.getBytes(StandardCharsets.UTF_8));
            z.closeArchiveEntry();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * A tar with config.json and one more entry of the given type: a symbolic or hard link to {@code target}, or
     * (target null) a regular file, e.g. under a second spelling of config.json.
     */
    public static byte[] tarWith(String name, byte type, String target) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream t = new TarArchiveOutputStream(bytes)) {
            TarArchiveEntry c = new TarArchiveEntry("config.json");
            c.setSize(2);
            t.putArchiveEntry(c);
            t.write("{}".getBytes(StandardCharsets.UTF_8));
            t.closeArchiveEntry();
            TarArchiveEntry e = new TarArchiveEntry(name, type);
            if (target != null) {
                e.setLinkName(target);
            } else {
                e.setSize(2);
            }
            t.putArchiveEntry(e);
            if (target == null) {
                t.write("{}".getBytes(StandardCharsets.UTF_8));
            }
            t.closeArchiveEntry();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }
}
