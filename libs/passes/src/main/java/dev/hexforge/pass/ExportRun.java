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
 * An export's output folder while it is written: the export goes straight into it, and {@code .work} beside the
 * outputs holds the run's key and a journal of each weight file. A run killed at any moment (or stopped by a full
 * disk) is continued by the same command into the same folder: the weight files after their last finished group of
 * tensors, everything else written again; a run of other inputs or settings is refused, naming what differs. A
 * refusal of the export itself (a check that would fail again) leaves nothing behind.
 */
final class ExportRun {
    static final String WORK = ".work";
    private static final String KEY = "run.json";

    private final Path out;
    private final Path work;
    private final boolean resumed;
    private final boolean outExisted;

    private ExportRun(Path out, boolean resumed, boolean outExisted) {
        this.out = out;
        this.work = out.resolve(WORK);
        this.resumed = resumed;
        this.outExisted = outExisted;
    }

    /** Starts the run of {@code key} in {@code out}, or continues the interrupted one there. */
    static ExportRun open(Path out, RunKey key) {
        Path work = out.resolve(WORK);
        Path keyFile = work.resolve(KEY);
        boolean outExisted = Files.isDirectory(out);
        if (Files.isRegularFile(keyFile)) {
            List<String> differences = RunKey.read(keyFile, ExportException::new).differences(key);
            if (!differences.isEmpty()) {
                throw new ExportException(out + " holds an interrupted export of other inputs or settings ("
                        + String.join("; ", differences) + "): give the same ones to continue it, or another output folder "
                        + "(or delete this one) to start over");
            }
            return new ExportRun(out, true, outExisted);
        }
        if (Files.isDirectory(work)) {
            Folders.deleteQuietly(work); // a run killed before it wrote its key had written nothing else
        }
        if (Files.isRegularFile(out.resolve(ExportInfo.FILE))) {
            throw new ExportException(out + " holds a finished export; choose another --out or remove it");
        }
        if (!Folders.isMissingOrEmpty(out)) {
            throw new ExportException(out + " already exists and is not empty; choose another --out or remove it");
        }
        try {
            Files.createDirectories(work);
        } catch (IOException e) {
            throw new ExportException("cannot create " + work + ": " + e.getMessage(), e);
        }
        key.write(keyFile);
        return new ExportRun(out, false, outExisted);
    }

    /** Whether this run continues an interrupted one. */
    boolean resumed() {
        return resumed;
    }

    /** The journal of the weight file of the output {@code name} (one per export folder). */
    WeightJournal journal(String name) {
        return WeightJournal.in(work.resolve(name + ".weights"));
    }

    /** The export is complete: its work goes, and the folder holds the outputs alone. */
    void finish() {
        try {
            Folders.deleteTree(work);
        } catch (UncheckedIOException e) {
            throw new ExportException("the export is complete, but " + work + " cannot be removed: " + e.getMessage(), e);
        }
    }

    /** The export was refused: nothing of it is left (the folder itself only when it was there before). */
    void abandon() {
        if (outExisted) {
            try (var children = Files.list(out)) {
                children.forEach(Folders::deleteQuietly);
            } catch (IOException e) {
                // what cannot be listed cannot be cleaned; the refusal itself is what the caller reports
            }
        } else {
            Folders.deleteQuietly(out);
        }
    }
}
