#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""model_loop.py [--revision-dir DIR] [--vattn VATTN] [--out DIR] [--capture-dir DIR] [--device cuda|cpu] ...

Greedy tree speculative decoding on a DeepSeek-V3-architecture model, with and without vattn (issue 46,
items 4-5). The model is transformers' DeepseekV3ForCausalLM with random weights (seed --seed), --layers
dense layers, a small vocabulary and hidden size, and Kimi K2.6's attention as one rank of TP8 holds it:
8 query heads, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, YaRN RoPE
(factor 32, mscale_all_dim 1). Each step a drafter proposes a tree of --tree tokens per request (--batch
requests: the continuations of the text's last tokens found earlier in it, then the model's zero-layer top-4
successors); the target verifies all of them in one forward with a tree mask; greedy acceptance keeps the
longest path the target agrees with, and its next token. The loop runs twice from one prefill:
  reference  transformers' own attention (DeepseekV3Attention: decompressed MLA, sdpa) over a fixed-size
             latent cache, the verify step captured once in a CUDA graph and replayed;
  vattn      the same step with attention in the absorbed form (vattn/mla_absorb.py) by vattn.torch
             (split-v2) over a pool of latent+rope rows in scattered slots, captured and replayed.
Checks, a PASS/FAIL line each:
  kernel     every verify call of the vattn loop (every step, every layer) against the float64 reference
             of that call, under the tolerance model (docs/tolerance.md)
  logits     every verify row of every step: vattn's logits within (1 + max_ratio) * e_row + u * |L64| of
             transformers' attention on the same state (u = 2^-8, max_ratio = 2, the tolerance model's;
             e_row = max over the vocabulary of |transformers' bf16 logit - L64|, L64 the step in float64
             on the same state): transformers' bf16 attention is the bf16 yardstick, an attention within the
             model errs at most max_ratio times as much (python/README.md says it in full)
  tokens     the two loops' accepted tokens, step by step, identical wherever the reference's top two
             logits at a decision are not a near-tie (their gap above the sum of the two logits' bounds);
             near-ties counted and printed; where one went the other way the vattn loop follows the
             reference's text from there, so later steps still compare like with like
  timing     (CUDA) the verify step (every layer and the head), graph replay both ways, at each --contexts
             length per request, with the kernel and logits checks at that length; printed
  recorder   a vattn.torch Recorder inside the vattn loop's graph: its files replayed by `vattn replay` with
             --kernel split-v1, --kernel split-v2 and --oracle gpu (CPU: the stored output alone)
  captures   (--capture-dir) --captures of the recorder's files (P <= 4096) completed with the float64 oracle
             (vattn.model_capture) and written there, for captured_tensors/
--device cpu runs all but the kernel (the float64 reference rounded to bf16 stands in), the graphs and the
timing, at sizes chosen on the command line (tests/python/test_model_loop.py runs it so). Libraries:
DIR/libvattn_rev_split_v{1,2}.so (default .device/build/revisions); VATTN: .device/build/vattn. Files go to
--out (default $OUT/model-loop or /tmp/model-loop). Needs torch, transformers (>= 5.17), numpy and h5py.
Exit 0 when every check passed, 1 otherwise, 2 usage, a missing dependency, library or device.
"""

import argparse
import copy
import os
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = []


def report(name, ok, detail):
    RESULTS.append((name, ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def say(msg):
    print(msg, flush=True)


def run_check(name, fn):
    try:
        fn()
    except Exception as e:
        traceback.print_exc()
        report(name, False, f"raised {type(e).__name__}: {e}")


def int_list(text):
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got '{text}'") from None


def arguments(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--revision-dir", default=os.path.join(ROOT, ".device", "build", "revisions"))
    ap.add_argument("--vattn", default=os.path.join(ROOT, ".device", "build", "vattn"))
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "model-loop"))
    ap.add_argument("--capture-dir", default=None, help="write --captures finished capture files here")
    ap.add_argument("--captures", type=int, default=2, help="how many (default 2)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--q-lora-rank", type=int, default=384)
    ap.add_argument("--intermediate", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--embed-std", type=float, default=1.0, help="token embeddings' std (spec_decode.build_model)")
    ap.add_argument("--successor", type=float, default=0.7, help="weight of each token's planted successor (0: none)")
    ap.add_argument("--batch", type=int, default=2, help="requests per verify step")
    ap.add_argument("--tree", type=int, default=16, help="tokens per request and step: the root and its drafts")
    ap.add_argument("--depth", type=int, default=6, help="the drafted trees' largest depth")
    ap.add_argument("--prompts", type=int_list, default=[509, 251], help="the loop's prompt lengths, one per request")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--contexts", type=int_list, default=[4096, 16384, 65536], help="timed context lengths ('' none)")
    ap.add_argument("--replays", type=int, default=20, help="timed replays per round (5 rounds)")
    ap.add_argument("--record-every", type=int, default=8, help="the recorder keeps every Nth step from step 2")
    a = ap.parse_args(argv)
    if len(a.prompts) != a.batch:
        ap.error(f"--prompts gives {len(a.prompts)} lengths for --batch {a.batch}")
    if min(a.prompts) < 2 or a.tree < 2 or a.depth < 1 or a.steps < 1 or a.layers < 1 or a.record_every < 1 \
            or a.captures < 1 or any(c < 1 for c in a.contexts):
        ap.error("--prompts >= 2 each, --tree >= 2, --depth, --steps, --layers, --record-every, --captures and "
                 "--contexts >= 1")
    return a


class Loop:
    """What both loops share: the model, its float64 copy, the drafter, the prompts and their prefill."""

    def __init__(self, a, device):
        import numpy as np
        import torch

        from vattn import spec_decode as sd

        self.a, self.dev, self.B, self.T = a, device, a.batch, a.tree
        longest = max([*a.prompts, *a.contexts]) + (a.steps + 1) * a.tree
        self.config, self.model = sd.build_model(
            seed=a.seed, layers=a.layers, hidden=a.hidden, q_lora_rank=a.q_lora_rank, intermediate=a.intermediate,
            vocab=a.vocab, embed_std=a.embed_std, successor=a.successor, max_positions=max(131072, longest),
            dtype=torch.bfloat16, device=device)
        self.model64 = copy.deepcopy(self.model).to(torch.float64)
        self.drafter = sd.Drafter(self.model, a.tree, a.depth)
        rng = np.random.default_rng(a.seed)
        self.prompts = [rng.integers(0, a.vocab, n).tolist() for n in a.prompts]
        self.lens0 = np.array([n - 1 for n in a.prompts], dtype=np.int64)  # the last prompt token: the first root
        self.prefix_cap = int(max(a.prompts)) + (a.steps + 1) * a.tree
        self.slots = rng.permutation(self.B * self.prefix_cap).reshape(self.B, self.prefix_cap)
        t = time.time()
        self.pre = sd.prefill(self.model, self.prompts, self.lens0, torch.bfloat16, device, chunk=256)
        say(f"prefill: {self.lens0.tolist()} tokens in {time.time() - t:.1f} s")

    def start(self, backend):
        for l in range(self.config.num_hidden_layers):
            for b in range(self.B):
                backend.set_prefix(l, b, self.pre.rows(l, b, 0, int(self.lens0[b])))


def reference_loop(lp, cuda):
    """The loop with transformers' attention: per step its trees, lengths, logits (CPU, float32),
    argmax, top-two gap, paths and accepted tokens."""
    import numpy as np
    import torch

    from vattn import spec_decode as sd

    a, B, T = lp.a, lp.B, lp.T
    be = sd.ReferenceBackend(lp.model, B, T, lp.prefix_cap, torch.bfloat16, lp.dev)
    lp.start(be)
    run = sd.Runner(lp.model, be, B, T, lp.dev, graph=cuda)
    seqs, lens, steps = [list(p) for p in lp.prompts], lp.lens0.copy(), []
    t = time.time()
    for s in range(a.steps):
        trees = sd.Trees([lp.drafter.tree(seqs[b]) for b in range(B)])
        run.load(lens, trees)
        if s == 0:
            run.capture()
        logits = run.run().float().cpu()
        top2 = torch.topk(logits, 2, dim=-1)
        argmax = top2.indices[..., 0].numpy()
        st = {"trees": trees, "lens": lens.copy(), "logits": logits, "argmax": argmax,
              "gap": (top2.values[..., 0] - top2.values[..., 1]).numpy(), "paths": [], "accepted": []}
        for b in range(B):
            path, acc = sd.walk(trees.tokens[b], trees.parents[b], argmax[b])
            be.commit(b, int(lens[b]), path)
            lens[b] += len(path)
            seqs[b].extend(acc)
            st["paths"].append(path)
            st["accepted"].append(acc)
        steps.append(st)
    n = [len(x) for st in steps for x in st["accepted"]]
    say(f"reference loop: {a.steps} steps x {B} requests, {sum(n)} tokens accepted (mean {np.mean(n):.2f} per request "
        f"and step, at most {max(n)}), contexts now {lens.tolist()}, {time.time() - t:.1f} s")
    return steps


def kernel_check(be, layers, label, fails):
    """Every layer's call of the last step against its float64 reference; returns the worst err/bound."""
    from vattn import spec_decode as sd
    from vattn import torch_tolerance as tt

    worst = 0.0
    for l in range(layers):
        ref = sd.reference_of(be.call(l), be.sm_scale, be.d_v)
        verdict = tt.judge_reference(be.out[l], be.lse[l], ref, be.d_qk)
        worst = max(worst, float(verdict[2]))
        if int(verdict[0]):
            fails.append(f"{label} layer {l}: {tt.describe(verdict)}")
    return worst


def vattn_loop(lp, ref_steps, cuda, rec):
    """The loop with the kernel, step by step against the reference loop's; reports kernel, logits, tokens."""
    import numpy as np
    import torch

    import vattn.torch as vt
    from vattn import spec_decode as sd

    a, B, T, L = lp.a, lp.B, lp.T, lp.config.num_hidden_layers
    plan = None
    if cuda:
        plan = vt.Plan("split-v2", max_requests=B, max_total_drafts=B * T, max_drafts_per_request=T, num_heads=8,
                       revision_dir=a.revision_dir, device=lp.dev)
    be = sd.VattnBackend(lp.model, B, T, lp.slots, plan, lp.dev, recorder=rec)
    lp.start(be)
    run = sd.Runner(lp.model, be, B, T, lp.dev, graph=cuda)
    seqs, lens = [list(p) for p in lp.prompts], lp.lens0.copy()
    kernel_fails, kernel_worst, calls = [], 0.0, 0
    worst, where, over, rows, e_rows, scale, drift = 0.0, "", 0, 0, [], [], 0.0
    near, flips, token_fails, gaps, stopped = 0, 0, [], [], None
    t = time.time()
    for s in range(a.steps):
        rs = ref_steps[s]
        trees = sd.Trees([lp.drafter.tree(seqs[b]) for b in range(B)])
        if not trees.same(rs["trees"]) or not np.array_equal(lens, rs["lens"]):
            stopped = f"step {s}: other trees or lengths ({lens.tolist()}) than the reference loop's ({rs['lens'].tolist()})"
            break
        run.load(lens, trees)
        if s == 0:
            run.capture()
        l_v = run.run().float()
        if rec is not None:
            rec.drain()
        kernel_worst = max(kernel_worst, kernel_check(be, L, f"step {s}", kernel_fails))
        calls += L

        # transformers' attention on this state, in bf16 (the yardstick) and in float64
        def rows_of(l, b, lens=lens):
            return be.prefix_rows(l, b, int(lens[b]))

        l_bf = sd.state_forward(lp.model, rows_of, lens, trees, torch.bfloat16, lp.dev).float()
        l64 = sd.state_forward(lp.model64, rows_of, lens, trees, torch.float64, lp.dev)
        bound = sd.logit_bound(l_bf, l64)
        r = (l_v.double() - l_bf.double()).abs() / bound
        rows += r.shape[0] * r.shape[1]
        over += int((r > 1).sum())
        if float(r.max()) > worst:
            worst, where = float(r.max()), f"step {s}"
        e_rows.append(float((l_bf.double() - l64).abs().amax(dim=-1).median()))
        scale.append(float(l64.std()))
        drift = max(drift, float((l_bf.cpu() - rs["logits"]).abs().max()))

        # acceptance: the reference's decisions, the near-ties among them, vattn's outcome
        argmax_v = torch.argmax(l_v, dim=-1).cpu().numpy()
        bound = bound.cpu()
        for b in range(B):
            path_r, acc_r = rs["paths"][b], rs["accepted"][b]
            _, acc_v = sd.walk(trees.tokens[b], trees.parents[b], argmax_v[b])
            tie_at = {}
            for node in path_r:  # the rows whose argmax the reference's walk read
                i1, i2 = torch.topk(rs["logits"][b, node], 2).indices.tolist()
                threshold = float(bound[b, node, i1] + bound[b, node, i2])
                tie_at[node] = float(rs["gap"][b, node]) <= threshold
                gaps.append((float(rs["gap"][b, node]), threshold))
                near += int(tie_at[node])
            if acc_v != acc_r:
                first = next((node for node in path_r if argmax_v[b, node] != rs["argmax"][b, node]), None)
                if first is not None and tie_at[first]:
                    flips += 1
                else:
                    token_fails.append(f"step {s} request {b}: accepted {acc_v}, the reference {acc_r}, first "
                                       f"different argmax at node {first}")
            # The reference's path either way: after a near-tie went the other way, the vattn loop
            # follows the reference's text, so the steps after it still compare like with like.
            be.commit(b, int(lens[b]), path_r)
            lens[b] += len(path_r)
            seqs[b].extend(acc_r)
    say(f"vattn loop: {a.steps} steps in {time.time() - t:.1f} s (each checked against two eager forwards)")
    report("kernel", not kernel_fails and calls == a.steps * L,
           f"{calls} verify calls ({a.steps} steps x {L} layers) against the float64 reference of each: worst "
           f"err/bound {kernel_worst:.3g}" + (f"; {kernel_fails[:3]}" if kernel_fails else ""))
    report("logits", over == 0 and rows == a.steps * B * T,
           f"{rows} verify rows x {a.vocab} logits within (1 + {sd.MAX_RATIO:g}) * e_row + 2^-8 |L64| of transformers' "
           f"attention on the same state: worst ratio {worst:.3g} ({where}), {over} over (median e_row "
           f"{np.median(e_rows) if e_rows else 0:.3g}, logits' std {np.median(scale) if scale else 0:.3g}); largest "
           f"difference between transformers' logits on the two loops' states (their drift) {drift:.3g}")
    g = np.array(gaps) if gaps else np.zeros((1, 2))
    report("tokens", not token_fails and stopped is None,
           f"{a.steps} steps x {B} requests: accepted tokens identical to the reference loop's but at near-ties; "
           f"{near} of {len(gaps)} decisions were near-ties, {flips} of them went the other way (median top-two "
           f"gap {np.median(g[:, 0]):.3g}, median near-tie threshold {np.median(g[:, 1]):.3g})"
           + (f"; {token_fails[:3]}" if token_fails else "") + (f"; stopped at {stopped}" if stopped else ""))


def elapsed_ms(cuda, fn, n):
    """Milliseconds n calls of fn take: CUDA events on the device's stream, else the host's clock."""
    import torch

    if not cuda:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t) * 1e3
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(n):
        fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1)


