package dev.hexforge.artifactservice;

import dev.hexforge.io.Folders;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.SigningException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The key this service signs with (from a PEM file or a PKCS#12 keystore named by configuration, never from the
 * source), and the public keys of earlier keys, kept so that artifacts signed before a rotation still verify.
 */
@Component
class SigningKeys {
    private static final Logger LOG = LoggerFactory.getLogger(SigningKeys.class);

    /** A public key as clients need it: the OMS hint, PEM text, and whether it signs new artifacts. */
    record PublicKeyInfo(String hint, String pem, boolean current) {
    }

    private final PrivateKey signing;
    private final List<PublicKeyInfo> keys;

    SigningKeys(ArtifactServiceProperties settings) {
        String pem = settings.signing().key();
        String keystore = settings.signing().keystore();
        String password = settings.signing().keystorePassword();
        String alias = settings.signing().keystoreAlias();
        boolean generate = settings.signing().generate();
        String previous = settings.signing().previousPublicKeys();
        if (!keystore.isBlank()) {
            signing = Keys.readKeystore(Path.of(keystore), password.toCharArray(), alias.isBlank() ? null : alias);
        } else if (!pem.isBlank()) {
            Path file = Path.of(pem);
            if (!Files.exists(file) && generate) {
                create(file);
            }
            signing = Keys.readPrivate(file);
        } else {
            throw new SigningException("no signing key configured: set hexforge.signing.key (a PKCS#8 EC PEM file) or "
                    + "hexforge.signing.keystore (PKCS#12), e.g. HEXFORGE_SIGNING_KEY=/secrets/signing-key.pem; create one with "
                    + "'hexforge keygen'");
        }
        List<PublicKeyInfo> all = new ArrayList<>();
        PublicKey pub = Keys.publicOf(signing);
        all.add(new PublicKeyInfo(Keys.hint(pub), Keys.publicPem(pub), true));
        Arrays.stream(previous.split(",")).map(String::trim).filter(s -> !s.isEmpty()).forEach(p -> {
            PublicKey k = Keys.readPublic(Path.of(p));
            all.add(new PublicKeyInfo(Keys.hint(k), Keys.publicPem(k), false));
        });
        keys = List.copyOf(all);
        LOG.info("signing with key {}; {} earlier key(s) kept for verification", keys.get(0).hint(), keys.size() - 1);
    }

    private static void create(Path file) {
        Folders.writePrivate(file, Keys.privatePem(Keys.generate().getPrivate()));
        LOG.info("generated a signing key at {}", file);
    }

    PrivateKey signing() {
        return signing;
    }

    String currentHint() {
        return keys.get(0).hint();
    }

    List<PublicKeyInfo> publicKeys() {
        return keys;
    }
}
