package dev.hexforge.store;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.minio.BucketExistsArgs;
import io.minio.GetObjectArgs;
import io.minio.MakeBucketArgs;
import io.minio.MinioClient;
import io.minio.PutObjectArgs;
import io.minio.StatObjectArgs;
import io.minio.errors.ErrorResponseException;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Folders stored content-addressed in an S3 bucket: every file under {@code objects/<sha256>} (identical content is
 * stored once), and a manifest listing paths, digests and sizes, itself stored by its digest. A folder is named by
 * its manifest's digest.
 */
public final class ArtifactStore {
    public static final String BUCKET = "hexforge-artifacts";
    private static final ObjectMapper JSON = new ObjectMapper();
    private final MinioClient client;
    private final MinioClient presigner;
    /** The same server with short timeouts, for {@link #ping()}: a readiness check must answer within a second or two. */
    private final MinioClient prober;

    /** One file of a stored folder. */
    public record Entry(String path, String sha256, long size) {
    }

    /** A stored folder: its manifest's digest and key, its files, and their total size. */
    public record StoredFolder(String sha256, String key, List<Entry> files, long size) {
    }

    public ArtifactStore(String endpoint, String accessKey, String secretKey) {
        this(endpoint, endpoint, accessKey, secretKey);
    }

    /**
     * @param publicEndpoint the address clients outside the fleet reach the storage at; presigned URLs name it
     */
    public ArtifactStore(String endpoint, String publicEndpoint, String accessKey, String secretKey) {
        this.client = MinioClient.builder().endpoint(endpoint).credentials(accessKey, secretKey).build();
        // a fixed region: presigning then needs no round trip to the server
        this.presigner = MinioClient.builder().endpoint(publicEndpoint).region("us-east-1").credentials(accessKey, secretKey).build();
        Duration second = Duration.ofSeconds(1);
        this.prober = MinioClient.builder().endpoint(endpoint).credentials(accessKey, secretKey)
                .httpClient(new okhttp3.OkHttpClient.Builder().connectTimeout(second).readTimeout(second).writeTimeout(second)
                        .retryOnConnectionFailure(false).build())
                .build();
        try {
            if (!client.bucketExists(BucketExistsArgs.builder().bucket(BUCKET).build())) {
                client.makeBucket(MakeBucketArgs.builder().bucket(BUCKET).build());
            }
        } catch (io.minio.errors.ErrorResponseException e) {
            String code = e.errorResponse().code();
            // services starting together race to create the bucket: whoever loses finds it made
            if (!code.equals("BucketAlreadyOwnedByYou")) {
                throw new StoreException("object storage at " + endpoint + " refused bucket " + BUCKET + ": " + e.getMessage(), e);
            }
        } catch (Exception e) {
            throw new StoreException("object storage at " + endpoint + " is not reachable: " + e.getMessage(), e);
        }
    }

    /**
     * Asks the server whether the bucket exists (a signed request: the credentials are checked too).
     *
     * @throws StoreException when it does not answer within about a second, refuses, or has lost the bucket
     */
    public void ping() {
        boolean exists;
        try {
            exists = prober.bucketExists(BucketExistsArgs.builder().bucket(BUCKET).build());
        } catch (Exception e) {
            throw new StoreException("object storage did not answer: " + e.getMessage(), e);
        }
        if (!exists) {
            throw new StoreException("object storage has no bucket " + BUCKET);
        }
    }

    /** Where an uploaded file is kept (the gateway writes it; stage services read it). */
    public static String uploadKey(String uploadId) {
        return "uploads/" + uploadId;
    }

    /** The folder of an attempt's marks (its result, its cancellation). */
    public static String attemptPrefix(String attemptId) {
        return "attempts/" + attemptId + "/";
    }

    /** The keys under a prefix (a handful: not paged beyond the first thousand). */
    public Set<String> keysUnder(String prefix) {
        try {
            Set<String> keys = new HashSet<>();
            for (var r : client.listObjects(io.minio.ListObjectsArgs.builder().bucket(BUCKET).prefix(prefix).recursive(true).build())) {
                keys.add(r.get().objectName());
            }
            return keys;
        } catch (Exception e) {
            throw new StoreException("listing " + prefix + ": " + e.getMessage(), e);
        }
    }

    /** Where a stage service keeps an attempt's completed event (a redelivered request re-emits it). */
    public static String resultKey(String attemptId) {
        return attemptPrefix(attemptId) + "completed.json";
    }

    /** The gateway's mark on a cancelled attempt: a service that takes its request later drops it. */
    public static String cancelledKey(String attemptId) {
        return attemptPrefix(attemptId) + "cancelled";
    }

