package dev.hexforge.cli;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.io.Folders;
import dev.hexforge.pass.ExportPass;
import dev.hexforge.pass.QuantizePass;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.quant.gptq.Gptq;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The quantize and export passes as {@code quantize} and {@code convert} run them, under one progress bar: the
 * bundled calibration set and evaluation text where none is given (as the fleet uses), and the export of the quantized
 * checkpoint when its gate passed.
 *
 * @param calib  calibration JSONL, or null for the bundled set
 * @param eval   text the gate scores, or null for the bundled text
 * @param seed   the calibration sampling seed
 * @param window tokens per scored window
 */
record QuantizeRun(Path calib, Path eval, long seed, boolean actOrder, int window) {

    /** @param exported null when the gate failed */
    record Result(QuantizePipeline.Result quantized, ExportPass.Result exported) {
    }

    /** The quantize pass's report and checkpoint in {@code out}, the export in {@code out/onnx-model} (or beside them for both formats). */
    Result run(JobSpec job, ExportPass.Options export, Path model, Path out) throws IOException {
        Path bundled = Files.createTempDirectory("hexforge-bundled");
        NonFinite nonFinite = NonFinite.allowedIf(job.allowNonFinite());
        try (ProgressBar bar = new ProgressBar("quantize")) {
            Path calibration = calib != null ? calib : BundledData.calibration(bundled);
            // and what only the CLI sets: the sampling seed, GPTQ's column order, the scored window
            QuantizeOptions opt = QuantizePass.options(job, calibration, eval != null ? eval : BundledData.evalText(bundled),
                    GatewayClient.stateFolder().resolve("cache")).withCalibrationSeed(seed)
                    .withGptq(Gptq.Options.defaults().withActOrder(actOrder)).withEvalWindow(window);
            // the export's adapters are calibrated with the base
            opt = QuantizePass.withAdapters(opt, model, export.adapters());
            QuantizePipeline.Result r = QuantizePass.run(model, nonFinite, opt, out, (what, done, total) -> bar.update(what, done, 2 * total));
            ExportPass.Result exported = null;
            if (r.passed()) {
                exported = ExportPass.run(r.checkpoint(), nonFinite, export, export.format() == ExportPass.Format.BOTH ? out
                        : out.resolve("onnx-model"), (what, done, total) -> bar.update(what, total + done, 2 * total));
            }
            bar.finish();
            return new Result(r, exported);
        } finally {
            Folders.deleteQuietly(bundled);
        }
    }
}
