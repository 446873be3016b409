package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.Provenance;
import dev.hexforge.signing.ModelSignature;
import dev.hexforge.signing.VerificationException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

@Command(name = "verify", mixinStandardHelpOptions = true,
        description = "Verify a signed model folder (like `model_signing verify key`); exit 0 only when it passes.")
final class VerifyCommand implements Callable<Integer> {
    @Parameters(index = "0", description = "model folder")
    Path dir;
    @Option(names = "--key", required = true, description = "PEM EC public key")
    Path key;
    @Option(names = "--signature", description = "bundle (default: DIR/model.sig)")
    Path signature;
    @Option(names = "--ignore", split = ",", description = "paths left out of the manifest when it was signed")
    List<String> ignore = List.of();
    @Option(names = "--provenance", description = "also verify and show the provenance statement")
    boolean provenance;
    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Override
    public Integer call() {
        Path sig = signature != null ? signature : dir.resolve(ModelSignature.DEFAULT_SIGNATURE);
        try {
            ModelSignature.Verified v = ModelSignature.verify(dir, Keys.readPublic(key), sig, IgnorePaths.relativeTo(dir, ignore));
            JsonNode prov = provenance ? Provenance.verify(dir, Keys.readPublic(key)) : null;
            if (json) {
                Json j = new Json().put("verified", true).put("subject", v.subject()).put("root_digest", v.rootDigest())
                        .put("files", v.files().size());
                if (prov != null) {
                    j.put("provenance", prov.path("predicate"));
                }
                j.print();
            } else {
                System.out.printf("verified: %s, %d files, root sha256 %s%n", dir, v.files().size(), v.rootDigest());
                if (prov != null) {
                    JsonNode p = prov.path("predicate");
                    System.out.println("provenance: verified, built " + p.at("/runDetails/metadata/finishedOn").asText()
                            + " by " + p.at("/runDetails/builder/version"));
                    p.at("/buildDefinition/resolvedDependencies").forEach(d -> System.out.println("  from "
                            + d.path("name").asText() + " sha256 " + d.path("digest").path("sha256").asText()));
                }
            }
            return 0;
        } catch (VerificationException e) {
            if (json) {
                new Json().put("verified", false).put("reason", e.getMessage()).print();
            }
            System.err.println("hexforge: verification FAILED: " + e.getMessage());
            return 1;
        }
    }
}
