"""``solar calibrate``: measure the visible GPU's ceilings and write a spec with them beside the
datasheet's."""

from __future__ import annotations

import json
import sys

from solar.fmt import jsonable
from solar.gpu.calibrate import calibrate


def add_parser(sub):
    p = sub.add_parser(
        "calibrate",
        help="measure the GPU's ceilings and write a spec with them beside the datasheet's",
    )
    p.add_argument("--out", help="write the spec YAML here")
    p.add_argument("--base", help="datasheet spec to start from (default: the GPU's own)")
    p.add_argument("--device", default=None, help="CUDA device (default: the current one)")
    p.add_argument("--units", help="comma-separated compute units to measure (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller sizes (a few seconds)")
    p.add_argument(
        "--no-latency",
        action="store_true",
        help="skip the latency floors (kernel launch, SM-to-SM handoff)",
    )
    p.add_argument(
        "--energy",
        action="store_true",
        help="also measure energy per op, per DRAM byte and idle power from the GPU's energy "
        "counter (needs nvidia-ml-py or nvidia-smi; about 20 s)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def run(args) -> int:
    units = args.units.split(",") if args.units else None
    cal = calibrate(
        args.device,
        base=args.base,
        quick=args.quick,
        units=units,
        latency=not args.no_latency,
        energy=args.energy,
        log=None if args.json else (lambda s: print(s, file=sys.stderr)),
    )
    if args.out:
        cal.write(args.out)
    if args.json:
        print(json.dumps(jsonable(cal.to_dict()), indent=2))
    else:
        print(f"{cal.device.summary()}\ndatasheet spec: {cal.base.key} ({cal.base_how})")
        print(cal)
        if args.out:
            print(f"wrote {args.out}: use it with --hw {args.out}")
        else:
            print()
            print(cal.to_yaml())
    return 0
