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
import java.util.List;

/**
 * An export's output folders while they are written: the export goes straight into them, and {@code .export} in the
 * folder the outputs are under (the output itself, or the folder holding {@code qdq/} and {@code matmulnbits/}) holds
 * the run's key and a journal of each weight file. A run killed at any moment (or stopped by a full disk) is continued
 * by the same command into the same folder: the weight files after their last finished group of tensors, everything
 * else written again; a run of other inputs or settings is refused, naming what differs. A refusal of the export
 * itself (a check that would fail again) leaves nothing behind.
 */
final class ExportRun {
    static final String WORK = ".export";
    private static final String KEY = "run.json";

    private final Path root;
    private final List<Path> outputs;
    private final Path work;
    private final boolean rootExisted;

    private ExportRun(Path root, List<Path> outputs, boolean rootExisted) {
        this.root = root;
        this.outputs = outputs;
        this.work = root.resolve(WORK);
        this.rootExisted = rootExisted;
    }

    /**
     * Starts the run of {@code key} into {@code outputs} (the folder {@code root} itself, or folders in it), or continues
     * the interrupted one there.
     */
    static ExportRun open(Path root, List<Path> outputs, RunKey key) {
        Path work = root.resolve(WORK);
        Path keyFile = work.resolve(KEY);
        boolean rootExisted = Files.isDirectory(root);
        if (Files.isRegularFile(keyFile)) {
            List<String> differences = RunKey.read(keyFile, ExportException::new).differences(key);
            if (!differences.isEmpty()) {
                throw new ExportException(root + " holds an interrupted export of other inputs or settings ("
                        + String.join("; ", differences) + "): give the same ones to continue it, or another output folder "
                        + "(or delete this one) to start over");
            }
            return new ExportRun(root, outputs, rootExisted);
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
        key.write(keyFile);
        return new ExportRun(root, outputs, rootExisted);
    }

    /** The journal of the weight file of the output {@code name} (one per export folder). */
    WeightJournal journal(String name) {
        return WeightJournal.in(work.resolve(name + ".weights"));
    }

    /** The export is complete: its work goes, and the folders hold the outputs alone. */
    void finish() {
        try {
            Folders.deleteTree(work);
        } catch (UncheckedIOException e) {
            throw new ExportException("the export is complete, but " + work + " cannot be removed: " + e.getMessage(), e);
        }
    }

    /** The export was refused: nothing of it is left (a folder that was there before stays, emptied of it). */
    void abandon() {
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
                // what cannot be listed cannot be cleaned; the refusal itself is what the caller reports
            }
        }
        if (!rootExisted && Folders.isMissingOrEmpty(root)) {
            Folders.deleteQuietly(root);
        }
    }
}
