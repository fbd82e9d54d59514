"""The side-by-side benchmark: agentstate against ADK for Python 2.13.0 and against the floors, in
one run on one machine. `bench/side-by-side` sets up what it needs and runs this.

1. Services: the same workload (create; appends as one session grows; loads of the 20 most recent
   and of all events at each size; 8 writers on 8 users) against agentstate's services and floors
   (`side_by_side services`) and ADK for Python's (`adk_workload.py`).
2. HTTP: `agentstate serve` and `adk api_server` in turn, on copies of one SQLite database, under
   wrk: PATCH `stateDelta` over 100 sessions (1 and 32 connections), GET of a 100-event session (1
   and 32), GET of a 2,000-event session (1), POST create (32), list (32). Non-2xx answers counted.
   The GETs again against their floor (`side_by_side floor-server`): the same server stack reading
   the same rows and writing agentstate's answer from memory.
3. Lost writes: after 32 concurrent PATCHes each writing its own `user:` key, every key whose
   PATCH was answered 2xx must be in the user's state.
4. Resident memory of each server, idle and after its runs.

Writes results.json, results.md (ratios agentstate / reference and agentstate / floor) and
get_latency.svg (load time against session size, log-log) to the output directory.
Everything runs on 127.0.0.1; the servers stop with the run.
"""

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MODES = {
    # sizes, seconds per HTTP scenario, appends per writer in the 8-writer run, PATCHes in the lost-write check
    "quick": ("10,100,1000", 3, 100, 640),
    "full": ("10,100,1000,10000", 15, 300, 3200),
}


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def spare_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resident_kib(pid: int) -> int:
    """Resident memory of `pid` and its descendants, in KiB."""
    total = 0
    pending = [pid]
    while pending:
        p = pending.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
            for task in Path(f"/proc/{p}/task").iterdir():
                pending.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            continue
    return total


# ---------------------------------------------------------------- servers


class Server:
    """A server process on a spare loopback port, stopped on exit."""

    def __init__(self, name: str, argv: list[str], port: int, log_path: Path, env=None):
        """Starts `argv` and waits until it answers the session list of app `bench`, user `u`."""
        self.name, self.port = name, port
        self.base = f"http://127.0.0.1:{port}"
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
        deadline = time.time() + 90
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"{name} exited at start; its log: {log_path}")
            try:
                with urllib.request.urlopen(f"{self.base}/apps/bench/users/u/sessions", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise SystemExit(f"{name} did not answer within 90 s; its log: {log_path}")
            time.sleep(0.2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()


LUA_DONE = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('RESULT {"requests":%d,"duration_us":%d,"non2xx":%d,"socket_errors":%d,'
    .. '"p50_us":%d,"p99_us":%d,"max_us":%d}\n', summary.requests, summary.duration, e.status,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99), latency.max))
end
"""

SCENARIOS = {
    "patch": r"""
local counter = 0
request = function()
  counter = counter + 1
  local body = string.format('{"stateDelta":{"turn":%d,"user:seen":%d}}', counter, counter)
  return wrk.format("PATCH", "/apps/bench/users/u/sessions/s" .. (counter % 100),
                    {["Content-Type"] = "application/json"}, body)
end
""",
    "get100": 'request = function() return wrk.format("GET", "/apps/bench/users/u/sessions/e100") end\n',
    "get2000": 'request = function() return wrk.format("GET", "/apps/bench/users/u/sessions/e2000") end\n',
    "create": r"""
request = function()
  return wrk.format("POST", "/apps/bench/users/creator/sessions", {["Content-Type"] = "application/json"}, "{}")