def timing(lp, cuda):
    """Both verify steps at each context length (graph replay on CUDA, eager on the CPU, where the
    times mean nothing but the checks at each length still run), from one prefill of the longest."""
    import numpy as np
    import torch

    import vattn.torch as vt
    from vattn import spec_decode as sd

    a, B, T, dev, bf = lp.a, lp.B, lp.T, lp.dev, torch.bfloat16
    L = lp.config.num_hidden_layers
    rng = np.random.default_rng(a.seed + 1)
    longest = max(a.contexts)
    prompts = [rng.integers(0, a.vocab, longest + 1).tolist() for _ in range(B)]
    t = time.time()
    pre = sd.prefill(lp.model, prompts, np.full(B, longest), bf, dev, chunk=2048)
    if cuda:
        torch.cuda.synchronize()
    say(f"timing: prefill of {B} x {longest} tokens in {time.time() - t:.1f} s")
    plan = None if not cuda else vt.Plan("split-v2", max_requests=B, max_total_drafts=B * T, max_drafts_per_request=T,
                                         num_heads=8, revision_dir=a.revision_dir, device=dev)
    v_be = sd.VattnBackend(lp.model, B, T, rng.permutation(B * longest).reshape(B, longest), plan, dev)
    for l in range(L):
        for b in range(B):
            v_be.set_prefix(l, b, pre.rows(l, b, 0, longest))
    rows, ok, fails = [], True, []
    for P in sorted(a.contexts):
        lens = np.full(B, P, dtype=np.int64)
        trees = sd.Trees([lp.drafter.tree(prompts[b][:P + 1]) for b in range(B)])
        r_be = sd.ReferenceBackend(lp.model, B, T, P, bf, dev)
        for l in range(L):
            for b in range(B):
                r_be.set_prefix(l, b, pre.rows(l, b, 0, P))
        runners = {"transformers": sd.Runner(lp.model, r_be, B, T, dev, graph=cuda),
                   "vattn": sd.Runner(lp.model, v_be, B, T, dev, graph=cuda)}
        for r in runners.values():
            r.load(lens, trees)
            r.capture()
        times = {k: [] for k in runners}
        for _ in range(5):  # rounds alternate the two, so drift in clocks falls on both
            for k, r in runners.items():
                r.run()
                times[k].append(elapsed_ms(cuda, r.run, a.replays) / a.replays)
        kernel_worst = kernel_check(v_be, L, f"context {P}", fails)
        l_ref, l_v = runners["transformers"].logits.float(), runners["vattn"].logits.float()
        l64 = sd.state_forward(lp.model64, lambda l, b, P=P: pre.rows(l, b, 0, P), lens, trees, torch.float64, dev)
        ratio = float(((l_v.double() - l_ref.double()).abs() / sd.logit_bound(l_ref, l64)).max())
        ok = ok and ratio <= 1
        med = {k: float(np.median(v)) for k, v in times.items()}
        rows.append((P, med["transformers"], med["vattn"]))
        say(f"timing: context {P:6d} x {B} requests, {T} tree tokens each: transformers {med['transformers']:8.3f} ms, "
            f"vattn {med['vattn']:8.3f} ms per verify step ({med['transformers'] / med['vattn']:.2f}x); kernel "
            f"err/bound {kernel_worst:.3g}, logits {ratio:.3g} of their bound")
        for r in runners.values():
            r.g = None
        del runners, r_be
        if cuda:
            torch.cuda.empty_cache()
    how = "graph replay" if cuda else "eager on the CPU, with the float64 reference for the kernel: not a comparison"
    report("timing", ok and not fails,
           f"verify step, {how} (median of 5 rounds x {a.replays}), transformers -> vattn: "
           + ", ".join(f"{P}: {t_r:.3f} -> {t_v:.3f} ms" for P, t_r, t_v in rows)
           + ("; kernel and logits within their bounds at every length" if ok and not fails else
              f"; over a bound: {fails[:2]}" + ("" if ok else " (logits)")))


