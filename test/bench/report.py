#!/usr/bin/env python3
"""report.py -- turns the JSON results of test/bench/bench.sh into a markdown
section and (optionally) splices it into docs/benchmarks.md.

  report.py --work DIR [--docs docs/benchmarks.md] [--meta KEY=VALUE ...]

DIR holds, per scenario S (e.g. small, large):
  S.meta        "nodes pods"
  S.ai.json     bulk_create.py run result for ai-scheduler
  S.kube.json   same for kube-scheduler
  S.probe.C.json  bind_probe --json output with C threads (best one is the ceiling)
  S.algo.txt    algo_bench output (last line key=value ...)
and per gang scale G (gang64, gang1000, gangsmall):
  G.meta        "nodes pods gangs gang_size date"
  G.KIND.MODE.R.json  ai-scheduler runs: KIND plain|gang|kube, MODE pre|arrive, round R
  G.gang.MODE.R.pg    the PodGroups' phases after that run (bulk_create.py podgroups)
and per queue scale Q (queues, queuesmall):
  Q.meta        "nodes pods queues departments date"
  Q.KIND.pre.R.json  runs: KIND plain|queues (ai-scheduler) or kube, round R
  Q.queues.pre.R.qs  the leaf Queues' .status after that run (bulk_create.py queue-status)
and per owned scale O (owned, ownedsmall):
  O.meta        "nodes pods owners deployments(0|1) date"
  O.KIND.R.json ai-scheduler runs: KIND off|on (--workload-groups=false|true), round R
  O.KIND.R.api.txt  the API server's requests during that run ("VERB resource count")
  O.skipped     why it did not run (a binary without --workload-groups)
and the scale row (scale.meta "nodes pods date", scale.{ai,kube}.json) and
the steady-arrival row (steady.meta "nodes ceiling rate seconds date",
steady.{ai,kube}.json from bulk_create.py steady), and the DRA row
(dra.meta "nodes pods date", dra.txt: dra_bench's output, last line
key=value ...).
Missing files are reported as "not run".

The plain scales replace the block between the bench:api markers; each gang
scale replaces only its own block (bench:gang:G markers, added before
bench:gang:end), so a run of some scales leaves the other tables alone.
The queue scale replaces the block between the bench:queues markers (added
at the end when missing). gangsmall and queuesmall (checks of the harness)
are printed but never written to the docs. The DRA row replaces the block
between the bench:dra markers. The owned scale replaces the
block between the bench:owned markers (ownedsmall, a check of the harness,
and a skipped run are never written).
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

BEGIN = "<!-- bench:api:begin -->"
END = "<!-- bench:api:end -->"
GANG_END = "<!-- bench:gang:end -->"
API_SCALES = ("small", "large", "affinity")
GANG_SCALES = ("gang64", "gang1000", "gangsmall")
QUEUE_SCALES = ("queues", "queuesmall", "gpufrac")
OWNED_SCALES = ("owned", "ownedsmall")
OWNED_GOAL = 0.95  # issue 27: grouping costs <= 5% of pods/s
DRA_GOAL = 0.5  # issue 36: DRA claims >= half the pods/s of the extended resource
Q_BEGIN = "<!-- bench:queues:begin -->"
Q_END = "<!-- bench:queues:end -->"


def load(path):
    try:
        with open(path) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


def kv_last_line(path):
    try:
        with open(path) as f:
            lines = [l for l in f.read().splitlines() if "=" in l]
    except OSError:
        return None
    if not lines:
        return None
    return dict(re.findall(r"(\w+)=(\S+)", lines[-1]))


def fmt(v, nd=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        return ("%%.%df" % nd) % v
    return str(v)


def mib(kb):
    return None if kb is None else kb / 1024.0


def status_of(r):
    if r is None:
        return "not run"
    if r.get("status") == "ok":
        return "ok"
    if r.get("status") == "timeout":
        return "did not finish (%s/%s bound)" % (r.get("bound"), r.get("pods"))
    if r.get("status") == "exited":
        return "exited %s (%s/%s bound)" % (r.get("exit_code"), r.get("bound"), r.get("pods"))
    return str(r.get("status"))


def ratio(a, b):
    if a is None or b in (None, 0):
        return "–"
    return "%.2f" % (a / b)


def scenario_table(work, s):
    try:
        nodes, pods = open(os.path.join(work, s + ".meta")).read().split()
    except (OSError, ValueError):
        return None
    ai = load(os.path.join(work, s + ".ai.json"))
    kube = load(os.path.join(work, s + ".kube.json"))
    probes = [r for r in (load(f) for f in sorted(glob.glob(os.path.join(work, s + ".probe.*.json")))) if r]
    probe = max(probes, key=lambda r: r.get("pods_per_s") or 0) if probes else None
    algo = kv_last_line(os.path.join(work, s + ".algo.txt"))
    title = "### %s nodes x %s pods" % (nodes, pods)
    if s == "affinity":
        title += (" with inter-pod constraints (hostname anti-affinity within each of 100 apps,"
                  " zone spread maxSkew 1 over 3 zones)")
    out = [title, "",
           "| run | time to bind all (s) | pods/s | first bind (s) | peak RSS (MiB) | CPU (s) | pods per CPU-s | load avg start→end | status |",
           "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for label, r in (("ai-scheduler", ai), ("kube-scheduler v1.20", kube)):
        r = r or {}
        per_cpu = (r.get("bound") or 0) / r["cpu_s"] if r.get("cpu_s") else None
        la = "%s→%s" % (fmt(r.get("loadavg_start")), fmt(r.get("loadavg_end"))) if r.get("loadavg_start") is not None else "–"
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, fmt(r.get("seconds"), 2), fmt(r.get("pods_per_s")), fmt(r.get("first_bind_s"), 2),
            fmt(mib(r.get("rss_kb"))), fmt(r.get("cpu_s"), 2), fmt(per_cpu, 0), la, status_of(r if r else None)))
    if probe:
        st = "ok" if probe.get("ok") == probe.get("total") else "%s/%s ok, %s errors" % (
            probe.get("ok"), probe.get("total"), probe.get("errors"))
        tried = ", ".join("%s threads: %s/s" % (r.get("concurrency"), fmt(r.get("pods_per_s"))) for r in probes)
        out.append("| bind+watch ceiling: bind_probe, Bindings only, one pod watch open (best of %s) | %s | %s | – | %s | %s | – | – | %s |" % (
            tried, fmt(probe.get("seconds"), 2), fmt(probe.get("pods_per_s")),
            fmt(mib(probe.get("rss_kb"))), fmt(probe.get("cpu_s"), 2), st))
    else:
        out.append("| raw ceiling: bind_probe | – | – | – | – | – | – | – | not run |")
    if algo:
        st = "ok" if algo.get("unschedulable") == "0" else "%s unschedulable" % algo.get("unschedulable")
        out.append("| algorithm alone (algo_bench, in-process, no API; best of 3) | %s | %s | – | %s | %s | %s | – | %s |" % (
            algo.get("seconds", "–"), algo.get("pods_per_s", "–"),
            fmt(mib(float(algo["rss_kb"]))) if "rss_kb" in algo else "–", algo.get("cpu_s", "–"),
            algo.get("pods_per_cpu_s", "–"), st))
    else:
        out.append("| algorithm alone (algo_bench) | – | – | – | – | – | – | – | not run |")
    out.append("")
    a = ai if ai and ai.get("status") == "ok" else None
    k = kube if kube and kube.get("status") == "ok" else None
    out.append("Ratios ai/kube: pods/s **%s**, peak RSS **%s**, CPU **%s**." % (
        ratio(a and a.get("pods_per_s"), k and k.get("pods_per_s")),
        ratio(a and a.get("rss_kb"), k and k.get("rss_kb")),
        ratio(a and a.get("cpu_s"), k and k.get("cpu_s"))))
    if probe and probe.get("pods_per_s"):
        # The ceiling is Bindings from the first to the last: the like-for-like
        # figure is a scheduler's rate between its first and last binding
        # (start-up is its own column); the overall rate is given too.
        c = probe.get("pods_per_s")
        out.append("Share of the bind+watch ceiling, first to last binding (overall, start-up included): "
                   "ai-scheduler %s (%s), kube-scheduler %s (%s); goal for ai-scheduler >= 0.9." % (
                       ratio(a and a.get("steady_pods_per_s"), c), ratio(a and a.get("pods_per_s"), c),
                       ratio(k and k.get("steady_pods_per_s"), c), ratio(k and k.get("pods_per_s"), c)))
    out.append("")
    return "\n".join(out)


def pct(a, b):
    """(a - b) / b in percent, signed, or None."""
    if a is None or b in (None, 0):
        return None
    return 100.0 * (a - b) / b


def fmt_pct(v):
    return "–" if v is None else "%+.1f%%" % v


def scale_meta(work, s, meta):
    """(four integers, date) from a scale's .meta file, or None if it did not run."""
    try:
        f = open(os.path.join(work, s + ".meta")).read().split()
        nums = tuple(int(x) for x in f[:4])
    except (OSError, ValueError):
        return None
    if len(nums) != 4:
        return None
    return nums, " ".join(f[4:]) or meta.get("date", "?")


