"""python -m vattn.produce --producer NAME FILE...: a serving kernel as a producer.

Runs the kernel on every case of each file and stores what it returned as
`outputs/<producer>` (with a `description` naming the kernel and its version), so that
`vattn replay FILE` holds the serving kernel, vattn's kernel and the oracle side by side.

Producers:
  sglang-triton    SGLang's Triton extend_attention_fwd (the target_verify kernel of its Triton
                   backend), MLA: k_buffer rows of 576, V their first 512 columns, the custom mask
                   T_b x (P_b + T_b) with the prefix visible; it writes a natural-log lse.
                   Needs torch, a GPU and sglang, or only the kernel's files out of its wheel
                   (--sglang-files; see vattn.sglang_files).
  flashinfer       FlashInfer's MLA (page size 1), backend fa2 (mma.sync) or fa3 (Hopper wgmma;
                   --flashinfer-backend). It has no tree mask: a case runs only when every
                   request's drafts form a chain (its causal mask); the others are skipped, and
                   the reason is printed. Needs torch, a GPU and either flashinfer
                   (BatchMLAPagedAttentionWrapper; stores outputs/flashinfer, flashinfer-wrapper-fa3)
                   or --flashinfer-lib: FlashInfer's kernels and planner built into
                   libvattn_flashinfer_mla.so (peers/build_flashinfer.sh; stores
                   outputs/flashinfer-fa2, flashinfer-fa3, or flashinfer-fa2-smemN with
                   --flashinfer-smem). Its lse (log2) is stored as natural log.
  numpy-reference  float64 attention in numpy, rounded to bf16 (no GPU; a check of this tool).

Exit status: 0 every case produced or skipped with its reason, 1 a kernel failed on a case,
2 usage, a missing dependency, or a file that cannot be read or written.
"""

import argparse
import os
import sys

import numpy as np

from .bf16 import bf16_to_float32, float32_to_bf16
from .casefile import CaseFileError, Output, read, write
from .flashinfer_lib import SM120_SMEM_PER_SM

D_QK, D_V = 576, 512


class MissingDependency(RuntimeError):
    pass


def draft_blocks(c):
    """Each request's T_b x T_b draft mask (bool)."""
    T = np.diff(c.qo_indptr)
    return [np.asarray(c.draft_mask[c.draft_mask_indptr[b]:c.draft_mask_indptr[b + 1]], bool).reshape(T[b], T[b])
            for b in range(c.num_requests)]


def not_mla(c):
    if c.d_qk != D_QK or c.d_v != D_V:
        return f"d_qk/d_v {c.d_qk}/{c.d_v}: the serving kernels here are MLA 576/512"
    return ""


def not_a_chain(c):
    """Why a kernel with only a causal mask cannot run the case ('' when every request's drafts
    form a chain, i.e. its draft mask is the causal one)."""
    for b, m in enumerate(draft_blocks(c)):
        if not np.array_equal(m, np.tril(np.ones(m.shape, bool))):
            return f"request {b}: its drafts form a tree, not a chain; FlashInfer's MLA has no tree mask (causal only)"
    return ""


class NumpyReference:
    name = "numpy-reference"

    def __init__(self):
        self.description = "float64 attention in numpy (vattn.produce), rounded to bf16; lse natural log"

    def skip_reason(self, c):
        return ""

    def run(self, c):
        q = bf16_to_float32(c.q).astype(np.float64)
        pool = bf16_to_float32(c.kv_pool).astype(np.float64)
        draft = bf16_to_float32(c.kv_draft).astype(np.float64)
        out = np.zeros((q.shape[0], c.num_heads, c.d_v))
        lse = np.full((q.shape[0], c.num_heads), -np.inf)
        for b, m in enumerate(draft_blocks(c)):
            q0, k0, k1 = c.qo_indptr[b], c.kv_indptr[b], c.kv_indptr[b + 1]
            keys = np.concatenate([pool[c.kv_indices[k0:k1]], draft[q0:c.qo_indptr[b + 1]]])
            for i in range(m.shape[0]):
                vis = np.concatenate([np.ones(k1 - k0, bool), m[i]])
                if not vis.any():
                    continue
                s = q[q0 + i] @ keys[vis].T * c.sm_scale
                mx = s.max(axis=1, keepdims=True)
                w = np.exp(s - mx)
                out[q0 + i] = (w / w.sum(axis=1, keepdims=True)) @ keys[vis][:, :c.d_v]
                lse[q0 + i] = mx[:, 0] + np.log(w.sum(axis=1))
        return float32_to_bf16(out.astype(np.float32)), lse.astype(np.float32)


def _torch():
    try:
        import torch
    except ImportError as e:
        raise MissingDependency(f"needs torch ({e})") from e
    if not torch.cuda.is_available():
        raise MissingDependency("needs a CUDA GPU (torch.cuda.is_available() is False)")
    return torch