    public static String key(String sha256) {
        return "objects/" + sha256;
    }

    /**
     * The digest {@link #putFolder} gives {@code dir} (the sha256 of its manifest of paths and file digests), computed
     * without storing anything: a folder made elsewhere (by the CLI) compares with a stored one by this.
     */
    public static String digest(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            List<Entry> entries = new ArrayList<>();
            for (Path f : s.filter(Files::isRegularFile).sorted().toList()) {
                entries.add(new Entry(dir.relativize(f).toString().replace('\\', '/'), sha256(f), Files.size(f)));
            }
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(JSON.writeValueAsBytes(entries)));
        } catch (Exception e) {
            throw new StoreException("digesting " + dir + ": " + e.getMessage(), e);
        }
    }

    public StoredFolder putFolder(Path dir) {
        List<Entry> entries = new ArrayList<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path f : s.filter(Files::isRegularFile).sorted().toList()) {
                String sha = sha256(f);
                long size = Files.size(f);
                if (!exists(key(sha))) {
                    try (InputStream in = Files.newInputStream(f)) {
                        client.putObject(PutObjectArgs.builder().bucket(BUCKET).object(key(sha)).stream(in, size, -1).build());
                    }
                }
                entries.add(new Entry(dir.relativize(f).toString().replace('\\', '/'), sha, size));
            }
            byte[] manifest = JSON.writeValueAsBytes(entries);
            String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(manifest));
            if (!exists(key(sha))) {
                client.putObject(PutObjectArgs.builder().bucket(BUCKET).object(key(sha))
                        .stream(new ByteArrayInputStream(manifest), manifest.length, -1).contentType("application/json").build());
            }
            return new StoredFolder(sha, key(sha), entries, entries.stream().mapToLong(Entry::size).sum());
        } catch (StoreException e) {
            throw e;
        } catch (Exception e) {
            throw new StoreException("storing " + dir + ": " + e.getMessage(), e);
        }
    }

    /** The files of a stored folder, as listed by its manifest. */
    public List<Entry> manifest(String manifestSha) {
        try (InputStream in = client.getObject(GetObjectArgs.builder().bucket(BUCKET).object(key(manifestSha)).build())) {
            return List.of(JSON.readValue(in.readAllBytes(), Entry[].class));
        } catch (Exception e) {
            throw new StoreException("reading the manifest of folder " + manifestSha + ": " + e.getMessage(), e);
        }
    }

    /** A URL that lets anyone holding it GET the object (Range requests included) until it expires. */
    /**
     * A presigned GET of {@code key} valid for {@code ttl}; with {@code fileName}, the response names the file
     * (Content-Disposition), so a browser saves {@code model.onnx} rather than the object's content-addressed key.
     */
    public String presignedGet(String key, Duration ttl, String fileName) {
        try {
            io.minio.GetPresignedObjectUrlArgs.Builder args = io.minio.GetPresignedObjectUrlArgs.builder().method(io.minio.http.Method.GET)
                    .bucket(BUCKET).object(key).expiry((int) Math.max(1, ttl.toSeconds()));
            if (fileName != null) {
                String safe = fileName.replaceAll("[^A-Za-z0-9._-]", "_");
                args.extraQueryParams(Map.of("response-content-disposition", "attachment; filename=\"" + safe + "\""));
            }
            return presigner.getPresignedObjectUrl(args.build());
        } catch (Exception e) {
            throw new StoreException("presigning " + key + ": " + e.getMessage(), e);
        }
    }

    /** Downloads a stored folder into {@code dir}, checking every file's digest. */
    public List<Entry> getFolder(String manifestSha, Path dir) {
        try {
            List<Entry> entries = manifest(manifestSha);
            for (Entry e : entries) {
                Path target = dir.resolve(e.path()).normalize();
                if (!target.startsWith(dir.normalize())) {
                    throw new StoreException("manifest " + manifestSha + " names a path outside the folder: " + e.path());
                }
                Files.createDirectories(target.getParent());
                MessageDigest md = MessageDigest.getInstance("SHA-256");
                try (InputStream in = new DigestInputStream(client.getObject(GetObjectArgs.builder().bucket(BUCKET).object(key(e.sha256())).build()), md)) {
                    Files.copy(in, target);
                }
                String got = HexFormat.of().formatHex(md.digest());
                if (!got.equals(e.sha256())) {
                    throw new StoreException("object " + e.sha256() + " (" + e.path() + ") is corrupt in storage: digest " + got);
                }
            }
            return entries;
        } catch (StoreException e) {
            throw e;
        } catch (Exception e) {
            throw new StoreException("fetching folder " + manifestSha + ": " + e.getMessage(), e);
        }
    }

    public boolean exists(String key) {
        try {
            client.statObject(StatObjectArgs.builder().bucket(BUCKET).object(key).build());
            return true;
        } catch (ErrorResponseException e) {
            if ("NoSuchKey".equals(e.errorResponse().code()) || "NoSuchObject".equals(e.errorResponse().code())) {
                return false;
            }
            throw new StoreException("checking " + key + ": " + e.getMessage(), e);
        } catch (Exception e) { // a StoreException, so a store that does not answer counts as away (unreachable)
            throw new StoreException("checking " + key + ": " + e.getMessage(), e);
        }
    }

    /**
     * Streams an object of unknown length into storage (multipart, 16 MiB parts: memory stays bounded whatever the
     * size). When the stream fails, nothing is left under the key.
     */
    public void putStream(String key, InputStream in, String contentType) {
        try {
            client.putObject(PutObjectArgs.builder().bucket(BUCKET).object(key).stream(in, -1, 16L << 20)
                    .contentType(contentType).build());
        } catch (Exception e) {
            deleteQuietly(key);
            throw new StoreException("storing " + key + ": " + e.getMessage(), e);
        }
    }

    /** Reads an object as a stream; the caller closes it. */
    public InputStream getStream(String key) {
        try {
            return client.getObject(GetObjectArgs.builder().bucket(BUCKET).object(key).build());
        } catch (Exception e) {
            throw new StoreException("reading " + key + ": " + e.getMessage(), e);
        }
    }

    public void deleteQuietly(String key) {
        try {
            client.removeObject(io.minio.RemoveObjectArgs.builder().bucket(BUCKET).object(key).build());
        } catch (Exception ignored) {
            // nothing there, or storage unreachable: nothing more to undo
        }
    }

    /** Small JSON documents (attempt results) under a key of the caller's choosing. */
    public void putJson(String key, Object value) {
        try {
            putBytes(key, JSON.writeValueAsBytes(value), "application/json");
        } catch (IOException e) {
            throw new StoreException("storing " + key + ": " + e.getMessage(), e);
        }
    }

    /** A small object under a key of the caller's choosing. */
    public void putBytes(String key, byte[] b, String contentType) {
        try {
            client.putObject(PutObjectArgs.builder().bucket(BUCKET).object(key).stream(new ByteArrayInputStream(b), b.length, -1)
                    .contentType(contentType).build());
        } catch (Exception e) {
            throw new StoreException("storing " + key + ": " + e.getMessage(), e);
        }
    }

    public byte[] getBytes(String key) {
        try (InputStream in = client.getObject(GetObjectArgs.builder().bucket(BUCKET).object(key).build())) {
            return in.readAllBytes();
        } catch (Exception e) {
            throw new StoreException("reading " + key + ": " + e.getMessage(), e);
        }
    }

    /** The sha256 of a stored object, read back as a stream. */
    public String sha256(String key) {
        try (InputStream in = getStream(key)) {
            return sha256(in);
        } catch (IOException e) {
            throw new StoreException("reading " + key + ": " + e.getMessage(), e);
        }
    }

    static String sha256(Path f) throws IOException {
        try (InputStream in = Files.newInputStream(f)) {
            return sha256(in);
        }
    }

    private static String sha256(InputStream in) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 16]; // hashing is no faster with more; a fleet hashes every file of every output
            int n;
            while ((n = in.read(buf)) > 0) {
                md.update(buf, 0, n);
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Whether a failure (anywhere in its causes) is the store away for now — refusing the connection, dropping or
     * timing out one in use, or answering with S3's errors to try again later (InternalError, ServiceUnavailable,
     * SlowDown, or a bare 5xx; what a server says while it shuts down) — as opposed to refusing a request or holding
     * something unexpected.
     */
    public static boolean unreachable(Throwable e) {
        boolean store = false;
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            store |= t instanceof StoreException;
            if (store && (t instanceof SocketException || t instanceof SocketTimeoutException
                    || t instanceof EOFException
                    || t instanceof ErrorResponseException r && TRY_AGAIN.contains(r.errorResponse().code())
                    || t instanceof io.minio.errors.ServerException s && s.statusCode() >= 500)) {
                return true;
            }
        }
        return false;
    }

    private static final Set<String> TRY_AGAIN = Set.of("InternalError", "ServiceUnavailable", "SlowDown");

    /** Object storage failed or holds something unexpected. */
    public static class StoreException extends RuntimeException {
        public StoreException(String message, Throwable cause) {
            super(message, cause);
        }

        public StoreException(String message) {
            super(message);
        }
    }
}
