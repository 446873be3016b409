package dev.hexforge.compile.genie;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.compile.CompileException;
import dev.hexforge.compile.Soc;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** genie_config.json and htp_backend_ext_config.json against Genie's loader rules, for each model family. */
class GenieConfigTest {
    static final List<String> PARTS = List.of("model_1_of_2.bin", "model_2_of_2.bin");

    static ModelConfig preset(Preset p) {
        return SyntheticCheckpoint.config(SyntheticCheckpoint.Options.of(p, DType.BF16, 0));
    }

    @Test
    void qwen2TinysConfigLoadsWithRopeAsPositionalEncoding() {
        ModelConfig c = ModelConfig.read(Fixtures.qwen2Tiny());
        ObjectNode cfg = GenieConfig.of(c, 512, GenieConfig.Sampler.DEFAULT, PARTS);
        assertEquals(List.of(), GenieConfigRules.check(cfg));
        JsonNode d = cfg.path("dialog");
        assertEquals(512, d.at("/context/size").asInt());
        assertEquals(c.vocabSize(), d.at("/context/n-vocab").asInt());
        assertEquals(c.bosTokenId(), d.at("/context/bos-token").asInt());
        assertEquals("tokenizer.json", d.at("/tokenizer/path").asText());
        assertEquals(c.headDim(), d.at("/engine/backend/QnnHtp/kv-dim").asInt());
        assertFalse(d.at("/engine/backend/QnnHtp").has("pos-id-dim"), "RoPE is the model's positional-encoding, not both");
        assertEquals("htp_backend_ext_config.json", d.at("/engine/backend/extensions").asText());
        assertEquals(PARTS, List.of(d.at("/engine/model/binary/ctx-bins/0").asText(), d.at("/engine/model/binary/ctx-bins/1").asText()));
        JsonNode pe = d.at("/engine/model/positional-encoding");
        assertEquals("rope", pe.path("type").asText());
        assertEquals(c.headDim() / 2, pe.path("rope-dim").asInt());
        assertEquals(c.ropeTheta(), pe.path("rope-theta").asDouble());
        assertFalse(pe.has("rope-scaling"));
        assertEquals(42, d.at("/sampler/seed").asInt());
    }

    @Test
    void llama3CarriesItsRopeScalingAndQwen3None() {
        ModelConfig llama = preset(Preset.LLAMA_3_2_1B);
        ObjectNode cfg = GenieConfig.of(llama, 4096, GenieConfig.Sampler.DEFAULT, PARTS);
        assertEquals(List.of(), GenieConfigRules.check(cfg));
        JsonNode rs = cfg.at("/dialog/engine/model/positional-encoding/rope-scaling");
        assertEquals("llama3", rs.path("rope-type").asText());
        assertEquals(llama.ropeScaling().factor(), rs.path("factor").asDouble());
        assertEquals(llama.ropeScaling().lowFreqFactor(), rs.path("low-freq-factor").asDouble());
        assertEquals(llama.ropeScaling().highFreqFactor(), rs.path("high-freq-factor").asDouble());
        assertEquals(llama.ropeScaling().originalMaxPositionEmbeddings(), rs.path("original-max-position-embeddings").asInt());
        assertEquals(32, cfg.at("/dialog/engine/model/positional-encoding/rope-dim").asInt(), "head_dim 64 / 2");

        ObjectNode qwen3 = GenieConfig.of(preset(Preset.QWEN3_1_7B), 4096, GenieConfig.Sampler.DEFAULT, PARTS);
        assertEquals(List.of(), GenieConfigRules.check(qwen3));
        assertFalse(qwen3.at("/dialog/engine/model/positional-encoding").has("rope-scaling"));
        assertTrue(qwen3.at("/dialog/context/eos-token").isNumber() || qwen3.at("/dialog/context/eos-token").isArray());
    }

