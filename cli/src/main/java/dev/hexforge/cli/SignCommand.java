package dev.hexforge.cli;

import dev.hexforge.signing.Keys;
import dev.hexforge.signing.ModelSignature;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

@Command(name = "sign", mixinStandardHelpOptions = true,
        description = "Sign a model folder (OpenSSF Model Signing, like `model_signing sign key`).")
final class SignCommand implements Callable<Integer> {
    @Parameters(index = "0", description = "model folder")
    Path dir;
    @Option(names = "--key", required = true, description = "PKCS#8 PEM EC private key (P-256, P-384 or P-521)")
    Path key;
    @Option(names = "--signature", description = "bundle to write (default: DIR/model.sig)")
    Path signature;
    @Option(names = "--ignore", split = ",", description = "paths to leave out of the manifest")
    List<String> ignore = List.of();
    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Override
    public Integer call() {
        Path sig = signature != null ? signature : dir.resolve(ModelSignature.DEFAULT_SIGNATURE);
        ModelSignature.sign(dir, Keys.readPrivate(key), sig, IgnorePaths.relativeTo(dir, ignore));
        if (json) {
            new Json().put("signature", sig.toString()).print();
        } else {
            System.out.println("signed " + dir + " -> " + sig);
        }
        return 0;
    }
}
