package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.compile.Soc;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.TargetSettings;
import dev.hexforge.pass.CompilePass;
import dev.hexforge.pass.ExportPass;
import dev.hexforge.pass.QuantizePass;
import dev.hexforge.pass.SignPass;
import dev.hexforge.quant.QuantizationReport;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.ModelSignature;
import dev.hexforge.signing.Provenance;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;

@Command(name = "convert", mixinStandardHelpOptions = true,
        description = {"A Hugging Face folder to a signed bundle for a target in one command: quantize, export, compile and "
                + "sign, as a fleet job that names only compile.target runs them.",
                "Every setting the target needs (the stages, the graph layout, per-channel or grouped weights, the "
                        + "activations' precision) is derived from it and printed with where it came from; a flag the "
                        + "target cannot take is refused before any work, naming both.",
                "Writes OUT/quantization_report.json, OUT/checkpoint, OUT/onnx-model and, for an NPU target, OUT/bundle; "
                        + "the last of them signed with --key (OpenSSF model signing, with a provenance statement)."})
final class ConvertCommand implements Callable<Integer> {
    /** The settings printed with where they came from, in the order a pipeline uses them. */
    private static final List<String> SHOWN = List.of("stages", "compile.target", "compile.soc", "quantize.method",
            "quantize.bits", "quantize.group", "quantize.head", "quantize.activations", "quantize.format", "export.variant",
            "export.seq", "export.ctx");

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin
    ExportFlags exportFlags;
    @Option(names = "--model", required = true, description = "Hugging Face model folder")
    Path model;
    @Option(names = "--soc", descriptionKey = "compile.soc")
    String soc;
    @Option(names = "--htp-arch", descriptionKey = "compile.htpArch")
    int htpArch;
    @Option(names = "--method", descriptionKey = "quantize.method")
    String method;
    @Option(names = "--bits", descriptionKey = "quantize.bits")
    int bits;
    @Option(names = "--group", descriptionKey = "quantize.group")
    Integer group;
    @Option(names = "--head", descriptionKey = "quantize.head")
    String head;
    @Option(names = "--activations", descriptionKey = "quantize.activations")
    String activations;
    @Option(names = "--samples", descriptionKey = "quantize.calibrationSamples")
    int samples;
    @Option(names = "--calib-len", descriptionKey = "quantize.calibrationLength")
    int calibLen;
    @Option(names = "--calib", description = "calibration JSONL (default: the bundled set, as the fleet uses)")
    Path calib;
    @Option(names = "--eval", description = "text scored for the accuracy gate (default: the bundled text, as the fleet uses)")
    Path eval;
    @Option(names = "--max-delta-ppl", descriptionKey = "quantize.maxDeltaPpl")
    double maxDeltaPpl;
    @Option(names = "--key", description = "PEM EC private key that signs the result (hexforge keygen makes one); "
            + "without it the result is left unsigned")
    Path key;
    @Option(names = "--passphrase-env", defaultValue = "HEXFORGE_KEY_PASSPHRASE", description = "environment variable holding "
            + "an encrypted key's passphrase (default: ${DEFAULT-VALUE})")
    String passphraseEnv;
    @Option(names = "--qnn-sdk", description = "QNN SDK root for the targets that run its tools (default: $QNN_SDK_ROOT)")
    Path qnnSdk;
    @Option(names = "--out", required = true, description = "output folder")
    Path out;
    @Option(names = "--json", description = "print one JSON object: the settings with their sources, the gate and the outputs")
    boolean json;
    @Option(names = "--allow-non-finite", descriptionKey = "allowNonFinite")
    boolean allowNonFinite;

    /** A setting's value and where it came from: a flag, the target, or the job spec's default. */
    record Setting(String field, String value, String source) {
    }

