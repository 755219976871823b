"""The model zoo's table (``bench/results/zoo.md``) from its records (``zoo.json``)."""

from __future__ import annotations

from collections import Counter, defaultdict

from solar.bench.zoo_models import LIBRARIES, SIZES

CATEGORIES = (
    "missing operator",
    "data-dependent",
    "unsupported case",
    "dtype",
    "error",
    "library",
    "build",
    "timeout",
    "memory",
)


_DEFAULT_CONFIG = "(c) library: its default config cannot build the model, on meta or the CPU"
_CACHE = (
    "(c) library: the default config has no attention layer and transformers' cache asks "
    "one for its length"
)
_SAME_ON_CPU = (
    "(c) library: its default config cannot build: the same error on meta and on the CPU "
    "(with memory to spare)"
)
#: What a failure was found to be, by hand (see the report): (c) the library's own, checked by
#: running the model eagerly without solar; (d) a solar limitation other than an operator.
TRIAGE = {
    "transformers/bamba": _CACHE + " (the same on the CPU eagerly at 2 layers)",
    "transformers/granitemoehybrid": _CACHE + " (the same eagerly on meta)",
    "transformers/blenderbot": "(c) library: the same IndexError on the CPU eagerly",
    "transformers/blt": "(c) library: the same eagerly on meta (config lacks num_hidden_layers)",
    "transformers/dbrx": _DEFAULT_CONFIG,
    "transformers/dots1": _DEFAULT_CONFIG + " (num_local_experts is None)",
    "transformers/hunyuan_v1_dense": _DEFAULT_CONFIG,
    "transformers/hunyuan_v1_moe": _DEFAULT_CONFIG,
    "transformers/gemma4_assistant": _DEFAULT_CONFIG,
    "transformers/deepseek_v2": "(c) library: default num_experts_per_tok is None: topk(k=None)",
    "transformers/gemma4_unified_assistant": (
        "(c) library: a draft model; needs its target's inputs_embeds and shared_kv_states"
    ),
    "transformers/lfm2_moe": _DEFAULT_CONFIG,
    "transformers/qwen4_exp": _SAME_ON_CPU,
    "transformers/qwen4_exp_text": _SAME_ON_CPU,
    "transformers/xmod": (
        "(c) library: refuses a call before set_default_language(), which the zoo does not make"
    ),
    "transformers/cohere_compass_text": _SAME_ON_CPU,
    "transformers/xlstm": (
        "(c) library: its training step fails the same way eagerly on the CPU without solar "
        "(2 layers, hidden 256: autograd finds a tensor it saved modified in place)"
    ),
}


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _parts(rec: dict) -> list[tuple[str, dict]]:
    return [(k, rec[k]) for k in ("forward", "train") if k in rec]


def markdown(doc: dict) -> str:
    recs = sorted(doc["models"].values(), key=lambda r: (LIBRARIES.index(r["library"]), r["name"]))
    by_lib: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        by_lib[r["library"]].append(r)
    lines = [
        "# Model zoo",
        "",
        "Every model built on the meta device in bf16 and bounded on the H100 with "
        "`solar.bound`: the forward (eval mode), and a training step (train mode, "
        "`loss.backward()`, AdamW) for every tenth model of each library. Each model runs in "
        "a fresh process under a time and memory limit. Regenerate: `python -m solar.bench.zoo` "
        "(options: `--library`, `--only`, `--limit`, `--jobs`, `--timeout`, `--train-every`; "
        "runs in pieces accumulate in `zoo.json`).",
        "",
        "Models and sizes:",
        "",
        *[f"- {lib}: {SIZES[lib]}" for lib in LIBRARIES if lib in by_lib],
        "",
        "Where the records were made:",
        "",
        *_environments(recs),
        "",
        "## Per library",
        "",
        "| library | models run | forward bounded | training steps bounded | failures (forward) |",
        "|---|---|---|---|---|",
    ]
    for lib, rs in by_lib.items():
        ok = sum(r["forward"].get("ok", False) for r in rs)
        trains = [r["train"] for r in rs if "train" in r]
        cats = Counter(r["forward"]["category"] for r in rs if not r["forward"].get("ok"))
        fails = ", ".join(f"{c} {cats[c]}" for c in CATEGORIES if cats[c]) or "-"
        t_ok = sum(t.get("ok", False) for t in trains)
        total = doc.get("totals", {}).get(lib)
        run = f"{len(rs)}" if total in (None, len(rs)) else f"{len(rs)} of {total}"
        lines.append(f"| {lib} | {run} | {ok} | {t_ok} of {len(trains)} | {fails} |")
    lines += _triage_section(recs)
    lines += _missing_section(recs)
    lines += _failures_section(by_lib)
    lines += _bounded_section(by_lib)
    return "\n".join(lines) + "\n"