def gang_table(work, s, meta):
    """Markdown for one gang scale, or None if it did not run."""
    m = scale_meta(work, s, meta)
    if m is None:
        return None
    (nodes, pods, gangs, size), date = m
    runs = {}
    for path in sorted(glob.glob(os.path.join(work, s + ".*.*.*.json"))):
        kind, mode, rnd = os.path.basename(path)[len(s) + 1:-len(".json")].split(".")
        r = load(path)
        if r:
            runs.setdefault((kind, mode), []).append((int(rnd), r))
    out = ["### %d gangs x %d pods on %d nodes (%d pods)" % (gangs, size, nodes, pods), "",
           "Run %s on %s. %s." % (date, meta.get("machine", "?"), meta.get("versions", "?")), "",
           "| run | clock from | time to bind all (s) | pods/s | first bind (s) | creating (s) | peak RSS (MiB) "
           "| CPU (s) | CPU s per 1000 pods | load avg start→end | status |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    labels = {"plain": "ai-scheduler, plain pods",
              "gang": "ai-scheduler, gangs (PodGroup minMember %d)" % size,
              "kube": "kube-scheduler v1.20, plain pods (reference)"}
    clocks = {"pre": "scheduler start", "arrive": "first create"}
    summary = {}
    for mode in ("pre", "arrive"):
        for kind in ("plain", "gang", "kube"):
            rs = sorted(runs.get((kind, mode), []), key=lambda x: x[0])
            for rnd, r in rs:
                st = status_of(r)
                pg = load(os.path.join(work, "%s.%s.%s.%d.pg" % (s, kind, mode, rnd)))
                if pg:
                    st += "; PodGroup phases after: " + (", ".join(
                        "%s %d" % (k, v) for k, v in sorted(pg.get("phases", {}).items())) or "none")
                per_k = 1000.0 * r["cpu_s"] / pods if r.get("cpu_s") is not None else None
                la = ("%s→%s" % (fmt(r.get("loadavg_start")), fmt(r.get("loadavg_end")))
                      if r.get("loadavg_start") is not None else "–")
                out.append("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    labels[kind], " #%d" % rnd if len(rs) > 1 else "", clocks[mode],
                    fmt(r.get("seconds"), 2), fmt(r.get("pods_per_s")), fmt(r.get("first_bind_s"), 2),
                    fmt(r.get("create_s"), 2), fmt(mib(r.get("rss_kb"))), fmt(r.get("cpu_s"), 2),
                    fmt(per_k, 2), la, st))
            ok = [r for _, r in rs if r.get("status") == "ok" and r.get("seconds")]
            if rs and len(ok) == len(rs):
                # Over all rounds: total pods over total time, the mean CPU and the largest RSS;
                # "paced": the share of the time the creating tool took (arrive mode).
                summary[(kind, mode)] = {
                    "paced": max((r.get("create_s") or 0) / r["seconds"] for r in ok),
                    "pps": len(ok) * pods / sum(r["seconds"] for r in ok),
                    "cpu": sum(r["cpu_s"] for r in ok) / len(ok) if all(r.get("cpu_s") is not None for r in ok) else None,
                    "rss": max(r["rss_kb"] for r in ok) if all(r.get("rss_kb") for r in ok) else None}
    out.append("")
    for mode, what in (("pre", "pods created first, clock from the scheduler's start"),
                       ("arrive", "each PodGroup then its pods created while the scheduler runs, clock from the first create")):
        p, g = summary.get(("plain", mode)), summary.get(("gang", mode))
        if not runs.get(("plain", mode)) and not runs.get(("gang", mode)):
            continue
        if not p or not g:
            out.append("- %s: no overhead figure (a run did not finish; see the status column)." % (what[0].upper() + what[1:]))
            continue
        over = -pct(g["pps"], p["pps"])
        paced = max(p["paced"], g["paced"])
        # When creating took most of the time, the creating tool, not the scheduler, set the pace.
        verdict = ("not judged: creating took up to %.0f%% of a run's time" % (100 * paced) if paced > 0.6
                   else "met" if over <= 15.0 else "missed")
        out.append("- %s: gangs %.1f pods/s against plain %.1f: overhead **%.1f%%** in pods/s (goal <= 15%%: %s); "
                   "CPU %s, peak RSS %s." % (what[0].upper() + what[1:], g["pps"], p["pps"], over, verdict,
                                              fmt_pct(pct(g["cpu"], p["cpu"])), fmt_pct(pct(g["rss"], p["rss"]))))
    out.append("")
    return "\n".join(out)


