#!/usr/bin/env python3
"""Exports the tiny models the tests load: a valid one, variants (GQA, qk-norm, tied), and one broken model per
contract violation that `gspo inspect` must reject."""
import argparse
import json
import os
import subprocess
import sys

import torch
from typing import Optional, Tuple

from torch import Tensor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import gspo_model  # noqa: E402
import make_tiny_model  # noqa: E402


def export(out: str, *flags: str) -> None:
    subprocess.run([sys.executable, os.path.join(HERE, "..", "scripts", "make_tiny_model.py"), "--out", out, *flags],
                   check=True, stdout=subprocess.DEVNULL)


class WrongShape(gspo_model.CausalLM):
    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self._run(input_ids, attention_mask, None, 0, 0)[:, :, :10]


class NoDecode(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self.inner(input_ids, attention_mask)

    @torch.jit.export
    def init_cache(self, batch: int, max_len: int) -> Tensor:
        return self.inner.init_cache(batch, max_len)

    @torch.jit.export
    def prefill(self, input_ids: Tensor, attention_mask: Tensor, cache: Tensor) -> Tensor:
        return self.inner.prefill(input_ids, attention_mask, cache)

    @torch.jit.export
    def reorder_cache(self, cache: Tensor, rows: Tensor) -> Tensor:
        return cache.index_select(2, rows)


class WithoutLayers(NoDecode):
    """The five required methods and logits_from, none of the per-layer ones: gspo must train it through forward."""

    @torch.jit.export
    def decode(self, input_ids: Tensor, attention_mask: Tensor, cache: Tensor, start: int) -> Tensor:
        return self.inner.decode(input_ids, attention_mask, cache, start)

    @torch.jit.export
    def logits_from(self, input_ids: Tensor, attention_mask: Tensor, first: int) -> Tensor:
        return self.inner.logits_from(input_ids, attention_mask, first)


class FutureLayerApi(gspo_model.CausalLM):
    """Per-layer methods of a version this gspo does not know."""

    @torch.jit.export
    def layer_api(self) -> int:
        return 2


class BadLayer(gspo_model.CausalLM):
    """layer() skips the MLP: the per-layer composition disagrees with forward."""

    @torch.jit.export
    def layer(self, index: int, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor]) -> Tensor:
        out = x
        i = 0
        for block in self.layers:
            if i == index:
                out = x + block.self_attn(block.input_layernorm(x), cos, sin, mask, None, 0, None)
            i += 1
        return out