def _bf16_tensor(torch, bits, device):
    return torch.from_numpy(np.ascontiguousarray(bits).view(np.int16)).to(device).view(torch.bfloat16)


class SglangTriton:
    name = "sglang-triton"

    def __init__(self, sglang_files=None):
        self.torch = _torch()
        if sglang_files:  # the kernel's own files out of a wheel, without the rest of SGLang
            from .sglang_files import SglangFilesError, load

            try:
                mod, version = load(sglang_files)
            except SglangFilesError as e:
                raise MissingDependency(str(e)) from e
            except ImportError as e:
                raise MissingDependency(f"SGLang's kernel files in {sglang_files} need a module missing here ({e})") from e
            self.fwd = mod.extend_attention_fwd
            self.description = (f"SGLang {version} Triton extend_attention_fwd (target_verify path), its source files "
                                "loaded alone (vattn.sglang_files: sglang.srt.utils helpers stood in for)")
            return
        try:
            import sglang
            from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd
        except ImportError as e:
            raise MissingDependency(f"needs sglang with sglang.kernels.ops.attention.extend_attention ({e}); or "
                                    "--sglang-files DIR (python3 -m vattn.sglang_files extract WHEEL DIR)") from e
        self.fwd = extend_attention_fwd
        self.description = f"SGLang {getattr(sglang, '__version__', '?')} Triton extend_attention_fwd (target_verify path)"

    def skip_reason(self, c):
        return not_mla(c)

    def arguments(self, c):
        """Case c as SGLang's Triton backend calls extend_attention_fwd in target_verify mode:
        (the sixteen positional arguments, q .. sm_scale, in its order; o; lse), on the GPU."""
        torch, dev = self.torch, "cuda"
        n_q, H = c.q.shape[0], c.num_heads
        T = np.diff(c.qo_indptr)
        P = np.diff(c.kv_indptr)
        masks = []
        for b, m in enumerate(draft_blocks(c)):
            masks.append(np.concatenate([np.ones((T[b], P[b]), bool), m], axis=1).ravel())
        mask_indptr = np.concatenate([[0], np.cumsum(T * (P + T))]).astype(np.int64)
        k_buffer = _bf16_tensor(torch, c.kv_pool, dev).reshape(-1, 1, D_QK)
        k_ext = _bf16_tensor(torch, c.kv_draft, dev).reshape(n_q, 1, D_QK)
        o = torch.empty((n_q, H, D_V), dtype=torch.bfloat16, device=dev)
        lse = torch.empty((n_q, H), dtype=torch.float32, device=dev)
        args = (_bf16_tensor(torch, c.q, dev).reshape(n_q, H, D_QK), k_ext, k_ext[..., :D_V].contiguous(), o,
                k_buffer, k_buffer[..., :D_V], torch.from_numpy(c.qo_indptr.astype(np.int32)).to(dev),
                torch.from_numpy(c.kv_indptr.astype(np.int32)).to(dev),
                torch.from_numpy(c.kv_indices.astype(np.int64)).to(dev),
                torch.from_numpy(np.concatenate(masks) if masks else np.zeros(0, bool)).to(dev), False,
                torch.from_numpy(mask_indptr).to(dev), int(T.max()), 1.0, 1.0, float(c.sm_scale))
        return args, o, lse

    def run(self, c):
        args, o, lse = self.arguments(c)
        self.fwd(*args, lse_extend=lse)
        self.torch.cuda.synchronize()
        return o.view(self.torch.int16).cpu().numpy().view(np.uint16), lse.cpu().numpy()


class SkipCase(Exception):
    """Raised by a producer's run() for a case its kernel refuses as beyond it (not a failure)."""