def run_figures(r, pods):
    """A run's CPU ms per pod, "load start→end" and API server + etcd CPU ms per pod (None/"–" if unknown)."""
    per_pod = 1000.0 * r["cpu_s"] / pods if r.get("cpu_s") is not None else None
    la = ("%s→%s" % (fmt(r.get("loadavg_start")), fmt(r.get("loadavg_end")))
          if r.get("loadavg_start") is not None else "–")
    oc = r.get("other_cpu_s") or {}
    api_pod = (1000.0 * sum(oc.values()) / pods
               if oc and all(v is not None for v in oc.values()) else None)
    return per_pod, la, api_pod


def queue_table(work, s, meta):
    """Markdown for the queue scale s, or None if it did not run."""
    m = scale_meta(work, s, meta)
    if m is None:
        return None
    (nodes, pods, nq, depts), date = m
    runs = {}
    for path in sorted(glob.glob(os.path.join(work, s + ".*.pre.*.json"))):
        kind, _, rnd = os.path.basename(path)[len(s) + 1:-len(".json")].split(".")
        r = load(path)
        if r:
            runs.setdefault(kind, []).append((int(rnd), r))
    shape = "%d queues under %d departments" % (nq, depts) if depts else "%d flat queues" % nq
    head = "### %d pods over %s on %d nodes" % (pods, shape, nodes)
    if s == "gpufrac":
        head = "### %d pods on %d nodes, the quarter that uses a GPU asking gpu-fraction 0.5/0.25" % (pods, nodes)
    out = [head, "",
           "Run %s on %s. %s." % (date, meta.get("machine", "?"), meta.get("versions", "?")), "",
           "| run | time to bind all (s) | pods/s | first bind (s) | peak RSS (MiB) | CPU (s) "
           "| CPU ms per pod | API server + etcd CPU ms per pod | load avg start→end | status |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    plain_label = "ai-scheduler, no fractions" if s == "gpufrac" else "ai-scheduler, no queues"
    labels = {"plain": plain_label, "queues": "ai-scheduler, %d queues" % nq,
              "objects": "ai-scheduler, the Queues exist, pods unlabelled (all in default)",
              "frac": "ai-scheduler, 25% of the pods GPU fractions",
              "kube": "kube-scheduler v1.20, plain pods (reference)"}
    summary = {}
    for kind in ("plain", "queues", "objects", "frac", "kube"):
        rs = sorted(runs.get(kind, []), key=lambda x: x[0])
        for rnd, r in rs:
            st = status_of(r)
            qs = load(os.path.join(work, "%s.%s.pre.%d.qs" % (s, kind, rnd)))
            if qs:
                alloc = qs.get("allocated") or {}
                st += "; Queues after: %s; allocated gpu %s, cpu %s, pending %s" % (
                    ", ".join("%s %d" % (k, v) for k, v in sorted(qs.get("states", {}).items())) or "none",
                    fmt(alloc.get("gpu")), fmt(alloc.get("cpu")), fmt(qs.get("pending")))
            per_pod, la, api_pod = run_figures(r, pods)
            out.append("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                labels[kind], " #%d" % rnd if len(rs) > 1 else "", fmt(r.get("seconds"), 2),
                fmt(r.get("pods_per_s")), fmt(r.get("first_bind_s"), 2), fmt(mib(r.get("rss_kb"))),
                fmt(r.get("cpu_s"), 2), fmt(per_pod, 2), fmt(api_pod, 2), la, st))
        ok = [r for _, r in rs if r.get("status") == "ok" and r.get("seconds")]
        if rs and len(ok) == len(rs):
            # Over all rounds: total pods over total time, the mean CPU per pod, the largest RSS.
            summary[kind] = {
                "pps": len(ok) * pods / sum(r["seconds"] for r in ok),
                "cpu_ms": (1000.0 * sum(r["cpu_s"] for r in ok) / len(ok) / pods
                           if all(r.get("cpu_s") is not None for r in ok) else None),
                "rss": max(r["rss_kb"] for r in ok) if all(r.get("rss_kb") for r in ok) else None,
                "lo": min(pods / r["seconds"] for r in ok), "hi": max(pods / r["seconds"] for r in ok)}
    out.append("")
    p, q, k = summary.get("plain"), summary.get("queues") or summary.get("frac"), summary.get("kube")
    what = "GPU fractions" if s == "gpufrac" else "Queues"
    if p and q:
        slower = -pct(q["pps"], p["pps"])
        out.append("- " + what + " %.1f pods/s (rounds %.0f-%.0f) against the plain run %.1f (rounds %.0f-%.0f): **%.1f%% %s** "
                   "(goal <= 10%% slower: %s); "
                   "CPU per pod %s ms against %s ms (%s); peak RSS %s MiB against %s MiB (%s)." % (
                       q["pps"], q["lo"], q["hi"], p["pps"], p["lo"], p["hi"], abs(slower),
                       "slower" if slower >= 0 else "faster",
                       "met" if slower <= 10.0 else "missed",
                       fmt(q["cpu_ms"], 2), fmt(p["cpu_ms"], 2), fmt_pct(pct(q["cpu_ms"], p["cpu_ms"])),
                       fmt(mib(q["rss"])), fmt(mib(p["rss"])), fmt_pct(pct(q["rss"], p["rss"]))))
    elif runs.get("plain") or runs.get("queues"):
        out.append("- No overhead figure (a run did not finish; see the status column).")
    o = summary.get("objects")
    if p and o:
        out.append("- The Queue objects alone (pods unlabelled): %.1f pods/s, %s against no queues; CPU per pod %s ms." % (
            o["pps"], fmt_pct(pct(o["pps"], p["pps"])), fmt(o["cpu_ms"], 2)))
    if k and (p or q):
        out.append("- kube-scheduler v1.20 on the plain pods: %.1f pods/s, CPU %s ms per pod, peak RSS %s MiB; "
                   "ai-scheduler with %s / kube-scheduler: pods/s %s, CPU per pod %s." % (
                       k["pps"], fmt(k["cpu_ms"], 2), fmt(mib(k["rss"])), what.lower(),
                       ratio(q and q["pps"], k["pps"]), ratio(q and q["cpu_ms"], k["cpu_ms"])))
    out.append("")
    return "\n".join(out)


