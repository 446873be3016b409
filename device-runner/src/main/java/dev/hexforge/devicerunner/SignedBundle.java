package dev.hexforge.devicerunner;

import dev.hexforge.signing.ModelSignature;
import dev.hexforge.signing.Provenance;
import dev.hexforge.signing.SigningException;
import dev.hexforge.signing.VerificationException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PublicKey;
import java.util.List;

/**
 * The gate in front of every backend: a bundle folder is loaded only after its OMS signature (and its provenance,
 * when it has one) verifies against the fleet's key, right before loading, so nothing changed in the local cache
 * since the download slips through.
 */
public record SignedBundle(Path dir, String rootDigest, boolean provenance) {

    public static SignedBundle verify(Path dir, PublicKey key) {
        Path sig = dir.resolve(ModelSignature.DEFAULT_SIGNATURE);
        try {
            if (!Files.isRegularFile(sig)) {
                throw new VerificationException("it has no " + ModelSignature.DEFAULT_SIGNATURE + " (unsigned)");
            }
            ModelSignature.Verified v = ModelSignature.verify(dir, key, sig, List.of());
            boolean provenance = Files.exists(dir.resolve(Provenance.FILE));
            if (provenance) {
                Provenance.verify(dir, key);
            }
            return new SignedBundle(dir, v.rootDigest(), provenance);
        } catch (VerificationException | SigningException e) {
            throw new BundleRefusedException("refusing to load bundle " + dir.getFileName() + ": " + e.getMessage(), e);
        }
    }
}