class FlashInferMla:
    name = "flashinfer"

    def __init__(self, lib=None, backend="fa2", smem_limit=0):
        """lib: a libvattn_flashinfer_mla.so (vattn.flashinfer_lib) instead of the flashinfer package;
        smem_limit (with lib, fa2): the per-SM shared-memory limit fa2 picks its configuration by."""
        self.backend, self.smem_limit, self.lib = backend, smem_limit, None
        if lib:  # loading makes no CUDA call: a bad library is reported before torch is needed
            from .flashinfer_lib import FlashInferLibError, Library

            try:
                self.lib = Library(lib)
            except FlashInferLibError as e:
                raise MissingDependency(str(e)) from e
            if backend not in self.lib.backends:
                raise MissingDependency(f"{self.lib.path}: built without {backend} (has {', '.join(self.lib.backends)})")
            self.name = f"flashinfer-{backend}" + (f"-smem{smem_limit}" if smem_limit else "")
            self.description = f"{self.lib.description}; backend {backend}" + (
                f", fa2 configuration for {smem_limit} B/SM" if smem_limit else "")
            self.torch = _torch()
            return
        self.torch = _torch()
        try:
            import flashinfer
            from flashinfer.mla import BatchMLAPagedAttentionWrapper
        except ImportError as e:
            raise MissingDependency(f"needs flashinfer with flashinfer.mla ({e}); or --flashinfer-lib LIB "
                                    "(peers/build_flashinfer.sh)") from e
        self.wrapper_class = BatchMLAPagedAttentionWrapper
        self.name = "flashinfer" if backend == "fa2" else f"flashinfer-wrapper-{backend}"
        self.description = (f"FlashInfer {getattr(flashinfer, '__version__', '?')} MLA (BatchMLAPagedAttentionWrapper, "
                            f"backend {backend}, page size 1, causal)")

    def skip_reason(self, c):
        return not_mla(c) or not_a_chain(c)

    @staticmethod
    def layout(c):
        """Case c as FlashInfer's paged MLA takes it, one page per key: the cache is the pool's rows,
        then the drafts' own rows; each request's keys are its prefix rows and then its drafts (the
        causal mask aligns the last query with the last key). Returns (cache [rows, 576] bf16 bits,
        kv_indptr, kv_indices, kv_len)."""
        T, P = np.diff(c.qo_indptr), np.diff(c.kv_indptr)
        cache = np.concatenate([c.kv_pool, c.kv_draft]).reshape(-1, D_QK)
        n_rows = c.kv_pool.shape[0]
        pages, kv_indptr = [], [0]
        for b in range(c.num_requests):
            pages.append(c.kv_indices[c.kv_indptr[b]:c.kv_indptr[b + 1]].astype(np.int32))
            pages.append(np.arange(n_rows + c.qo_indptr[b], n_rows + c.qo_indptr[b + 1], dtype=np.int32))
            kv_indptr.append(kv_indptr[-1] + P[b] + T[b])
        return cache, np.asarray(kv_indptr, np.int32), np.concatenate(pages).astype(np.int32), (P + T).astype(np.int32)

    def run(self, c):
        torch, dev = self.torch, "cuda"
        n_q, H = c.q.shape[0], c.num_heads
        cache, kv_indptr, kv_indices, kv_len = self.layout(c)

        def t(a, dt):
            return torch.from_numpy(np.ascontiguousarray(a, dtype=dt)).to(dev)

        kvc = _bf16_tensor(torch, cache, dev).reshape(-1, 1, D_QK)
        q = _bf16_tensor(torch, c.q, dev).reshape(n_q, H, D_QK)
        if self.lib is not None:
            out, lse = self._run_lib(c, q, kvc, kv_indptr, t(kv_indices, np.int32), kv_len)
        else:
            ws = torch.empty(128 << 20, dtype=torch.uint8, device=dev)
            w = self.wrapper_class(ws, backend=self.backend)
            w.plan(t(c.qo_indptr, np.int32), t(kv_indptr, np.int32), t(kv_indices, np.int32), t(kv_len, np.int32), H,
                   D_V, D_QK - D_V, 1, True, float(c.sm_scale), torch.bfloat16, torch.bfloat16)
            out, lse = w.run(q[..., :D_V].contiguous(), q[..., D_V:].contiguous(), kvc[..., :D_V].contiguous(),
                             kvc[..., D_V:].contiguous(), return_lse=True)
        torch.cuda.synchronize()
        # FlashInfer's lse is log2 of the sum of exp2 of scaled logits; the schema's is natural.
        lse = lse.float().cpu().numpy() * np.float32(np.log(2.0))
        return out.contiguous().view(torch.int16).cpu().numpy().view(np.uint16), lse

    def _run_lib(self, c, q, kvc, kv_indptr, kv_indices, kv_len):
        """FlashInfer's planner and kernel from the library; q and the cache passed as the strided
        views SGLang's FlashInfer MLA backend passes (q[..., :512], q[..., 512:], the same for KV)."""
        from .flashinfer_lib import FlashInferLibError

        torch = self.torch
        n_q, H = q.shape[0], q.shape[1]
        try:
            plan = self.lib.plan(c.qo_indptr, kv_indptr, kv_len, H, backend=self.backend, causal=True,
                                 smem_limit=self.smem_limit)
        except FlashInferLibError as e:
            if e.code == 2:  # VFI_ERR_UNSUPPORTED: beyond FlashInfer's planner or kernel, as its wrapper refuses it
                raise SkipCase(str(e)) from e
            raise
        try:
            out = torch.empty((n_q, H, D_V), dtype=torch.bfloat16, device=q.device)
            lse = torch.empty((n_q, H), dtype=torch.float32, device=q.device)
            plan.run(q[..., :D_V], q[..., D_V:], kvc[..., :D_V], kvc[..., D_V:], kv_indices, out, lse, c.sm_scale,
                     torch.cuda.current_stream().cuda_stream)
            self.description = plan.description
        finally:
            torch.cuda.synchronize()
            plan.close()
        return out, lse