def api_reads(path):
    """{resource: count} of the GETs in an api.txt ("VERB resource count"), or None."""
    try:
        with open(path) as f:
            rows = [l.split() for l in f]
    except OSError:
        return None
    return {r[1]: int(float(r[2])) for r in rows if len(r) == 3 and r[0] == "GET"}


def owned_table(work, s, meta):
    """Markdown for the owned scale s, or None if it did not run."""
    m = scale_meta(work, s, meta)
    if m is None:
        return None
    (nodes, pods, owners, deps), date = m
    shape = "%d ReplicaSets%s" % (owners, " each under a Deployment" if deps else "")
    out = ["### %d pods owned by %s on %d nodes" % (pods, shape, nodes), ""]
    try:
        skipped = open(os.path.join(work, s + ".skipped")).read().strip()
    except OSError:
        skipped = None
    if skipped:
        out += ["Not run: %s." % skipped, ""]
        return "\n".join(out)
    runs = {}
    for path in sorted(glob.glob(os.path.join(work, s + ".*.*.json"))):
        kind, rnd = os.path.basename(path)[len(s) + 1:-len(".json")].split(".")
        r = load(path)
        if r and kind in ("off", "on") and rnd.isdigit():
            runs.setdefault(kind, []).append((int(rnd), r))
    out += ["Run %s on %s. %s." % (date, meta.get("machine", "?"), meta.get("versions", "?")), "",
            "| run | time to bind all (s) | pods/s | first bind (s) | peak RSS (MiB) | CPU (s) | CPU ms per pod "
            "| API server + etcd CPU ms per pod | GETs replicasets / deployments | load avg start→end | status |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    labels = {"off": "ai-scheduler --workload-groups=false", "on": "ai-scheduler --workload-groups=true"}
    summary = {}
    for kind in ("off", "on"):
        rs = sorted(runs.get(kind, []), key=lambda x: x[0])
        for rnd, r in rs:
            per_pod, la, api_pod = run_figures(r, pods)
            gets = api_reads(os.path.join(work, "%s.%s.%d.api.txt" % (s, kind, rnd)))
            g = "%d / %d" % (gets.get("replicasets", 0), gets.get("deployments", 0)) if gets is not None else "–"
            out.append("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                labels[kind], " #%d" % rnd if len(rs) > 1 else "", fmt(r.get("seconds"), 2),
                fmt(r.get("pods_per_s")), fmt(r.get("first_bind_s"), 2), fmt(mib(r.get("rss_kb"))),
                fmt(r.get("cpu_s"), 2), fmt(per_pod, 2), fmt(api_pod, 2), g, la, status_of(r)))
        ok = [r for _, r in rs if r.get("status") == "ok" and r.get("seconds")]
        if rs and len(ok) == len(rs):
            med = lambda key: (statistics.median(r[key] for r in ok)
                               if all(r.get(key) is not None for r in ok) else None)
            summary[kind] = {"pps": statistics.median(pods / r["seconds"] for r in ok),
                             "lo": min(pods / r["seconds"] for r in ok), "hi": max(pods / r["seconds"] for r in ok),
                             "cpu": med("cpu_s"), "rss": med("rss_kb"), "n": len(ok)}
    out.append("")
    off, on = summary.get("off"), summary.get("on")
    if off and on:
        rr = on["pps"] / off["pps"]
        out.append("- Medians over %d rounds: grouping on %.1f pods/s (runs %.0f-%.0f) against off %.1f (runs %.0f-%.0f): "
                   "on/off **%.3f** (goal >= %.2f, grouping costs <= %.0f%% of pods/s: %s); "
                   "CPU %s s against %s s (%s); peak RSS %s MiB against %s MiB (%s)." % (
                       min(on["n"], off["n"]), on["pps"], on["lo"], on["hi"], off["pps"], off["lo"], off["hi"], rr,
                       OWNED_GOAL, 100 * (1 - OWNED_GOAL), "met" if rr >= OWNED_GOAL else "missed",
                       fmt(on["cpu"], 2), fmt(off["cpu"], 2), fmt_pct(pct(on["cpu"], off["cpu"])),
                       fmt(mib(on["rss"])), fmt(mib(off["rss"])), fmt_pct(pct(on["rss"], off["rss"]))))
    elif runs:
        out.append("- No on/off figure (a run did not finish; see the status column).")
    else:
        out.append("- No run finished.")
    out.append("")
    return "\n".join(out)


