#!/usr/bin/env python3
"""resv_table.py WITHOUT.json NOHOLD.json WITH.json -- the side-by-side table of
test/bench/reservation.sh from resv_driver.py's three timelines (seconds from T0)."""
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:4]]
def rate(d, a, b):
    if a is None or b is None or b <= a:
        return None
    return 60.0 * sum(1 for t in d["job_starts"] if a <= t < b) / (b - a)
def f(v, fmt="%.1f"):
    return "-" if v is None else fmt % v
rows = []
for d in runs:
    r = dict(bound=d["gang_bound"], resv=d["resv_seen"], before=rate(d, -20, 0), after=rate(d, 0, 60))
    if d["resv_seen"] is not None and d["gang_bound"] is not None:
        a, b = d["resv_seen"], d["gang_bound"]
        r["held"] = len(d["resv_nodes"]) * 4
        r["free"] = d["free_at"] - a
        r["start"] = b - a
        r["within"] = r["start"] <= 1.1 * r["free"]
        r["len"] = b - a
        r["n_starts"] = sum(1 for t in d["job_starts"] if a <= t < b)
        ends = [(t, n) for t, n in d.get("job_ends", []) if a <= t < b]
        r["n_unheld"] = sum(1 for t, n in ends if n not in d["resv_nodes"])
        r["n_held"] = sum(1 for t, n in ends if n in d["resv_nodes"])
    rows.append(r)
def line(label, key, fmt="%.1f"):
    print("%-62s %8s %8s %8s" % ((label,) + tuple(f(r.get(key), fmt) for r in rows)))
print("%-62s %8s %8s %8s" % ("", "without", "no hold", "with"))
line("gang (8 x 4 GPUs) started, s after T0", "bound")
line("reservation made, s after T0 (reservation-after 30 s)", "resv")
line("GPUs held", "held", "%d")
line("held nodes free, s after the reservation (jobs' starts)", "free")
line("gang started, s after the reservation", "start")
print("%-62s %8s %8s %8s" % (("gang start <= time for its GPUs to free + 10%",) + tuple(
    "-" if r.get("within") is None else ("yes" if r["within"] else "NO") for r in rows)))
line("job starts/min, 20 s before T0", "before")
line("job starts/min, T0 to T0 + 60 s", "after")
line("reservation held, s", "len")
line("  job starts meanwhile", "n_starts", "%d")
line("  GPUs freed meanwhile on nodes not held (most it could start)", "n_unheld", "%d")
line("  GPUs freed meanwhile on held nodes (kept for the gang)", "n_held", "%d")
