package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.pass.SignPass;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.Provenance;
import dev.hexforge.signing.ModelSignature;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.List;
import java.util.concurrent.Callable;

@Command(name = "sign", mixinStandardHelpOptions = true,
        description = "Sign a model folder (OpenSSF Model Signing, like `model_signing sign key`).")
final class SignCommand implements Callable<Integer> {
    @Parameters(index = "0", description = "model folder")
    Path dir;
    @Option(names = "--key", required = true, description = "PEM EC private key (P-256, P-384 or P-521): PKCS#8, SEC1 "
            + "(openssl ecparam -genkey) or encrypted PKCS#8")
    Path key;
    @Option(names = "--passphrase-env", defaultValue = "HEXFORGE_KEY_PASSPHRASE", description = "environment variable holding "
            + "an encrypted key's passphrase (default: ${DEFAULT-VALUE})")
    String passphraseEnv;
    @Option(names = "--signature", description = "bundle to write (default: DIR/model.sig)")
    Path signature;
    @Option(names = "--ignore", split = ",", description = "paths to leave out of the manifest")
    List<String> ignore = List.of();
    @Option(names = "--provenance", description = "also sign a provenance statement (provenance.sig, covered by the model signature)")
    boolean provenance;
    @Option(names = "--spec", description = "with --provenance: the job spec the model was made with (JSON or YAML)")
    Path spec;
    @Option(names = "--material", description = "with --provenance: NAME=PATH of an input (base model, adapter, data), repeatable")
    Map<String, Path> materials = new LinkedHashMap<>();
    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Override
    public Integer call() throws IOException {
        Instant started = Instant.now();
        Path sig = signature != null ? signature : dir.resolve(ModelSignature.DEFAULT_SIGNATURE);
        String passphrase = System.getenv(passphraseEnv);
        PrivateKey privateKey = Keys.readPrivate(key, passphrase == null ? null : passphrase.toCharArray());
        if (provenance) {
            Map<String, String> digests = new LinkedHashMap<>();
            materials.forEach((name, path) -> digests.put(name, Provenance.digestOf(path)));
            JsonNode specJson = spec == null ? null
                    : ContractsJson.MAPPER.readTree(JobSpecReader.toJson(JobSpecReader.read(Files.readString(spec))));
            Provenance.sign(dir, privateKey, new Provenance.Facts(specJson, digests, SignPass.versions(dir),
                    UUID.randomUUID().toString(), started, Instant.now()));
        }
        ModelSignature.sign(dir, privateKey, sig, IgnorePaths.relativeTo(dir, ignore));
        if (json) {
            new Json().put("signature", sig.toString()).print();
        } else {
            System.out.println("signed " + dir + " -> " + sig);
        }
        return 0;
    }
}