def splice_queues(doc, table):
    block = Q_BEGIN + "\n" + table + Q_END
    if Q_BEGIN in doc and Q_END in doc:
        return doc[:doc.index(Q_BEGIN)] + block + doc[doc.index(Q_END) + len(Q_END):]
    return doc.rstrip("\n") + "\n\n## Queues\n\n" + block + "\n"


def scale_table(work, meta):
    """The scale row (bench.sh BENCH_SCALE=scale), or None."""
    try:
        f = open(os.path.join(work, "scale.meta")).read().split()
        nodes, pods, date = int(f[0]), int(f[1]), " ".join(f[2:])
    except (OSError, ValueError, IndexError):
        return None
    ai, kube = load(os.path.join(work, "scale.ai.json")), load(os.path.join(work, "scale.kube.json"))
    out = ["### %s nodes x %s pending pods (%s)" % ("{:,}".format(nodes), "{:,}".format(pods), date), "",
           "Machine: %s. API server: %s." % (meta.get("machine", "?"), meta.get("apiserver", "?")), "",
           "| run | start-up: start to first bind (s) | steady pods/s (first to last bind) | pods/s overall | "
           "peak RSS (MiB) | CPU (s) | CPU per pod (ms) | API server / etcd CPU (s) | status |",
           "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for label, r in (("ai-scheduler", ai), ("kube-scheduler v1.20", kube)):
        r = r or {}
        per = 1000.0 * r["cpu_s"] / r["bound"] if r.get("cpu_s") and r.get("bound") else None
        oc = r.get("other_cpu_s") or {}
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |" % (
            label, fmt(r.get("first_bind_s"), 2), fmt(r.get("steady_pods_per_s")), fmt(r.get("pods_per_s")),
            fmt(mib(r.get("rss_kb"))), fmt(r.get("cpu_s"), 2), fmt(per, 3), fmt(oc.get("apiserver")),
            fmt(oc.get("etcd")), status_of(r if r else None)))
    a = ai if ai and ai.get("status") == "ok" else None
    k = kube if kube and kube.get("status") == "ok" else None
    out.append("")
    goals = []
    if a:
        goals.append("start-up %.2f s (goal < 10 s: %s)" % (a["first_bind_s"], "met" if a["first_bind_s"] < 10 else "missed"))
        per = 1000.0 * a["cpu_s"] / a["bound"]
        goals.append("CPU per pod %.3f ms (goal <= 0.2 ms: %s)" % (per, "met" if per <= 0.2 else "missed"))
    if a and k:
        rr = a["rss_kb"] / k["rss_kb"]
        goals.append("peak RSS %.2f of kube-scheduler's (goal < 0.2: %s)" % (rr, "met" if rr < 0.2 else "missed"))
        goals.append("pods/s %s x kube-scheduler's" % ratio(a.get("pods_per_s"), k.get("pods_per_s")))
    probes = [r for r in (load(f) for f in sorted(glob.glob(os.path.join(work, "scale.probe.*.json")))) if r]
    probe = max(probes, key=lambda r: r.get("pods_per_s") or 0) if probes else None
    if probe and probe.get("pods_per_s"):
        c = probe["pods_per_s"]
        goals.append("steady pods/s %s of the bind+watch ceiling measured after the runs (%s Bindings/s, best of %s; "
                     "goal >= 0.9), kube-scheduler %s" % (
                         ratio(a and a.get("steady_pods_per_s"), c), fmt(c),
                         ", ".join("%s threads %s/s" % (r.get("concurrency"), fmt(r.get("pods_per_s"))) for r in probes),
                         ratio(k and k.get("steady_pods_per_s"), c)))
    out.append("Goals: " + ("; ".join(goals) if goals else "not measured") + ".")
    out.append("")
    return "\n".join(out)


