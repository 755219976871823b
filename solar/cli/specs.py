"""``solar specs``: the GPU spec catalogue, one line per GPU."""

from __future__ import annotations

from solar.hw import list_specs


def add_parser(sub):
    return sub.add_parser("specs", help="list the GPU spec catalogue")


def run(args) -> int:
    for s in list_specs():
        tc = s.peak("tc_bf16") / 1e12 if s.has_unit("tc_bf16") else float("nan")
        print(
            f"{s.key:<16} {s.name:<32} {s.sm_count:>4} SMs {s.max_clock_hz / 1e6:>6.0f} MHz "
            f"bf16 {tc:7.1f} TFLOP/s  DRAM {s.dram_bandwidth / 1e12:5.2f} TB/s  "
            f"aliases: {', '.join(s.aliases)}"
        )
    return 0