    @Override
    public Integer call() throws IOException {
        Instant started = Instant.now();
        if (SpecOptions.given(spec, "compile.target") == null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "Missing required option: '--target' (one of "
                    + String.join(", ", CompilePass.TARGETS) + " or " + TargetSettings.ORT_CPU + ")");
        }
        JobSpec job = SpecOptions.spec(spec, List.of(), Map.of());
        List<Setting> settings = settings(job, SpecOptions.derived(spec, List.of(), Map.of()));
        boolean compiles = job.stageList().contains(Stage.COMPILE);
        String env = System.getenv("QNN_SDK_ROOT");
        Path sdk = qnnSdk != null ? qnnSdk : env == null || env.isBlank() ? null : Path.of(env);
        CompilePass.Options compile = compiles ? CompilePass.options(job.compile(), sdk) : null;
        // what would refuse the last steps refuses the first: no SDK, an unknown SoC, a key that does not open
        if (compile != null) {
            CompilePass.check(compile);
        }
        String passphrase = System.getenv(passphraseEnv);
        PrivateKey privateKey = key == null ? null : Keys.readPrivate(key, passphrase == null ? null : passphrase.toCharArray());
        if (!json) {
            settings.forEach(s -> System.out.printf("  %-21s %-36s %s%n", s.field(), s.value(), s.source()));
        }
        QuantizeRun.Result done = new QuantizeRun(calib, eval, 0, false, QuantizePass.EVAL_WINDOW)
                .run(job, exportFlags.options(job), model, out);
        QuantizationReport rep = done.quantized().report();
        rep.warnings().forEach(w -> System.err.println("warning: " + w));
        if (done.exported() == null) {
            System.err.printf("hexforge: error: accuracy gate failed: %s. No model was written; see %s%n",
                    done.quantized().gateMessage(), out.resolve(QuantizePipeline.REPORT));
            return 1;
        }
        done.exported().report().warnings().forEach(w -> System.err.println("warning: " + w));
        List<Path> artifacts = new ArrayList<>(done.exported().outputs().stream().map(ExportPass.Output::dir).toList());
        Map<String, Object> bundle = null;
        if (compile != null) {
            CompilePass.Result r = CompilePass.run(artifacts.get(0), compile, out.resolve("bundle")); // QDQ comes first
            artifacts = List.of(r.bundle());
            bundle = r.report();
        }
        if (privateKey != null) {
            JsonNode specJson = ContractsJson.MAPPER.readTree(JobSpecReader.toJson(job));
            Map<String, String> materials = Map.of("model", Provenance.digestOf(model));
            for (Path a : artifacts) {
                Provenance.sign(a, privateKey, new Provenance.Facts(specJson, materials, SignPass.versions(a),
                        UUID.randomUUID().toString(), started, Instant.now(), "built by hexforge convert"));
                ModelSignature.sign(a, privateKey, a.resolve(ModelSignature.DEFAULT_SIGNATURE), List.of());
            }
        }
        if (json) {
            Map<String, Object> shown = new LinkedHashMap<>();
            settings.forEach(s -> shown.put(s.field(), Map.of("value", s.value(), "source", s.source())));
            new Json().put("settings", shown).put("gate_passed", rep.gatePassed()).put("float_perplexity", rep.floatPerplexity())
                    .put("quantized_perplexity", rep.quantizedPerplexity())
                    .put("full_perplexity", rep.activations() == null ? null : rep.activations().perplexity())
                    .put("outputs", artifacts.stream().map(Path::toString).toList()).put("signed", privateKey != null)
                    .put("bundle", bundle).print();
            return 0;
        }
        System.out.printf("%s %s: perplexity %.4f -> %.4f%s%n", rep.method(), rep.spec(), rep.floatPerplexity(),
                rep.activations() != null ? rep.activations().perplexity() : rep.quantizedPerplexity(),
                rep.activations() != null ? " (" + rep.activations().precision() + ", every activation quantized)" : "");
        for (Path a : artifacts) {
            System.out.println((privateKey != null ? "signed " : "wrote ") + a);
        }
        if (privateKey == null) {
            System.out.println("not signed: give --key PEM (hexforge keygen makes one)");
        }
        return 0;
    }

    /** The shown settings of {@code job} with the flag that gave each, the target's reason, or "default". */
    private List<Setting> settings(JobSpec job, List<TargetSettings.Derived> derived) {
        JsonNode doc = ContractsJson.MAPPER.valueToTree(job);
        List<Setting> out = new ArrayList<>();
        for (String field : SHOWN) {
            if (field.equals("compile.soc") && !job.stageList().contains(Stage.COMPILE)) {
                continue; // nothing is compiled for a SoC
            }
            JsonNode v = doc;
            for (String part : field.split("\\.")) {
                v = v.path(part);
            }
            String value = v.isArray() ? String.join(", ", ContractsJson.MAPPER.convertValue(v, String[].class)) : v.asText();
            if (field.equals("quantize.group") && v.isNull()) {
                value = Integer.toString(JobSpec.Quantize.defaultGroup(job.quantize().bits()));
            }
            if (field.equals("quantize.group")) {
                value = value.equals("0") ? "0 (per channel)" : value + " columns per scale";
            }
            if (field.equals("quantize.activations") && value.equals("auto")) {
                JobSpec.Quantize q = job.quantize();
                value = "auto: " + QuantizePass.activations(q.activations(), q.kvBits(), job.export().variant(), q.format()).id();
            }
            if (field.equals("compile.soc")) {
                Soc s = Soc.find(job.compile().soc()).orElse(null);
                value = s == null ? value : value + " (" + s.marketing() + ", HTP v" + s.htpArch() + ")";
            }
            OptionSpec flag = SpecOptions.given(spec, field);
            String source = flag != null ? flag.longestName()
                    : derived.stream().filter(d -> d.field().equals(field)).map(d -> "from the target: " + d.because())
                    .findFirst().orElse("default");
            out.add(new Setting(field, value, source));
        }
        return out;
    }
}