def _environments(recs: list[dict]) -> list[str]:
    counts = Counter(r.get("environment", "not recorded (older runs)") for r in recs)
    return [f"- {env}: {n} models" for env, n in counts.most_common()]


def triage_class(rec: dict, part: dict) -> str:
    """(a) missing operators, (b) data-dependent, (c) the library's own, (d) solar's other
    limits, or time/memory limits, of one failed part."""
    note = TRIAGE.get(f"{rec['library']}/{rec['name']}", "")
    if note[:3] in ("(c)", "(d)"):
        return note[:3]
    if note.startswith("limit"):
        return "limit"
    return {
        "missing operator": "(a)",
        "data-dependent": "(b)",
        "build": "(c)",
        "library": "(c)",
        "timeout": "limit",
        "memory": "limit",
    }.get(part["category"], "(d)")


TRIAGE_CLASSES = {
    "(a)": "missing operators (listed below by models blocked)",
    "(b)": "data-dependent operators (nonzero, NMS, boolean masks)",
    "(c)": "the library's own failure (cannot build, or fails eagerly without solar)",
    "(d)": "solar limits other than an operator (tracing, structure, call conventions)",
    "limit": "over the time or memory limit (rerun with a larger --timeout)",
}


def _triage_section(recs: list[dict]) -> list[str]:
    groups: dict[str, list[str]] = defaultdict(list)
    for r in recs:
        if not r["forward"].get("ok"):
            groups[triage_class(r, r["forward"])].append(r["name"])
    if not groups:
        return []
    lines = ["", "## Forward failures by kind", "", "| kind | models | which |", "|---|---|---|"]
    for key, what in TRIAGE_CLASSES.items():
        names = sorted(groups.get(key, []))
        shown = ", ".join(names[:40]) + (
            f", ... ({len(names) - 40} more)" if len(names) > 40 else ""
        )
        lines.append(f"| {key} {what} | {len(names)} | {shown or '-'} |")
    return lines


def _missing_section(recs: list[dict]) -> list[str]:
    blocked: dict[str, set[str]] = defaultdict(set)
    occurs: Counter[str] = Counter()
    for r in recs:
        for _, part in _parts(r):
            for op, n in part.get("missing", {}).items():
                blocked[op].add(f"{r['library']}/{r['name']}")
                occurs[op] += n
    if not blocked:
        return []
    lines = [
        "",
        "## Missing operators",
        "",
        "Every operator with no loop nest in a traced graph (forward or training step), by "
        "the number of models it blocks; occurrences are summed over those graphs.",
        "",
        "| operator | models blocked | occurrences | models |",
        "|---|---|---|---|",
    ]
    for op in sorted(blocked, key=lambda o: (-len(blocked[o]), o)):
        models = sorted(blocked[op])
        shown = ", ".join(m.split("/", 1)[1] for m in models[:12])
        shown += f", ... ({len(models) - 12} more)" if len(models) > 12 else ""
        lines.append(f"| `{op}` | {len(models)} | {occurs[op]} | {shown} |")
    return lines


def _failures_section(by_lib: dict[str, list[dict]]) -> list[str]:
    lines = ["", "## Failures", ""]
    for lib, rs in by_lib.items():
        rows = [(r, k, p) for r in rs for k, p in _parts(r) if not p.get("ok")]
        if not rows:
            continue
        lines += [
            f"### {lib}",
            "",
            "| model | part | category | reason | triage |",
            "|---|---|---|---|---|",
        ]
        for r, k, p in rows:
            reason = p["error"]
            if p.get("missing"):
                reason = "missing " + ", ".join(f"`{op}` x{n}" for op, n in p["missing"].items())
            where = f" ({p['where']})" if p.get("where") and not p.get("missing") else ""
            if p["category"] == "error" and p.get("eager"):
                where += f"; eagerly {p['eager'][:150]}"
            triage = TRIAGE.get(f"{lib}/{r['name']}", "")
            lines.append(
                f"| {r['name']} | {k} | {p['category']} | {_cell(reason + where)} | {triage} |"
            )
        lines.append("")
    return lines


def _bounded_section(by_lib: dict[str, list[dict]]) -> list[str]:
    lines = ["", "## Bounded", ""]
    for lib, rs in by_lib.items():
        ok = [r for r in rs if r["forward"].get("ok")]
        if not ok:
            continue
        lines += [
            f"### {lib}",
            "",
            "| model | kernels | fused bound ms | bound by | training step fused ms | notes |",
            "|---|---|---|---|---|---|",
        ]
        for r in ok:
            f, t = r["forward"], r.get("train")
            step = "-" if t is None else (f"{t['fused_ms']:.3g}" if t.get("ok") else "failed")
            notes = "; ".join(r.get("notes") or []) or ""
            lines.append(
                f"| {r['name']} | {f['kernels']} | {f['fused_ms']:.3g} | {f['bound_by']} | "
                f"{step} | {_cell(notes)} |"
            )
        lines.append("")
    return lines
