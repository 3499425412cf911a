# SPDX-License-Identifier: Apache-2.0
"""SGLang's Triton extend-attention kernel from its own source files, without the rest of SGLang.

`import sglang` needs SGLang's whole dependency tree: sglang 0.5.23 pins torch 2.14.1 and
needs sglang-kernel 0.4.10, a 356 MiB wheel, so it cannot be installed where torch differs or
where only a few MiB can be carried (the GPU machine takes 64 MiB per call). The kernel itself
is three Triton modules that import four small helpers. This module takes those files from a
published wheel, unchanged (`extract`), and loads them (`load`) under their own names, with
the helpers they import from `sglang.srt.utils` written here as SGLang 0.5.23 defines them:

    is_cuda()            torch.cuda.is_available() and torch.version.cuda is not None
    is_hip()             torch.version.hip is not None
    is_gfx95_supported(), is_gfx1250_supported()   an AMD arch test: False where not HIP
    get_device_core_count(device_id=0)             the device's multiprocessor count

`sglang.srt.environ` (standard library only) is SGLang's own file. The producer that uses this
says so in its description. Used only where `import sglang` fails.

    python3 -m vattn.sglang_files extract sglang-0.5.23-cp312-...whl DIR
"""

import importlib.util
import os
import re
import sys
import types
import zipfile

# What the kernel's modules need, as the wheel lays them out.
FILES = (
    "sglang/kernels/ops/attention/extend_attention.py",
    "sglang/kernels/ops/attention/decode_attention.py",
    "sglang/kernels/ops/attention/score_mod.py",
    "sglang/srt/environ.py",
)
# Loaded in this order: each only imports the ones before it (and the stand-in helpers).
MODULES = (
    ("sglang.srt.environ", "sglang/srt/environ.py"),
    ("sglang.kernels.ops.attention.score_mod", "sglang/kernels/ops/attention/score_mod.py"),
    ("sglang.kernels.ops.attention.decode_attention", "sglang/kernels/ops/attention/decode_attention.py"),
    ("sglang.kernels.ops.attention.extend_attention", "sglang/kernels/ops/attention/extend_attention.py"),
)
PACKAGES = ("sglang", "sglang.srt", "sglang.kernels", "sglang.kernels.ops", "sglang.kernels.ops.attention")
VERSION_FILE = "SGLANG_VERSION"


class SglangFilesError(Exception):
    pass


def extract(wheel, out_dir):
    """Copies FILES and the wheel's version out of `wheel` into `out_dir`; returns the version."""
    try:
        z = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as e:
        raise SglangFilesError(f"{wheel}: not a readable wheel ({e})") from e
    with z:
        names = set(z.namelist())
        meta = [n for n in names if re.fullmatch(r"sglang-[^/]+\.dist-info/METADATA", n)]
        if not meta:
            raise SglangFilesError(f"{wheel}: no sglang-*.dist-info/METADATA: not an sglang wheel")
        version = None
        for line in z.read(meta[0]).decode("utf-8", "replace").splitlines():
            if line.startswith("Version:"):
                version = line.split(":", 1)[1].strip()
                break
        if not version:
            raise SglangFilesError(f"{wheel}: {meta[0]} names no Version")
        for f in FILES:
            if f not in names:
                raise SglangFilesError(f"{wheel}: has no {f} (sglang {version} lays the kernel out otherwise)")
            dst = os.path.join(out_dir, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "wb") as out:
                out.write(z.read(f))
    with open(os.path.join(out_dir, VERSION_FILE), "w") as f:
        f.write(version + "\n")
    return version


def _torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _helpers():
    """The stand-in for sglang.srt.utils: the five helpers, as SGLang 0.5.23 defines them
    (without torch every one answers 'no device')."""
    m = types.ModuleType("sglang.srt.utils")
    m.__doc__ = "vattn.sglang_files: stand-ins for the sglang.srt.utils helpers the Triton kernel imports"

    def is_cuda():
        t = _torch_or_none()
        return bool(t is not None and t.cuda.is_available() and t.version.cuda is not None)

    def is_hip():
        t = _torch_or_none()
        return bool(t is not None and t.version.hip is not None)

    def _amd_arch(tag):
        t = _torch_or_none()
        if t is None or not t.version.hip:
            return False
        return tag in t.cuda.get_device_properties(0).gcnArchName

    def get_device_core_count(device_id=0):
        t = _torch_or_none()
        if t is not None and t.cuda.is_available():
            return t.cuda.get_device_properties(device_id).multi_processor_count
        return 0

    m.is_cuda, m.is_hip, m.get_device_core_count = is_cuda, is_hip, get_device_core_count
    m.is_gfx95_supported = lambda: _amd_arch("gfx95")
    m.is_gfx1250_supported = lambda: _amd_arch("gfx1250")
    return m


def load(root):
    """Loads the kernel's modules from `root` (made by extract); returns (extend_attention module,
    SGLang version). Refuses when a real `sglang` is imported already: the two would clash."""
    if "sglang" in sys.modules and not getattr(sys.modules["sglang"], "_vattn_sglang_files", False):
        raise SglangFilesError("a real sglang is imported in this process; use it instead of its files")
    missing = [f for f in FILES + (VERSION_FILE,) if not os.path.isfile(os.path.join(root, f))]
    if missing:
        raise SglangFilesError(f"{root}: lacks {', '.join(missing)} (make it with: python3 -m vattn.sglang_files "
                               "extract WHEEL DIR)")
    with open(os.path.join(root, VERSION_FILE)) as f:
        version = f.read().strip()
    name = MODULES[-1][0]
    if name in sys.modules:
        return sys.modules[name], version
    for pkg in PACKAGES:
        if pkg not in sys.modules:
            p = types.ModuleType(pkg)
            p.__path__ = [os.path.join(root, *pkg.split("."))]
            p._vattn_sglang_files = True
            p.__version__ = version
            sys.modules[pkg] = p
    sys.modules.setdefault("sglang.srt.utils", _helpers())
    for mod_name, rel in MODULES:
        if mod_name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(mod_name, os.path.join(root, rel))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[mod_name]
            raise
    return sys.modules[name], version


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or argv[0] != "extract":
        print("usage: python3 -m vattn.sglang_files extract WHEEL DIR\n"
              "  copies SGLang's Triton extend-attention files out of a published sglang wheel into DIR,\n"
              "  for `python -m vattn.produce --producer sglang-triton --sglang-files DIR`", file=sys.stderr)
        return 2
    try:
        version = extract(argv[1], argv[2])
    except (SglangFilesError, OSError) as e:
        print(f"vattn.sglang_files: {e}", file=sys.stderr)
        return 1
    print(f"vattn.sglang_files: sglang {version}: {len(FILES)} files in {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
