package dev.hexforge.infra;

import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.nio2blob.FilesystemNio2BlobStore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;

/** An S3-compatible server (s3proxy over the file system) with real signature checks, objects under {@code dir}. */
public final class EmbeddedS3 implements AutoCloseable {
    private final S3Proxy proxy;
    private final int port;
    private final String accessKey;
    private final String secretKey;

    private EmbeddedS3(S3Proxy proxy, int port, String accessKey, String secretKey) {
        this.proxy = proxy;
        this.port = port;
        this.accessKey = accessKey;
        this.secretKey = secretKey;
    }

    public static EmbeddedS3 start(Path dir, int port, String accessKey, String secretKey) {
        try {
            Files.createDirectories(dir);
            S3Proxy proxy = S3Proxy.builder()
                    .blobStore(new FilesystemNio2BlobStore(dir.toAbsolutePath().toString()))
                    .endpoint(URI.create("http://127.0.0.1:" + port))
                    .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, accessKey, secretKey)
                    .build();
            proxy.start();
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (!"STARTED".equals(proxy.getState())) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("s3proxy did not start within 30 s (state " + proxy.getState() + ")");
                }
                Thread.sleep(20);
            }
            return new EmbeddedS3(proxy, port, accessKey, secretKey);
        } catch (IOException e) {
            throw new UncheckedIOException("starting S3 in " + dir + ": " + e.getMessage(), e);
        } catch (Exception e) {
            throw new IllegalStateException("starting S3 on port " + port + ": " + e.getMessage(), e);
        }
    }

    public String endpoint() {
        return "http://127.0.0.1:" + port;
    }

    public String accessKey() {
        return accessKey;
    }

    public String secretKey() {
        return secretKey;
    }

    @Override
    public void close() {
        try {
            proxy.stop();
        } catch (Exception e) {
            throw new IllegalStateException("stopping s3proxy: " + e.getMessage(), e);
        }
    }
}
