package dev.hexforge.onnx.export;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.onnx.builder.GraphBuilder.Attr;
import dev.hexforge.onnx.builder.GraphBuilder;
import dev.hexforge.onnx.lora.LoraInputs;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Emits the ONNX graph of a Qwen2 / Llama / Qwen3 decoder from standard ops only (no contrib ops): Gemm linears on
 * a [tokens, hidden] residual stream, RMSNorm as Pow/ReduceMean/Add/Sqrt/Div (Qwen3's per-head q/k norms the same
 * over head_dim), RoPE from gathered cos/sin tables (Llama 3's scaling already in them) with Slice/Neg/Concat,
 * grouped-query attention by folding each KV group's query heads into the sequence axis (so no Expand of the cache),
 * and an additive float mask.
 *
 * <p>Dynamic graphs take int64 ids and a 0/1 attention mask and return the whole cache; static graphs take int32
 * ids, a precomputed additive mask of shape [1, 1, seq, context], a past cache of context - seq positions, and
 * return only the new cache entries. Genie's graphs are static graphs with its interface ({@link GenieIo}): cos / sin
 * inputs instead of positions and tables, keys cached transposed, its names. The embedding's output is named
 * {@code hidden_states.0} in every graph, as each layer's output is {@code hidden_states.<layer + 1>}, so that a
 * graph cut anywhere has the names of the whole one and one calibration covers every layout.
 */
final class DecoderGraph {
    /** Large finite negative for masked positions: representable in fp16 and exact in fp32. */
    static final float MASK_NEGATIVE = -65504f;
    /**
     * The dynamic graph's int64 [1] initializer (not a graph input, so the Hugging Face interface is unchanged): the
     * first position that gets logits, as a Slice start on the sequence axis. The stored value, Long.MIN_VALUE, clamps
     * to 0: every position. A session that only generates overrides it with -1, the last position, when it opens
     * ({@code SessionOptions.addInitializer}). Only the Slice reads it, a node with a runtime input, so ONNX Runtime
     * cannot fold the value away; and no other constant equals it, so its constant sharing leaves it under its name
     * (with 0 it was merged into a shared zero and the override missed — DynamicOnnxLm fails loudly if that recurs).
     */
    static final String LOGITS_FROM = "logits_from";

    private final ModelConfig c;
    private final WeightFile weights;
    private final LinearFormat format;
    private final GraphBuilder g;
    private final boolean isStatic;
    private final boolean genie;
    private final int seq;
    private final int context;
    private final int fromLayer;
    private final int toLayer;
    private final boolean embed;
    private final boolean last;
    /** The graph's LoRA inputs, or null for none. */
    private final LoraInputs lora;

    private final Set<String> declared = new HashSet<>();
    private String batchSeq;   // dynamic: int64 [2] = (batch, seq)
    private String cos;
    private String sin;
    private String mask;

    private DecoderGraph(ModelConfig c, WeightFile weights, LinearFormat format, String name, int opset, Variant variant,
                         int seq, int context, GraphParts.Part part, LoraInputs lora) {
        this.c = c;
        this.lora = lora;
        this.weights = weights;
        this.format = format;
        this.g = new GraphBuilder(name, opset);
        format.domains().forEach(g::addDomain);
        this.isStatic = variant.fixedShapes();
        this.genie = variant == Variant.GENIE;
        this.seq = seq;
        this.context = context;
        this.fromLayer = part.from();
        this.toLayer = part.to();
        this.embed = part.embed();
        this.last = part.last();
    }

    static ModelProto dynamic(ModelConfig c, WeightFile weights, LinearFormat format, int opset, Map<String, String> metadata,
                              LoraInputs lora) {
        DecoderGraph d = new DecoderGraph(c, weights, format, "decoder", opset, Variant.DYNAMIC, -1, -1,
                new GraphParts.Part(0, c.numLayers(), true, true), lora);
        return d.emit(metadata);
    }

    /**
     * One part of a static or Genie graph split by layers: layers [from, to); a part with the embedding starts from
     * the token ids, another from {@code hidden_states.<from>} (the residual stream entering layer {@code from}); the
     * last part ends in the logits (it may hold the head alone), an earlier one in {@code hidden_states.<to>}. A part
     * with layers takes the positions, the mask and the past cache of its layers, and returns their new cache entries.
     */
    static ModelProto fixedPart(ModelConfig c, WeightFile weights, LinearFormat format, int opset, int seq, int context,
                                String name, Map<String, String> metadata, GraphParts.Part part, Variant variant,
                                LoraInputs lora) {
        DecoderGraph d = new DecoderGraph(c, weights, format, name, opset, variant, seq, context, part, lora);
        return d.emit(metadata);
    }

    private String w(String name) {
        if (declared.add(name)) {
            WeightFile.Stored s = weights.get(name);
            g.externalInitializer(name, s.type(), s.shape(), s.location());
        }
        return name;
    }

    private ModelProto emit(Map<String, String> metadata) {
        String ids = null;
        String positions = null;
        boolean first = embed;
        // a part of the embedding or the head alone attends to nothing: no positions, mask or cache
        boolean attends = toLayer > fromLayer;
        if (isStatic) {
            ids = first ? g.input("input_ids", DataType.INT32, 1L, (long) seq)
                    : g.input(GraphParts.hidden(fromLayer), DataType.FLOAT, (long) seq, (long) c.hiddenSize());
            if (attends && genie) {
                long half = c.headDim() / 2;
                cos = g.input(GenieIo.COS, DataType.FLOAT, 1L, 1L, (long) seq, half);
                sin = g.input(GenieIo.SIN, DataType.FLOAT, 1L, 1L, (long) seq, half);
            } else if (attends) {
                positions = g.input("position_ids", DataType.INT32, 1L, (long) seq);
            }
            if (attends) {
                mask = g.input("attention_mask", DataType.FLOAT, 1L, 1L, (long) seq, (long) context);
            }
        } else {
            ids = g.input("input_ids", DataType.INT64, "batch_size", "sequence_length");
            String padMask = g.input("attention_mask", DataType.INT64, "batch_size", "total_sequence_length");
            positions = g.input("position_ids", DataType.INT64, "batch_size", "sequence_length");
            batchSeq = g.op("/model", "Shape", ids);
            mask = causalMask(ids, padMask);
        }
        long past = isStatic ? context - seq : -1;
        String[][] pastKv = new String[c.numLayers()][2];
        for (int i = fromLayer; i < toLayer; i++) {
            if (genie) {
                pastKv[i][0] = g.input(GenieIo.keyIn(i), DataType.FLOAT, (long) c.numKvHeads(), 1L, (long) c.headDim(), past);
                pastKv[i][1] = g.input(GenieIo.valueIn(i), DataType.FLOAT, (long) c.numKvHeads(), 1L, past, (long) c.headDim());
                continue;
            }
            for (int kv = 0; kv < 2; kv++) {
                String n = "past_key_values." + i + (kv == 0 ? ".key" : ".value");
                pastKv[i][kv] = isStatic
                        ? g.input(n, DataType.FLOAT, 1L, (long) c.numKvHeads(), past, (long) c.headDim())
                        : g.input(n, DataType.FLOAT, "batch_size", (long) c.numKvHeads(), "past_sequence_length", (long) c.headDim());
            }
        }

        String x;
        if (first && format.handles(TensorNames.EMBED)) {
            String scope = "/model/embed_tokens";
            x = format.emitLookup(g, this::w, scope, g.op(scope, "Reshape", ids, g.constInt64(-1)), TensorNames.EMBED);
        } else if (first) {
            String embedded = g.op("/model/embed_tokens", "Gather", List.of(w(TensorNames.EMBED), ids));
            x = g.op("/model/embed_tokens", "Reshape", embedded, g.constInt64(-1, c.hiddenSize()));
        } else {
            x = ids;
        }
        if (first && isStatic) {
            x = g.rename(x, GraphParts.hidden(0));
        }

        if (attends && genie) {
            // [1, 1, seq, d/2] to the [1, 1, seq, d] of cat(freqs, freqs)
            cos = g.op("/model/rotary", "Concat", List.of(cos, cos), Attr.i("axis", 3));
            sin = g.op("/model/rotary", "Concat", List.of(sin, sin), Attr.i("axis", 3));
        } else if (attends) {
            String cosTable = w(WeightFile.ROPE_COS);
            String sinTable = w(WeightFile.ROPE_SIN);
            String axes1 = g.constInt64(1);
            cos = g.op("/model/rotary", "Unsqueeze", g.op("/model/rotary", "Gather", cosTable, positions), axes1);
            sin = g.op("/model/rotary", "Unsqueeze", g.op("/model/rotary", "Gather", sinTable, positions), axes1);
        }
        if (attends && c.groupSize() > 1) {
            mask = g.op("/model/attn_mask", "Concat", Collections.nCopies(c.groupSize(), mask), Attr.i("axis", 2));
        }

        for (int i = fromLayer; i < toLayer; i++) {
            x = layer(i, x, pastKv[i]);
        }
        if (!last) {
            if (!x.equals(GraphParts.hidden(toLayer))) {
                g.rename(x, GraphParts.hidden(toLayer));
            }
            g.output(GraphParts.hidden(toLayer), DataType.FLOAT, (long) seq, (long) c.hiddenSize());
            presents();
            return g.build("hexforge", ExportInfo.HEXFORGE_VERSION, metadata);
        }
        String normed = rmsNorm("/model/norm", x, TensorNames.FINAL_NORM);
        String rowsShape = null;
        if (!isStatic) {
            // positions LOGITS_FROM.. of each sequence (as stored: all of them), so a session that only generates skips
            // the head for the rest of a prompt, as llama.cpp does
            String shape3d = g.op("/lm_head", "Concat", List.of(batchSeq, g.constInt64(c.hiddenSize())), Attr.i("axis", 0));
            String hidden3d = g.op("/lm_head", "Reshape", normed, shape3d);
            String from = g.int64Initializer(LOGITS_FROM, Long.MIN_VALUE);
            String kept = g.op("/lm_head", "Slice", List.of(hidden3d, from, g.constInt64(Long.MAX_VALUE), g.constInt64(1)));
            rowsShape = g.op("/lm_head", "Shape", List.of(kept), Attr.i("start", 0), Attr.i("end", 2));
            normed = g.op("/lm_head", "Reshape", kept, g.constInt64(-1, c.hiddenSize()));
        }
        String head = c.tieWordEmbeddings() ? TensorNames.EMBED : TensorNames.LM_HEAD;
        String logits2d = format.handles(head) ? format.emit(g, this::w, "/lm_head", normed, head, null)
                : g.op("/lm_head", "Gemm", List.of(normed, w(head)), Attr.i("transB", 1));
        if (isStatic) {
            g.opNamed("logits", "/lm_head", "Reshape", List.of(logits2d, g.constInt64(1, seq, c.vocabSize())));
            g.output("logits", DataType.FLOAT, 1L, (long) seq, (long) c.vocabSize());
        } else {
            String shape = g.op("/lm_head", "Concat", List.of(rowsShape, g.constInt64(c.vocabSize())), Attr.i("axis", 0));
            g.opNamed("logits", "/lm_head", "Reshape", List.of(logits2d, shape));
            g.output("logits", DataType.FLOAT, "batch_size", "sequence_length", (long) c.vocabSize());
        }
        presents();
        return g.build("hexforge", ExportInfo.HEXFORGE_VERSION, metadata);
    }

    private void presents() {
        for (int i = fromLayer; i < toLayer; i++) {
            if (genie) {
                g.output(GenieIo.keyOut(i), DataType.FLOAT, (long) c.numKvHeads(), 1L, (long) c.headDim(), (long) seq);
                g.output(GenieIo.valueOut(i), DataType.FLOAT, (long) c.numKvHeads(), 1L, (long) seq, (long) c.headDim());
                continue;
            }
            for (String kind : new String[]{"key", "value"}) {
                String n = "present." + i + "." + kind;
                if (isStatic) {
                    g.output(n, DataType.FLOAT, 1L, (long) c.numKvHeads(), (long) seq, (long) c.headDim());
                } else {
                    g.output(n, DataType.FLOAT, "batch_size", (long) c.numKvHeads(), "total_sequence_length", (long) c.headDim());
                }
            }
        }
    }

    /** [batch, 1, seq, total] additive mask: causal over absolute positions, and padding from the 0/1 mask. */
    private String causalMask(String ids, String padMask) {
        String s = "/model/attn_mask";
        String total = g.op(s, "Gather", List.of(g.op(s, "Shape", padMask), g.scalarInt64(1)), Attr.i("axis", 0));
        String seqLen = g.op(s, "Gather", List.of(batchSeq, g.scalarInt64(1)), Attr.i("axis", 0));
        String pastLen = g.op(s, "Sub", total, seqLen);
        String one = g.scalarInt64(1);
        String keyPos = g.op(s, "Range", g.scalarInt64(0), total, one);
        String queryPos = g.op(s, "Range", pastLen, total, one);
        String causal = g.op(s, "LessOrEqual", g.op(s, "Unsqueeze", keyPos, g.constInt64(0)),
                g.op(s, "Unsqueeze", queryPos, g.constInt64(1)));
        String notPad = g.op(s, "Unsqueeze", g.op(s, "Cast", List.of(padMask), Attr.i("to", DataType.BOOL.getNumber())),
                g.constInt64(1, 2));
        String allowed = g.op(s, "And", causal, notPad);
        return g.op(s, "Where", allowed, g.scalarFloat(0f), g.scalarFloat(MASK_NEGATIVE));
    }

    private String layer(int i, String x, String[] pastKv) {
        String s = "/model/layers." + i;
        String h = rmsNorm(s + "/input_layernorm", x, TensorNames.inputNorm(i));
        String q = linear(s + "/attn/q_proj", h, i, Linear.Q);
        String k = linear(s + "/attn/k_proj", h, i, Linear.K);
        String v = linear(s + "/attn/v_proj", h, i, Linear.V);
        String attn = attention(s + "/attn", i, q, k, v, pastKv);
        String o = linear(s + "/attn/o_proj", attn, i, Linear.O);
        x = g.op(s + "/residual_attn", "Add", x, o);
        String h2 = rmsNorm(s + "/post_attention_layernorm", x, TensorNames.postAttentionNorm(i));
        String gate = linear(s + "/mlp/gate_proj", h2, i, Linear.GATE);
        String up = linear(s + "/mlp/up_proj", h2, i, Linear.UP);
        String silu = g.op(s + "/mlp/act", "Mul", gate, g.op(s + "/mlp/act", "Sigmoid", gate));
        String down = linear(s + "/mlp/down_proj", g.op(s + "/mlp", "Mul", silu, up), i, Linear.DOWN);
        // named as a part boundary is, so a graph split anywhere has the same tensor names as the whole one
        return g.opNamed(GraphParts.hidden(i + 1), s + "/residual_mlp", "Add", List.of(x, down));
    }

    private String linear(String scope, String x, int layer, Linear which) {
        String bias = c.attentionBias() && (which == Linear.Q || which == Linear.K || which == Linear.V)
                ? w(TensorNames.bias(layer, which)) : null;
        String weight = TensorNames.weight(layer, which);
        String y;
        if (format.handles(weight)) {
            y = format.emit(g, this::w, scope, x, weight, bias);
        } else {
            List<String> in = new ArrayList<>(List.of(x, w(weight)));
            if (bias != null) {
                in.add(bias);
            }
            y = g.op(scope, "Gemm", in, Attr.i("transB", 1));
        }
        if (lora == null || !lora.covers(which)) {
            return y;
        }
        // LoRA: y + (x · Aᵀ) · Bᵀ with A [rank, in] and B [out, rank] fed by the active adapter (its scale in B)
        long[] shapeA = lora.shapeA(c, which);
        long[] shapeB = lora.shapeB(c, which);
        String a = g.input(LoraInputs.nameA(layer, which), DataType.FLOAT, shapeA[0], shapeA[1]);
        String b = g.input(LoraInputs.nameB(layer, which), DataType.FLOAT, shapeB[0], shapeB[1]);
        String down = g.op(scope + "/lora", "Gemm", List.of(x, a), Attr.i("transB", 1));
        String up = g.op(scope + "/lora", "Gemm", List.of(down, b), Attr.i("transB", 1));
        return g.op(scope + "/lora", "Add", y, up);
    }

    /** In the shape ONNX Runtime fuses into one SimplifiedLayerNormalization (the square must be a Pow). */
    private String rmsNorm(String scope, String x, String weight) {
        String variance = g.reduceMeanLastAxis(scope, g.op(scope, "Pow", x, g.scalarFloat(2f)));
        String std = g.op(scope, "Sqrt", g.op(scope, "Add", variance, g.scalarFloat((float) c.rmsNormEps())));
        return g.op(scope, "Mul", g.op(scope, "Div", x, std), w(weight));
    }

    /** [tokens, heads * d] to [batch, heads, seq, d]. */
    private String toHeads(String scope, String x, int heads) {
        String shape = isStatic
                ? g.constInt64(1, seq, heads, c.headDim())
                : g.op(scope, "Concat", List.of(batchSeq, g.constInt64(heads, c.headDim())), Attr.i("axis", 0));
        return g.op(scope, "Transpose", List.of(g.op(scope, "Reshape", x, shape)), Attr.ints("perm", 0, 2, 1, 3));
    }

    private String rope(String scope, String x) {
        int half = c.headDim() / 2;
        String axis = g.constInt64(3);
        String x1 = g.op(scope, "Slice", x, g.constInt64(0), g.constInt64(half), axis);
        String x2 = g.op(scope, "Slice", x, g.constInt64(half), g.constInt64(c.headDim()), axis);
        String rotated = g.op(scope, "Concat", List.of(g.op(scope, "Neg", x2), x1), Attr.i("axis", 3));
        return g.op(scope, "Add", g.op(scope, "Mul", x, cos), g.op(scope, "Mul", rotated, sin));
    }

    private String attention(String s, int layer, String q2d, String k2d, String v2d, String[] pastKv) {
        int d = c.headDim();
        int kvh = c.numKvHeads();
        String q = toHeads(s + "/q", q2d, c.numHeads());
        String k = toHeads(s + "/k", k2d, kvh);
        if (c.qkNorm()) {
            // Qwen3: an RMSNorm over head_dim on every head, before RoPE ([b, heads, seq, d]: the last axis)
            q = rmsNorm(s + "/q_norm", q, TensorNames.qNorm(layer));
            k = rmsNorm(s + "/k_norm", k, TensorNames.kNorm(layer));
        }
        q = rope(s + "/q_rope", q);
        k = rope(s + "/k_rope", k);
        String v = toHeads(s + "/v", v2d, kvh);
        String presentK = "present." + layer + ".key";
        String presentV = "present." + layer + ".value";
        String keys;
        String values;
        String kt = null;
        if (genie) {
            // Genie caches keys transposed, [kvh, 1, d, positions], and values as [kvh, 1, positions, d]
            k = g.rename(k, presentK);
            v = g.rename(v, presentV);
            String newKeys = g.opNamed(GenieIo.keyOut(layer), s + "/k_cache", "Transpose",
                    List.of(g.op(s + "/k_cache", "Reshape", k, g.constInt64(kvh, 1, seq, d))), Attr.ints("perm", 0, 1, 3, 2));
            String newValues = g.opNamed(GenieIo.valueOut(layer), s + "/v_cache", "Reshape", List.of(v, g.constInt64(kvh, 1, seq, d)));
            kt = g.op(s + "/k_cache", "Concat", List.of(pastKv[0], newKeys), Attr.i("axis", 3));
            values = g.op(s + "/v_cache", "Concat", List.of(pastKv[1], newValues), Attr.i("axis", 2));
            keys = null;
        } else if (isStatic) {
            k = g.rename(k, presentK);
            v = g.rename(v, presentV);
            keys = g.op(s + "/k_cache", "Concat", List.of(pastKv[0], k), Attr.i("axis", 2));
            values = g.op(s + "/v_cache", "Concat", List.of(pastKv[1], v), Attr.i("axis", 2));
        } else {
            keys = g.opNamed(presentK, s + "/k_cache", "Concat", List.of(pastKv[0], k), Attr.i("axis", 2));
            values = g.opNamed(presentV, s + "/v_cache", "Concat", List.of(pastKv[1], v), Attr.i("axis", 2));
        }
        // fold the query heads that share one KV head into the sequence axis: [b, kvh, group * seq, d]
        // (Genie: [kvh, 1, group * seq, d], the same order, beside its [kvh, 1, ...] cache)
        String grouped = genie ? g.constInt64(kvh, 1, (long) c.groupSize() * seq, d)
                : isStatic ? g.constInt64(1, kvh, (long) c.groupSize() * seq, d)
                : g.constInt64(0, kvh, -1, d);
        String qg = g.op(s + "/q_grouped", "Reshape", q, grouped);
        if (kt == null) {
            kt = g.op(s, "Transpose", List.of(keys), Attr.ints("perm", 0, 1, 3, 2));
        }
        String scores = g.op(s + "/scores", "Mul", g.op(s + "/scores", "MatMul", qg, kt),
                g.scalarFloat((float) (1.0 / Math.sqrt(d))));
        String probs = g.op(s, "Softmax", List.of(g.op(s + "/scores", "Add", scores, mask)), Attr.i("axis", -1));
        String ctx = g.op(s + "/context", "MatMul", probs, values);
        String heads = isStatic
                ? g.constInt64(1, c.numHeads(), seq, d)
                : g.constInt64(0, c.numHeads(), -1, d);
        String merged = g.op(s + "/context", "Transpose", List.of(g.op(s + "/context", "Reshape", ctx, heads)),
                Attr.ints("perm", 0, 2, 1, 3));
        return g.op(s + "/context", "Reshape", merged, g.constInt64(-1, c.qSize()));
    }
}
