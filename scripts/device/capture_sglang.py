#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""capture_sglang.py --sglang-files DIR --out DIR FILE...   (on the GPU machine)

The capture hook around SGLang's real Triton kernel, without an SGLang server: a stand-in for
TritonAttnBackend with SGLang 0.5.23's method names and call (forward_extend(q, k, v, layer,
forward_batch) calls self._forward_extend_kernel(layer, q, k, v, o, k_buffer, v_buffer,
qo_indptr, kv_indptr, kv_indices, custom_mask, causal, mask_indptr, max_extend_len, k_descale,
v_descale, sm_scale), and that calls extend_attention_fwd), whose kernel is SGLang's own, loaded
by vattn.sglang_files. vattn.capture is installed on the stand-in; every case of the files is one
target_verify layer of step 0 (layer = case number). The hook writes one file per call with the
kernel's output as outputs/serving; `vattn replay` then holds that output to the oracle and runs
vattn's kernel next to it.

These files come from generated inputs, so they are a test of the hook, not captures from a
server: they say so in `notes`, and nothing here belongs in captured_tensors/.
Exit status: 0 every case went through the hook and was written, 1 otherwise, 2 usage.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))

from vattn import capture, read  # noqa: E402
from vattn.produce import MissingDependency, SglangTriton  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--sglang-files", required=True, metavar="DIR")
    ap.add_argument("--out", required=True, metavar="DIR")
    ap.add_argument("files", nargs="+", metavar="FILE")
    a = ap.parse_args()
    try:
        kernel = SglangTriton(a.sglang_files)
    except MissingDependency as e:
        print(f"capture_sglang: {e}", file=sys.stderr)
        return 2
    torch = kernel.torch

    class Mode:
        def is_target_verify(self):
            return True

    class Batch:
        forward_mode = Mode()

    class Layer:
        def __init__(self, i, scaling):
            self.layer_id, self.scaling = i, scaling

    class Backend:  # TritonAttnBackend's two methods, as SGLang 0.5.23 calls them in target_verify mode
        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):
            return self._forward_extend_kernel(layer, *self.call)

        def _forward_extend_kernel(self, layer, *args, **kwargs):
            return kernel.fwd(*args, **kwargs)

    cap = capture.install(a.out, backend_class=Backend, tp_rank=0, gpu=torch.cuda.get_device_name(0), queue_size=256,
                          description=kernel.description,
                          generator=f"vattn.capture {capture.__version__} (stand-in backend, {kernel.description})",
                          notes="hook test: SGLang's Triton kernel on vattn gen inputs through a stand-in backend; "
                                "not a capture from a server")
    be, n = Backend(), 0
    try:
        for path in a.files:
            for c in read(path).cases:
                args, o, _lse = kernel.arguments(c)
                be.call = args
                be.forward_extend(None, None, None, Layer(n, float(c.sm_scale)), Batch())
                torch.cuda.synchronize()
                n += 1
    finally:
        st = cap.close()
        capture.uninstall(Backend)
    print(f"capture_sglang: {n} calls through the hook; written {st['written']}, skipped "
          f"{st['skipped_queue_full'] + st['skipped_size'] + st['skipped_total_cap'] + st['skipped_unsupported']}"
          + (f"; errors: {st['errors']}" if st["errors"] else ""))
    return 0 if st["written"] == n and n > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
