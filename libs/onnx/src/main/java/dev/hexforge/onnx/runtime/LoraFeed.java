package dev.hexforge.onnx.runtime;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtLoraAdapter;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.lora.AdapterFileException;
import dev.hexforge.onnx.lora.LoraInputs;
import dev.hexforge.onnx.lora.OnnxAdapterFile;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where a model's runs get their LoRA inputs ({@link LoraInputs}): an adapter file, run through ONNX Runtime's own
 * adapter mechanism ({@code OrtLoraAdapter} active in each run's options), or zeros, which is the base model. Each
 * session gets an adapter of exactly the LoRA inputs it declares (ONNX Runtime refuses a feed a graph does not take,
 * and a graph split into parts takes its own layers' inputs only), checked against their shapes first.
 */
public final class LoraFeed implements AutoCloseable {
    /** A feed for an export whose graphs take no LoRA inputs. */
    static final LoraFeed NONE = new LoraFeed(null, null, "no adapter");

    private final LoraInputs inputs;
    private final OnnxAdapterFile.Adapter adapter;
    private final String source;
    private final List<OrtLoraAdapter> opened = new ArrayList<>();

    private LoraFeed(LoraInputs inputs, OnnxAdapterFile.Adapter adapter, String source) {
        this.inputs = inputs;
        this.adapter = adapter;
        this.source = source;
    }

    /**
     * The feed of {@code adapter} for the export in {@code dir}: null for the base model (zeros, where its graphs take
     * LoRA inputs), one of the export's adapters by name, or an adapter file.
     */
    public static LoraFeed open(Path dir, ExportInfo info, String adapter) {
        LoraInputs lora = info.lora();
        if (lora == null) {
            if (adapter != null) {
                throw new AdapterFileException(dir + ": its graphs take no LoRA adapter (export the model with --adapter "
                        + "NAME=PEFT_DIR to run adapters on it)");
            }
            return NONE;
        }
        if (adapter == null) {
            return new LoraFeed(lora, null, "the base model (LoRA inputs at zero)");
        }
        Path file = lora.adapterFile(dir, adapter);
        if (file == null) {
            file = Path.of(adapter);
            if (!Files.isRegularFile(file)) {
                throw new AdapterFileException("adapter '" + adapter + "' is neither one of the export's (" + lora.adapters().keySet()
                        + ") nor a file");
            }
        }
        OnnxAdapterFile.Adapter a = OnnxAdapterFile.read(file);
        Set<String> known = new HashSet<>();
        for (int l = 0; l < info.numLayers(); l++) {
            for (Linear lin : lora.linears()) {
                known.add(LoraInputs.nameA(l, lin));
                known.add(LoraInputs.nameB(l, lin));
            }
        }
        for (OnnxAdapterFile.Parameter p : a.parameters()) {
            if (!known.contains(p.name())) {
                throw new AdapterFileException(file + ": parameter '" + p.name() + "' is no LoRA input of " + dir
                        + "'s graphs (they take " + lora.modules() + " at rank " + lora.rank() + "): an adapter of another model?");
            }
        }
        for (String name : known) {
            if (a.parameter(name) == null) {
                throw new AdapterFileException(file + ": no parameter '" + name + "', which the graphs take; an adapter file "
                        + "holds every LoRA input of its export (ONNX Runtime feeds nothing else)");
            }
        }
        return new LoraFeed(lora, a, file.toString());
    }

    /** What this feed runs: the adapter file, or the base model. */
    public String source() {
        return source;
    }

    /**
     * The ONNX Runtime adapter holding the LoRA inputs {@code session} declares, each checked against the shape the
     * graph gives it; null when it declares none. Closed with this feed.
     */
    OrtLoraAdapter forSession(OrtSession session) {
        if (inputs == null) {
            return null;
        }
        List<OnnxAdapterFile.Parameter> params = new ArrayList<>();
        try {
            for (Map.Entry<String, NodeInfo> e : session.getInputInfo().entrySet()) {
                if (!LoraInputs.isInput(e.getKey())) {
                    continue;
                }
                long[] shape = ((TensorInfo) e.getValue().getInfo()).getShape();
                OnnxAdapterFile.Parameter p = adapter == null
                        ? new OnnxAdapterFile.Parameter(e.getKey(), shape, OnnxAdapterFile.DataType.FLOAT,
                        ByteBuffer.allocate(Math.toIntExact(Arrays.stream(shape).reduce(1, (x, y) -> x * y) * Float.BYTES)))
                        : adapter.parameter(e.getKey());
                if (p.type() != OnnxAdapterFile.DataType.FLOAT || !Arrays.equals(p.dims(), shape)) {
                    throw new AdapterFileException(source + ": parameter '" + p.name() + "' is " + Arrays.toString(p.dims()) + " "
                            + p.type() + " but the graph takes " + Arrays.toString(shape) + " FLOAT (LoRA rank " + inputs.rank()
                            + "): an adapter of a higher rank or another model needs its own export");
                }
                params.add(p);
            }
            if (params.isEmpty()) {
                return null;
            }
            OrtLoraAdapter a = OrtLoraAdapter.create(OnnxAdapterFile.toBytes(new OnnxAdapterFile.Adapter(1, 1, params)));
            opened.add(a);
            return a;
        } catch (OrtException e) {
            throw new OnnxRuntimeException(source + ": ONNX Runtime cannot load the adapter: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        opened.forEach(OrtLoraAdapter::close);
        opened.clear();
    }
}
