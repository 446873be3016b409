package dev.hexforge.artifactservice;

import dev.hexforge.signing.Keys;
import dev.hexforge.signing.SigningException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SigningKeysTest {
    @TempDir
    Path tmp;

    @Test
    void aRotatedKeySignsWhileTheEarlierPublicKeysStayServedForVerification() throws Exception {
        KeyPair old = Keys.generate();
        Path oldPub = Files.writeString(tmp.resolve("old.pub.pem"), Keys.publicPem(old.getPublic()));
        Path current = tmp.resolve("secrets/signing-key.pem");
        SigningKeys keys = keys(current.toString(), "", "", "", true, oldPub.toString());
        assertTrue(Files.isRegularFile(current), "generated on first start");
        assertEquals(2, keys.publicKeys().size());
        assertTrue(keys.publicKeys().get(0).current());
        assertEquals(Keys.hint(Keys.publicOf(keys.signing())), keys.currentHint());
        assertFalse(keys.publicKeys().get(1).current());
        assertEquals(Keys.hint(old.getPublic()), keys.publicKeys().get(1).hint());
        SigningKeys again = keys(current.toString(), "", "", "", true, "");
        assertEquals(keys.currentHint(), again.currentHint(), "the generated key is kept across restarts");
    }

    @Test
    void noKeyConfiguredIsRefusedWithWhatToSet() {
        SigningException e = assertThrows(SigningException.class, () -> keys("", "", "", "", false, ""));
        assertTrue(e.getMessage().contains("hexforge.signing.key") && e.getMessage().contains("hexforge.signing.keystore"), e.getMessage());
        assertThrows(SigningException.class, () -> keys(tmp.resolve("missing.pem").toString(), "", "", "", false, ""),
                "a missing key file is not generated unless asked");
    }

    private static SigningKeys keys(String pem, String keystore, String password, String alias, boolean generate, String previous) {
        return new SigningKeys(new ArtifactServiceProperties(new ArtifactServiceProperties.Signing(pem, keystore, password, alias, generate,
                previous), java.time.Duration.ofMinutes(5), ""));
    }
}