def steady_table(work, meta):
    """The steady-arrival row (bench.sh BENCH_SCALE=steady), or None."""
    try:
        f = open(os.path.join(work, "steady.meta")).read().split()
        nodes, ceiling, rate, secs, date = int(f[0]), float(f[1]), float(f[2]), float(f[3]), " ".join(f[4:])
    except (OSError, ValueError, IndexError):
        return None
    how = ("%.0f%% of the bind ceiling measured with one pod watch open (%.0f Bindings/s), counted in writes: each"
           " pod is three (its create, its Binding, its Scheduled event)" % (300 * rate / ceiling, ceiling)
           if ceiling > 0 else "a fixed rate")
    out = ["### %.0f pods/s for %.0f s on %d nodes (%s)" % (rate, secs, nodes, date), "",
           "The rate is %s. Machine: %s." % (how, meta.get("machine", "?")), "",
           "| run | pods bound | created late | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) | "
           "Scheduled events at last bind | events caught up (s after last bind) | peak RSS (MiB) | CPU (s) | status |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for label, who in (("ai-scheduler", "ai"), ("kube-scheduler v1.20", "kube")):
        r = load(os.path.join(work, "steady.%s.json" % who)) or {}
        caught = r.get("events_caught_up_s")
        out.append("| %s | %s/%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, fmt(r.get("bound")), fmt(r.get("created")), fmt(r.get("created_late")), fmt(r.get("p50_ms")),
            fmt(r.get("p90_ms")), fmt(r.get("p99_ms")), fmt(r.get("max_ms")), fmt(r.get("events_at_last_bind")),
            fmt(caught, 2) if caught is not None else ("not within the wait (%s)" % fmt(r.get("events_final"))
                                                        if r else "–"),
            fmt(mib(r.get("rss_kb"))), fmt(r.get("cpu_s"), 2), r.get("status", "not run")))
    out.append("")
    return "\n".join(out)


