package dev.hexforge.gateway.upload;

import dev.hexforge.contracts.PlainText;
import dev.hexforge.gateway.config.GatewayProperties;
import dev.hexforge.io.ModelArchive;
import dev.hexforge.store.ArtifactStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Locale;
import java.util.UUID;

/**
 * Receives model archives: the request body streams straight into object storage (multipart underneath, never whole
 * in memory or on the gateway's disk), counted against the size limit and hashed on the way; then the stored archive
 * is read back once to check every entry. Only a complete, well-formed archive gets a row; anything else leaves
 * nothing behind.
 */
@Service
public class UploadService {
    private static final Logger LOG = LoggerFactory.getLogger(UploadService.class);
    private final ArtifactStore store;
    private final UploadRepository uploads;
    private final long maxBytes;
    private final long tenantQuota;

    /** An upload refused with an HTTP status and a message saying what was wrong. */
    static final class UploadRejectedException extends RuntimeException {
        final int status;

        UploadRejectedException(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    UploadService(ArtifactStore store, UploadRepository uploads, GatewayProperties settings) {
        this.store = store;
        this.uploads = uploads;
        this.maxBytes = settings.uploads().maxSize().toBytes();
        this.tenantQuota = settings.uploads().tenantQuota().toBytes();
    }

    long maxBytes() {
        return maxBytes;
    }

    UploadEntity receive(String tenant, String name, long declaredLength, InputStream body) {
        if (name == null || name.isBlank() || name.length() > 200 || name.contains("/") || name.contains("\\")) {
            throw new UploadRejectedException(400, "name the upload with ?name=FILE (a file name of at most 200 characters, no slashes)");
        }
        String hidden = PlainText.problem(name, 200);
        if (hidden != null) {
            throw new UploadRejectedException(400, "name: " + hidden);
        }
        if (declaredLength > maxBytes) {
            throw new UploadRejectedException(413, "the upload is " + declaredLength + " bytes; this fleet accepts at most "
                    + maxBytes + " (hexforge.uploads.max-size)");
        }
        UUID id = UUID.randomUUID();
        String key = ArtifactStore.uploadKey(id.toString());
        Metered in = new Metered(body, maxBytes);
        try {
            store.putStream(key, in, "application/octet-stream");
        } catch (ArtifactStore.StoreException e) {
            if (in.tooLarge) {
                throw new UploadRejectedException(413, "the upload passed " + maxBytes + " bytes, the most this fleet accepts "
                        + "(hexforge.uploads.max-size); nothing was stored");
            }
            if (in.clientFailure != null) {
                throw new UploadRejectedException(400, "the upload was cut off after " + in.count + " bytes ("
                        + in.clientFailure.getMessage() + "); nothing was stored — send it again");
            }
            throw new UploadRejectedException(503, "object storage failed while storing the upload: " + e.getMessage());
        }
        if (declaredLength >= 0 && in.count != declaredLength) {
            store.deleteQuietly(key);
            throw new UploadRejectedException(400, "the upload was cut off: " + in.count + " of " + declaredLength
                    + " bytes arrived; nothing was stored — send it again");
        }
        String dataFormat = dataFormatOf(name);
        ModelArchive.Listing listing;
        try (InputStream stored = store.getStream(key)) {
            // a data file is read by the stage that names it (and its errors reported there); an archive is checked here
            listing = dataFormat != null ? null : ModelArchive.scan(stored, ModelArchive.Limits.DEFAULT);
        } catch (ModelArchive.ArchiveException e) {
            store.deleteQuietly(key);
            throw new UploadRejectedException(400, "'" + name + "' was refused: " + e.getMessage());
        } catch (IOException e) {
            store.deleteQuietly(key);
            throw new UploadRejectedException(503, "reading the stored upload back: " + e.getMessage());
        }
        long unpacked = listing == null ? in.count : listing.unpackedBytes();
        long held = uploads.unpackedBytes(tenant);
        if (held + unpacked > tenantQuota) {
            store.deleteQuietly(key);
            throw new UploadRejectedException(413, "'" + name + "' unpacks to " + unpacked + " bytes; this tenant's uploads already "
                    + "hold " + held + " of the " + tenantQuota + " allowed (hexforge.uploads.tenant-quota); nothing was stored");
        }
        UploadEntity u = new UploadEntity();
        u.id = id;
        u.tenant = tenant;
        u.name = name;
        u.size = in.count;
        u.sha256 = HexFormat.of().formatHex(in.digest.digest());
        u.objectKey = key;
        u.format = dataFormat != null ? dataFormat : listing.format().name().toLowerCase().replace('_', '.');
        u.files = listing == null ? 1 : listing.files();
        u.unpackedSize = unpacked;
        u.createdAt = Instant.now();
        uploads.save(u);
        LOG.info("upload {} ({}, {} bytes, {} files) stored for tenant {}", id, name, u.size, u.files, tenant);
        return u;
    }

    /** Data files (training, evaluation, calibration) are told by their name; anything else must be a model archive. */
    static String dataFormatOf(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return n.endsWith(".jsonl") ? "jsonl" : n.endsWith(".json") ? "json" : n.endsWith(".txt") ? "text" : null;
    }

    /** The file extension of a data format. */
    public static String extensionOf(String format) {
        return format.equals("text") ? "txt" : format;
    }

    public static boolean isDataFormat(String format) {
        return format.equals("jsonl") || format.equals("json") || format.equals("text");
    }

    /** Counts, hashes and limits the request body, remembering why it stopped. */
    private static final class Metered extends FilterInputStream {
        final MessageDigest digest;
        final long max;
        long count;
        boolean tooLarge;
        IOException clientFailure;

        Metered(InputStream in, long max) {
            super(in);
            this.max = max;
            try {
                this.digest = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n;
            try {
                n = super.read(b, off, len);
            } catch (IOException e) {
                clientFailure = e;
                throw e;
            }
            if (n > 0) {
                count += n;
                if (count > max) {
                    tooLarge = true;
                    throw new IOException("upload over the size limit");
                }
                digest.update(b, off, n);
            }
            return n;
        }
    }
}
