package dev.hexforge.onnx.runtime;

import dev.hexforge.generate.CausalLm;

/** An export on ONNX Runtime, whose LoRA adapter changes between sequences without reopening its sessions. */
public interface OnnxCausalLm extends CausalLm {
    /**
     * Runs from now on feed {@code adapter} ({@link LoraFeed#open}: one of the export's by name, an adapter file, or
     * null for the base model); the previous one is closed. Checked whole before anything changes: a refused adapter
     * leaves the model as it was. A sequence started before keeps its cache, computed with the previous adapter, so
     * switch between sequences.
     */
    void useAdapter(String adapter);
}