end
""",
    "list": 'request = function() return wrk.format("GET", "/apps/bench/users/u/sessions") end\n',
}

# (label, scenario, connections)
RUNS = [
    ("PATCH stateDelta, 100 sessions", "patch", 1),
    ("PATCH stateDelta, 100 sessions", "patch", 32),
    ("GET session of 100 events", "get100", 1),
    ("GET session of 100 events", "get100", 32),
    ("GET session of 2,000 events", "get2000", 1),
    ("POST create session", "create", 32),
    ("GET list of 102 sessions", "list", 32),
]


def wrk(base: str, scenario: str, connections: int, seconds: int, tmp: Path) -> dict:
    script = tmp / f"{scenario}.lua"
    script.write_text(SCENARIOS[scenario] + LUA_DONE)
    threads = 1 if connections == 1 else 2
    out = subprocess.run(
        ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--timeout", "30s",
         "-s", str(script), base],
        capture_output=True, text=True, check=True,
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    result["per_second"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


async def lost_writes(base: str, total: int, concurrency: int = 32) -> dict:
    """`total` PATCHes from `concurrency` clients at once, each writing its own `user:` key;
    then counts the acknowledged keys missing from the user's state."""
    import httpx

    acknowledged, refused = [], 0
    queue = list(range(total))

    async def client(http):
        nonlocal refused
        while queue:
            n = queue.pop()
            key = f"user:w{n}"
            try:
                r = await http.patch(f"{base}/apps/bench/users/u/sessions/s{n % 100}",
                                     json={"stateDelta": {key: n}})
                if 200 <= r.status_code < 300:
                    acknowledged.append(key)
                else:
                    refused += 1
            except httpx.HTTPError:
                refused += 1

    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=concurrency)) as http:
        await asyncio.gather(*(client(http) for _ in range(concurrency)))
        state = (await http.get(f"{base}/apps/bench/users/u/sessions/s0")).json()["state"]
    lost = [k for k in acknowledged if state.get(k) != int(k[len("user:w"):])]
    return {"sent": total, "acknowledged": len(acknowledged), "refused": refused, "lost": len(lost)}


def http_side(args, tmp: Path, agentstate: Path, python: Path, side_by_side: Path) -> dict:
    seeded = tmp / "seeded.db"
    log("HTTP: seeding sessions s0…s99, e100 and e2000 (one SQLite file, copied for each server)")
    subprocess.run([str(side_by_side), "seed", "--db", f"sqlite://{seeded}"], check=True)
    agents = tmp / "agents" / "bench"
    agents.mkdir(parents=True)
    (agents / "__init__.py").write_text("from . import agent\n")
    (agents / "agent.py").write_text(
        "from google.adk.agents import Agent\n"
        "root_agent = Agent(name='bench', model='gemini-2.0-flash', instruction='Answer briefly.')\n"
    )
    servers = {
        "agentstate": lambda db, port: [str(agentstate), "serve", "--db", f"sqlite://{db}", "--addr",
                                        f"127.0.0.1:{port}"],
        "adk-python": lambda db, port: [str(python.parent / "adk"), "api_server", "--host", "127.0.0.1", "--port",
                                        str(port), "--no-reload", "--session_service_uri", f"sqlite+aiosqlite:///{db}",
                                        str(tmp / "agents")],
    }
    results = {}
    for name, argv in servers.items():
        db = tmp / f"{name}.db"
        with sqlite3.connect(seeded) as source, sqlite3.connect(db) as copy:
            source.backup(copy)
        port = spare_port()
        env = dict(os.environ, RUST_LOG="warn")
        with Server(name, argv(db, port), port, tmp / f"{name}.log", env) as server:
            time.sleep(1)
            idle = resident_kib(server.process.pid)
            log(f"HTTP: {name} on :{port}, resident {idle / 1024:.1f} MiB idle")
            runs = []
            for label, scenario, connections in RUNS:
                r = wrk(server.base, scenario, connections, args.duration, tmp)
                r.update(label=label, scenario=scenario, connections=connections)
                log(f"  {name}: {label}, {connections} connection(s): {r['per_second']:.0f}/s, "
                    f"p50 {r['p50_us'] / 1e3:.2f} ms, p99 {r['p99_us'] / 1e3:.2f} ms, non-2xx {r['non2xx']}, "
                    f"socket errors {r['socket_errors']}")
                runs.append(r)
            if name == "agentstate":
                for session in ("e100", "e2000"):
                    with urllib.request.urlopen(f"{server.base}/apps/bench/users/u/sessions/{session}") as r:
                        (tmp / f"{session}.json").write_bytes(r.read())
            check = asyncio.run(lost_writes(server.base, args.lost_write_patches))
            log(f"  {name}: lost-write check: {check['acknowledged']} of {check['sent']} PATCHes acknowledged, "
                f"{check['refused']} refused, {check['lost']} acknowledged writes lost")
            after = resident_kib(server.process.pid)
            log(f"  {name}: resident {after / 1024:.1f} MiB after the runs")
        results[name] = {"runs": runs, "lost_writes": check, "rss_idle_kib": idle, "rss_after_kib": after}
    results["floor"] = http_floor(args, tmp, side_by_side)
    return results


