"""Recipe lines (docs/case-format.md, `recipe`): parse one as vattn does, and check that a case
has the shape its recipe describes. The rules and messages follow src/case/recipe_line.cpp:
keys in any order, each once; B may be left out; a one-value list is broadcast over B."""

import math
import re

TREE_KINDS = "chain|random|star|ddtree|deep|wide|padded"
PROFILES = "uniform|k26|adversarial|huge|ties|tiny"
LAYOUTS = "contiguous|scattered|reversed|sparse"
FAULTS = "none|index-nslots|index-neg|index-max|drafts-over"
MAX_BATCH, MAX_HEADS, MAX_DRAFTS, MAX_PREFIX, MAX_SPLITS, MAX_SLOT_BASE = 65536, 1024, 4096, 1 << 30, 256, 1 << 30
MAX_SMS, MAX_SM_BLOCKS, MAX_PLAN_TOTAL_DRAFTS = 512, 32, 2 ** 31 - 1
ROW_DIMS, LATENT_DIMS = 576, 512  # what the generators make: d_qk, d_v
INT32_MAX = 2 ** 31 - 1
_PLAIN_DECIMAL = re.compile(r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")


class RecipeError(ValueError):
    """A recipe line that does not parse: .field names the key, str() the reason."""

    def __init__(self, field, reason):
        super().__init__(reason)
        self.field, self.reason = field, reason


def _bad(field, reason):
    raise RecipeError(field, reason)


def _int(key, text, lo, hi):
    if not text:
        _bad(key, "empty value")
    if not re.fullmatch(r"-?[0-9]+", text):
        _bad(key, f"'{text}' is not an integer")
    v = int(text)
    if v < -2 ** 63 or v >= 2 ** 63:
        _bad(key, f"'{text}' is not an integer")
    if v < lo or v > hi:
        _bad(key, f"{v} is outside [{lo}, {hi}]")
    return v


def _u64(key, text):
    if not text or text[0] in "-+" or text[0].isspace():
        _bad(key, f"'{text}' is not an unsigned integer")
    if not re.fullmatch(r"[0-9]+", text) or int(text) >= 2 ** 64:
        _bad(key, f"'{text}' is not an unsigned 64-bit integer")
    return int(text)


def _list(key, text, lo, hi):
    body = text
    if len(body) >= 2 and body[0] == "[" and body[-1] == "]":
        body = body[1:-1]
    elif "," in body:
        _bad(key, f"a list needs brackets, e.g. {key}=[4099,0]")
    return [_int(key, item, lo, hi) for item in body.split(",")]


def _word(key, value, allowed, what):
    if value not in allowed.split("|"):
        _bad(key, f"unknown {what} '{value}' ({allowed})")
    return value


def _limits(key, text):
    parts = text.split("/")
    if len(parts) != 4:
        _bad(key, f"'{text}' is not R/Q/T/S (max_requests/max_total_drafts/max_drafts_per_request/max_splits)")
    return (_int(key, parts[0], 1, MAX_BATCH), _int(key, parts[1], 1, MAX_PLAN_TOTAL_DRAFTS),
            _int(key, parts[2], 1, MAX_DRAFTS), _int(key, parts[3], 1, MAX_SPLITS))


def parse(line):
    """The recipe as a dict (B, H, P, T, tree, profile, layout, poison, seed, scale, splits,
    slot_base, fault, limits (None or (R, Q, T, S)), sms, sm_blocks); RecipeError when it does
    not parse."""
    # The defaults of src/case/recipe.h.
    r = {"H": 8, "tree": "chain", "profile": "uniform", "layout": "scattered", "poison": False, "seed": 1,
         "scale": 0.1446796, "splits": 0, "slot_base": 0, "fault": "none", "limits": None, "sms": 0, "sm_blocks": 0}
    seen, batch, prefix, drafts = set(), -1, [], []
    for token in line.split():
        eq = token.find("=")
        if eq <= 0:
            _bad(token, f"expected key=value, got '{token}'")
        key, value = token[:eq], token[eq + 1:]
        if key in seen:
            _bad(key, "given twice")
        seen.add(key)
        if key == "B":
            batch = _int(key, value, 1, MAX_BATCH)
        elif key == "H":
            r["H"] = _int(key, value, 1, MAX_HEADS)
        elif key == "P":
            prefix = _list(key, value, 0, MAX_PREFIX)
        elif key == "T":
            drafts = _list(key, value, 1, MAX_DRAFTS)
        elif key == "tree":
            r["tree"] = _word(key, value, TREE_KINDS, "tree kind")
        elif key == "profile":
            r["profile"] = _word(key, value, PROFILES, "profile")
        elif key == "layout":
            r["layout"] = _word(key, value, LAYOUTS, "layout")
        elif key == "poison":
            if value not in ("0", "1"):
                _bad(key, f"must be 0 or 1, got '{value}'")
            r["poison"] = value == "1"
        elif key == "seed":
            r["seed"] = _u64(key, value)
        elif key == "scale":
            v = float(value) if _PLAIN_DECIMAL.match(value) else float("nan")
            if not (math.isfinite(v) and v > 0):
                _bad(key, f"must be a finite number > 0, got '{value}'")
            r["scale"] = v
        elif key == "splits":
            r["splits"] = _int(key, value, 0, MAX_SPLITS)
        elif key == "slot_base":
            r["slot_base"] = _int(key, value, 0, MAX_SLOT_BASE)
        elif key == "fault":
            r["fault"] = _word(key, value, FAULTS, "fault")
        elif key == "limits":
            r["limits"] = _limits(key, value)
        elif key == "sms":
            r["sms"] = _int(key, value, 1, MAX_SMS)
        elif key == "sm_blocks":
            r["sm_blocks"] = _int(key, value, 1, MAX_SM_BLOCKS)
        else:
            _bad(key, "unknown key (known: B H P T tree profile layout poison seed scale splits slot_base fault "
                      "limits sms sm_blocks)")
    if not seen:
        _bad("recipe", "empty recipe line")
    if not prefix:
        _bad("P", "missing (prefix lengths, e.g. P=[4099,0])")
    if not drafts:
        _bad("T", "missing (draft counts, e.g. T=[17,1])")
    if batch < 0:
        batch = max(len(prefix), len(drafts))
    for key, v in (("P", prefix), ("T", drafts)):
        if len(v) == 1:
            v[:] = v * batch
        if len(v) != batch:
            _bad(key, f"has {len(v)} entries but B={batch}")
    if sum(prefix) > INT32_MAX:
        _bad("P", "total prefix length exceeds int32 (kv_indptr)")
    if sum(drafts) > INT32_MAX:
        _bad("T", "total draft count exceeds int32 (qo_indptr)")
    if r["sm_blocks"] and not r["sms"]:
        _bad("sm_blocks", "needs sms (the SM count the plan is made for)")
    if r["limits"] is not None:
        lr, lq, lt, ls = r["limits"]
        if lr < batch:
            _bad("limits", f"max_requests {lr} is below B={batch}")
        if lq < sum(drafts):
            _bad("limits", f"max_total_drafts {lq} is below sum T={sum(drafts)}")
        if lt < max(drafts):
            _bad("limits", f"max_drafts_per_request {lt} is below the largest T_b={max(drafts)}")
        if r["splits"] > ls:
            _bad("limits", f"max_splits {ls} is below splits={r['splits']}")
    r.update(B=batch, P=prefix, T=drafts)
    return r


def mismatch(c):
    """'' when the case has no recipe or has the shape its recipe describes, else why not (the
    text vattn gives for field 'recipe')."""
    if not c.recipe:
        return ""
    try:
        r = parse(c.recipe)
    except RecipeError as e:
        return f"'{c.recipe}' does not parse ({e.field}: {e.reason})"
    head = f"'{c.recipe}' does not re-create this case: "
    B = c.num_requests
    if len(r["P"]) != B:
        return head + f"it has B={len(r['P'])}, the case {B}"
    if r["H"] != c.num_heads:
        return head + f"it has H={r['H']}, the case {c.num_heads}"
    if c.d_qk != ROW_DIMS or c.d_v != LATENT_DIMS:
        return head + f"recipes make d_qk={ROW_DIMS}, d_v={LATENT_DIMS}, the case has {c.d_qk}, {c.d_v}"
    for b in range(B):
        p = int(c.kv_indptr[b + 1] - c.kv_indptr[b])
        t = int(c.qo_indptr[b + 1] - c.qo_indptr[b])
        if r["P"][b] != p or r["T"][b] != t:
            return head + f"request {b} has P={r['P'][b]} T={r['T'][b]}, the case P={p} T={t}"
    if abs(r["scale"] - c.sm_scale) > 1e-6 * abs(c.sm_scale):
        return head + "its scale differs from sm_scale"
    return ""
# SPDX-License-Identifier: Apache-2.0
