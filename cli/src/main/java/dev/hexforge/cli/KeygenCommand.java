package dev.hexforge.cli;

import dev.hexforge.io.Folders;
import dev.hexforge.signing.Keys;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.util.concurrent.Callable;

@Command(name = "keygen", mixinStandardHelpOptions = true, description = "Create an ECDSA P-256 signing key pair (PEM).")
final class KeygenCommand implements Callable<Integer> {
    @Option(names = "--private", required = true, description = "private key file to create (PKCS#8 PEM, mode 600)")
    Path privateKey;
    @Option(names = "--public", required = true, description = "public key file to create (PEM)")
    Path publicKey;

    @Override
    public Integer call() throws IOException {
        if (Files.exists(privateKey) || Files.exists(publicKey)) {
            throw new IllegalArgumentException("refusing to overwrite an existing key file");
        }
        KeyPair kp = Keys.generate();
        Folders.writePrivate(privateKey, Keys.privatePem(kp.getPrivate()));
        Files.writeString(publicKey, Keys.publicPem(kp.getPublic()));
        System.out.println("wrote " + privateKey + " and " + publicKey + " (hint " + Keys.hint(kp.getPublic()) + ")");
        return 0;
    }
}
