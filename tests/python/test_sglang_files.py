#!/usr/bin/env python3
"""ctest: vattn.sglang_files (SGLang's Triton kernel from its own files) without torch or a GPU.

A stand-in wheel holds the four files at SGLang's paths, written with the same import lines as
SGLang 0.5.23's (standard library only, so they load here):
1. extract copies the four files and the wheel's version; load() imports them under their own
   names with the sglang.srt.utils stand-ins, and the kernel entry point runs; the stand-in
   helpers answer 'no device' without torch.
2. Refusals, named: not a wheel, not an sglang wheel, a wheel without one of the files, a
   directory without them, a real sglang already imported.
3. python -m vattn.produce --sglang-files: only with sglang-triton; without torch it exits 2
   saying so.

usage: test_sglang_files.py --vattn PATH/TO/vattn --root REPO
"""

import os
import subprocess
import sys
import tempfile
import zipfile

from package_checks import arguments, check, finish

FAKE = {
    "sglang/kernels/ops/attention/score_mod.py": "def unpack_aux_tensors(*a):\n    return a\n",
    "sglang/kernels/ops/attention/decode_attention.py": (
        "from sglang.kernels.ops.attention.score_mod import unpack_aux_tensors\n"
        "from sglang.srt.environ import envs\n"
        "from sglang.srt.utils import (\n    get_device_core_count,\n    is_gfx95_supported,\n"
        "    is_gfx1250_supported,\n    is_hip,\n)\n"
        "_is_hip = is_hip()\n"
        "def _extract_kv_strides(x):\n    return ('strides', x)\n"),
    "sglang/kernels/ops/attention/extend_attention.py": (
        "from sglang.kernels.ops.attention.decode_attention import _extract_kv_strides\n"
        "from sglang.kernels.ops.attention.score_mod import unpack_aux_tensors\n"
        "from sglang.srt.environ import envs\n"
        "from sglang.srt.utils import is_cuda, is_gfx95_supported, is_gfx1250_supported, is_hip\n"
        "_is_cuda = is_cuda()\n_is_hip = is_hip()\n_is_gfx95 = _is_hip and is_gfx95_supported()\n"
        "def extend_attention_fwd(*args, **kwargs):\n"
        "    return ('ran', envs.FLAG, _extract_kv_strides(1), unpack_aux_tensors(2), _is_cuda, _is_hip, _is_gfx95)\n"),
    "sglang/srt/environ.py": "import os\nclass _Envs:\n    FLAG = 'environ loaded'\nenvs = _Envs()\n",
}


def wheel(path, files, version="0.5.23"):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"sglang-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
        for name, text in files.items():
            z.writestr(name, text)


def main():
    a = arguments()
    env = dict(os.environ, PYTHONPATH=a.src + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def py(code, *args):
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
        return p.returncode, p.stdout + p.stderr

    def cli(module, *args):
        p = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env)
        return p.returncode, p.stdout + p.stderr

    with tempfile.TemporaryDirectory() as tmp:
        whl, files = os.path.join(tmp, "sglang-0.5.23-cp312-cp312-manylinux_2_34_x86_64.whl"), os.path.join(tmp, "files")
        wheel(whl, FAKE)
        code, out = cli("vattn.sglang_files", "extract", whl, files)
        check(code == 0 and "sglang 0.5.23: 4 files" in out, f"extract: exit {code}: {out.strip()}")
        check(all(open(os.path.join(files, n)).read() == t for n, t in FAKE.items()), "extract copies the files unchanged")
        code, out = py("import sys, vattn.sglang_files as s\n"
                       "m, v = s.load(sys.argv[1])\n"
                       "print(v, m.extend_attention_fwd())\n"
                       "print(sorted(k for k in sys.modules if k.startswith('sglang')))\n"
                       "m2, _ = s.load(sys.argv[1]); print('same module', m2 is m)", files)
        check(code == 0 and "0.5.23 ('ran', 'environ loaded', ('strides', 1), (2,), False, False, False)" in out,
              f"load() imports the kernel's modules and the entry point runs: {out.strip()}")
        check("'sglang.srt.utils'" in out and "'sglang.kernels.ops.attention.decode_attention'" in out and
              "same module True" in out, "under SGLang's own module names; a second load() returns the same module")
        try:
            import torch  # noqa: F401
            has_torch = True
        except ImportError:
            has_torch = False
        if not has_torch:
            check("False, False, False)" in out, "without torch the stand-in helpers answer no CUDA, no HIP, no gfx95")

        # 2. Refusals.
        notzip = os.path.join(tmp, "not.whl")
        open(notzip, "w").write("text")
        code, out = cli("vattn.sglang_files", "extract", notzip, os.path.join(tmp, "x"))
        check(code == 1 and "not.whl: not a readable wheel" in out, f"not a wheel: exit {code}: {out.strip()}")
        other = os.path.join(tmp, "other.whl")
        with zipfile.ZipFile(other, "w") as z:
            z.writestr("other-1.0.dist-info/METADATA", "Name: other\nVersion: 1.0\n")
        code, out = cli("vattn.sglang_files", "extract", other, os.path.join(tmp, "x"))
        check(code == 1 and "not an sglang wheel" in out, f"another package's wheel: exit {code}: {out.strip()}")
        short = os.path.join(tmp, "short.whl")
        wheel(short, {k: v for k, v in FAKE.items() if "score_mod" not in k}, version="0.6.0")
        code, out = cli("vattn.sglang_files", "extract", short, os.path.join(tmp, "x"))
        check(code == 1 and "has no sglang/kernels/ops/attention/score_mod.py (sglang 0.6.0" in out,
              f"a wheel without one of the files names it: exit {code}: {out.strip()}")
        code, out = cli("vattn.sglang_files", "extract", whl)
        check(code == 2 and "usage:" in out, f"usage: exit {code}")
        code, out = py("import sys, vattn.sglang_files as s\ntry:\n    s.load(sys.argv[1])\n"
                       "except s.SglangFilesError as e:\n    print('refused:', e)", tmp)
        check("refused:" in out and "lacks sglang/kernels/ops/attention/extend_attention.py" in out,
              f"a directory without the files: {out.strip()}")
        code, out = py("import sys, types, vattn.sglang_files as s\nsys.modules['sglang'] = types.ModuleType('sglang')\n"
                       "try:\n    s.load(sys.argv[1])\nexcept s.SglangFilesError as e:\n    print('refused:', e)", files)
        check("refused: a real sglang is imported" in out, f"a real sglang already imported: {out.strip()}")

        # 3. The producer's option.
        fixture = os.path.join(a.root, "fixtures", "uniform_chain.h5")
        code, out = cli("vattn.produce", "--producer", "numpy-reference", "--sglang-files", files, fixture)
        check(code == 2 and "--sglang-files is for --producer sglang-triton" in out, f"--sglang-files elsewhere: exit {code}")
        if not has_torch:
            code, out = cli("vattn.produce", "--producer", "sglang-triton", "--sglang-files", files, fixture)
            check(code == 2 and "needs torch" in out, f"sglang-triton --sglang-files without torch: exit {code}: {out.strip()}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: Apache-2.0