    @Test
    void theRulesRefuseWhatGeniesLoaderRefuses() {
        ObjectNode base = GenieConfig.of(ModelConfig.read(Fixtures.qwen2Tiny()), 512, GenieConfig.Sampler.DEFAULT, PARTS);

        ObjectNode unknown = base.deepCopy();
        ((ObjectNode) unknown.at("/dialog/context")).put("context-length", 512);
        assertTrue(GenieConfigRules.check(unknown).contains("dialog.context.context-length: unknown key (Genie refuses any key it does not know)"),
                GenieConfigRules.check(unknown).toString());

        ObjectNode missing = base.deepCopy();
        ((ObjectNode) missing.at("/dialog/engine/backend/QnnHtp")).remove("cpu-mask");
        assertEquals(List.of("dialog.engine.backend.QnnHtp.cpu-mask: missing (mandatory)"), GenieConfigRules.check(missing));

        ObjectNode both = base.deepCopy();
        ((ObjectNode) both.at("/dialog/engine/backend/QnnHtp")).put("pos-id-dim", 32);
        assertTrue(GenieConfigRules.check(both).get(0).contains("either pos-id-dim / rope-theta in QnnHtp or positional-encoding"),
                GenieConfigRules.check(both).toString());

        ObjectNode kinds = base.deepCopy();
        ((ObjectNode) kinds.at("/dialog/engine/backend/QnnHtp")).put("use-mmap", "true");
        ((ObjectNode) kinds.at("/dialog/context")).put("version", 2);
        ((ObjectNode) kinds.at("/dialog/engine/model/binary")).putArray("ctx-bins").add(3);
        ((ObjectNode) kinds.at("/dialog/engine/model/positional-encoding")).put("type", "xpos");
        List<String> p = GenieConfigRules.check(kinds);
        assertTrue(p.contains("dialog.engine.backend.QnnHtp.use-mmap: must be boolean"), p.toString());
        assertTrue(p.contains("dialog.context.version: must be 1"), p.toString());
        assertTrue(p.contains("dialog.engine.model.binary.ctx-bins: must be an array of strings"), p.toString());
        assertTrue(p.contains("dialog.engine.model.positional-encoding.type: must be rope, absolute or alibi"), p.toString());

        ObjectNode noBinary = base.deepCopy();
        ((ObjectNode) noBinary.at("/dialog/engine/model")).remove("binary");
        assertTrue(GenieConfigRules.check(noBinary).contains(
                "dialog.engine.model: a binary section goes with type binary, and type binary needs one"));
    }

    @Test
    void aContextBeyondTheModelsPositionsAndBadSamplerValuesAreRefused() {
        ModelConfig c = ModelConfig.read(Fixtures.qwen2Tiny());
        CompileException e = assertThrows(CompileException.class, () -> GenieConfig.of(c, 1024, GenieConfig.Sampler.DEFAULT, PARTS));
        assertTrue(e.getMessage().contains("max_position_embeddings"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new GenieConfig.Sampler(42, 0.8, 0, 0.95));
        assertThrows(IllegalArgumentException.class, () -> new GenieConfig.Sampler(42, Double.NaN, 40, 0.95));
        assertThrows(IllegalArgumentException.class, () -> new GenieConfig.Sampler(-1, 0.8, 40, 0.95));
        assertThrows(IllegalArgumentException.class, () -> new GenieConfig.Sampler(42, 0.8, 40, 1.5));
    }

    @Test
    void theHtpExtensionConfigNamesTheDeviceAndSharesWeights() {
        ObjectNode x = HtpExtConfig.of(Soc.resolve("SM8650", 0));
        assertEquals(57, x.at("/devices/0/soc_model").asInt());
        assertEquals("v75", x.at("/devices/0/dsp_arch").asText());
        assertEquals("burst", x.at("/devices/0/cores/0/perf_profile").asText());
        assertEquals("shared_buffer", x.at("/memory/mem_type").asText());
        assertTrue(x.at("/context/weight_sharing_enabled").asBoolean());
        assertEquals(69, HtpExtConfig.of(Soc.resolve("SM8750", 0)).at("/devices/0/soc_model").asInt());
        assertEquals(60, HtpExtConfig.of(Soc.resolve("SC8380XP", 0)).at("/devices/0/soc_model").asInt());
        CompileException unknown = assertThrows(CompileException.class, () -> HtpExtConfig.of(Soc.resolve("SM9999", 81)));
        assertTrue(unknown.getMessage().contains("SoC model id"), unknown.getMessage());
    }
}