def dra_table(work, meta):
    """The DRA row: dra_bench's two runs, their ratio against the goal, the CEL cost."""
    try:
        nodes, pods, date = open(os.path.join(work, "dra.meta")).read().split(None, 2)
    except (OSError, ValueError):
        return None
    r = kv_last_line(os.path.join(work, "dra.txt"))
    out = ["### DRA claims against the extended resource: %s nodes x %s GPUs, %s pods" % (
               nodes, r.get("devices", "?") if r else "?", pods), "",
           "Last run: %s on %s. In process on the sandbox (test/bench/dra_bench.c): the e2e API server (v1.20) "
           "serves no resource.k8s.io and kube-scheduler v1.20 allocates no claims, so ai-scheduler is measured "
           "against itself. Pods (500m, 512Mi) arrive in batches of 1000, the scheduler runs after each; only "
           "those runs are timed." % (date.strip(), meta.get("machine", "?")), ""]
    if not r:
        out += ["dra_bench did not finish (see dra.txt).", ""]
        return "\n".join(out)
    out += ["| run | bound | scheduling (s) | pods/s | CPU (s) | check |",
            "|---|---:|---:|---:|---:|---|"]
    bad = r.get("dra_claims_bad", "?")
    out.append("| extended resource: nodes with nvidia.com/gpu: 8, each pod asks 1 | %s | %s | %s | %s | %s |" % (
        r.get("ext_bound", "–"), r.get("ext_run_s", "–"), r.get("ext_pods_per_s", "–"), r.get("ext_cpu_s", "–"),
        "all bound" if r.get("ext_bound") == pods else "not all bound"))
    out.append("| DRA: a ResourceSlice of 8 GPUs per node, one ResourceClaim per pod (class and claim CEL "
               "selectors) | %s | %s | %s | %s | %s |" % (
                   r.get("dra_bound", "–"), r.get("dra_run_s", "–"), r.get("dra_pods_per_s", "–"),
                   r.get("dra_cpu_s", "–"),
                   "every claim one device of its node, none twice" if bad == "0" and r.get("dra_bound") == pods
                   else "%s claims wrong, %s bound" % (bad, r.get("dra_bound"))))
    out.append("")
    try:
        ratio_v = float(r.get("ratio"))
    except (TypeError, ValueError):
        ratio_v = None
    each = "best of %s runs each" % r.get("repeat", "?")
    cpu = "; in pods per CPU-second (the least CPU of a run of each) %s" % r.get("cpu_ratio", "–")
    if ratio_v is None:
        out.append("Ratio DRA/extended resource, pods/s: –.")
    elif ratio_v >= DRA_GOAL:
        out.append("Ratio DRA/extended resource, pods/s: **%.2f** (%s; goal >= %.1f: met)%s." % (
            ratio_v, each, DRA_GOAL, cpu))
    else:
        out.append("Ratio DRA/extended resource, pods/s: **%.2f** (%s)%s. **Below the goal**: DRA throughput is "
                   "under half of the extended-resource run's (issue 36 asks >= %.1f)." % (
                       ratio_v, each, cpu, DRA_GOAL))
    try:
        per_pod = "%.0f" % (float(r["cel_evals"]) / float(pods))
    except (KeyError, ValueError, ZeroDivisionError):
        per_pod = "?"
    out.append("")
    out.append("CEL: %s evaluations in a DRA run (%s per pod; Filter remembers its verdict on a device per set of "
               "selectors, Reserve evaluates again), %s ns each (a tight loop of the class's and the claim's selector "
               "on one device: a device costs two), %s of the DRA run's CPU." % (
                   r.get("cel_evals", "?"), per_pod, r.get("cel_ns_per_eval", "?"), r.get("cel_share_of_cpu", "?")))
    out.append("")
    return "\n".join(out)