class BadSharedLayer(gspo_model.CausalLM):
    """shared_layer() runs each response without its prompt: it disagrees with layer() over prompt + response rows."""

    @torch.jit.export
    def shared_layer(self, index: int, xp: Tensor, cos_p: Tensor, sin_p: Tensor, xr: Tensor, cos_r: Tensor,
                     sin_r: Tensor, group: Tensor, prompt_len: Tensor, routes_p: Optional[Tensor],
                     routes_r: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        none = torch.zeros(0, dtype=torch.long, device=xp.device)
        return self.layer(index, xp, cos_p, sin_p, None), self.layer(index, xr, cos_r, sin_r, None), none, none


class FutureSlotApi(gspo_model.CausalLM):
    """Slot methods of a version this gspo does not know."""

    @torch.jit.export
    def slot_api(self) -> int:
        return 4


class SlotApiOne(gspo_model.CausalLM):
    """An export from before append_slots: slot_api 1 (continuous batching, no appending)."""

    @torch.jit.export
    def slot_api(self) -> int:
        return 1


class EpApiOne(gspo_model.CausalLM):
    """An MoE export from before the slot passes one layer at a time: ep_api 1 (trains with expert parallelism, cannot
    sample with its experts on other ranks)."""

    @torch.jit.export
    def ep_api(self) -> int:
        return 1


class RouteApiOne(gspo_model.CausalLM):
    """An MoE export from before the rollout's route record: route_api 1 (routing replay of the old pass only), and
    before the capturable MoE decode (no moe_capture_rows in its manifest: gspo keeps its decode eager on CUDA)."""

    @torch.jit.export
    def route_api(self) -> int:
        return 1


class BadFeedForward(gspo_model.CausalLM):
    """feed_forward drops the MoE layers' experts (returns zeros): the slot passes one layer at a time disagree with
    the whole slot methods."""

    @torch.jit.export
    def feed_forward(self, index: int, n: Tensor) -> Tensor:
        out = n
        i = 0
        for block in self.layers:
            if i == index:
                out = block.mlp(n) * 0 if block.mlp.last_load.numel() > 0 else block.mlp(n)
            i += 1
        return out


class BadAppend(gspo_model.CausalLM):
    """append_slots returns the right logits but writes nothing into the cache: the next decode attends to noise."""

    @torch.jit.export
    def append_slots(self, input_ids: Tensor, lengths: Tensor, cache: Tensor, slots: Tensor, columns: Tensor,
                     width: int) -> Tensor:
        return self._append(input_ids, lengths, cache.clone(), slots, columns, width)


class BadSlots(gspo_model.CausalLM):
    """copy_slots copies nothing: a sample given a slot later would attend to another prompt's keys."""

    @torch.jit.export
    def copy_slots(self, cache: Tensor, src: Tensor, dst: Tensor, columns: int):
        pass


class BadRoutes(gspo_model.CausalLM):
    """routed_layer ignores the routes it is given: Routing Replay would silently replay nothing."""

    @torch.jit.export
    def routed_layer(self, index: int, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor],
                     routes: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        out = x
        chosen = torch.zeros(0, dtype=torch.long)
        i = 0
        for block in self.layers:
            if i == index:
                out, chosen = block.routed(x, cos, sin, mask, None)
            i += 1
        return out, chosen


class BadCache(gspo_model.CausalLM):
    """decode ignores the cache: disagrees with the full forward."""

    @torch.jit.export
    def decode(self, input_ids: Tensor, attention_mask: Tensor, cache: Tensor, start: int) -> Tensor:
        return self._run(input_ids, attention_mask[:, start:start + 1], None, 0, -1).squeeze(1)


def write_forward_golden(model_path: str, out_path: str) -> None:
    """Logits of the eager (un-scripted) module rebuilt from the exported weights, for a left-padded batch."""
    scripted = torch.jit.load(model_path)
    extra = {"gspo_manifest.json": ""}
    torch.jit.load(model_path, _extra_files=extra)
    man = json.loads(extra["gspo_manifest.json"])
    cfg = {"vocab_size": man["vocab_size"], "hidden_size": man["hidden_size"], "num_layers": man["num_layers"],
           "num_heads": man["num_heads"], "num_kv_heads": man["num_kv_heads"], "head_dim": man["head_dim"],
           "intermediate_size": 4 * man["hidden_size"], "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "max_seq_len": man["max_seq_len"]}
    eager = gspo_model.CausalLM(cfg)
    eager.load_state_dict({k: v for k, v in scripted.state_dict().items() if not k.endswith("last_load")})
    ids = torch.tensor([[256, 256, 257, 72, 101, 108, 108, 111], [257, 49, 43, 50, 61, 51, 10, 65]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1]])
    with torch.no_grad():
        logits = eager(ids, mask)
    with open(out_path, "w") as f:
        json.dump({"ids": ids.tolist(), "mask": mask.tolist(), "shape": list(logits.shape),
                   "logits": [round(x, 7) for x in logits.flatten().tolist()]}, f)


class NanWhenTraining(gspo_model.CausalLM):
    """Finite logits for sampling (no grad), NaN logits in the training forward (grad enabled)."""

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self.logits_from(input_ids, attention_mask, 0)

    @torch.jit.export
    def logits_from(self, input_ids: Tensor, attention_mask: Tensor, first: int) -> Tensor:
        logits = self._run(input_ids, attention_mask, None, 0, first)
        if torch.is_grad_enabled():
            logits = logits * float("nan")
        return logits

    @torch.jit.export
    def final_norm(self, x: Tensor) -> Tensor:
        y = self.norm(x)
        if torch.is_grad_enabled():
            y = y * float("nan")
        return y


def export_stories260k(out: str) -> None:
    """Karpathy's stories260K (../shared) through convert_llama2c.py and export_hf.py, when the files are there."""
    src = os.path.join(HERE, "..", "..", "shared", "data", "models", "stories260K")
    if not os.path.exists(os.path.join(src, "stories260K.bin")):
        print("no ../shared stories260K: skipping the real-model export")
        return
    scripts = os.path.join(HERE, "..", "scripts")
    subprocess.run([sys.executable, os.path.join(scripts, "convert_llama2c.py"), "--bin", os.path.join(src, "stories260K.bin"),
                    "--tokenizer", os.path.join(src, "tok512.bin"), "--out", f"{out}/stories260K_hf"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(scripts, "export_hf.py"), "--hf", f"{out}/stories260K_hf", "--out",
                    f"{out}/stories260K.pt", "--max-seq-len", "512"], check=True, stdout=subprocess.DEVNULL)


def write_safetensors(path: str, tensors: dict) -> None:
    """The safetensors layout: 8-byte little-endian header length, JSON header, raw data (written here to test
    export_hf.py's reader)."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little"))
        f.write(raw)
        for b in blobs:
            f.write(b)


def export_tiny_qwen3_checkpoint(out: str, stem: str = "qwen3_tiny", seed: int = 11, hidden: int = 32,
                                 layers: int = 2) -> None:
    """A random Qwen3-shaped Hugging Face directory (safetensors + the real Qwen3 tokenizer files from ../shared)
    through export_hf.py: checks the qwen3 family path, the safetensors reader and the embedded HF tokenizer. A
    second, wider one (qwen3_teacher) is the distillation teacher of tests/golden/distill_reference.py."""
    tok_dir = os.path.join(HERE, "..", "..", "shared", "data", "tokenizers", "qwen3")
    if not os.path.exists(os.path.join(tok_dir, "tokenizer.json")):
        print("no ../shared qwen3 tokenizer: skipping the qwen3 export")
        return
    d = f"{out}/{stem}_hf"
    os.makedirs(d, exist_ok=True)
    cfg = {"model_type": "qwen3", "hidden_size": hidden, "intermediate_size": 64, "num_hidden_layers": layers,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 151936,
           "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
           "tie_word_embeddings": True, "bos_token_id": 151643, "eos_token_id": 151645}
    json.dump(cfg, open(f"{d}/config.json", "w"))
    g = torch.Generator().manual_seed(seed)
    H = hidden
    sd = {"model.embed_tokens.weight": torch.randn(151936, H, generator=g) * 0.02, "model.norm.weight": torch.ones(H)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for name, shape in [("self_attn.q_proj", (64, H)), ("self_attn.k_proj", (32, H)), ("self_attn.v_proj", (32, H)),
                            ("self_attn.o_proj", (H, 64)), ("mlp.gate_proj", (64, H)), ("mlp.up_proj", (64, H)),
                            ("mlp.down_proj", (H, 64))]:
            sd[p + name + ".weight"] = torch.randn(*shape, generator=g) * 0.05
        for name in ["input_layernorm", "post_attention_layernorm"]:
            sd[p + name + ".weight"] = torch.ones(H)
        sd[p + "self_attn.q_norm.weight"] = torch.ones(16) + 0.1 * torch.randn(16, generator=g)
        sd[p + "self_attn.k_norm.weight"] = torch.ones(16) + 0.1 * torch.randn(16, generator=g)
    write_safetensors(f"{d}/model.safetensors", sd)
    for name in ["tokenizer.json", "tokenizer_config.json"]:
        with open(os.path.join(tok_dir, name)) as src, open(f"{d}/{name}", "w") as dst:
            dst.write(src.read())
    subprocess.run([sys.executable, os.path.join(HERE, "..", "scripts", "export_hf.py"), "--hf", d, "--out",
                    f"{out}/{stem}.pt", "--max-seq-len", "256"], check=True, stdout=subprocess.DEVNULL)


def export_tiny_qwen3_moe_checkpoint(out: str) -> None:
    """A random Qwen3-MoE directory (pytorch_model.bin; layer 1 dense through mlp_only_layers) with a byte tokenizer,
    through export_hf.py: the MoE path of the exporter, checked by gspo inspect (KV-cache parity) and generate."""
    d = f"{out}/qwen3_moe_tiny_hf"
    os.makedirs(d, exist_ok=True)
    cfg = {"model_type": "qwen3_moe", "hidden_size": 32, "intermediate_size": 48, "moe_intermediate_size": 24,
           "num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": True, "decoder_sparse_step": 1,
           "mlp_only_layers": [1], "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 8, "vocab_size": 300, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
           "rope_theta": 10000.0, "tie_word_embeddings": False, "bos_token_id": 257, "eos_token_id": 258}
    json.dump(cfg, open(f"{d}/config.json", "w"))
    g = torch.Generator().manual_seed(13)
    r = lambda *shape: torch.randn(*shape, generator=g) * 0.05  # noqa: E731
    sd = {"model.embed_tokens.weight": r(300, 32), "model.norm.weight": torch.ones(32), "lm_head.weight": r(300, 32)}
    for i in range(3):
        p = f"model.layers.{i}."
        for name, shape in [("q_proj", (32, 32)), ("k_proj", (16, 32)), ("v_proj", (16, 32)), ("o_proj", (32, 32))]:
            sd[p + "self_attn." + name + ".weight"] = r(*shape)
        sd[p + "self_attn.q_norm.weight"] = torch.ones(8)
        sd[p + "self_attn.k_norm.weight"] = torch.ones(8)
        sd[p + "input_layernorm.weight"] = torch.ones(32)
        sd[p + "post_attention_layernorm.weight"] = torch.ones(32)
        if i == 1:
            for name, shape in [("gate_proj", (48, 32)), ("up_proj", (48, 32)), ("down_proj", (32, 48))]:
                sd[p + "mlp." + name + ".weight"] = r(*shape)
        else:
            sd[p + "mlp.gate.weight"] = r(4, 32) * 20
            for e in range(4):
                for name, shape in [("gate_proj", (24, 32)), ("up_proj", (24, 32)), ("down_proj", (32, 24))]:
                    sd[p + f"mlp.experts.{e}.{name}.weight"] = r(*shape)
    torch.save(sd, f"{d}/pytorch_model.bin")
    json.dump(make_tiny_model.byte_tokenizer_spec(), open(f"{d}/gspo_tokenizer.json", "w"))
    subprocess.run([sys.executable, os.path.join(HERE, "..", "scripts", "export_hf.py"), "--hf", d, "--out",
                    f"{out}/qwen3_moe_tiny.pt", "--max-seq-len", "256"], check=True, stdout=subprocess.DEVNULL)


def export_same_weights_as_head_major(out: str, tok: dict) -> None:
    """tests/data/slot_api2_head_major.pt (shipped: made by scripts/gspo_model.py before the sequence-major cache of
    slot_api 3, 2 layers, hidden 32, 4 heads / 2 KV heads, seed 11) re-exported by today's exporter with the same
    weights: slot_api3_same_weights.pt, so a test can sample both and compare."""
    old = torch.jit.load(os.path.join(HERE, "data", "slot_api2_head_major.pt"))
    cfg = make_tiny_model.tiny_config(argparse.Namespace(hidden=32, heads=4, kv_heads=2, layers=2, intermediate=0,
                                                         max_seq_len=256, tie=False, qkv_bias=False, qk_norm=False,
                                                         prior_text=""))
    model = gspo_model.CausalLM(cfg)
    model.load_state_dict({k: v for k, v in old.state_dict().items() if "last_load" not in k})
    gspo_model.save_scripted(model, cfg, tok, "float32", f"{out}/slot_api3_same_weights.pt")


def small_cfg() -> dict:
    args = argparse.Namespace(hidden=32, heads=4, kv_heads=2, layers=1, intermediate=0, max_seq_len=64, tie=False,
                              qkv_bias=False, qk_norm=False, prior_text="")
    return make_tiny_model.tiny_config(args)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    out = p.parse_args().out
    os.makedirs(out, exist_ok=True)
    export(f"{out}/tiny.pt", "--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2")
    export(f"{out}/tiny_qwen3.pt", "--layers", "2", "--hidden", "32", "--heads", "4", "--kv-heads", "1",
           "--qk-norm", "--qkv-bias", "--tie", "--seed", "3")
    write_forward_golden(f"{out}/tiny.pt", f"{out}/tiny_forward_golden.json")
    # A base model with a strong prior on digits and EOS, so short arithmetic runs get non-zero rewards.
    export(f"{out}/tiny_prior.pt", "--layers", "1", "--hidden", "32", "--heads", "2", "--kv-heads", "1",
           "--prior-text", "0123456789", "--prior-logit", "6.0", "--seed", "5")
    tok = make_tiny_model.byte_tokenizer_spec()
    cfg = small_cfg()
    torch.manual_seed(0)
    gspo_model.save_scripted(WrongShape(cfg), cfg, tok, "float32", f"{out}/broken_wrong_shape.pt")
    gspo_model.save_scripted(BadCache(cfg), cfg, tok, "float32", f"{out}/broken_bad_cache.pt")
    gspo_model.save_scripted(NanWhenTraining(cfg), cfg, tok, "float32", f"{out}/nan_when_training.pt")
    gspo_model.save_scripted(FutureLayerApi(cfg), cfg, tok, "float32", f"{out}/broken_layer_api.pt")
    gspo_model.save_scripted(BadLayer(cfg), cfg, tok, "float32", f"{out}/broken_layer.pt")
    gspo_model.save_scripted(BadSharedLayer(cfg), cfg, tok, "float32", f"{out}/broken_shared_layer.pt")
    gspo_model.save_scripted(FutureSlotApi(cfg), cfg, tok, "float32", f"{out}/broken_slot_api.pt")
    gspo_model.save_scripted(BadSlots(cfg), cfg, tok, "float32", f"{out}/broken_slots.pt")
    gspo_model.save_scripted(BadAppend(cfg), cfg, tok, "float32", f"{out}/broken_append.pt")
    gspo_model.save_scripted(SlotApiOne(cfg), cfg, tok, "float32", f"{out}/slot_api1.pt")
    export_same_weights_as_head_major(out, tok)
    moe_cfg = dict(cfg, moe_layers=[0], num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16)
    gspo_model.save_scripted(BadRoutes(moe_cfg), moe_cfg, tok, "float32", f"{out}/broken_routes.pt")
    gspo_model.save_scripted(EpApiOne(moe_cfg), moe_cfg, tok, "float32", f"{out}/ep_api1.pt")
    gspo_model.save_scripted(BadFeedForward(moe_cfg), moe_cfg, tok, "float32", f"{out}/broken_feed_forward.pt")
    older = {k: v for k, v in gspo_model.manifest_for(moe_cfg, tok, "float32").items() if k != "moe_capture_rows"}
    gspo_model.save_scripted(RouteApiOne(moe_cfg), moe_cfg, tok, "float32", f"{out}/moe_route_api1.pt", manifest=older)
    # tiny.pt's weights behind the required methods alone (no per-layer methods): the forward path of training.
    tiny = gspo_model.CausalLM(make_tiny_model.tiny_config(argparse.Namespace(
        hidden=64, heads=4, kv_heads=2, layers=2, intermediate=0, max_seq_len=256, tie=False, qkv_bias=False,
        qk_norm=False, prior_text="")))
    tiny.load_state_dict({k: v for k, v in torch.jit.load(f"{out}/tiny.pt").state_dict().items() if "last_load" not in k})
    scripted = torch.jit.script(WithoutLayers(tiny.eval()))
    extra = {"gspo_manifest.json": "", "gspo_tokenizer.json": ""}
    torch.jit.load(f"{out}/tiny.pt", _extra_files=extra)
    scripted.save(f"{out}/tiny_without_layers.pt", _extra_files=extra)
    inner = gspo_model.CausalLM(cfg)
    scripted = torch.jit.script(NoDecode(inner))
    scripted.save(f"{out}/broken_no_decode.pt",
                  _extra_files={"gspo_manifest.json": json.dumps(gspo_model.manifest_for(cfg, tok, "float32"))})
    torch.jit.script(gspo_model.CausalLM(cfg)).save(f"{out}/broken_no_manifest.pt")
    bad = gspo_model.manifest_for(cfg, tok, "float32")
    del bad["eos_token_id"]
    torch.jit.script(gspo_model.CausalLM(cfg)).save(f"{out}/broken_manifest_field.pt",
                                                    _extra_files={"gspo_manifest.json": json.dumps(bad)})
    with open(f"{out}/not_torchscript.pt", "w") as f:
        f.write("this is not a zip archive\n")
    export_stories260k(out)
    export_tiny_qwen3_checkpoint(out)
    export_tiny_qwen3_checkpoint(out, "qwen3_teacher", seed=12, hidden=48, layers=3)
    export_tiny_qwen3_moe_checkpoint(out)
    print(f"test models written to {out}")


if __name__ == "__main__":
    main()
