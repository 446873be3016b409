package dev.hexforge.client;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.signing.FolderHasher;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.ModelSignature;
import dev.hexforge.signing.Provenance;
import dev.hexforge.signing.VerificationException;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.PublicKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Downloads an artifact folder from the fleet and only then puts it in place: every file from a presigned URL into
 * {@code OUT.partial/} (resuming a file cut off earlier with an HTTP Range request, renewing a URL that expired),
 * each file's sha256 checked, then the OMS signature (and the provenance, when there is one) verified, then the
 * folder moved to {@code OUT}. A failed or interrupted download leaves {@code OUT.partial/} to resume from and never a
 * half-written {@code OUT}. While the gateway or the storage is away (not reachable, or answering 502/503/504) the
 * download waits and tries again, resuming, for up to its patience (two minutes unless told).
 */
public final class ArtifactDownloader {
    private static final int TRIES = 4;
    public static final Duration PATIENCE = Duration.ofMinutes(2);
    private final GatewayClient gateway;
    private final Duration patience;

    /** What a finished download established. */
    public record Result(Path folder, String rootDigest, PublicKey key, String keyHint, boolean provenance, int files, long bytes,
                         long resumedBytes, int urlRenewals) {
    }

    /** Progress of one file: called once its URL is in hand (with what an earlier try left), then as bytes arrive. */
    public interface Listener {
        void bytes(String path, long done, long size);
    }

    public ArtifactDownloader(GatewayClient gateway) {
        this(gateway, PATIENCE);
    }

    /** @param patience how long to keep trying while the gateway or the storage is away */
    public ArtifactDownloader(GatewayClient gateway, Duration patience) {
        this.gateway = gateway;
        this.patience = patience;
    }

    /** The staging folder a download of {@code out} writes to, and resumes from. */
    public static Path staging(Path out) {
        return out.resolveSibling(out.getFileName() + ".partial");
    }

    /**
     * @param key the public key to verify with; null takes the fleet's key whose hint the artifact's signature names
     */
    /**
     * Downloads and verifies against pinned keys only: the one whose hint the signature names must be among
     * {@code trusted}, whatever keys the gateway lists (a device runner's way: a compromised gateway cannot slip it a key).
     */
    public Result downloadPinned(String artifactId, Path out, List<PublicKey> trusted, Listener listener) {
        String hint = patiently(() -> gateway.ok(gateway.send("GET", "/api/v1/artifacts/" + artifactId, null, null)))
                .path("signature").path("keyHint").asText();
        PublicKey key = trusted.stream().filter(k -> Keys.hint(k).equals(hint)).findFirst().orElseThrow(() -> new VerificationException(
                "artifact " + artifactId + " is signed with key " + hint + ", which is not among the keys this runner trusts ("
                        + String.join(", ", trusted.stream().map(Keys::hint).toList()) + ")"));
        return download(artifactId, out, key, listener);
    }

    public Result download(String artifactId, Path out, PublicKey key, Listener listener) {
        return patiently(() -> downloadOnce(artifactId, out, key, listener));
    }

    /**
     * Runs the attempt again while it fails for want of the gateway or the storage, 0.5 s, 1, 2, 4 and then 5 s apart,
     * for up to the patience; any other failure, and the last one, is thrown.
     */
    private <T> T patiently(Supplier<T> attempt) {
        long start = System.nanoTime();
        long pause = 500;
        while (true) {
            try {
                return attempt.get();
            } catch (GatewayClient.GatewayException | DownloadException e) {
                boolean again = e instanceof GatewayClient.GatewayException g ? g.worthRetrying() : ((DownloadException) e).worthRetrying();
                long waited = (System.nanoTime() - start) / 1_000_000;
                if (!again) {
                    throw e;
                }
                if (waited + pause > patience.toMillis()) {
                    throw new DownloadException(e.getMessage() + " (still so after trying for " + waited / 1000 + " s; run the same command "
                            + "again to resume)", e, true);
                }
            }
            try {
                Thread.sleep(pause);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new DownloadException("interrupted while waiting to try again", ie);
            }
            pause = Math.min(pause * 2, 5_000);
        }
    }