def splice_section(doc, key, title, table):
    """Replaces (or appends under ## title) the block between the key's markers."""
    begin, end = "<!-- bench:%s:begin -->" % key, "<!-- bench:%s:end -->" % key
    block = begin + "\n" + table + end
    if begin in doc and end in doc:
        return doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    return doc.rstrip("\n") + "\n\n## " + title + "\n\n" + block + "\n"


def splice_gang(doc, s, table):
    begin, end = "<!-- bench:gang:%s:begin -->" % s, "<!-- bench:gang:%s:end -->" % s
    block = begin + "\n" + table + end
    if begin in doc and end in doc:
        return doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    if GANG_END not in doc:
        doc = doc.rstrip("\n") + "\n\n## Gang scheduling\n\n<!-- bench:gang:begin -->\n" + GANG_END + "\n"
    i = doc.index(GANG_END)
    return doc[:i] + block + "\n" + doc[i:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--docs")
    ap.add_argument("--meta", action="append", default=[])
    a = ap.parse_args()
    scen = [s for s in API_SCALES if os.path.exists(os.path.join(a.work, s + ".meta"))]
    gscen = [s for s in GANG_SCALES if os.path.exists(os.path.join(a.work, s + ".meta"))]
    meta = dict(m.split("=", 1) for m in a.meta)
    gtables = [(s, t) for s, t in ((s, gang_table(a.work, s, meta)) for s in gscen) if t]
    qscen = [s for s in QUEUE_SCALES if os.path.exists(os.path.join(a.work, s + ".meta"))]
    gtables += [(s, t) for s, t in ((s, queue_table(a.work, s, meta)) for s in qscen) if t]
    oscen = [s for s in OWNED_SCALES if os.path.exists(os.path.join(a.work, s + ".meta"))]
    # A skipped owned run is printed, not written to the docs.
    gtables += [(s if not os.path.exists(os.path.join(a.work, s + ".skipped")) else s + ":skipped", t)
                for s, t in ((s, owned_table(a.work, s, meta)) for s in oscen) if t]
    gtables += [(s, t) for s, t in (("scale", scale_table(a.work, meta)), ("steady", steady_table(a.work, meta)),
                                    ("dra", dra_table(a.work, meta))) if t]
    for _, t in gtables:
        print(t)
    if not scen:
        if a.docs:
            write_docs(a.docs, None, gtables)
        return
    lines = [BEGIN, "", "Last run: %s" % meta.get("date", "?"), "",
             "- machine: %s" % meta.get("machine", "?"),
             "- versions: %s" % meta.get("versions", "?"),
             "- API server: %s" % meta.get("apiserver", "?"), ""]
    for s in scen:
        t = scenario_table(a.work, s)
        if t:
            lines.append(t)
    lines.append(END)
    section = "\n".join(lines)
    print(section)
    if a.docs:
        write_docs(a.docs, section, gtables)


def write_docs(path, section, gtables):
    """Splices the plain scales' section (if any) and each gang and queue table into path."""
    try:
        doc = open(path).read()
    except OSError:
        doc = "# Benchmarks\n\n## API-server benchmark\n\n" + BEGIN + "\n" + END + "\n"
    if section is not None:
        if BEGIN in doc and END in doc:
            doc = doc[:doc.index(BEGIN)] + section + doc[doc.index(END) + len(END):]
        else:
            doc += "\n## API-server benchmark\n\n" + section + "\n"
    for s, t in gtables:
        if s == "queues":
            doc = splice_queues(doc, t)
        elif s == "gpufrac":
            doc = splice_section(doc, "gpufrac", "GPU fractions", t)
        elif s == "scale":
            doc = splice_section(doc, "scale", "Scale: 10,000 nodes and 100,000 pending pods", t)
        elif s == "steady":
            doc = splice_section(doc, "steady", "Steady arrival", t)
        elif s == "dra":
            doc = splice_section(doc, "dra", "DRA allocation", t)
        elif s == "owned":
            doc = splice_section(doc, "owned", "Pods owned by ReplicaSets", t)
        elif s.startswith("owned"):
            pass  # ownedsmall (a harness check) and skipped runs: printed only
        elif s not in ("gangsmall", "queuesmall"):
            doc = splice_gang(doc, s, t)
    with open(path, "w") as f:
        f.write(doc)
    sys.stderr.write("report: wrote %s\n" % path)


if __name__ == "__main__":
    main()
