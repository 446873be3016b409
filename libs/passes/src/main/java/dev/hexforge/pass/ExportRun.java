package dev.hexforge.pass;

import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.ExportException;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.WeightJournal;
import dev.hexforge.resume.RunKey;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * An export's output folders while they are written: the export goes straight into them, and {@code .export} in the
 * folder the outputs are under (the output itself, or the folder holding {@code qdq/} and {@code matmulnbits/}) holds
 * the run's key and a journal of each weight file. A run killed at any moment (or stopped by a full disk) is continued
 * by the same command into the same folder: the weight files after their last finished group of tensors, everything
 * else written again; a run of other inputs or settings is refused, naming what differs. A refusal of the export
 * itself (a check that would fail again) leaves nothing behind.
 *
 * <p>The key names the model by the digest of its weights, which takes a second a gigabyte to read: a new run
 * computes it beside the export (the key says "pending" until then), and only a resumed run waits for it. A run
 * killed before its digest was known is started over.
 */
final class ExportRun {
    static final String WORK = ".export";
    private static final String KEY = "run.json";
    private static final String MODEL = "model";
    private static final String PENDING = "pending";

    private final Path root;
    private final List<Path> outputs;
    private final Path work;
    private final boolean rootExisted;
    private final Thread digest;

    private ExportRun(Path root, List<Path> outputs, boolean rootExisted, Thread digest) {
        this.root = root;
        this.outputs = outputs;
        this.work = root.resolve(WORK);
        this.rootExisted = rootExisted;
        this.digest = digest;
    }

    /**
     * Starts the run of these settings and model into {@code outputs} (the folder {@code root} itself, or folders in
     * it), or continues the interrupted one there.
     */
    static ExportRun open(Path root, List<Path> outputs, Map<String, String> settings, Supplier<String> modelDigest) {
        Path work = root.resolve(WORK);
        Path keyFile = work.resolve(KEY);
        boolean rootExisted = Files.isDirectory(root);
        if (Files.isRegularFile(keyFile)) {
            RunKey then = RunKey.read(keyFile, ExportException::new);
            if (!PENDING.equals(then.fields().get(MODEL))) {
                Map<String, String> now = new LinkedHashMap<>(settings);
                now.put(MODEL, modelDigest.get());
                List<String> differences = then.differences(new RunKey(now));
                if (!differences.isEmpty()) {
                    throw new ExportException(root + " holds an interrupted export of other inputs or settings ("
                            + String.join("; ", differences) + "): give the same ones to continue it, or another output "
                            + "folder (or delete this one) to start over");
                }
                return new ExportRun(root, outputs, rootExisted, null);
            }
            // killed before it knew which model it was exporting: what it wrote cannot be trusted to continue
            new ExportRun(root, outputs, true, null).clear();
        }
        if (Files.isDirectory(work)) {
            Folders.deleteQuietly(work); // a run killed before it wrote its key had written nothing else
        }
        for (Path out : outputs) {
            if (Files.isRegularFile(out.resolve(ExportInfo.FILE))) {
                throw new ExportException(out + " holds a finished export; choose another --out or remove it");
            }
            if (!Folders.isMissingOrEmpty(out)) {
                throw new ExportException(out + " already exists and is not empty; choose another --out or remove it");
            }
        }
        try {
            Files.createDirectories(work);
        } catch (IOException e) {
            throw new ExportException("cannot create " + work + ": " + e.getMessage(), e);
        }
        Map<String, String> pending = new LinkedHashMap<>(settings);
        pending.put(MODEL, PENDING);
        new RunKey(pending).write(keyFile);
        Thread digest = new Thread(() -> {
            Map<String, String> known = new LinkedHashMap<>(settings);
            known.put(MODEL, modelDigest.get());
            new RunKey(known).write(keyFile);
        }, "hexforge-export-key");
        digest.setDaemon(true);
        digest.setUncaughtExceptionHandler((t, e) -> { }); // the key stays pending: a resumed run starts over
        digest.start();
        return new ExportRun(root, outputs, rootExisted, digest);
    }

    /** The journal of the weight file of the output {@code name} (one per export folder). */
    WeightJournal journal(String name) {
        return WeightJournal.in(work.resolve(name + ".weights"));
    }

    /** The export is complete: its work goes, and the folders hold the outputs alone. */
    void finish() {
        awaitDigest();
        try {
            Folders.deleteTree(work);
        } catch (UncheckedIOException e) {
            throw new ExportException("the export is complete, but " + work + " cannot be removed: " + e.getMessage(), e);
        }
    }

    /** The export was refused: nothing of it is left (a folder that was there before stays, emptied of it). */
    void abandon() {
        awaitDigest();
        clear();
        if (!rootExisted && Folders.isMissingOrEmpty(root)) {
            Folders.deleteQuietly(root);
        }
    }

    /** Deletes the outputs and the work (a folder that holds the outputs stays). */
    private void clear() {
        for (Path out : outputs) {
            if (!out.equals(root)) {
                Folders.deleteQuietly(out);
            }
        }
        Folders.deleteQuietly(work);
        if (outputs.contains(root)) {
            try (var children = Files.list(root)) {
                children.forEach(Folders::deleteQuietly);
            } catch (IOException e) {
                // what cannot be listed cannot be cleaned; the caller reports what it was doing
            }
        }
    }

    /** Waits until the key's writer is done with the work folder (so it is not written into while it is deleted). */
    void awaitDigest() {
        if (digest == null) {
            return;
        }
        try {
            digest.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ExportException("interrupted while the export's key was written", e);
        }
    }
}