    private Result downloadOnce(String artifactId, Path out, PublicKey key, Listener listener) {
        if (Files.exists(out)) {
            throw new DownloadException(out + " already exists; choose another --out or remove it");
        }
        JsonNode detail = gateway.ok(gateway.send("GET", "/api/v1/artifacts/" + artifactId, null, null));
        Path stage = staging(out);
        List<String[]> files = new ArrayList<>(); // path, sha256 (null: the signature), size
        for (JsonNode f : detail.path("files")) {
            files.add(new String[]{f.path("path").asText(), f.path("sha256").asText(), f.path("size").asText()});
        }
        files.add(new String[]{ModelSignature.DEFAULT_SIGNATURE, null, "-1"});
        long bytes = 0;
        long resumed = 0;
        Map<String, String> known = new HashMap<>(); // hashed while written: not read again
        int renewals = 0;
        try {
            Files.createDirectories(stage);
            for (String[] f : files) {
                Path target = stage.resolve(f[0]).normalize();
                if (!target.startsWith(stage.normalize()) || f[0].isEmpty()) {
                    throw new DownloadException("artifact " + artifactId + " names a file outside its folder: '" + f[0] + "'");
                }
                Files.createDirectories(target.getParent());
                long size = Long.parseLong(f[2]);
                Fetch got = fetch(artifactId, f[0], target, f[1], size, listener);
                if (got.digest != null && f[1] != null) {
                    known.put(f[0], got.digest);
                }
                bytes += got.bytes;
                resumed += got.resumed;
                renewals += got.renewals;
            }
        } catch (IOException e) {
            throw new DownloadException("downloading artifact " + artifactId + " into " + stage + ": " + e.getMessage()
                    + " (run the same command again to resume)", e);
        }
        String hint = detail.path("signature").path("keyHint").asText();
        PublicKey verifyWith = key != null ? key : fleetKey(hint);
        ModelSignature.Verified v = ModelSignature.verify(stage, verifyWith, stage.resolve(ModelSignature.DEFAULT_SIGNATURE), List.of(), known);
        boolean provenance = Files.exists(stage.resolve(Provenance.FILE));
        if (provenance) {
            Provenance.verify(stage, verifyWith, known);
        }
        try {
            Files.move(stage, out, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new DownloadException("moving the verified folder " + stage + " to " + out + ": " + e.getMessage(), e);
        }
        return new Result(out, v.rootDigest(), verifyWith, Keys.hint(verifyWith), provenance, files.size(), bytes, resumed, renewals);
    }

    /** @param digest the file's sha256 when it was hashed as it was written, else null */
    private record Fetch(long bytes, long resumed, int renewals, String digest) {
    }

    /**
     * One file: resumes a partial one, renews an expired URL, retries a cut connection, and checks the digest; a
     * partial file whose digest turns out wrong is fetched once more from the start.
     */
    private Fetch fetch(String id, String path, Path target, String sha256, long size, Listener listener) throws IOException {
        if (sha256 != null && Files.exists(target) && Files.size(target) == size && FolderHasher.sha256(target).equals(sha256)) {
            return new Fetch(0, size, 0, null); // finished in an earlier run
        }
        if (sha256 == null || (Files.exists(target) && Files.size(target) > size)) {
            Files.deleteIfExists(target); // the signature is small and has no digest to resume against
        }
        long resumedFrom = Files.exists(target) ? Files.size(target) : 0;
        int renewals = 0;
        boolean restarted = false;
        IOException last = null;
        URI url = url(id, path);
        listener.bytes(path, resumedFrom, size);
        for (int tryNo = 0; tryNo < TRIES; tryNo++) {
            long have = Files.exists(target) ? Files.size(target) : 0;
            // the storage GET goes through HttpURLConnection: it streams large bodies about twice as fast as HttpClient
            HttpURLConnection r = (HttpURLConnection) url.toURL().openConnection();
            r.setConnectTimeout(10_000);
            r.setReadTimeout(600_000);
            r.setInstanceFollowRedirects(false);
            if (have > 0) {
                r.setRequestProperty("Range", "bytes=" + have + "-");
            }
            int status;
            try {
                status = r.getResponseCode();
            } catch (IOException e) { // the storage not reachable: a moment, then the next try
                last = e;
                pauseBeforeTry(tryNo);
                continue;
            }
            if (status == 403) {
                r.disconnect();
                url = url(id, path); // the presigned URL expired: ask the gateway for a fresh one
                renewals++;
                continue;
            }
            String streamedDigest = null; // a file fetched whole in one go is hashed as it is written, not read again
            if (status == 416 && have == size) {
                r.disconnect();
            } else if (status == 200 || status == 206) {
                boolean append = status == 206;
                MessageDigest md = sha256();
                try (InputStream in = r.getInputStream(); OutputStream o = Files.newOutputStream(target, StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE, append ? StandardOpenOption.APPEND : StandardOpenOption.TRUNCATE_EXISTING)) {
                    long done = append ? have : 0;
                    byte[] buf = new byte[1 << 20];
                    int n;
                    while ((n = in.read(buf)) > 0) {
                        o.write(buf, 0, n);
                        md.update(buf, 0, n);
                        done += n;
                        listener.bytes(path, done, size);
                    }
                } catch (IOException e) {
                    last = e; // keep what arrived; the next try resumes from there
                    pauseBeforeTry(tryNo);
                    continue;
                }
                if (!append) {
                    streamedDigest = HexFormat.of().formatHex(md.digest());
                }
            } else {
                InputStream err = r.getErrorStream();
                String body = err == null ? "" : new String(err.readAllBytes(), StandardCharsets.UTF_8);
                throw new DownloadException("storage answered " + status + " for '" + path + "': " + body.strip(), null, status >= 500);
            }
            if (sha256 == null || (streamedDigest != null ? streamedDigest : FolderHasher.sha256(target)).equals(sha256)) {
                return new Fetch(Files.size(target), resumedFrom, renewals, streamedDigest);
            }
            if (restarted) {
                throw new DownloadException("'" + path + "' arrived with the wrong sha256 twice (expected " + sha256
                        + "); storage or the network corrupts it");
            }
            Files.delete(target); // a stale or damaged partial file: fetch it whole
            restarted = true;
            resumedFrom = 0;
        }
        throw new DownloadException("'" + path + "' could not be fetched in " + TRIES + " tries"
                + (last != null ? ": " + last.getMessage() : renewals > 0 ? " (its URL kept expiring)" : ""), last, last != null);
    }

    private static void pauseBeforeTry(int tryNo) {
        try {
            Thread.sleep(250L << tryNo);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private URI url(String id, String path) {
        GatewayClient.Reply r = gateway.send("GET", "/api/v1/artifacts/" + id + "/download?path="
                + URLEncoder.encode(path, StandardCharsets.UTF_8), null, null);
        if (r.status() != 302) {
            gateway.ok(r);
            throw new DownloadException("the gateway answered " + r.status() + " instead of a redirect for '" + path + "'");
        }
        return URI.create(r.body().path("url").asText());
    }

    private PublicKey fleetKey(String hint) {
        for (JsonNode k : gateway.ok(gateway.send("GET", "/api/v1/keys", null, null)).path("keys")) {
            if (k.path("hint").asText().equals(hint)) {
                PublicKey pk = Keys.parsePublic(k.path("pem").asText(), "the fleet's key " + hint);
                if (!Keys.hint(pk).equals(hint)) {
                    throw new VerificationException("the fleet's key listed under hint " + hint + " has another hint");
                }
                return pk;
            }
        }
        throw new VerificationException("the artifact is signed with key " + hint + ", which the fleet no longer lists; "
                + "verify with --key and that key's public PEM");
    }

    /** A download that could not finish; what arrived stays in the staging folder. */
    public static final class DownloadException extends RuntimeException {
        private final boolean worthRetrying;

        public DownloadException(String message) {
            this(message, null, false);
        }

        public DownloadException(String message, Throwable cause) {
            this(message, cause, false);
        }

        /** @param worthRetrying the storage or the network failed, not the artifact: the same download may succeed later */
        public DownloadException(String message, Throwable cause, boolean worthRetrying) {
            super(message, cause);
            this.worthRetrying = worthRetrying;
        }

        public boolean worthRetrying() {
            return worthRetrying;
        }
    }
}
