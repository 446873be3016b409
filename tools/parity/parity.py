#!/usr/bin/env python3
"""Hexforge's outputs against independent references, at any model size (run.sh drives it).

  logits  an export (ONNX Runtime, prefill then one token at a time through the KV cache) against transformers' forward
          over the same Hugging Face folder, in float32
  rtn     a quantized checkpoint's codes and scales against the RTN rule of ../shared/docs/algorithms.md, written here
          from that text (numpy only), and its model.safetensors against the dequantized codes
  adapter make a random PEFT LoRA adapter for a model (peft's own save_pretrained)
  merge   hexforge merge's output against peft's merge_and_unload, bit for bit in the checkpoint's type

Each check prints one line `PARITY <check> <PASS|FAIL> {json}` and the process exits 1 if any failed.
Needs numpy; logits also torch, transformers and onnxruntime; adapter and merge torch, transformers and peft.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I8": np.int8, "U8": np.uint8,
           "I32": np.int32, "I64": np.int64}


class SafeTensors:
    """A folder's safetensors files, memory-mapped; BF16 tensors come back as float32 (or raw uint16 bits)."""

    def __init__(self, paths):
        self.where = {}
        for path in paths:
            with open(path, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(n))
            data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
            for name, meta in header.items():
                if name != "__metadata__":
                    self.where[name] = (data, meta)

    @staticmethod
    def of_folder(folder, exclude=("hexforge_quant.safetensors",)):
        files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors") and f not in exclude)
        return SafeTensors([os.path.join(folder, f) for f in files])

    def names(self):
        return list(self.where)

    def dtype(self, name):
        return self.where[name][1]["dtype"]

    def raw(self, name):
        data, meta = self.where[name]
        start, end = meta["data_offsets"]
        return data[start:end].view(_DTYPES[meta["dtype"]]).reshape(meta["shape"])

    def f32(self, name):
        a = self.raw(name)
        if self.dtype(name) == "BF16":
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a.astype(np.float32)


def report(check, ok, **figures):
    print("PARITY %s %s %s" % (check, "PASS" if ok else "FAIL", json.dumps(figures, sort_keys=True)), flush=True)
    return ok


# ---------------------------------------------------------------------------------------------------------- rtn

def rtn_int8_symmetric(w):
    """algorithms.md: scale = max|w_row| / 127 (1.0 for an all-zero row), q = clamp(round(w/scale), -127, 127)."""
    m = np.abs(w).max(axis=1, keepdims=True)
    scale = np.where(m == 0, np.float32(1.0), m / np.float32(127)).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale, None


