#!/usr/bin/env python3
"""The morning report of a `vattn fuzz` campaign: one self-contained HTML page.

Reads a campaign directory (docs/fuzz-files.md): summary.json (schema vattn-fuzz-summary,
version 1) for the totals, coverage, findings, ledger and workers, and journal.jsonl for the
throughput over time (the run lines' start plus the ticks' and end lines' elapsed seconds).
A merged summary (`vattn fuzz-merge`) names its part directories; their journals give one
throughput line per part. With --compare a second campaign is set beside the first.

Plots are PNG images made with matplotlib (Agg) and embedded as data URIs, so the page needs
no other file. Every string that comes from the campaign's files is HTML-escaped.
"""

import argparse
import base64
import contextlib
import html
import io
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

try:
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.ticker import StrMethodFormatter
except ImportError as missing:
    # Exit 3 tells vattn (vattn/fuzz/campaign/report_runner.cpp) to try the next interpreter.
    print(f"morning_report: cannot import {missing.name} (Debian: python3-matplotlib, python3-numpy)", file=sys.stderr)
    sys.exit(3)

SUMMARY_SCHEMA = "vattn-fuzz-summary"
SUMMARY_VERSION = 1
# summary.json fields this report reads, with the JSON type each must have where present.
SUMMARY_FIELDS = {
    "kernel": str, "seed": int, "budget": str, "campaign": str, "stopped": str, "this_run": dict,
    "journal_problems": list,
    "campaign_cases": int, "failed": int, "suite_errors": int, "verdicts": dict, "coverage": dict,
    "workers": list, "findings": list, "ledger": dict, "tolerated": int, "shard": list,
    "merged_from": list, "parts": list, "extra_buckets": list,
}
# The fields of each finding read here that are not plain text or numbers.
FINDING_FIELDS = {"first_case": dict, "investigation": dict, "reproduce": list, "parts": list, "bucket": str}
BUCKET_SEPARATOR = " @ "  # between a signature's check and its bucket (vattn/fuzz/protocol/protocol.h)
REQUIRED_FIELDS = ("kernel", "campaign_cases", "verdicts", "coverage", "findings")
JSON_TYPE_NAMES = {str: "string", int: "integer", dict: "object", list: "array"}
CASE_LINE = '"t":"case"'  # how a journal's case line is told without parsing it (read_journal)
RATE_STEPS = 240  # the most intervals a run's rate is drawn with (more are averaged together)
PASS_COLOUR, FAIL_COLOUR, NEUTRAL_COLOUR = "#2e7d32", "#c62828", "#78909c"
COVERAGE_COLOUR = "#00796b"
A_COLOUR, B_COLOUR = "#1565c0", "#ef6c00"
SERIES_COLOURS = ("#1565c0", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#4e342e")


class InputError(Exception):
    """Unusable input: names the file and what is wrong with it."""

    def __init__(self, path, problem):
        """PATH: PROBLEM, the way the report's one line on stderr names it."""
        super().__init__(f"{path}: {problem}")


class Markup(str):
    """HTML made by this script: table cells and sections insert it as it is, unescaped."""


# ---------------------------------------------------------------------------------------------
# Reading the campaign directory


def read_summary(path):
    """Returns summary.json's object after checking its schema, version and field types."""
    if not path.is_file():
        raise InputError(path, "missing (not a campaign directory, or the campaign has not stopped cleanly yet)")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse_constant)
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, f"cannot be read ({error})") from None
    except json.JSONDecodeError as error:
        raise InputError(path, f"not valid JSON (line {error.lineno} column {error.colno}: {error.msg})") from None
    except ValueError as error:
        raise InputError(path, f"not valid JSON ({error})") from None
    if not isinstance(summary, dict):
        raise InputError(path, "not a JSON object")
    if summary.get("schema") != SUMMARY_SCHEMA or summary.get("version") != SUMMARY_VERSION:
        raise InputError(path, f"schema {summary.get('schema')!r} version {summary.get('version')!r}, "
                               f"expected {SUMMARY_SCHEMA} version {SUMMARY_VERSION}")
    check_summary_fields(summary, path)
    return summary


def refuse_constant(name):
    """json.loads hook: NaN and Infinity are not JSON (vattn writes null for them)."""
    raise ValueError(f"{name} is not a JSON value")


def check_summary_fields(summary, path):
    """Raises InputError when a required field is missing or a field read here has the wrong type."""
    for key in REQUIRED_FIELDS:
        if summary.get(key) is None:
            raise InputError(path, f"field '{key}' is missing")
    check_types(summary, SUMMARY_FIELDS, "", path)
    for dimension, buckets in summary["coverage"].items():
        if not isinstance(buckets, dict):
            raise InputError(path, f"coverage['{dimension}'] is not an object of bucket counts")
    ledger = summary.get("ledger") or {}
    check_types(ledger, {"entries": list}, "ledger.", path)
    lists = {"findings": summary["findings"], "workers": summary.get("workers"), "parts": summary.get("parts"),
             "ledger.entries": ledger.get("entries"), "extra_buckets": summary.get("extra_buckets")}
    for where, items in lists.items():
        for index, item in enumerate(items or []):
            if not isinstance(item, dict):
                raise InputError(path, f"{where}[{index}] is not a JSON object")
    for index, finding in enumerate(summary["findings"]):
        check_types(finding, FINDING_FIELDS, f"findings[{index}].", path)
        for part_index, part in enumerate(finding.get("parts") or []):
            if not isinstance(part, dict):
                raise InputError(path, f"findings[{index}].parts[{part_index}] is not a JSON object")


