#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest (label torch): vattn.torch's op (python/src/vattn/torch_op.py) without a GPU.

1. The schema of torch.ops.vattn.verify_attention, word for word (python/README.md prints it):
   out, lse and workspace mutated, forced_splits optional, the limits a list.
2. The in-tree revision names and the default are kernels/vattn_revisions.h's; names resolve
   through revision_dir or $VATTN_REVISION_DIR; an unknown name or a missing directory is
   refused naming the argument.
3. Every host-side refusal (dtype, shape, contiguity, the plan limits, sm_scale, devices), one
   broken argument at a time, names that argument; a valid call passes. The real op refuses CPU
   tensors before it looks for a library.
4. The fake implementation: under FakeTensorMode the op accepts a valid call (on fake CUDA
   tensors too) and refuses a broken one with the same message.
5. pack_draft_masks: bit j % 32 of word j / 32, rows of ceil(T_b/32) words, and back.
6. With revision libraries (a CUDA build passes them; no GPU is needed): a Plan on the CPU
   takes the library's planned workspace size, an in-tree name must find that revision, and a
   limit over the revision's capabilities is refused naming it.

usage: test_torch_op.py --vattn PATH/TO/vattn --root REPO [LIB.so...]
"""

import os
import re
import sys
import tempfile

import numpy as np

from package_checks import arguments, check, finish

SCHEMA = ("vattn::verify_attention(Tensor q, Tensor kv_pool, Tensor kv_indices, Tensor kv_indptr, Tensor kv_draft, "
          "Tensor qo_indptr, Tensor mask_bits, Tensor mask_word_indptr, Tensor? forced_splits, Tensor(a9!) out, "
          "Tensor(a10!) lse, Tensor(a11!) workspace, float sm_scale, str revision, SymInt[] limits) -> ()")


def main():
    libs = [x for x in sys.argv[1:] if x.endswith(".so")]
    sys.argv = [x for x in sys.argv if not x.endswith(".so")]
    a = arguments()
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    import vattn.torch as vt
    from torch_calls import ARGS, make_call
    from vattn import maskbits

    # 1. The schema.
    schema = str(torch.ops.vattn.verify_attention.default._schema)
    check(schema == SCHEMA, f"the op's schema:\n  {schema}")

    # 2. Revision names.
    with open(os.path.join(a.root, "kernels", "vattn_revisions.h")) as f:
        header = f.read()
    names = re.findall(r'#define VATTN_REVISION_\w+ "([^"]+)"', header)
    default = re.search(r"#define VATTN_REVISION_DEFAULT VATTN_REVISION_(\w+)", header).group(1)
    default_name = re.search(rf'#define VATTN_REVISION_{default} "([^"]+)"', header).group(1)
    check(tuple(names) == vt.IN_TREE and default_name == vt.DEFAULT_REVISION,
          f"IN_TREE {vt.IN_TREE} and DEFAULT_REVISION {vt.DEFAULT_REVISION} are kernels/vattn_revisions.h's "
          f"({names}, {default_name})")
    check(vt.library_path("split-v1", "/x/revisions") == "/x/revisions/libvattn_rev_split_v1.so",
          "an in-tree name: libvattn_rev_<name>.so in revision_dir")
    os.environ["VATTN_REVISION_DIR"] = "/y"
    check(vt.library_path("split-v2") == "/y/libvattn_rev_split_v2.so", "or in $VATTN_REVISION_DIR")
    del os.environ["VATTN_REVISION_DIR"]
    check(vt.library_path("./lib/mine.so") == os.path.abspath("lib/mine.so"), "a path stays a path")
    for bad, want in (("split-v3", "unknown revision 'split-v3'"), ("split-v2", "revision_dir= or $VATTN_REVISION_DIR")):
        try:
            vt.library_path(bad)
            check(False, f"{bad} must be refused")
        except vt.ArgumentError as e:
            check(e.argument == "revision" and want in str(e), f"refused: {e}")

    # 3. Refusals, one argument at a time.
    call = make_call(3, P=(37, 0), T=(5, 33), H=4)
    n_q = int(call["qo_indptr"][-1])
    good = {k: call[k] for k in ARGS}
    good.update(forced_splits=None, out=torch.zeros((n_q, 4, 512), dtype=torch.bfloat16),
                lse=torch.zeros((n_q, 4)), workspace=torch.zeros(4096, dtype=torch.uint8), sm_scale=0.1352,
                limits=[4, 64, 40, 4, 16])
    order = list(good)

    def run_check(**change):
        kw = dict(good, **change)
        return vt.check_arguments(*[kw[k] for k in order])

    check(run_check() == (2, n_q, 4, 300), f"a valid call passes: B, n_q, H, n_slots = {run_check()}")
    bf = torch.bfloat16
    cases = [
        ("q", dict(q=good["q"].float()), "expected torch.bfloat16, got torch.float32"),
        ("kv_indices", dict(kv_indices=good["kv_indices"].long()), "expected torch.int32"),
        ("mask_word_indptr", dict(mask_word_indptr=good["mask_word_indptr"].int()), "expected torch.int64"),
        ("mask_bits", dict(mask_bits=good["mask_bits"].long()), "expected torch.int32 or torch.uint32"),
        ("lse", dict(lse=good["lse"].double()), "expected torch.float32"),
        ("workspace", dict(workspace=torch.zeros(4096, dtype=torch.int8)), "expected torch.uint8"),
        ("forced_splits", dict(forced_splits=torch.zeros(1, dtype=torch.int64)), "expected torch.int32"),
        ("q", dict(q=good["q"].reshape(n_q, -1)), "[n_q, H, d_qk]"),
        ("kv_pool", dict(kv_pool=torch.zeros((0, 576), dtype=bf)), "n_slots >= 1"),
        ("kv_pool", dict(kv_pool=torch.zeros((300, 512), dtype=bf)), "expected shape [n_slots, 576]"),
        ("kv_draft", dict(kv_draft=torch.zeros((n_q - 1, 576), dtype=bf)), f"n_q = {n_q}"),
        ("kv_indptr", dict(kv_indptr=torch.zeros(1, dtype=torch.int32)), "B >= 1"),
        ("qo_indptr", dict(qo_indptr=torch.zeros(4, dtype=torch.int32)), "[B+1] = [3]"),
        ("mask_word_indptr", dict(mask_word_indptr=torch.zeros(2, dtype=torch.int64)), "[B+1] = [3]"),
        ("kv_indices", dict(kv_indices=torch.zeros(0, dtype=torch.int32)), "at least one entry"),
        ("mask_bits", dict(mask_bits=torch.zeros((2, 2), dtype=torch.int32)), "at least one word"),
        ("forced_splits", dict(forced_splits=torch.zeros(2, dtype=torch.int32)), "[1]"),
        ("out", dict(out=torch.zeros((n_q, 3, 512), dtype=bf)), f"[{n_q}, 4, d_v]"),
        ("out", dict(out=torch.zeros((n_q, 4, 600), dtype=bf)), "1..576"),
        ("lse", dict(lse=torch.zeros((n_q, 3))), f"[{n_q}, 4]"),
        ("workspace", dict(workspace=torch.zeros((2, 64), dtype=torch.uint8)), "1-D uint8"),
        ("q", dict(q=torch.zeros((4, n_q, 576), dtype=bf).transpose(0, 1)), "contiguous"),
        ("out", dict(out=torch.zeros((n_q, 4, 1024), dtype=bf)[:, :, :512]), "contiguous"),
        ("kv_indptr", dict(limits=[1, 64, 40, 4, 16]), "over the plan's max_requests 1"),
        ("q", dict(limits=[4, n_q - 1, 40, 4, 16]), f"over the plan's max_total_drafts {n_q - 1}"),
        ("q", dict(limits=[4, 64, 40, 8, 16]), "num_heads = 8"),
        ("limits.max_splits", dict(limits=[4, 64, 40, 4, 0]), "integer >= 1"),
        ("limits", dict(limits=[4, 64, 40]), "expected 5 integers"),
        ("sm_scale", dict(sm_scale=float("nan")), "finite float > 0"),
        ("sm_scale", dict(sm_scale=-1.0), "finite float > 0"),
        ("kv_pool", dict(kv_pool=good["kv_pool"].to("meta")), "every tensor must be on one device"),
    ]
    for arg, change, want in cases:
        try:
            run_check(**change)
            check(False, f"{arg} ({want}) must be refused")
        except vt.ArgumentError as e:
            check(e.argument == arg and want in str(e) and str(e).startswith(f"vattn.torch: {arg}: "),
                  f"refused, naming {arg}: {e}")
    try:
        torch.ops.vattn.verify_attention(*[good[k] for k in order[:-2]], good["sm_scale"], "/nonexistent/lib.so",
                                         good["limits"])
        check(False, "the op on CPU tensors must refuse")
    except vt.ArgumentError as e:
        check(e.argument == "q" and "runs on a CUDA device" in str(e), f"the op refuses CPU tensors first: {e}")

    # 4. The fake implementation.
    with FakeTensorMode() as mode:
        fake = {k: (mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in good.items()}
        try:
            r = torch.ops.vattn.verify_attention(*[fake[k] for k in order[:-2]], 0.1352, "/nonexistent/lib.so",
                                                 good["limits"])
            check(r is None, "under FakeTensorMode a valid call passes (no library, no device) and returns None")
        except Exception as e:
            check(False, f"under FakeTensorMode a valid call passes: {type(e).__name__}: {e}")
        try:
            torch.ops.vattn.verify_attention(*[fake[k] for k in order[:-2]], 0.1352, "/nonexistent/lib.so",
                                             [4, 64, 40, 8, 16])
            check(False, "the fake implementation must refuse a head count other than the plan's")
        except vt.ArgumentError as e:
            check("num_heads = 8" in str(e), f"the fake implementation refuses as the real one does: {e}")
        try:
            cuda = {k: (torch.empty(v.shape, dtype=v.dtype, device="cuda") if isinstance(v, torch.Tensor) else v)
                    for k, v in good.items() if v is not None}
            cuda["forced_splits"] = torch.zeros(1, dtype=torch.int32, device="cuda")
            torch.ops.vattn.verify_attention(*[cuda[k] for k in order[:-2]], 0.1352, "/nonexistent/lib.so",
                                             good["limits"])
            check(True, "fake CUDA tensors (as torch.compile traces a server's) pass the fake implementation")
        except (RuntimeError, AssertionError) as e:
            print(f"note: this torch cannot make fake CUDA tensors ({type(e).__name__}: {e}); checked on CPU fakes only")

    # 5. Mask packing.
    rng = np.random.default_rng(4)
    masks = [rng.integers(0, 2, (t, t)).astype(bool) for t in (1, 31, 32, 33, 70)]
    bits, word_indptr = vt.pack_draft_masks(masks)
    want = [0]
    for m in masks:
        want.append(want[-1] + m.shape[0] * ((m.shape[0] + 31) // 32))
    check(bits.dtype == torch.int32 and word_indptr.tolist() == want, f"rows of ceil(T/32) words: {word_indptr.tolist()}")
    m33 = masks[3]
    base = want[3]
    w = bits.numpy().view(np.uint32)
    row5 = [(int(w[base + 5 * 2 + j // 32]) >> (j % 32)) & 1 for j in range(33)]
    check(row5 == m33[5].astype(int).tolist(), "T=33, row 5: draft j is bit j % 32 of word j / 32")
    qo = np.concatenate([[0], np.cumsum([m.shape[0] for m in masks])])
    dense, _ = maskbits.unpack(bits.numpy(), word_indptr.numpy(), qo)
    check(np.array_equal(dense, np.concatenate([m.astype(np.uint8).ravel() for m in masks])), "and back")

    # 6. Plans over real revision libraries (no GPU: planning makes no CUDA call).
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    for lib_path in libs:
        lib = vt.revision_library(lib_path)
        plan = vt.Plan(lib_path, max_requests=2, max_total_drafts=64, max_drafts_per_request=40, num_heads=8,
                       max_splits=16, device="cpu")
        from vattn.revision_lib import Limits

        want_ws = lib.workspace_size(Limits(2, 64, 40, 8, 16))
        check(plan.workspace_bytes == want_ws and plan.workspace.numel() >= want_ws and plan.workspace.numel() % 256 == 0,
              f"{lib.name}: the plan's workspace is the library's {want_ws} bytes (allocated {plan.workspace.numel()})")
        other = "split-v1" if lib.name == "split-v2" else "split-v2"
        with tempfile.TemporaryDirectory() as fake_dir:
            os.symlink(os.path.abspath(lib_path), os.path.join(fake_dir, f"libvattn_rev_{other.replace('-', '_')}.so"))
            try:
                vt.Plan(other, revision_dir=fake_dir, max_requests=1, max_total_drafts=1, max_drafts_per_request=1,
                        num_heads=8, device="cpu")
                check(False, f"a library of {lib.name} under the name {other} must be refused")
            except vt.ArgumentError as e:
                check(f"is revision '{lib.name}', not '{other}'" in str(e), f"an in-tree name must find that revision: {e}")
        try:
            vt.Plan(lib_path, max_requests=8, max_total_drafts=512, max_drafts_per_request=64,
                    num_heads=lib.caps["max_heads"] + 1, device="cpu")
            check(False, "a head count over the revision's must be refused")
        except vt.ArgumentError as e:
            check(e.argument == "num_heads" and f"({lib.caps['max_heads']})" in str(e), f"refused naming it: {e}")
    if not libs:
        print("note: no revision libraries given (a build without CUDA): plans over real libraries not checked")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
