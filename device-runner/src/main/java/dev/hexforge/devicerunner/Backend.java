package dev.hexforge.devicerunner;

import dev.hexforge.contracts.BenchmarkResult;
import dev.hexforge.eval.DeviceReference;

/** One way this device runs a bundle: ONNX Runtime on the CPU or the QNN EP, or QNN's own runtime on a phone over adb. */
public interface Backend {

    /** The backend's name as tasks and capabilities spell it (ort-cpu, ort-qnn, adb-qnn). */
    String name();

    /**
     * Benchmarks a verified bundle.
     *
     * @param reference the host's reference for accuracy, or null (then agreement and perplexity are not available)
     */
    BenchmarkResult run(SignedBundle bundle, int promptLength, int newTokens, DeviceReference reference);
}