PRODUCERS = {"sglang-triton": SglangTriton, "flashinfer": FlashInferMla, "numpy-reference": NumpyReference}


def _positive_int(text):
    return int(text) if text.isdigit() and int(text) > 0 else None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m vattn.produce", description=__doc__.split("\n\n")[1],
                                 epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--producer", required=True, choices=sorted(PRODUCERS))
    ap.add_argument("--output-dir", help="write copies here instead of adding to the files in place")
    ap.add_argument("--sglang-files", metavar="DIR",
                    help="sglang-triton: load SGLang's kernel from the files `python3 -m vattn.sglang_files extract "
                         "WHEEL DIR` copied out of a wheel, not from an installed sglang")
    ap.add_argument("--flashinfer-lib", metavar="LIB",
                    help="flashinfer: FlashInfer's MLA kernels and planner from this libvattn_flashinfer_mla.so "
                         "(peers/build_flashinfer.sh), not from an installed flashinfer")
    ap.add_argument("--flashinfer-backend", choices=("fa2", "fa3"),
                    help="flashinfer: fa2 (mma.sync) or fa3 (Hopper wgmma) (default: fa2)")
    ap.add_argument("--flashinfer-smem", metavar="BYTES|sm120",
                    help="flashinfer with --flashinfer-lib, fa2: the per-SM shared-memory limit fa2 picks its "
                         f"configuration by, instead of the device's (sm120: {SM120_SMEM_PER_SM}, an RTX PRO 6000's)")
    ap.add_argument("files", nargs="+", metavar="FILE")
    a = ap.parse_args(argv)
    if a.sglang_files and a.producer != "sglang-triton":
        ap.error("--sglang-files is for --producer sglang-triton")
    for opt in ("flashinfer_lib", "flashinfer_backend", "flashinfer_smem"):
        if getattr(a, opt) is not None and a.producer != "flashinfer":
            ap.error(f"--{opt.replace('_', '-')} is for --producer flashinfer")
    backend, smem = a.flashinfer_backend or "fa2", 0
    if a.flashinfer_smem is not None:
        if not a.flashinfer_lib:
            ap.error("--flashinfer-smem needs --flashinfer-lib (FlashInfer's own wrapper picks the device's)")
        if backend != "fa2":
            ap.error("--flashinfer-smem is for --flashinfer-backend fa2 (fa3 has one configuration)")
        smem = SM120_SMEM_PER_SM if a.flashinfer_smem == "sm120" else _positive_int(a.flashinfer_smem)
        if smem is None:
            ap.error(f"--flashinfer-smem: '{a.flashinfer_smem}' is neither a positive number of bytes nor sm120")
    try:
        if a.producer == "sglang-triton":
            producer = SglangTriton(a.sglang_files)
        elif a.producer == "flashinfer":
            producer = FlashInferMla(a.flashinfer_lib, backend, smem)
        else:
            producer = PRODUCERS[a.producer]()
    except MissingDependency as e:
        print(f"vattn.produce: --producer {a.producer}: {e}", file=sys.stderr)
        return 2
    if a.output_dir:
        os.makedirs(a.output_dir, exist_ok=True)
    failed = skipped = produced = 0
    for path in a.files:
        try:
            f = read(path)
        except CaseFileError as e:
            print(f"vattn.produce: {e}", file=sys.stderr)
            return 2
        for c in f.cases:
            why = producer.skip_reason(c)
            if why:
                skipped += 1
                print(f"{path}: case '{c.name}': skipped: {why}")
                continue
            try:
                out, lse = producer.run(c)
            except SkipCase as e:
                skipped += 1
                print(f"{path}: case '{c.name}': skipped: {e}")
                continue
            except Exception as e:  # a kernel that fails on one case: say so, go on
                failed += 1
                print(f"{path}: case '{c.name}': FAILED: {type(e).__name__}: {e}")
                continue
            c.outputs = [o for o in c.outputs if o.producer != producer.name]
            c.outputs.append(Output(producer.name, producer.description, out.reshape(c.q.shape[0], c.num_heads, c.d_v),
                                    None if lse is None else lse.reshape(c.q.shape[0], c.num_heads)))
            produced += 1
            print(f"{path}: case '{c.name}': outputs/{producer.name} written")
        target = os.path.join(a.output_dir, os.path.basename(path)) if a.output_dir else path
        try:
            write(target, f.header, f.cases)
        except (CaseFileError, OSError) as e:
            print(f"vattn.produce: {target}: cannot write: {e}", file=sys.stderr)
            return 2
    print(f"vattn.produce: {producer.name}: {produced} produced, {skipped} skipped, {failed} failed "
          f"({producer.description})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: Apache-2.0
