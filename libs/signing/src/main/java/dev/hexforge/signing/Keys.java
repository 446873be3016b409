package dev.hexforge.signing;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.UnrecoverableKeyException;
import java.security.interfaces.ECKey;
import java.security.interfaces.ECPrivateKey;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.ECPoint;
import java.security.spec.ECPublicKeySpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Cipher;
import javax.crypto.EncryptedPrivateKeyInfo;
import javax.crypto.SecretKey;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;

/**
 * ECDSA keys in PEM (PKCS#8 private, SubjectPublicKeyInfo public), the curves OMS allows (P-256, P-384, P-521),
 * the matching signature algorithm, and the public-key hint (sha256 of the public key's PEM text).
 */
public final class Keys {
    private Keys() {
    }

    public static KeyPair generate() {
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
            g.initialize(new ECGenParameterSpec("secp256r1"));
            return g.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    public static String publicPem(PublicKey key) {
        return pem("PUBLIC KEY", key.getEncoded());
    }

    public static String privatePem(PrivateKey key) {
        return pem("PRIVATE KEY", key.getEncoded());
    }

    private static String pem(String type, byte[] der) {
        String b64 = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
        return "-----BEGIN " + type + "-----\n" + b64 + "\n-----END " + type + "-----\n";
    }

    /** The OMS public-key hint: hex sha256 of the key's PEM text. */
    public static String hint(PublicKey key) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(publicPem(key).getBytes(StandardCharsets.US_ASCII)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    public static PublicKey readPublic(Path pem) {
        String text;
        try {
            text = Files.readString(pem, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new SigningException("cannot read key " + pem + ": " + e.getMessage(), e);
        }
        return parsePublic(text, pem.toString());
    }

    /** A public key from PEM text; {@code source} names it in messages. */
    public static PublicKey parsePublic(String pemText, String source) {
        byte[] der = pemBody(pemText, "PUBLIC KEY", source);
        try {
            PublicKey k = KeyFactory.getInstance("EC").generatePublic(new X509EncodedKeySpec(der));
            signatureAlgorithm(k);
            return k;
        } catch (GeneralSecurityException e) {
            throw new SigningException(source + ": not an EC public key (" + e.getMessage() + ")", e);
        }
    }

    public static PrivateKey readPrivate(Path pem) {
        return readPrivate(pem, null);
    }

    /**
     * An EC private key from PEM in any of the forms OpenSSL writes: PKCS#8 ({@code PRIVATE KEY}), SEC1
     * ({@code EC PRIVATE KEY}, what {@code openssl ecparam -genkey} writes) or encrypted PKCS#8
     * ({@code ENCRYPTED PRIVATE KEY}, PBES2), which needs {@code passphrase}.
     */
    public static PrivateKey readPrivate(Path pem, char[] passphrase) {
        String text;
        try {
            text = Files.readString(pem, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new SigningException("cannot read key " + pem + ": " + e.getMessage(), e);
        }
        byte[] der;
        if (text.contains("-----BEGIN EC PRIVATE KEY-----")) {
            der = Sec1.toPkcs8(pemBody(text, "EC PRIVATE KEY", pem.toString()), pem);
        } else if (text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")) {
            der = decrypt(pemBody(text, "ENCRYPTED PRIVATE KEY", pem.toString()), passphrase, pem);
        } else {
            der = pemBody(text, "PRIVATE KEY", pem.toString());
        }
        try {
            PrivateKey k = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der));
            signatureAlgorithm(k);
            return k;
        } catch (GeneralSecurityException e) {
            throw new SigningException(pem + ": not an EC private key (" + e.getMessage() + ")", e);
        }
    }

    private static byte[] decrypt(byte[] der, char[] passphrase, Path pem) {
        if (passphrase == null) {
            throw new SigningException(pem + ": the key is encrypted and no passphrase was given");
        }
        try {
            EncryptedPrivateKeyInfo info = new EncryptedPrivateKeyInfo(der);
            String alg = info.getAlgName();
            if (alg.equals("PBES2") || alg.equals("1.2.840.113549.1.5.13")) { // the parameters name the PBKDF2 + cipher pair
                alg = info.getAlgParameters().toString();
            }
            SecretKey key = SecretKeyFactory.getInstance(alg)
                    .generateSecret(new PBEKeySpec(passphrase));
            Cipher cipher = Cipher.getInstance(alg);
            cipher.init(Cipher.DECRYPT_MODE, key, info.getAlgParameters());
            return info.getKeySpec(cipher).getEncoded();
        } catch (GeneralSecurityException | IOException e) {
            throw new SigningException(pem + ": cannot decrypt the key (a wrong passphrase, or an encryption Java lacks: "
                    + e.getMessage() + "); re-encrypt it with: openssl pkcs8 -topk8 -v2 aes-256-cbc -in KEY", e);
        }
    }

    /**
     * The EC private key of a PKCS#12 keystore: the entry {@code alias}, or its only key entry when alias is null.
     */
    public static PrivateKey readKeystore(Path p12, char[] password, String alias) {
        try (InputStream in = Files.newInputStream(p12)) {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(in, password);
            String name = alias;
            if (name == null) {
                List<String> keys = Collections.list(ks.aliases()).stream().filter(a -> {
                    try {
                        return ks.isKeyEntry(a);
                    } catch (GeneralSecurityException e) {
                        return false;
                    }
                }).toList();
                if (keys.size() != 1) {
                    throw new SigningException(p12 + ": holds " + keys.size() + " key entries " + keys + "; name one with an alias");
                }
                name = keys.get(0);
            }
            Key k = ks.getKey(name, password);
            if (!(k instanceof PrivateKey pk)) {
                throw new SigningException(p12 + ": no private key under alias '" + name + "'");
            }
            signatureAlgorithm(pk);
            return pk;
        } catch (IOException e) {
            throw new SigningException("cannot read keystore " + p12 + ": " + e.getMessage()
                    + (e.getCause() instanceof UnrecoverableKeyException ? " (wrong password?)" : ""), e);
        } catch (GeneralSecurityException e) {
            throw new SigningException("cannot read keystore " + p12 + ": " + e.getMessage(), e);
        }
    }

    /** The public half of an EC private key (Q = d·G). */
    public static PublicKey publicOf(PrivateKey key) {
        if (!(key instanceof ECPrivateKey ec)) {
            throw new SigningException("only EC keys are supported");
        }
        try {
            ECPoint q = EcMath.multiply(ec.getParams(), ec.getS());
            return KeyFactory.getInstance("EC").generatePublic(new ECPublicKeySpec(q, ec.getParams()));
        } catch (GeneralSecurityException e) {
            throw new SigningException("cannot derive the public key: " + e.getMessage(), e);
        }
    }

    private static byte[] pemBody(String text, String type, String pem) {
        String begin = "-----BEGIN " + type + "-----";
        String end = "-----END " + type + "-----";
        int b = text.indexOf(begin);
        int e = text.indexOf(end);
        if (b < 0 || e < b) {
            throw new SigningException(pem + ": no '" + begin + "' block");
        }
        try {
            return Base64.getMimeDecoder().decode(text.substring(b + begin.length(), e));
        } catch (IllegalArgumentException ex) {
            throw new SigningException(pem + ": the PEM body is not base64", ex);
        }
    }

    /** SHA256withECDSA for P-256, SHA384 for P-384, SHA512 for P-521, as the reference implementation pairs them. */
    public static String signatureAlgorithm(Key key) {
        if (!(key instanceof ECKey ec)) {
            throw new SigningException("only ECDSA keys (P-256, P-384, P-521) are supported");
        }
        int bits = ec.getParams().getOrder().bitLength();
        return switch (bits) {
            case 256 -> "SHA256withECDSA";
            case 384 -> "SHA384withECDSA";
            case 521 -> "SHA512withECDSA";
            default -> throw new SigningException("EC curve of " + bits + " bits is not allowed (P-256, P-384, P-521 only)");
        };
    }

}