def http_floor(args, tmp: Path, side_by_side: Path) -> dict:
    """The GET runs against their floor, on agentstate's database, answering agentstate's bytes."""
    port = spare_port()
    argv = [str(side_by_side), "floor-server", "--db", str(tmp / "agentstate.db"), "--addr", f"127.0.0.1:{port}",
            "--body", f"e100={tmp / 'e100.json'}", "--body", f"e2000={tmp / 'e2000.json'}"]
    runs = []
    with Server("floor", argv, port, tmp / "floor.log") as server:
        for label, scenario, connections in RUNS:
            if not scenario.startswith("get"):
                continue
            r = wrk(server.base, scenario, connections, args.duration, tmp)
            r.update(label=label, scenario=scenario, connections=connections)
            log(f"  floor: {label}, {connections} connection(s): {r['per_second']:.0f}/s, "
                f"p50 {r['p50_us'] / 1e3:.2f} ms, p99 {r['p99_us'] / 1e3:.2f} ms, non-2xx {r['non2xx']}")
            runs.append(r)
    return {"runs": runs}


# ---------------------------------------------------------------- report


def fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def ratio(a, b) -> str:
    """a / b: two decimals, whole above 10, two significant figures below 0.1 (0.0028×)."""
    if not (a and b):
        return "—"
    r = a / b
    if r >= 10:
        return f"{r:.0f}×"
    return f"{r:.2f}×" if r >= 0.1 else f"{r:.2g}×"


STORES = ["memory", "sqlite", "sqlite-normal", "postgres", "mysql", "redis"]
NAMES = {"memory": "in-memory", "sqlite": "SQLite", "sqlite-normal": "SQLite, synchronous=NORMAL",
         "postgres": "PostgreSQL", "mysql": "MariaDB", "redis": "Redis"}


