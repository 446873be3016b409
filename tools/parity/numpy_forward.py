# A forward of a Qwen2 / Llama (with llama3 RoPE scaling) / Qwen3 decoder in float64 numpy, written from the
# models' published rules and independent of Hexforge's code: greedy ids, and with a file of logits (JavaLogits.java),
# the largest difference from them at the last position. docs/parity.md says how it was used.
#   python3 numpy_forward.py MODEL_DIR ID,ID,... NEW_TOKENS [LOGITS_FILE]
import json, struct, sys, math
import numpy as np
d = sys.argv[1]
cfg = json.load(open(d + "/config.json"))
raw = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8+n]); base = 8 + n
W = {}
for k, v in hdr.items():
    if k == "__metadata__": continue
    a, b = v["data_offsets"]; buf = raw[base+a:base+b]
    if v["dtype"] == "F32": x = np.frombuffer(buf, np.float32)
    elif v["dtype"] == "BF16": x = (np.frombuffer(buf, np.uint16).astype(np.uint32) << 16).view(np.float32)
    W[k] = x.reshape(v["shape"]).astype(np.float64)
H = cfg["hidden_size"]; nh = cfg["num_attention_heads"]; kvh = cfg["num_key_value_heads"]
hd = cfg.get("head_dim") or H // nh; eps = cfg["rms_norm_eps"]; theta = cfg["rope_theta"]
inv = 1.0 / theta ** (np.arange(0, hd, 2) / hd)
rs = cfg.get("rope_scaling")
if rs and rs.get("rope_type") == "llama3":
    f, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    wl = 2 * math.pi / inv
    new = []
    for i, fr in enumerate(inv):
        if wl[i] < old / hi: new.append(fr)
        elif wl[i] > old / lo: new.append(fr / f)
        else:
            s = (old / wl[i] - lo) / (hi - lo); new.append((1 - s) * fr / f + s * fr)
    inv = np.array(new)
def rms(x, w): return w * x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
def rot(x, pos):
    ang = np.outer(pos, inv); c = np.cos(np.concatenate([ang, ang], -1)); s = np.sin(np.concatenate([ang, ang], -1))
    x1, x2 = x[..., :hd//2], x[..., hd//2:]
    return x * c[:, None, :] + np.concatenate([-x2, x1], -1) * s[:, None, :]
qk = cfg["model_type"] == "qwen3"
def forward(ids):
    T = len(ids); x = W["model.embed_tokens.weight"][ids]
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = rms(x, W[p + "input_layernorm.weight"])
        def lin(name, y):
            o = y @ W[p + name + ".weight"].T
            if p + name + ".bias" in W: o = o + W[p + name + ".bias"]
            return o
        q = lin("self_attn.q_proj", h).reshape(T, nh, hd); k = lin("self_attn.k_proj", h).reshape(T, kvh, hd)
        v = lin("self_attn.v_proj", h).reshape(T, kvh, hd)
        if qk:
            q = rms(q, W[p + "self_attn.q_norm.weight"]); k = rms(k, W[p + "self_attn.k_norm.weight"])
        pos = np.arange(T); q = rot(q, pos); k = rot(k, pos)
        g = nh // kvh; out = np.zeros((T, nh, hd))
        for hh in range(nh):
            sc = q[:, hh] @ k[:, hh // g].T / math.sqrt(hd)
            sc = sc + np.triu(np.full((T, T), -1e30), 1)
            pr = np.exp(sc - sc.max(-1, keepdims=True)); pr /= pr.sum(-1, keepdims=True)
            out[:, hh] = pr @ v[:, hh // g]
        x = x + out.reshape(T, nh * hd) @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"])
        gt = h @ W[p + "mlp.gate_proj.weight"].T; up = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (gt / (1 + np.exp(-gt)) * up) @ W[p + "mlp.down_proj.weight"].T
    x = rms(x, W["model.norm.weight"])
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    return x @ head.T
ids = [int(t) for t in sys.argv[2].split(",")]
gen = []; gaps = []
for step in range(int(sys.argv[3])):
    lg = forward(ids + gen)[-1]
    o = np.argsort(-lg); gaps.append(lg[o[0]] - lg[o[1]]); gen.append(int(o[0]))
print(json.dumps({"ids": gen, "minGap": float(min(gaps))}))
if len(sys.argv) > 4:
    lg = forward(ids)[-1]
    j = np.array([float(t) for t in open(sys.argv[4]).read().split()])
    print("max abs diff", np.abs(lg - j).max(), "logit range", lg.min(), lg.max(), "std", lg.std())