def replay(vattn, files, extra):
    pr = subprocess.run([vattn, "replay", *files, *extra], capture_output=True, text=True)
    if pr.returncode:
        print(pr.stdout[-3000:] + pr.stderr[-1000:])
    summary = [ln for ln in pr.stdout.splitlines() if ln.startswith("replay:")]
    return pr.returncode, f"vattn replay {' '.join(extra) or '(stored outputs)'}: exit {pr.returncode} {summary}"


def main(argv=None):
    a = arguments(argv)
    sys.path.insert(0, os.path.join(ROOT, "python", "src"))
    try:
        import numpy as np  # noqa: F401
        import torch
        import transformers
    except ImportError as e:
        print(f"model_loop: needs numpy, torch and transformers ({e})", file=sys.stderr)
        return 2
    torch.set_grad_enabled(False)
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("model_loop: no CUDA device visible to torch (--device cpu runs without the kernel)", file=sys.stderr)
        return 2
    import vattn
    import vattn.torch as vt
    from vattn.mla_absorb import softmax_scale
    from vattn.model_capture import describe_model, finish

    if cuda:
        for rev in vt.IN_TREE:
            if not os.path.isfile(vt.library_path(rev, a.revision_dir)):
                print(f"model_loop: no {vt.library_path(rev, a.revision_dir)} (scripts/device/stage.sh; --revision-dir)",
                      file=sys.stderr)
                return 2
    have_vattn = os.path.isfile(a.vattn) and os.access(a.vattn, os.X_OK)
    os.makedirs(a.out, exist_ok=True)
    out_dir = tempfile.mkdtemp(prefix="run-", dir=a.out)
    dev = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    gpu = torch.cuda.get_device_name(dev) if cuda else "cpu"
    t_start = time.time()
    say(f"model_loop: torch {torch.__version__}, transformers {transformers.__version__}, {gpu}, files in {out_dir}")
    lp = Loop(a, dev)
    cfg, attn0 = lp.config, lp.model.model.layers[0].self_attn
    say(f"model: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, vocab {cfg.vocab_size}, {cfg.num_attention_heads} "
        f"heads x (nope {cfg.qk_nope_head_dim} + rope {cfg.qk_rope_head_dim}), latent {cfg.kv_lora_rank}, v_head "
        f"{cfg.v_head_dim}; sm_scale {attn0.scaling:.9g} (the layer's) = {softmax_scale(cfg):.9g} (192^-0.5 * "
        f"mscale^2, YaRN); transformers' attention: {cfg._attn_implementation}")

    ref_steps = reference_loop(lp, cuda)

    rec_dir = os.path.join(out_dir, "recorder")
    rec_steps = range(2, a.steps, a.record_every)
    rec_layers = sorted({0, cfg.num_hidden_layers - 1})
    model_line, notes = describe_model(
        cfg, a.seed, embed_std=a.embed_std, successor=a.successor,
        weights="transformers' initialisation (normal, std 0.04) after torch.manual_seed(seed); embeddings redrawn "
                "with std embed_std (seed + 1); lm_head's row of succ(x) += successor * E[x] / |E[x]|, succ a random "
                "permutation (seed + 2): vattn.spec_decode.build_model", transformers=transformers.__version__,
        torch=torch.__version__, prompts=a.prompts, tree=a.tree, depth=a.depth, steps=a.steps,
        drafter="continuations found in the text, then zero-layer top-4 successors",
        generator="scripts/device/model_loop.py", kernel="split-v2" if cuda else "float64 reference (a CPU run)")
    rec = vt.Recorder(rec_dir, max_requests=a.batch, max_total_drafts=a.batch * a.tree, max_drafts_per_request=a.tree,
                      num_heads=cfg.num_attention_heads, max_kv_tokens=lp.slots.size, slots=4, steps=rec_steps,
                      layers=rec_layers, device=dev, source="capture:model-loop", model=model_line, notes=notes,
                      gpu=gpu, generator="scripts/device/model_loop.py (vattn.torch recorder)",
                      description=("vattn split-v2 through vattn.torch, in a CUDA graph" if cuda else
                                   "the float64 reference rounded to bf16 (model_loop.py --device cpu)"))
    run_check("vattn loop", lambda: vattn_loop(lp, ref_steps, cuda, rec))
    stats = rec.close()

    if a.contexts:
        run_check("timing", lambda: timing(lp, cuda))
    else:
        say("timing: not run (no --contexts)")

    files = sorted(os.path.join(rec_dir, f) for f in os.listdir(rec_dir) if f.endswith(".h5"))
    want = len(rec_steps) * len(rec_layers)
    skipped = sum(v for k, v in stats.items() if k.startswith("skipped"))
    ok, detail = len(files) == want, (f"{len(files)} files from the loop's graph (steps {list(rec_steps)}, layers "
                                      f"{rec_layers}: {want} wanted), {stats['written']} written, {skipped} skipped")
    if not have_vattn:
        ok, detail = False, detail + f"; no {a.vattn} to replay them with"
    elif files:
        for extra in ([["--kernel", "split-v1"], ["--kernel", "split-v2"], ["--oracle", "gpu"]] if cuda else [[]]):
            code, line = replay(a.vattn, files, extra)
            ok, detail = ok and code == 0, detail + "; " + line
    report("recorder", ok, detail)

    if a.capture_dir:
        def captures():
            small = [f for f in files if int(vattn.read(f).cases[0].kv_indptr[-1]) <= 4096]
            # spread over the recorded steps and layers: the first, the last, evenly between
            pick = sorted({round(i * (len(small) - 1) / max(1, a.captures - 1)) for i in range(a.captures)})
            small = [small[i] for i in pick] if small else []
            written = [finish(f, a.capture_dir) for f in small]
            mb = sum(os.path.getsize(p) for p in written) / 1e6
            ok = len(written) == a.captures and have_vattn
            detail = f"{len(written)} files, {mb:.2f} MB, in {a.capture_dir}: {[os.path.basename(p) for p in written]}"
            if have_vattn and written:
                code, line = replay(a.vattn, written, [])
                ok, detail = ok and code == 0, detail + "; " + line
            report("captures", ok, detail)
        run_check("captures", captures)

    failed = [n for n, ok in RESULTS if not ok]
    say(f"model_loop: {len(RESULTS) - len(failed)} passed, {len(failed)} failed" +
        (f" ({', '.join(failed)})" if failed else "") + f", {time.time() - t_start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