def report(doc: dict) -> str:
    services = doc["services"]
    by = {(m["implementation"], m["store"]): m for m in services}
    stores = [s for s in STORES if ("agentstate", s) in by]
    out = [f"# Side by side: agentstate and ADK for Python {doc['reference_version']}", "",
           f"{doc['started']}, mode `{doc['mode']}`, {doc['machine']}.", "",
           "Times are medians; the ratios are agentstate's time divided by the other's (below 1: agentstate "
           "is faster), and for throughput agentstate's rate divided by the other's.", ""]
    for store in stores:
        ours, floor, ref = by.get(("agentstate", store)), by.get(("floor", store)), by.get(("adk-python", store))
        out += [f"## {NAMES[store]}", "",
                "| operation | events | agentstate | floor | ADK for Python | agentstate / floor | agentstate / ADK |",
                "|---|---|---|---|---|---|---|"]
        out.append(f"| create | | {fmt_us(ours['create_us'])} | {fmt_us(floor['create_us']) if floor else '—'} | "
                   f"{fmt_us(ref['create_us']) if ref else '—'} | {ratio(ours['create_us'], floor and floor['create_us'])} | "
                   f"{ratio(ours['create_us'], ref and ref['create_us'])} |")
        for op, key in [("append", "append_us"), ("get 20 most recent", "recent20_us"), ("get all", "full_us")]:
            for k, row in enumerate(ours["sizes"]):
                f = floor["sizes"][k][key] if floor else None
                r = ref["sizes"][k][key] if ref and k < len(ref["sizes"]) else None
                out.append(f"| {op} | {row['events']:,} | {fmt_us(row[key])} | {fmt_us(f) if f else '—'} | "
                           f"{fmt_us(r) if r else '—'} | {ratio(row[key], f)} | {ratio(row[key], r)} |")
        ref_rate = ref["concurrent_appends_per_s"] if ref else None
        refused = f" ({ref['concurrent_failures']} refused)" if ref and ref.get("concurrent_failures") else ""
        out.append(f"| 8 writers on 8 users, appends/s | | {ours['concurrent_appends_per_s']:,.0f} | — | "
                   f"{f'{ref_rate:,.0f}' if ref_rate else '—'}{refused} | — | "
                   f"{ratio(ours['concurrent_appends_per_s'], ref_rate)} (rate) |")
        out.append("")
    http = doc.get("http")
    if http:
        ours, ref = http["agentstate"], http["adk-python"]
        out += ["## HTTP: `agentstate serve` and `adk api_server`, SQLite, wrk", "",
                f"{doc['http_seconds']} s per row. p50 and p99 latency; non-2xx answers and socket errors counted.", "",
                "| request | connections | agentstate: req/s, p50, p99 | non-2xx, socket errors | ADK api_server: req/s, p50, p99 | non-2xx, socket errors | req/s ratio | p50 ratio |",
                "|---|---|---|---|---|---|---|---|"]
        for a, b in zip(ours["runs"], ref["runs"]):
            out.append(
                f"| {a['label']} | {a['connections']} | {a['per_second']:,.0f}, {fmt_us(a['p50_us'])}, {fmt_us(a['p99_us'])} | "
                f"{a['non2xx']}, {a['socket_errors']} | {b['per_second']:,.0f}, {fmt_us(b['p50_us'])}, {fmt_us(b['p99_us'])} | "
                f"{b['non2xx']}, {b['socket_errors']} | {ratio(a['per_second'], b['per_second'])} | "
                f"{ratio(a['p50_us'], b['p50_us'])} |")
        out += ["", "| | agentstate | ADK api_server |", "|---|---|---|"]
        la, lb = ours["lost_writes"], ref["lost_writes"]
        out.append(f"| lost-write check: PATCHes sent, 32 at once | {la['sent']} | {lb['sent']} |")
        out.append(f"| acknowledged (2xx) / refused | {la['acknowledged']} / {la['refused']} | "
                   f"{lb['acknowledged']} / {lb['refused']} |")
        out.append(f"| acknowledged `user:` writes lost | **{la['lost']}** | **{lb['lost']}** |")
        out.append(f"| resident memory, idle | {ours['rss_idle_kib'] / 1024:.1f} MiB | {ref['rss_idle_kib'] / 1024:.1f} MiB |")
        out.append(f"| resident memory, after the runs | {ours['rss_after_kib'] / 1024:.1f} MiB | "
                   f"{ref['rss_after_kib'] / 1024:.1f} MiB |")
        out.append("")
        floor = http.get("floor")
        if floor:
            out += ["### GET against its floor", "",
                    "The floor: the same server stack reading the same rows as text and answering agentstate's "
                    "bytes from memory.", "",
                    "| request | connections | agentstate: req/s, p50 | floor: req/s, p50 | p50 / floor | "
                    "floor req/s / agentstate req/s |", "|---|---|---|---|---|---|"]
            gets = {(r["scenario"], r["connections"]): r for r in ours["runs"]}
            for f in floor["runs"]:
                a = gets[(f["scenario"], f["connections"])]
                out.append(f"| {f['label']} | {f['connections']} | {a['per_second']:,.0f}, {fmt_us(a['p50_us'])} | "
                           f"{f['per_second']:,.0f}, {fmt_us(f['p50_us'])} | {ratio(a['p50_us'], f['p50_us'])} | "
                           f"{ratio(f['per_second'], a['per_second'])} |")
            out.append("")
    out += ["![get latency against session size](get_latency.svg)", ""]
    return "\n".join(out)


