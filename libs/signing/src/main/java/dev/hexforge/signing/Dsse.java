package dev.hexforge.signing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.util.Base64;

/**
 * An in-toto statement in a DSSE envelope inside a sigstore bundle (v0.3) with a public-key hint: written by
 * {@link #write} and opened by {@link #open}, for model signatures and provenance alike.
 */
final class Dsse {
    static final String PAYLOAD_TYPE = "application/vnd.in-toto+json";
    static final String BUNDLE_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private Dsse() {
    }

    /** DSSE pre-authentication encoding: "DSSEv1 len(type) type len(payload) payload", lengths in bytes. */
    static byte[] pae(String type, byte[] payload) {
        byte[] t = type.getBytes(StandardCharsets.UTF_8);
        byte[] head = ("DSSEv1 " + t.length + " " + type + " " + payload.length + " ").getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[head.length + payload.length];
        System.arraycopy(head, 0, out, 0, head.length);
        System.arraycopy(payload, 0, out, head.length, payload.length);
        return out;
    }

    /** Signs the statement and writes the bundle to {@code file} (complete or not at all). */
    static void write(Path file, byte[] statement, PrivateKey key, String what) {
        byte[] bundle = bundle(statement, key, what);
        try {
            Path tmp = file.resolveSibling(file.getFileName() + ".partial");
            Files.write(tmp, bundle);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new SigningException("writing " + file + ": " + e.getMessage(), e);
        }
    }

    /** Signs the statement; returns the bundle's bytes. */
    static byte[] bundle(byte[] statement, PrivateKey key, String what) {
        byte[] sig;
        try {
            Signature s = Signature.getInstance(Keys.signatureAlgorithm(key));
            s.initSign(key);
            s.update(pae(PAYLOAD_TYPE, statement));
            sig = s.sign();
        } catch (GeneralSecurityException e) {
            throw new SigningException("signing " + what + " failed: " + e.getMessage(), e);
        }
        ObjectNode bundle = JSON.createObjectNode();
        bundle.put("mediaType", BUNDLE_TYPE);
        ObjectNode vm = bundle.putObject("verificationMaterial");
        vm.putObject("publicKey").put("hint", Keys.hint(Keys.publicOf(key)));
        vm.putArray("tlogEntries");
        ObjectNode env = bundle.putObject("dsseEnvelope");
        env.put("payload", Base64.getEncoder().encodeToString(statement));
        env.put("payloadType", PAYLOAD_TYPE);
        env.putArray("signatures").addObject().put("sig", Base64.getEncoder().encodeToString(sig)).put("keyid", "");
        return bundle.toPrettyString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Reads a bundle, checks its form and its one signature over the statement, and returns the statement.
     *
     * @param what  names the bundle in messages ("signature", "provenance")
     * @param absent the message when the file does not exist
     */
    static JsonNode open(Path file, PublicKey key, String what, String absent) {
        JsonNode bundle;
        try {
            bundle = JSON.readTree(Files.readString(file));
        } catch (IOException e) {
            throw new VerificationException(Files.exists(file) ? file + " is not a valid JSON bundle: " + e.getMessage() : absent, e);
        }
        if (bundle == null || !BUNDLE_TYPE.equals(bundle.path("mediaType").asText())) {
            throw new VerificationException(file + ": not a sigstore bundle v0.3 (mediaType "
                    + (bundle == null ? "missing" : bundle.path("mediaType")) + ")");
        }
        JsonNode env = bundle.path("dsseEnvelope");
        if (!PAYLOAD_TYPE.equals(env.path("payloadType").asText())) {
            throw new VerificationException("envelope payloadType is " + env.path("payloadType") + ", expected " + PAYLOAD_TYPE);
        }
        JsonNode sigs = env.path("signatures");
        if (!sigs.isArray() || sigs.size() != 1) {
            throw new VerificationException("the envelope must hold exactly one signature, it holds " + sigs.size());
        }
        byte[] payload;
        byte[] sig;
        try {
            payload = Base64.getDecoder().decode(env.path("payload").asText());
            sig = Base64.getDecoder().decode(sigs.get(0).path("sig").asText());
        } catch (IllegalArgumentException e) {
            throw new VerificationException("the envelope's payload or signature is not base64", e);
        }
        try {
            Signature s = Signature.getInstance(Keys.signatureAlgorithm(key));
            s.initVerify(key);
            s.update(pae(PAYLOAD_TYPE, payload));
            if (!s.verify(sig)) {
                throw new VerificationException(what + " does not match: wrong key, or the signed statement was altered");
            }
        } catch (GeneralSecurityException e) {
            throw new VerificationException(what + " does not match: " + e.getMessage(), e);
        }
        try {
            return JSON.readTree(payload);
        } catch (IOException e) {
            throw new VerificationException("the signed payload is not JSON", e);
        }
    }
}
