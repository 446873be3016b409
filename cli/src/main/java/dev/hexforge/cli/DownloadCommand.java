package dev.hexforge.cli;

import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.SigningException;
import dev.hexforge.signing.VerificationException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.concurrent.Callable;

@Command(name = "download", mixinStandardHelpOptions = true,
        description = "Download an artifact from the fleet: resumes an interrupted download, checks every file's sha256 and "
                + "the signature (and provenance), and only then moves the folder to --out. Exit 0 only when verified.")
final class DownloadCommand implements Callable<Integer> {
    @Parameters(index = "0", description = "artifact id (from `hexforge show JOB` or GET /api/v1/artifacts)")
    String id;
    @Option(names = "--out", required = true, description = "folder to create")
    Path out;
    @Option(names = "--key", description = "PEM public key to verify with (default: the fleet's key the signature names)")
    Path key;
    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Override
    public Integer call() {
        GatewayClient client = GatewayClient.fromEnvironment();
        try (ProgressBar bar = new ProgressBar("download")) {
            ArtifactDownloader.Result r = new ArtifactDownloader(client).download(id, out, key == null ? null : Keys.readPublic(key),
                    (path, done, size) -> {
                        if (!json) {
                            bar.update(path, done, size);
                        }
                    });
            bar.finish();
            if (json) {
                new Json().put("verified", true).put("folder", r.folder().toString()).put("root_digest", r.rootDigest())
                        .put("key_hint", r.keyHint()).put("provenance", r.provenance()).put("files", r.files())
                        .put("bytes", r.bytes()).put("resumed_bytes", r.resumedBytes()).put("url_renewals", r.urlRenewals()).print();
            } else {
                System.out.printf("verified: %s, %d files, root sha256 %s, signed by key %s%s%n", r.folder(), r.files(),
                        r.rootDigest(), r.keyHint(), r.provenance() ? ", provenance verified" : "");
                if (r.resumedBytes() > 0) {
                    System.out.printf("resumed: %d bytes were already there from an earlier try%n", r.resumedBytes());
                }
            }
            return 0;
        } catch (VerificationException e) {
            fail("verification FAILED: " + e.getMessage() + " (the files stay in " + ArtifactDownloader.staging(out) + ")");
            return 1;
        } catch (ArtifactDownloader.DownloadException | SigningException e) {
            fail(e.getMessage());
            return 1;
        }
    }

    private void fail(String message) {
        if (json) {
            new Json().put("verified", false).put("reason", message).print();
        }
        System.err.println("hexforge: " + message);
    }
}
