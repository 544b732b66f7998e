#!/usr/bin/env python3
"""crash_verify.py DUMP_JSON ACKED PREFIX: compares `plugfs state dump
--json' with the allocs reg_stream.py was told were registered.  Prints
"acked A present P lost L misordered M": lost are acknowledged allocs
missing from the file; misordered, plugins of PREFIX whose list (by seq) is
not in the order the stream registered them.  Exits 1 when L or M > 0."""
import json
import sys

dump, acked_path, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
with open(dump) as fp:
    plugins = json.load(fp)["plugins"]
with open(acked_path) as fp:
    acked = [l.strip() for l in fp if l.strip()]
present, misordered = set(), 0
for p in plugins:
    if not p["name"].startswith(prefix + "p"):
        continue
    regs = sorted(p["registrations"], key=lambda r: r["seq"])
    nums = [int(r["alloc"][len(prefix) + 1:]) for r in regs]
    present.update(r["alloc"] for r in regs)
    if nums != sorted(nums):
        misordered += 1
lost = [a for a in acked if a not in present]
print(f"acked {len(acked)} present {len(present)} lost {len(lost)} misordered {misordered}"
      + (f" (first lost: {' '.join(lost[:5])})" if lost else ""))
sys.exit(1 if lost or misordered else 0)
