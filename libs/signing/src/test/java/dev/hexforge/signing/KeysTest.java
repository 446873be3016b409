package dev.hexforge.signing;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.interfaces.ECPrivateKey;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The key forms OpenSSL writes (made with openssl 3.0: ecparam -genkey, pkcs8 -topk8 [-nocrypt | -v2 aes-256-cbc]). */
class KeysTest {
    @TempDir
    Path tmp;

    private static Path key(String name) throws URISyntaxException {
        return Path.of(KeysTest.class.getResource("keys/" + name).toURI());
    }

    @Test
    void sec1KeysReadAsTheSameKeyAsTheirPkcs8Form() throws Exception {
        for (String curve : new String[]{"p256", "p384"}) {
            PrivateKey sec1 = Keys.readPrivate(key("sec1-" + curve + ".pem"));
            PrivateKey pkcs8 = Keys.readPrivate(key("pkcs8-" + curve + ".pem"));
            assertEquals(((ECPrivateKey) pkcs8).getS(), ((ECPrivateKey) sec1).getS(), curve);
            assertArrayEquals(Keys.publicOf(pkcs8).getEncoded(), Keys.publicOf(sec1).getEncoded(), curve + ": the same curve and point");
        }
    }

    @Test
    void anEncryptedKeyNeedsItsPassphrase() throws Exception {
        PrivateKey plain = Keys.readPrivate(key("pkcs8-p256.pem"));
        PrivateKey decrypted = Keys.readPrivate(key("encrypted-p256.pem"), "hexforge-test".toCharArray());
        assertArrayEquals(plain.getEncoded(), decrypted.getEncoded());
        SigningException none = assertThrows(SigningException.class, () -> Keys.readPrivate(key("encrypted-p256.pem")));
        assertTrue(none.getMessage().contains("encrypted and no passphrase"), none.getMessage());
        SigningException wrong = assertThrows(SigningException.class,
                () -> Keys.readPrivate(key("encrypted-p256.pem"), "wrong".toCharArray()));
        assertTrue(wrong.getMessage().contains("cannot decrypt"), wrong.getMessage());
    }

    @Test
    void aSignatureMadeWithASec1KeyVerifiesWithItsPublicKey() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("model"));
        Files.writeString(dir.resolve("weights.bin"), "not really weights");
        PrivateKey k = Keys.readPrivate(key("sec1-p256.pem"));
        ModelSignature.sign(dir, k, dir.resolve(ModelSignature.DEFAULT_SIGNATURE), java.util.List.of());
        ModelSignature.verify(dir, Keys.publicOf(k), dir.resolve(ModelSignature.DEFAULT_SIGNATURE), java.util.List.of());
    }

    @Test
    void aBrokenSec1KeyIsRefusedByName() throws Exception {
        Path bad = tmp.resolve("bad.pem");
        Files.writeString(bad, "-----BEGIN EC PRIVATE KEY-----\nMAMCAQE=\n-----END EC PRIVATE KEY-----\n");
        SigningException e = assertThrows(SigningException.class, () -> Keys.readPrivate(bad));
        assertTrue(e.getMessage().contains("bad.pem") && e.getMessage().contains("SEC1"), e.getMessage());
    }
}
