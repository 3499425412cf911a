# SPDX-License-Identifier: Apache-2.0
"""Case files of a model's verify calls for captured_tensors/: what a recorder wrote, completed
with the float64 oracle's output, under a header that says which model made it (needs torch).

A recorder (graph_recorder.Recorder) writes each call with the serving kernel's output; a file
for the repository also carries `oracle_fp64` (the contract computed in float64 by
torch_tolerance.reference, stored as float32), so that `vattn replay` checks the oracle itself
against the stored result as well as the kernel against the oracle. The header keeps what the
recorder was given: `source`, `model` (one line naming the architecture, the weights and the
seed) and `notes` (JSON: the model configuration, the seed, how the loop ran), from
describe_model().
"""

import json
import os

import numpy as np
import torch

from . import maskbits
from . import torch_tolerance as tt
from .capture_sink import claim_path
from .casefile import ORACLE, Output, read, write

# The configuration fields that decide a DeepSeek-V3 model's attention and its size (the rest
# are transformers' defaults, or MoE fields a dense model does not use).
CONFIG_FIELDS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                 "num_key_value_heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                 "v_head_dim", "first_k_dense_replace", "max_position_embeddings", "rope_parameters",
                 "rope_interleave", "rms_norm_eps", "initializer_range", "attention_bias")


def config_dict(config):
    """The CONFIG_FIELDS of a DeepseekV3Config that it has, as JSON-able values."""
    out = {}
    for k in CONFIG_FIELDS:
        if hasattr(config, k):
            v = getattr(config, k)
            out[k] = dict(v) if isinstance(v, dict) else v
    if "rope_parameters" not in out and getattr(config, "rope_scaling", None):
        out["rope_scaling"] = dict(config.rope_scaling)
    return out


def describe_model(config, seed, **extra):
    """(model, notes) header strings for a model built from config with random weights drawn
    after torch.manual_seed(seed): model is one line, notes JSON with the configuration, the
    seed and `extra` (how the loop ran: prompts, tree size, drafter, transformers version, ...)."""
    c = config_dict(config)
    model = (f"DeepseekV3ForCausalLM, random weights (torch.manual_seed({seed})): {c.get('num_hidden_layers')} layers, "
             f"hidden {c.get('hidden_size')}, vocab {c.get('vocab_size')}; attention: {c.get('num_attention_heads')} "
             f"heads, kv_lora_rank {c.get('kv_lora_rank')}, qk_rope {c.get('qk_rope_head_dim')}, qk_nope "
             f"{c.get('qk_nope_head_dim')}, v_head {c.get('v_head_dim')}")
    notes = json.dumps({"config": c, "seed": int(seed), **extra}, sort_keys=True, default=str)
    return model, notes


def _bf16(bits):
    return torch.from_numpy(np.ascontiguousarray(bits).view(np.int16)).view(torch.bfloat16)


def oracle_output(case):
    """The float64 reference of one case (torch_tolerance.reference on the CPU) as the
    `oracle_fp64` output: out and lse stored as float32."""
    bits, word_indptr = maskbits.pack(case.draft_mask, case.draft_mask_indptr, case.qo_indptr)
    ix = tt.HostIndex.of(torch.from_numpy(np.asarray(case.kv_indices, np.int32)),
                         torch.from_numpy(np.asarray(case.kv_indptr, np.int32)),
                         torch.from_numpy(np.asarray(case.qo_indptr, np.int32)),
                         torch.from_numpy(bits.view(np.int32)), torch.from_numpy(word_indptr))
    ref = tt.reference(_bf16(case.q), _bf16(case.kv_pool), _bf16(case.kv_draft), ix, float(case.sm_scale), case.d_v)
    return Output(ORACLE, "float64 reference of the contract (vattn.torch_tolerance.reference), stored as float32",
                  ref.out.numpy().astype(np.float32), ref.lse.numpy().astype(np.float32))


def finish(src, dst_dir):
    """Reads the case file src (a recorder's), adds each case's oracle_fp64 output and writes the
    result into dst_dir under src's name (or name-1.h5, ... when taken: nothing is overwritten).
    The header is src's, its generator extended. Returns the new path."""
    f = read(src)
    for c in f.cases:
        if any(o.producer == ORACLE for o in c.outputs):
            raise ValueError(f"{src}: case '{c.name}' already holds {ORACLE}")
        c.outputs.append(oracle_output(c))
    h = f.header
    h.generator = f"{h.generator}; {ORACLE} by vattn.model_capture".lstrip("; ")
    os.makedirs(dst_dir, exist_ok=True)
    path = claim_path(dst_dir, os.path.splitext(os.path.basename(src))[0])
    try:
        write(path, h, f.cases)
    except BaseException:
        if os.path.exists(path) and os.path.getsize(path) == 0:
            os.unlink(path)
        raise
    return path