def check_types(document, types, where, path):
    """Raises InputError when a field named in `types` is there (not null) with another JSON type."""
    for key, kind in types.items():
        if document.get(key) is not None and not isinstance(document[key], kind):
            raise InputError(path, f"{where}{key} is not a JSON {JSON_TYPE_NAMES[kind]}")


def read_journal(path):
    """Returns the journal's lines other than `case` lines, as objects (the summary counts the cases;
    an overnight journal holds millions of them). A line that does not parse (a torn last line) is
    skipped. A case line is known without parsing it: inside a JSON string every quote is escaped,
    so the text "t":"case" only occurs as that key and value."""
    if not path.is_file():
        raise InputError(path, "missing (not a campaign directory?)")
    lines = []
    try:
        with path.open(encoding="utf-8", errors="replace") as journal:
            for text in journal:
                if CASE_LINE in text:
                    continue
                try:
                    line = json.loads(text, parse_constant=refuse_constant)
                except ValueError:  # a torn line, or NaN
                    continue
                if isinstance(line, dict):
                    lines.append(line)
    except OSError as error:
        raise InputError(path, f"cannot be read ({error})") from None
    return lines


def parse_utc(text):
    """The datetime of a journal timestamp ("2026-12-01T10:55:16Z"), or None when it is not one."""
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def is_number(value):
    """True for a JSON number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------
# Throughput: cumulative cases over time


@dataclass
class Curve:
    """Cumulative cases against seconds since `origin` (the campaign's creation), one segment per run."""

    origin: datetime | None
    segments: list = field(default_factory=list)  # [(times, cases)] as numpy arrays, one per run

    def points(self):
        """All segments joined: (times, cases), times increasing."""
        if not self.segments:
            return np.zeros(0), np.zeros(0)
        return np.concatenate([t for t, _ in self.segments]), np.concatenate([c for _, c in self.segments])


def journal_curve(lines):
    """The curve of one journal: each run line starts a segment at (its start, the cases done before
    it), each tick and end line of that run adds (start + elapsed_s, campaign-wide cases)."""
    campaign = next((line for line in lines if line.get("t") == "campaign"), {})
    origin = parse_utc(campaign.get("created"))
    segments, run = [], None
    for line in lines:
        kind = line.get("t")
        if kind == "run":
            previous_end, previous_cases = segments[-1][-1] if segments else (0.0, 0)
            started = parse_utc(line.get("started"))
            start = (started - origin).total_seconds() if started and origin else previous_end
            done_before = line.get("done_before")
            segments.append([(max(start, previous_end), done_before if is_number(done_before) else previous_cases)])
            run = line.get("run")
        elif kind in ("tick", "end") and segments and line.get("run") == run:
            if is_number(line.get("elapsed_s")) and is_number(line.get("cases")):
                add_point(segments[-1], segments[-1][0][0] + line["elapsed_s"], line["cases"])
    return Curve(origin, [(np.array([p[0] for p in s], float), np.array([p[1] for p in s], float)) for s in segments])


def add_point(segment, time, cases):
    """Appends (time, cases) to a run's segment. A point no later than the last one (an end line in
    the same tenth of a second as a tick) updates that point's count; the run's start point stays."""
    if len(segment) > 1 and time <= segment[-1][0]:
        segment[-1] = (segment[-1][0], cases)
    elif time > segment[-1][0]:
        segment.append((time, cases))


def align(curves):
    """The curves (label -> Curve) re-expressed against one origin, the earliest creation among them."""
    origin = min((c.origin for c in curves.values() if c.origin), default=None)

    def shift(curve):
        """Seconds from the common origin to the curve's own (0 where either is unknown)."""
        return (curve.origin - origin).total_seconds() if curve.origin and origin else 0.0

    return {label: Curve(origin, [(t + shift(c), n) for t, n in c.segments]) for label, c in curves.items()}


def sum_curves(curves):
    """The campaign-wide curve of several parts that share an origin: their cumulative cases added
    on the union of their time points, as one segment."""
    joined = [c.points() for c in curves if c.segments]
    if not joined:
        return Curve(None)
    grid = np.unique(np.concatenate([t for t, _ in joined]))
    total = sum(np.interp(grid, t, n) for t, n in joined)
    return Curve(curves[0].origin, [(grid, total)])


def busy_seconds(curves):
    """Wall seconds during which at least one run of the curves (sharing an origin) was going."""
    spans = sorted((t[0], t[-1]) for c in curves for t, _ in c.segments)
    total, reach = 0.0, float("-inf")
    for start, end in spans:
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total


# ---------------------------------------------------------------------------------------------
# The campaign as the report sees it


@dataclass
class Campaign:
    """One campaign directory: its summary, its throughput curves and what could not be read."""

    directory: Path
    summary: dict
    generator: str
    runs: int
    sources: dict  # label -> Curve: the campaign's own journal, or each part's
    total: Curve  # all sources on one time axis
    notes: list  # problems that cost part of the page (a part's journal that cannot be read)

    @property
    def cases(self):
        """The campaign's cases (all runs, all parts)."""
        return self.summary["campaign_cases"]

    @property
    def elapsed(self):
        """Wall seconds the campaign ran (the union of its runs, over all parts)."""
        return busy_seconds(list(self.sources.values()))

    @property
    def rate(self):
        """Cases per second over the campaign's running time (0 when that is unknown)."""
        return self.cases / self.elapsed if self.elapsed > 0 else 0.0


def load_campaign(directory, summary_path=None):
    """Reads DIR's summary and journal (or, for a merged summary, the parts' journals). SUMMARY_PATH,
    when given, is the summary to use instead of DIR/summary.json: the one `vattn report` rebuilt from
    the journal when the journal has outgrown DIR/summary.json (a run killed after it was written)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(directory, "no such directory")
    summary = read_summary(Path(summary_path) if summary_path else directory / "summary.json")
    part_dirs = merged_part_dirs(summary)
    journals, notes = {}, []
    if summary.get("rebuilt_from_journal") is True:
        notes.append("counted from the journal: summary.json is missing or older than journal.jsonl "
                     "(a run that did not stop cleanly); the workers' statistics are not known")
    for problem in summary.get("journal_problems") or []:
        notes.append(f"journal.jsonl {problem} (skipped)")
    if not part_dirs:
        journals["campaign"] = read_journal(directory / "journal.jsonl")
    for part_dir in part_dirs:
        try:
            journals[part_label(part_dir, journals)] = read_journal(Path(part_dir) / "journal.jsonl")
        except InputError as error:
            notes.append(f"left out of the throughput plot: {error}")
    sources = align({label: journal_curve(lines) for label, lines in journals.items()})
    total = next(iter(sources.values())) if len(sources) == 1 else sum_curves(list(sources.values()))
    generator = journal_generator(next(iter(journals.values()), []), summary)
    runs = sum(count_runs(lines) for lines in journals.values())
    return Campaign(directory, summary, generator, runs, sources, total, notes)


def merged_part_dirs(summary):
    """The part directories of a merged summary (`parts`, else `merged_from`); [] for a plain one."""
    dirs = [part.get("dir") for part in summary["parts"]] if summary.get("parts") else summary.get("merged_from") or []
    return [str(d) for d in dirs if d]


def part_label(part_dir, taken):
    """A short, unique label for a part: its folder's name."""
    label, n = Path(part_dir).name or part_dir, 2
    while label in taken:
        label, n = f"{Path(part_dir).name} ({n})", n + 1
    return label


def journal_generator(lines, summary):
    """The vattn that wrote the campaign (the journal's campaign line, else the summary's)."""
    campaign = next((line for line in lines if line.get("t") == "campaign"), {})
    return str(campaign.get("generator") or summary.get("generator") or "")


def count_runs(lines):
    """How many times the supervisor was started on this journal."""
    return sum(1 for line in lines if line.get("t") == "run")


# ---------------------------------------------------------------------------------------------
# Plots


def png_img(figure, alt):
    """The figure as an <img class="plot"> with the PNG inline as a data URI."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return Markup(f'<img class="plot" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">')


def time_unit(span_s):
    """(divisor, unit name) that keeps a time axis of span_s seconds readable."""
    if span_s < 600:
        return 1.0, "s"
    if span_s < 3 * 3600:
        return 60.0, "min"
    return 3600.0, "h"


def throughput_figure(curves, title, xlabel):
    """Cases per second (one step per tick interval) above cumulative cases, one colour per curve;
    a dotted line marks where a resumed run starts."""
    figure = Figure(figsize=(10, 5.6), layout="constrained")
    rate_axes, cases_axes = figure.subplots(2, 1, sharex=True)
    span = max((t[-1] for c in curves.values() for t, _ in c.segments if len(t)), default=0.0)
    divisor, unit = time_unit(span)
    for (label, curve), colour in zip(curves.items(), curve_colours(curves)):
        for index, (t, n) in enumerate(curve.segments):
            name = label if index == 0 else None
            if len(t) > 1:
                edges, counts = coarsen(t, n, RATE_STEPS)
                rate_axes.stairs(np.diff(counts) / np.diff(edges), edges / divisor, color=colour, linewidth=1.8)
            cases_axes.plot(t / divisor, n, color=colour, marker="o" if len(t) <= RATE_STEPS else None,
                            markersize=3, linewidth=1.8, label=name)
            if index > 0:
                for axes in (rate_axes, cases_axes):
                    axes.axvline(t[0] / divisor, color=colour, linestyle=":", linewidth=1)
                cases_axes.annotate(f"run {index + 1}", (t[0] / divisor, 0), xytext=(3, 3),
                                    textcoords="offset points", fontsize=8, color=colour)
    if span == 0:
        cases_axes.text(0.5, 0.5, "no timed runs in the journal", transform=cases_axes.transAxes, ha="center")
    rate_axes.set_title(title, fontsize=11)
    rate_axes.set_ylabel("cases/s")
    cases_axes.set_ylabel("cases (cumulative)")
    cases_axes.set_xlabel(f"{xlabel} ({unit})")
    for axes in (rate_axes, cases_axes):
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    if len(curves) > 1:
        cases_axes.legend(loc="upper left", fontsize=8)
    return figure


def coarsen(times, cases, steps):
    """At most `steps` intervals of a run: the cumulative cases sampled at even times (the mean rate
    of each interval is kept), so an overnight run's thousands of ticks stay readable."""
    if len(times) <= steps + 1:
        return times, cases
    grid = np.linspace(times[0], times[-1], steps + 1)
    return grid, np.interp(grid, times, cases)


def curve_colours(curves):
    """A colour per curve; the sum of several parts ("all parts") is drawn in black."""
    colours = iter(SERIES_COLOURS * len(curves))
    return ["black" if label == "all parts" else next(colours) for label in curves]


def bar_figure(title, labels, values, colours, value_text):
    """Horizontal bars, one per label (top to bottom in the given order), each with its value written."""
    figure = Figure(figsize=(4.8, 0.9 + 0.3 * max(len(labels), 1)), layout="constrained")
    axes = figure.subplots()
    positions = np.arange(len(labels))
    axes.barh(positions, values, color=colours)
    axes.set_yticks(positions, labels, fontsize=9)
    axes.invert_yaxis()
    top = max(values, default=0) or 1
    axes.set_xlim(0, top * 1.22)
    for y, value in zip(positions, values):
        axes.text(value + top * 0.02, y, value_text(value), va="center", fontsize=8)
    axes.set_title(title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    return figure


def grouped_bar_figure(title, labels, share_a, share_b):
    """Horizontal bar pairs (A above B) per label: shares of each campaign's cases, in percent."""
    figure = Figure(figsize=(4.8, 1.1 + 0.42 * max(len(labels), 1)), layout="constrained")
    axes = figure.subplots()
    positions = np.arange(len(labels))
    for offset, shares, colour in ((-0.2, share_a, A_COLOUR), (0.2, share_b, B_COLOUR)):
        axes.barh(positions + offset, [100 * s for s in shares], height=0.4, color=colour)
    axes.set_yticks(positions, labels, fontsize=9)
    axes.invert_yaxis()
    axes.set_xlabel("% of the campaign's cases", fontsize=8)
    axes.set_title(title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    return figure


def bucket_order(label):
    """Sort key putting numeric buckets ("1", "2-16", "17-64") in numeric order, named ones after."""
    number = re.match(r"\d+", label)
    return (0, int(number.group()), label) if number else (1, 0, label)


def verdict_colour(verdict):
    """Green for pass, grey for the suite's own errors, red for every failure class."""
    return {"pass": PASS_COLOUR, "input-error": NEUTRAL_COLOUR}.get(verdict, FAIL_COLOUR)


# ---------------------------------------------------------------------------------------------
# HTML pieces


def esc(value):
    """Text for HTML: escaped, unless it is Markup made here."""
    return value if isinstance(value, Markup) else html.escape("" if value is None else str(value))


def table(headers, rows, css_class=""):
    """An HTML table; every cell is escaped unless it is Markup."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return Markup(f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def key_values(pairs):
    """A two-column table of (name, value) pairs, values escaped unless Markup."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs)
    return Markup(f'<table class="kv">{rows}</table>')


def code(text):
    """Inline code (recipes, commands, paths)."""
    return Markup(f"<code>{esc(text)}</code>")


def file_link(path):
    """A path (as the files give it: any JSON value) shown as code, linked as a file:// URL."""
    text = str(path)
    return Markup(f'<a href="{esc(Path(text).absolute().as_uri())}">{code(text)}</a>')


def section(anchor, title, *parts):
    """A titled <section> of the page."""
    return Markup(f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{"".join(esc(p) for p in parts)}</section>')


def note(text):
    """A paragraph of explanation in a quieter style."""
    return Markup(f'<p class="note">{esc(text)}</p>')


def duration(seconds):
    """Seconds as HH:MM:SS, the way `vattn fuzz` prints them; under a minute as "12.3 s"."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    seconds = int(round(seconds))
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def number(value, digits=1):
    """A number with `digits` decimals, or the value as text when it is not a number."""
    return f"{value:.{digits}f}" if is_number(value) else str(value if value is not None else "")


def shard_text(shard):
    """[I, N] as "I/N" ("" when absent)."""
    return f"{shard[0]}/{shard[1]}" if isinstance(shard, list) and len(shard) == 2 else ""


# ---------------------------------------------------------------------------------------------
# Sections


def verdict_line(campaign):
    """The one line a reader wants first: how many findings, or nothing found."""
    findings = len(campaign.summary["findings"])
    tolerated = campaign.summary.get("tolerated") or 0
    text = f"{findings} finding{'s' if findings != 1 else ''}" if findings else "nothing found"
    if tolerated:
        text += f" ({tolerated} failed case{'s' if tolerated != 1 else ''} tolerated by the ledger)"
    if campaign.summary.get("suite_errors"):
        text += f"; {campaign.summary['suite_errors']} suite error(s)"
    return Markup(f'<p class="verdict {"bad" if findings else "good"}">{esc(text)}</p>')


def header_section(campaign, title):
    """The title, the verdict line and the campaign's facts."""
    s = campaign.summary
    pairs = [
        ("kernel", code(s["kernel"])), ("seed", seed_text(s)), ("budget", s.get("budget", "")),
        ("campaign", file_link(campaign.directory)), ("stopped", s.get("stopped", "")),
        ("cases", f"{campaign.cases:,} over {campaign.runs} run(s)"), ("failed", s.get("failed", "")),
        ("suite errors", s.get("suite_errors", "")),
        ("elapsed", f"{duration(campaign.elapsed)} ({number(campaign.rate)} cases/s)"),
        ("last run", last_run_text(s.get("this_run") or {})),
        ("generator", campaign.generator),
    ]
    if "tolerated" in s:
        pairs.append(("tolerated (ledger)", s["tolerated"]))
    if s.get("shard"):
        pairs.append(("shard", shard_text(s["shard"])))
    if s.get("parts"):
        pairs.append(("merged from", f"{len(s['parts'])} parts"))
    return Markup(f"<header><h1>{esc(title)}</h1>{verdict_line(campaign)}{key_values(pairs)}</header>")


def seed_text(summary):
    """The campaign seed; for a merged summary of several seeds, all of them."""
    if summary.get("seed") is None and isinstance(summary.get("seeds"), list):
        return ", ".join(str(seed) for seed in summary["seeds"])
    return str(summary.get("seed", ""))


def last_run_text(this_run):
    """The summary's this_run: how long the last run took, its cases and long-context cases."""
    elapsed = this_run.get("elapsed_s")
    return (f"{duration(elapsed) if is_number(elapsed) else '?'}, {this_run.get('cases', '?')} cases, "
            f"{this_run.get('long_cases', '?')} long-context")


def parts_section(campaign):
    """For a merged summary: each part directory with its cases, seed and shard."""
    parts = campaign.summary.get("parts") or [{"dir": d} for d in campaign.summary.get("merged_from") or []]
    rows = [(file_link(p.get("dir", "")), p.get("cases", ""), p.get("seed", ""), shard_text(p.get("shard")),
             p.get("stopped", "")) for p in parts]
    headers = ("directory", "cases", "seed", "shard", "stopped")
    return section("parts", "Parts (merged summary)", table(headers, rows))


def throughput_section(campaign):
    """Cases/s and cumulative cases over the campaign's wall time."""
    curves = {"all parts": campaign.total, **campaign.sources} if len(campaign.sources) > 1 else campaign.sources
    since = "time since the first part was created" if len(curves) > 1 else "time since the campaign was created"
    figure = throughput_figure(curves, "cases per second and cumulative cases", since)
    explain = note("Cases/s: the mean rate between the journal's 5-second ticks and a run's start and end "
                   f"(a long run's intervals are averaged into {RATE_STEPS} steps). Each --resume run is its own "
                   "segment, its start dotted.")
    return section("throughput", "Throughput", png_img(figure, "throughput over time"), explain,
                   *(note(n) for n in campaign.notes))


def verdicts_section(campaign):
    """The count of each verdict, as bars."""
    verdicts = sorted(campaign.summary["verdicts"].items(), key=lambda kv: (kv[0] != "pass", kv[0]))
    labels = [v for v, _ in verdicts]
    counts = [n if is_number(n) else 0 for _, n in verdicts]
    total = sum(counts) or 1
    figure = bar_figure("verdicts", labels, counts, [verdict_colour(v) for v in labels],
                        lambda n: f"{n:g} ({100 * n / total:.0f}%)")
    return section("verdicts", "Verdicts", png_img(figure, "verdict counts"))


def coverage_section(campaign):
    """One bar chart per coverage dimension of the summary."""
    images = []
    for dimension, buckets in campaign.summary["coverage"].items():
        labels = sorted(buckets, key=bucket_order)
        counts = [buckets[b] if is_number(buckets[b]) else 0 for b in labels]
        figure = bar_figure(dimension, labels, counts, COVERAGE_COLOUR, lambda n: f"{n:g}")
        images.append(png_img(figure, f"coverage of {dimension}"))
    if not images:
        return section("coverage", "Coverage", note("the summary has no coverage"))
    return section("coverage", "Coverage (campaign)", Markup(f'<div class="grid">{"".join(images)}</div>'))


def finding_recipe(finding):
    """The shrunk recipe with how it was shrunk, or the first case's recipe when it was not shrunk."""
    investigation = finding.get("investigation")
    first = (finding.get("first_case") or {}).get("recipe", "")
    if investigation and investigation.get("shrunk_recipe"):
        how = (f"shrunk: {investigation.get('shrink_steps', '?')} steps in {investigation.get('runs', '?')} runs, "
               f"{investigation.get('stop_reason', '')}")
        return Markup(f'{code(investigation["shrunk_recipe"])}<div class="small">{esc(how)}</div>')
    return Markup(f'{code(first)}<div class="small">first case (not shrunk)</div>')


def evidence_dirs(campaign, finding):
    """The finding's directories: in a merged summary each part's (`parts[].evidence`); else its `dir`
    in the campaign (findings/NNN-<class>), or for a summary older than that field, findings/ID-*."""
    if finding.get("parts"):
        return [Path(str(part["evidence"])) for part in finding["parts"] if part.get("evidence")]
    if finding.get("dir"):
        return [campaign.directory / str(finding["dir"])]
    return sorted(campaign.directory.glob(f"findings/{finding.get('id', '')}-*"))


def evidence_link(path):
    """A finding directory, linked, marked when it is not there (moved or deleted)."""
    return file_link(path) if path.is_dir() else Markup(f"{code(path)} (missing)")


def signature_parts(signature):
    """A signature's check (class and check) and its bucket ("" when it has none)."""
    check, _, bucket = str(signature).partition(BUCKET_SEPARATOR)
    return check, bucket


def bucket_cell(signature):
    """Where a finding's errors sit: its bucket, or a dash for a check without one (and for a wrong
    answer journaled before buckets, whose signature is a bucket of its own)."""
    bucket = signature_parts(signature)[1]
    return code(bucket) if bucket else "\u2014"


def finding_row(campaign, finding):
    """One row of the findings table."""
    reproduce = finding.get("reproduce") or [""]
    detail = Markup(f'<div class="small">{esc(finding.get("detail", ""))}</div>')
    signature = str(finding.get("signature", ""))
    check = Markup(f'{esc(signature_parts(signature)[0])}{detail}')
    evidence = Markup("<br>".join(evidence_link(d) for d in evidence_dirs(campaign, finding)) or "(none)")
    return (finding.get("id", ""), finding.get("class", ""), check, bucket_cell(signature), finding.get("count", ""),
            finding.get("state", ""), finding_recipe(finding), code(reproduce[0]), evidence)


def findings_section(campaign):
    """Every finding: what it is, where its errors sit, how often, its shrunk recipe, the line that re-runs
    it, its files; then the further buckets of checks that had their findings (counted, not filed)."""
    findings = campaign.summary["findings"]
    extra = campaign.summary.get("extra_buckets") or []
    parts = []
    if findings:
        rows = [finding_row(campaign, f) for f in findings]
        headers = ("id", "class", "check", "where the errors sit", "count", "state", "recipe", "re-run", "evidence")
        parts.append(table(headers, rows, "findings"))
    else:
        parts.append(note("nothing found"))
    if extra:
        rows = [(signature_parts(e.get("signature", ""))[0], bucket_cell(e.get("signature", "")), e.get("count", ""))
                for e in extra]
        parts.append(note(f"More buckets of checks that have their findings: counted, not filed "
                          f"({len(extra)} bucket{'s' if len(extra) != 1 else ''})"))
        parts.append(table(("check", "where the errors sit", "count"), rows))
    return section("findings", f"Findings ({len(findings)})" if findings else "Findings", *parts)


def ledger_section(campaign):
    """Every ledger entry (known, tolerated findings) with its reason and its count in this campaign."""
    ledger = campaign.summary.get("ledger")
    if not ledger:
        return section("ledger", "Ledger", note("no ledger"))
    rows = [(e.get("signature", ""), code(e.get("kernel", "")), e.get("reason", ""), e.get("added", ""),
             e.get("count", ""), tolerated_cell(e)) for e in ledger.get("entries") or []]
    parts = [note(f"file: {ledger.get('file', '')}")]
    headers = ("signature", "kernel", "reason", "added", "cases this campaign", "tolerated signatures")
    parts.append(table(headers, rows) if rows else note("the ledger has no entries"))
    return section("ledger", "Ledger (tolerated findings)", *parts)


def tolerated_cell(entry):
    """The signatures a ledger entry tolerated, with their counts: a glob, or a check named without a
    bucket, may tolerate more buckets than its author had seen."""
    matched = entry.get("matched")
    if not isinstance(matched, dict) or not matched:
        return ""
    return Markup("<br>".join(f"{esc(signature)} \u00d7{esc(count)}" for signature, count in matched.items()))


def workers_section(campaign):
    """Per worker slot: cases, how busy its main thread was, how often it was (re)started."""
    rows = []
    for w in campaign.summary.get("workers") or []:
        up, busy = w.get("up_s"), w.get("main_busy_s")
        share = f"{100 * busy / up:.0f}%" if is_number(up) and is_number(busy) and up > 0 else ""
        rows.append((w.get("label", ""), w.get("cases", ""), w.get("long_cases", ""), number(up), share,
                     w.get("worker_starts", "")))
    if not rows:
        return section("workers", "Workers", note("the summary lists no workers"))
    headers = ("slot", "cases", "long cases", "up (s)", "main thread busy", "starts")
    return section("workers", "Workers (last run)", table(headers, rows))


# ---------------------------------------------------------------------------------------------
# Comparison of two campaigns


FACT_NAMES = ("kernel", "directory", "seed", "budget", "cases", "failed", "tolerated (ledger)", "findings",
              "elapsed", "cases/s")


def campaign_facts(campaign):
    """One campaign's column of the comparison's facts table, in FACT_NAMES order."""
    s = campaign.summary
    return (code(s["kernel"]), file_link(campaign.directory), seed_text(s), s.get("budget", ""),
            f"{campaign.cases:,}", s.get("failed", ""), s.get("tolerated", 0), len(s["findings"]),
            duration(campaign.elapsed), number(campaign.rate))


def compare_section(a, b):
    """Campaign B beside A: facts, throughput, coverage shares and findings."""
    facts = zip(FACT_NAMES, campaign_facts(a), campaign_facts(b))
    curves = {f"A: {a.summary['kernel']}": a.total, f"B: {b.summary['kernel']}": b.total}
    throughput = throughput_figure(curves, "throughput, A and B", "time since each campaign was created")
    return section("compare", "Comparison: A (this campaign) and B",
                   table(("", "A", "B"), facts, "compare"),
                   png_img(throughput, "throughput of A and B"),
                   Markup("<h3>Coverage, share of cases</h3>"), colour_key(),
                   Markup(f'<div class="grid">{compare_coverage(a, b)}</div>'),
                   Markup("<h3>Findings by signature</h3>"), compare_findings(a, b))


def colour_key():
    """What the two bar colours of the comparison mean."""
    swatch = '<span class="swatch" style="background:{}"></span>'
    return Markup(f'<p class="note">{swatch.format(A_COLOUR)} A (this campaign) &nbsp; '
                  f'{swatch.format(B_COLOUR)} B (--compare)</p>')


def compare_coverage(a, b):
    """Grouped bars per coverage dimension of either campaign: A's and B's share of cases per bucket."""
    images = []
    for dimension in dict.fromkeys([*a.summary["coverage"], *b.summary["coverage"]]):
        buckets_a = a.summary["coverage"].get(dimension, {})
        buckets_b = b.summary["coverage"].get(dimension, {})
        labels = sorted(set(buckets_a) | set(buckets_b), key=bucket_order)
        figure = grouped_bar_figure(dimension, labels, bucket_shares(buckets_a, labels, a.cases),
                                    bucket_shares(buckets_b, labels, b.cases))
        images.append(png_img(figure, f"coverage of {dimension}, A and B"))
    return Markup("".join(images))


def bucket_shares(buckets, labels, cases):
    """Each label's count in `buckets` as a share of the campaign's cases (0 where absent)."""
    return [buckets.get(label, 0) / max(cases, 1) if is_number(buckets.get(label, 0)) else 0 for label in labels]


def signature_counts(campaign):
    """Failed cases per finding signature."""
    counts = {}
    for finding in campaign.summary["findings"]:
        signature = str(finding.get("signature", ""))
        counts[signature] = counts.get(signature, 0) + (finding["count"] if is_number(finding.get("count")) else 0)
    return counts


def compare_findings(a, b):
    """Each signature found in A or B: its count in each, and whether it is in only one or both."""
    counts = (signature_counts(a), signature_counts(b))
    rows = []
    for signature in dict.fromkeys([*counts[0], *counts[1]]):
        in_a, in_b = signature in counts[0], signature in counts[1]
        mark = "both" if in_a and in_b else "only A" if in_a else "only B"
        rows.append((signature, counts[0].get(signature, 0), counts[1].get(signature, 0),
                     Markup(f'<span class="mark {mark.replace(" ", "-")}">{mark}</span>')))
    if not rows:
        return note("neither campaign found anything")
    return table(("signature", "count in A", "count in B", ""), rows)


# ---------------------------------------------------------------------------------------------
# The page

STYLE = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 1.5em 2em; color: #212121;
       max-width: 1400px; line-height: 1.35; }
h1 { font-size: 1.6em; margin: 0 0 0.3em; } h2 { border-bottom: 2px solid #cfd8dc; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.92em; }
th, td { border: 1px solid #cfd8dc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
thead th, table.kv th { background: #eceff1; }
tbody tr:nth-child(even) { background: #fafafa; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 0.9em; word-break: break-word; }
table.findings td { max-width: 28em; }
.small { font-size: 0.82em; color: #546e7a; margin-top: 0.2em; }
.note { color: #546e7a; font-size: 0.9em; }
.verdict { font-size: 1.25em; font-weight: bold; padding: 0.4em 0.8em; display: inline-block; border-radius: 4px; }
.verdict.bad { background: #ffebee; color: #b71c1c; } .verdict.good { background: #e8f5e9; color: #1b5e20; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 0.8em; align-items: start; }
img.plot { max-width: 100%; border: 1px solid #eceff1; }
.mark { font-weight: bold; } .mark.only-A { color: #1565c0; } .mark.only-B { color: #ef6c00; }
.mark.both { color: #424242; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: middle; }
"""

# On load: how many plots decoded (naturalWidth > 0) of how many, for a headless browser's DOM dump.
PLOT_CHECK = """
window.addEventListener("load", function () {
  var plots = document.querySelectorAll("img.plot");
  var loaded = 0;
  plots.forEach(function (img) { if (img.complete && img.naturalWidth > 0) { loaded += 1; } });
  document.body.dataset.plotsLoaded = String(loaded);
  document.body.dataset.plotsTotal = String(plots.length);
});
"""


def navigation(sections):
    """Links to the page's sections."""
    return Markup("<nav>" + "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in sections) + "</nav>")


def render(campaign, other, title):
    """The whole page for a campaign (and the one to compare it with, or None)."""
    body = [header_section(campaign, title)]
    links = [("throughput", "throughput"), ("verdicts", "verdicts"), ("coverage", "coverage"),
             ("findings", "findings"), ("ledger", "ledger"), ("workers", "workers")]
    if other:
        links.append(("compare", "comparison"))
    body.append(navigation(links))
    if merged_part_dirs(campaign.summary):
        body.append(parts_section(campaign))
    body += [throughput_section(campaign), verdicts_section(campaign), coverage_section(campaign),
             findings_section(campaign), ledger_section(campaign), workers_section(campaign)]
    if other:
        body.append(compare_section(campaign, other))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n{''.join(body)}\n<script>{PLOT_CHECK}</script>\n</body></html>\n")


def parse_args(argv):
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="morning_report.py",
        description="Write the morning report of a `vattn fuzz` campaign: one self-contained HTML page "
                    "with the verdict, throughput over time, coverage histograms, verdict counts, findings "
                    "(shrunk recipe, re-run command, evidence), the ledger and the workers; with --compare, "
                    "a second campaign beside it. Reads DIR/summary.json and DIR/journal.jsonl "
                    "(docs/fuzz-files.md).",
        epilog="exit codes: 0 report written, 1 matplotlib or numpy missing, 2 unusable input (the file and "
               "what is wrong are named on stderr)")
    parser.add_argument("directory", metavar="DIR", help="campaign directory (vattn fuzz --out DIR, or a merged one)")
    parser.add_argument("--compare", metavar="DIR_B", help="a second campaign to set beside DIR")
    parser.add_argument("--out", metavar="FILE", help="where to write the page (default: DIR/report.html)")
    parser.add_argument("--title", metavar="TEXT", help="the page's title (default: the kernel and seed)")
    parser.add_argument("--summary", metavar="FILE", help="use this summary of DIR instead of DIR/summary.json "
                        "(vattn report passes one rebuilt from the journal when the journal has outgrown it)")
    parser.add_argument("--compare-summary", metavar="FILE", help="the same for DIR_B")
    return parser.parse_args(argv)


def write_replacing(path, text):
    """Writes `text` to `path` through a fresh temporary beside it (mkstemp: O_CREAT|O_EXCL|O_NOFOLLOW),
    renamed into place and removed on failure; a `path` that is a symbolic link is refused, never followed."""
    if path.is_symlink():
        raise OSError(0, "it is a symbolic link; the report is never written through one")
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=path.name + ".tmp-")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def main(argv):
    """Reads the campaign(s), writes the page, says where; 2 with one line on stderr for bad input."""
    args = parse_args(argv)
    try:
        campaign = load_campaign(args.directory, args.summary)
        other = load_campaign(args.compare, args.compare_summary) if args.compare else None
    except InputError as error:
        print(f"morning_report: {error}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else campaign.directory / "report.html"
    title = args.title or f"vattn fuzz: {campaign.summary['kernel']}, seed {campaign.summary.get('seed', '?')}"
    page = render(campaign, other, title)
    try:
        write_replacing(out, page)
    except OSError as error:
        print(f"morning_report: {out}: cannot be written ({error.strerror or error})", file=sys.stderr)
        return 2
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
# SPDX-License-Identifier: Apache-2.0