def rtn_int4_groups(w, group):
    """algorithms.md: per group of G input columns (the last one shorter), asymmetric with a zero point."""
    rows, cols = w.shape
    groups = -(-cols // group)
    q = np.empty((rows, cols), np.uint8)
    scale = np.empty((rows, groups), np.float32)
    zero = np.empty((rows, groups), np.uint8)
    for g in range(groups):
        blk = w[:, g * group:(g + 1) * group]
        mx = blk.max(axis=1, keepdims=True)
        mn = blk.min(axis=1, keepdims=True)
        s = (np.maximum(mx - mn, np.float32(1e-5)) / np.float32(15)).astype(np.float32)
        zp = np.clip(-np.rint(mn / s), 0, 15)
        q[:, g * group:(g + 1) * group] = np.clip(np.rint(blk / s) + zp, 0, 15)
        scale[:, g:g + 1] = s
        zero[:, g:g + 1] = zp
    return q, scale, zero


def check_rtn(source, checkpoint):
    with open(os.path.join(checkpoint, "hexforge_quant.json")) as f:
        spec = json.load(f)
    src = SafeTensors.of_folder(source)
    quant = SafeTensors([os.path.join(checkpoint, "hexforge_quant.safetensors")])
    fake = SafeTensors.of_folder(checkpoint)
    modules = sorted({n.rsplit(".", 1)[0] for n in quant.names()})
    codes = codes_off = codes_off_by_more = 0
    worst_scale = worst_dequant = 0.0
    for module in modules:
        head = "embed_tokens" in module or "lm_head" in module
        rule = spec["head"] if head else spec
        w = src.f32(module + ".weight")
        if rule["bits"] == 8 and rule["group"] == 0 and rule["symmetric"]:
            q, s, z = rtn_int8_symmetric(w)
        elif rule["bits"] == 4 and not rule["symmetric"]:
            q, s, z = rtn_int4_groups(w, rule["group"])
        else:
            return report("rtn", False, reason="no reference for the rule %s of %s" % (rule, module))
        ours_q = quant.raw(module + ".q")
        ours_s = quant.f32(module + ".scale")
        diff = np.abs(ours_q.astype(np.int32) - q.astype(np.int32))
        codes += diff.size
        codes_off += int((diff != 0).sum())
        codes_off_by_more += int((diff > 1).sum())
        worst_scale = max(worst_scale, float(np.max(np.abs(ours_s - s) / np.maximum(np.abs(s), 1e-30))))
        if z is not None:
            ours_z = quant.raw(module + ".zero")
            if not np.array_equal(ours_z.astype(np.int32), z.astype(np.int32)):
                return report("rtn", False, reason="zero points differ in " + module)
        # The checkpoint's float weights must be its own codes dequantized: (q - zp) * scale.
        cols = w.shape[1]
        group = cols if ours_s.shape[1] == 1 else rule["group"]
        zero_f = np.repeat(quant.raw(module + ".zero").astype(np.float32), group, axis=1)[:, :cols] \
            if z is not None else np.float32(0)
        dq = (ours_q.astype(np.float32) - zero_f) * np.repeat(ours_s, group, axis=1)[:, :cols]
        stored = fake.f32(module + ".weight")
        worst_dequant = max(worst_dequant, float(np.max(np.abs(stored - dq))))
    ok = codes_off <= max(1, codes // 1_000_000) and codes_off_by_more == 0 and worst_scale <= 1e-6 \
        and worst_dequant <= 1e-6
    return report("rtn", ok, bits=spec["bits"], group=spec["group"], head=spec["head"], modules=len(modules),
                  codes=codes, codes_different=codes_off, codes_off_by_more_than_one=codes_off_by_more,
                  worst_scale_relative=worst_scale, worst_dequant_abs=worst_dequant,
                  tolerance="codes differing <= 1 per million, each by 1 (a tie rounded in another float order); "
                            "scales 1e-6 relative; stored floats = dequantized codes within 1e-6")


# ------------------------------------------------------------------------------------------------------- logits

def ort_logits(export_dir, ids, prefill):
    import onnxruntime as ort
    with open(os.path.join(export_dir, "export.json")) as f:
        info = json.load(f)
    if info["variant"] != "DYNAMIC":
        raise SystemExit("logits needs a dynamic export, got " + info["variant"])
    so = ort.SessionOptions()
    sess = ort.InferenceSession(os.path.join(export_dir, info["graphs"]["model"]), so,
                                providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    past = {n: np.zeros((1, info["numKvHeads"], 0, info["headDim"]), np.float32)
            for n in names if n.startswith("past_key_values.")}
    out_names = [o.name for o in sess.get_outputs()]
    logits, length = [], 0
    steps = [ids[:prefill]] + [ids[i:i + 1] for i in range(prefill, len(ids))]
    for chunk in steps:
        n = len(chunk)
        feed = {"input_ids": np.array([chunk], np.int64),
                "position_ids": np.arange(length, length + n, dtype=np.int64)[None, :],
                "attention_mask": np.ones((1, length + n), np.int64)}
        feed.update(past)
        res = dict(zip(out_names, sess.run(out_names, feed)))
        logits.append(res["logits"][0])
        past = {"past_key_values." + k[len("present."):]: v for k, v in res.items() if k.startswith("present.")}
        length += n
    return np.concatenate(logits, axis=0)


def torch_logits(model_dir, ids):
    import torch
    from transformers import AutoModelForCausalLM
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").to(dev)
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor([ids], device=dev)).logits[0].float().cpu().numpy()
    del model
    return out


def check_logits(name, reference_model, export_dir, tokens, prefill, seed, tolerance):
    with open(os.path.join(reference_model, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    ids = np.random.default_rng(seed).integers(0, vocab, tokens).tolist()
    ref = torch_logits(reference_model, ids)
    ours = ort_logits(export_dir, ids, prefill)
    if ref.shape != ours.shape:
        return report(name, False, reason="shapes differ", reference=list(ref.shape), ours=list(ours.shape))
    scale = float(np.max(np.abs(ref)))
    worst = float(np.max(np.abs(ref - ours)))
    top1 = float(np.mean(ref.argmax(-1) == ours.argmax(-1)))
    ranked = np.sort(ref, axis=-1)
    margin = ranked[:, -1] - ranked[:, -2]
    # A disagreement only counts where transformers' own top two are further apart than the worst difference.
    clear = margin > 2 * worst
    top1_clear = float(np.mean((ref.argmax(-1) == ours.argmax(-1))[clear])) if clear.any() else 1.0
    ok = worst <= tolerance * scale and top1_clear == 1.0
    return report(name, ok, tokens=tokens, prefill=prefill, decode_steps=tokens - prefill, max_abs_logit=scale,
                  max_abs_diff=worst, relative=worst / scale if scale else 0.0, top1_agreement=top1,
                  top1_agreement_where_clear=top1_clear, tolerance="max |diff| <= %g x max |logit|" % tolerance)


# -------------------------------------------------------------------------------------------------- peft merge

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def make_adapter(model_dir, out, rank, seed):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
    model = get_peft_model(base, LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, bias="none",
                                            target_modules=TARGETS, task_type="CAUSAL_LM"))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0.0, 0.02)  # peft starts B at zero, which would make the merge a no-op
    model.save_pretrained(out)
    print("adapter r=%d written to %s" % (rank, out), flush=True)


def bf16_bits(x32):
    """float32 -> bfloat16 bits, round half to even (as torch does)."""
    u = x32.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_ulp(x):
    """The spacing of bfloat16 numbers at |x| (8 significant bits)."""
    _, e = np.frexp(np.maximum(np.abs(x), np.float64(2.0 ** -126)))
    return np.ldexp(1.0, e - 8)


def check_merge(model_dir, adapter, merged):
    """Merged = W + (B @ A) * alpha / r rounded once into the checkpoint's type. Each element of hexforge's and peft's
    results may differ by the rounding of the float32 low-rank product (its summation order is not specified), so each
    is held to one unit in the last place at |W| + |delta|: where W and delta cancel, the result is far smaller than
    what the rounding of its operands leaves undetermined; where they add up, it can reach the binade above both.
    Unadapted tensors: bit-identical."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    ours = SafeTensors.of_folder(merged)
    kind = ours.dtype("model.norm.weight")
    dtype = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}[kind]
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    ref = PeftModel.from_pretrained(base, adapter).merge_and_unload().state_dict()
    src = SafeTensors.of_folder(model_dir)
    lora = SafeTensors.of_folder(adapter)
    with open(os.path.join(adapter, "adapter_config.json")) as f:
        cfg = json.load(f)
    scaling = cfg["lora_alpha"] / cfg["r"]
    total = differing = adapted = 0
    ours_exact = peft_exact = 0
    worst = 0.0
    for name in ours.names():
        if name not in ref:
            return report("merge", False, reason="hexforge wrote %s, which peft's model does not have" % name)
        o = ours.f32(name)
        r = ref[name].detach().float().cpu().numpy().reshape(o.shape)
        total += o.size
        differing += int((o != r).sum())
        module = name[:-len(".weight")]
        a_name = "base_model.model." + module + ".lora_A.weight"
        if name.endswith(".weight") and a_name in lora.names():
            adapted += 1
            w = src.f32(name).astype(np.float64)
            delta = (lora.f32("base_model.model." + module + ".lora_B.weight").astype(np.float64)
                     @ lora.f32(a_name).astype(np.float64)) * scaling
            exact = w + delta
            size = np.abs(w) + np.abs(delta)
            bound = bf16_ulp(size) if kind == "BF16" else np.spacing(size.astype(np.float32)).astype(np.float64)
            worst = max(worst, float(np.max(np.abs(o - r) / bound)))
            if kind == "BF16":
                e = bf16_bits(exact.astype(np.float32))
                ours_exact += int((ours.raw(name) == e).sum())
                peft_exact += int((ref[name].detach().cpu().contiguous().view(torch.int16).numpy().view(np.uint16)
                                   .reshape(e.shape) == e).sum())
        elif not np.array_equal(o, r):
            return report("merge", False, reason="%s is not adapted but differs from peft's" % name)
    ok = worst <= 1.0 and adapted > 0
    return report("merge", ok, tensors=len(ours.names()), adapted_weights=adapted, elements=total,
                  elements_not_bit_identical=differing,
                  worst_difference_in_ulps_at_w_plus_delta=worst,
                  hexforge_equal_to_exact_rounded=ours_exact, peft_equal_to_exact_rounded=peft_exact,
                  tolerance="each element within one unit in the last place at |W| + |delta|; "
                            "unadapted tensors bit-identical")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("logits")
    a.add_argument("--name", default="logits")
    a.add_argument("--reference-model", required=True, help="Hugging Face folder transformers loads")
    a.add_argument("--export", required=True, help="a dynamic hexforge export of the same weights")
    a.add_argument("--tokens", type=int, default=40)
    a.add_argument("--prefill", type=int, default=32)
    a.add_argument("--seed", type=int, default=7)
    a.add_argument("--tolerance", type=float, default=1e-3)
    a = sub.add_parser("rtn")
    a.add_argument("--source", required=True)
    a.add_argument("--checkpoint", required=True)
    a = sub.add_parser("adapter")
    a.add_argument("--model", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--rank", type=int, default=16)
    a.add_argument("--seed", type=int, default=3)
    a = sub.add_parser("merge")
    a.add_argument("--model", required=True)
    a.add_argument("--adapter", required=True)
    a.add_argument("--merged", required=True)
    args = p.parse_args()
    if args.cmd == "logits":
        ok = check_logits(args.name, args.reference_model, args.export, args.tokens, args.prefill, args.seed,
                          args.tolerance)
    elif args.cmd == "rtn":
        ok = check_rtn(args.source, args.checkpoint)
    elif args.cmd == "adapter":
        make_adapter(args.model, args.out, args.rank, args.seed)
        ok = True
    else:
        ok = check_merge(args.model, args.adapter, args.merged)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