def chart(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("svg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: a smaller file
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    styles = {"agentstate": "-", "floor": ":", "adk-python": "--"}
    colors = {"memory": "tab:blue", "sqlite": "tab:orange", "sqlite-normal": "tab:brown", "postgres": "tab:green",
              "mysql": "tab:purple", "redis": "tab:red"}
    for m in doc["services"]:
        xs = [r["events"] for r in m["sizes"]]
        for ax, key in zip(axes, ["full_us", "recent20_us"]):
            ax.plot(xs, [r[key] / 1e3 for r in m["sizes"]], styles[m["implementation"]], marker="o", markersize=3,
                    color=colors[m["store"]], label=f"{m['implementation']} {m['store']}")
    for ax, title in zip(axes, ["get, all events", "get, 20 most recent events"]):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("events in the session")
        ax.set_ylabel("median time (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle("agentstate (solid), floor (dotted), ADK for Python 2.13.0 (dashed)")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal"))) / 1024 / 1024
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.system()} {platform.release()}"


def main() -> None:
    parser = argparse.ArgumentParser(description="agentstate and ADK for Python, side by side")
    parser.add_argument("mode", choices=MODES, nargs="?", default="quick")
    parser.add_argument("--sizes", help="session sizes in events, e.g. 10,100,1000")
    parser.add_argument("--duration", type=int, help="seconds per HTTP scenario")
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--skip", default="", help="parts to skip: services, reference, http")
    parser.add_argument("--out", type=Path, default=ROOT / "target" / "side-by-side")
    parser.add_argument("--python", type=Path, required=True, help="the virtualenv's python (with google-adk)")
    parser.add_argument("--target", type=Path, default=ROOT / "target" / "release")
    args = parser.parse_args()
    sizes, seconds, per_writer, patches = MODES[args.mode]
    args.sizes = args.sizes or sizes
    args.duration = args.duration or seconds
    args.lost_write_patches = patches
    skip = set(filter(None, args.skip.split(",")))
    args.out.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([str(args.python), "-c", "import google.adk; print(google.adk.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    doc = {"started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "mode": args.mode, "machine": machine(),
           "reference_version": version, "sizes": args.sizes, "http_seconds": args.duration, "services": []}
    side_by_side, agentstate = args.target / "side_by_side", args.target / "agentstate"
    began = time.time()
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as tmp:
        tmp = Path(tmp)
        if "services" not in skip:
            log(f"services: agentstate and the floors ({args.stores}; sizes {args.sizes})")
            subprocess.run([str(side_by_side), "services", "--sizes", args.sizes, "--stores", args.stores,
                            "--per-writer", str(per_writer), "--out", str(tmp / "ours.json")], check=True)
            doc["services"] += json.loads((tmp / "ours.json").read_text())["results"]
        # The reference has no MySQL service in the harness, and one SQLite setting.
        stores = ",".join(s for s in args.stores.split(",") if s not in ("mysql", "sqlite-normal"))
        if "services" not in skip and "reference" not in skip and stores:
            log(f"services: ADK for Python {version} ({stores}; sizes {args.sizes})")
            subprocess.run([str(args.python), str(HERE / "adk_workload.py"), "--sizes", args.sizes, "--stores", stores,
                            "--per-writer", str(per_writer), "--out", str(tmp / "adk.json")], check=True)
            doc["services"] += json.loads((tmp / "adk.json").read_text())["results"]
        if "http" not in skip:
            doc["http"] = http_side(args, tmp, agentstate, args.python, side_by_side)
    doc["seconds"] = round(time.time() - began)
    (args.out / "results.json").write_text(json.dumps(doc, indent=2))
    if doc["services"]:
        chart(doc, args.out / "get_latency.svg")
    (args.out / "results.md").write_text(report(doc))
    log(f"done in {doc['seconds']} s: {args.out}/results.md, results.json, get_latency.svg")
    print(report(doc))
    # Not a timing: agentstate must answer every request and keep every write it acknowledged.
    ours = doc.get("http", {}).get("agentstate")
    if ours:
        bad = [r["label"] for r in ours["runs"] if r["non2xx"] or r["socket_errors"]]
        if bad or ours["lost_writes"]["lost"] or ours["lost_writes"]["refused"]:
            raise SystemExit(f"agentstate failed requests ({', '.join(bad) or 'the lost-write check'}) or lost writes")
        floor = doc["http"].get("floor", {}).get("runs", [])
        if any(r["non2xx"] or r["socket_errors"] for r in floor):
            raise SystemExit("the HTTP floor failed requests: its figures mean nothing")


if __name__ == "__main__":
    main()
