"""docs/BENCHMARKS.md's tables, rendered from the results store ``bench/results/*.json``.

    python bench/report.py                      # write every table into docs/BENCHMARKS.md (and the answered
                                                # ones into docs/history/benchmarks-answered.md)
    python bench/report.py --check              # exit 1, naming each table that differs from its JSON
    python bench/report.py --update AREA FILE [--beside TEXT] [--date YYYY-MM-DD] [--machine TEXT]

Each results file is one area (``quality``, ``adaptation``, ...) and holds its tables: for each, the figures of
what ships, the exact commands that produced them, the date measured, the machine, what ran beside it, the
model, and where the figures came from. The document marks each table's place with a pair of comments,
``<!-- table: ID -->`` and ``<!-- /table -->``; the script rewrites what lies between them (the table, its
commands, then one line of provenance: date, machine, what ran beside, model, and the same for any part measured
again later) and leaves the prose around them alone. A table's ``source`` and ``note`` (how the figures came about,
what they replaced) stay in its JSON for whoever wants them, with ``in_full`` (the provenance as first written, where
the line now says it shorter) and ``remeasured`` (per part: date, machine, beside, by); they are not rendered.

``--update AREA FILE`` folds the JSON a bench script printed into the area's results file (the table that
output feeds, chosen by the output's shape; see ``UPDATERS``), with today's date and this machine unless told,
then writes the document. It only replaces figures; rows, columns and commands stay as they are, so a run with
other options than the table's commands must not be folded in.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "BENCHMARKS.md"
# answered one-off questions and figures of what no longer ships, still rendered and checked from their JSON
HISTORY_DOC = ROOT / "docs" / "history" / "benchmarks-answered.md"
DOCS = (DOC, HISTORY_DOC)
BLOCK = re.compile(r"<!-- table: (?P<id>[\w-]+) -->\n(?P<body>.*?)<!-- /table -->", re.S)
REQUIRED = ("commands", "date", "machine", "beside", "model", "source", "columns", "rows")


# ---- rendering ----------------------------------------------------------------------------------------------


def cell(value, column: dict, row: dict) -> str:
    """One table cell: numbers through the row's format or else the column's (e.g. ``.4f``, ``,``), None empty,
    text as it is."""
    if value is None:
        return ""
    fmt = row.get("format") or column.get("format")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and fmt:
        return format(value, fmt)
    return str(value).replace("|", "\\|")


def provenance(table: dict) -> str:
    """The table's one line of provenance, in italics: ``DATE, MACHINE; beside it: ...; model: ...``, then each
    group of parts measured again later (parts with the same date, machine and company named together), once."""
    line = f"{table['date']}, {table['machine']}; beside it: {table['beside']}; model: {table['model']}."
    groups: dict[tuple[str, str, str], list[str]] = {}
    for part, when in table.get("remeasured", {}).items():
        groups.setdefault((when["date"], when["machine"], when["beside"]), []).append(part)
    for (date, machine, beside), parts in groups.items():
        named = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        line += f" {named[:1].upper()}{named[1:]}: {date}, {machine}; beside it: {beside}."
    return f"*{line}*"


def render_table(table: dict) -> str:
    """The markdown that stands between a table's markers: the table, its commands, then its provenance line."""
    missing = [key for key in REQUIRED if not table.get(key)]
    if missing:
        raise ValueError(f"table {table.get('id')!r} has no {', '.join(missing)}")
    columns = table["columns"]
    lines = ["| " + " | ".join(c["label"] for c in columns) + " |",
             "|" + "|".join("---:" if c.get("align") == "right" else "---" for c in columns) + "|"]
    for row in table["rows"]:
        lines.append("| " + " | ".join(cell(row.get(c["key"]), c, row) for c in columns) + " |")
    lines.append("")
    lines += ["    " + command for command in table["commands"]]
    lines.append(provenance(table))
    return "\n".join(lines) + "\n"


def load_results(results_dir: Path = RESULTS_DIR) -> dict[str, dict]:
    """Every table of every results file, by id (ids are unique across files)."""
    tables: dict[str, dict] = {}
    for path in sorted(results_dir.glob("*.json")):
        for table in json.loads(path.read_text())["tables"]:
            if table["id"] in tables:
                raise ValueError(f"table id {table['id']!r} appears twice ({path.name})")
            tables[table["id"]] = table
    return tables


def render_document(text: str, tables: dict[str, dict], elsewhere: frozenset[str] = frozenset()
                    ) -> tuple[str, list[str]]:
    """``text`` with every marked table rewritten, and the problems found (unknown ids, tables without a place
    here or among the ids ``elsewhere``, those marked in the other documents)."""
    problems = []
    seen = set(elsewhere)

    def replace(match: re.Match) -> str:
        table_id = match["id"]
        seen.add(table_id)
        if table_id not in tables:
            problems.append(f"{table_id}: marked in the document but in no bench/results/*.json")
            return match[0]
        try:
            return f"<!-- table: {table_id} -->\n{render_table(tables[table_id])}<!-- /table -->"
        except ValueError as exc:
            problems.append(f"{table_id}: {exc}")
            return match[0]

    out = BLOCK.sub(replace, text)
    problems += [f"{table_id}: in bench/results but not marked in the document" for table_id in tables
                 if table_id not in seen]
    return out, problems


def marked(text: str) -> frozenset[str]:
    """The ids of the tables ``text`` marks."""
    return frozenset(match["id"] for match in BLOCK.finditer(text))


def render_documents(docs: tuple[Path, ...], tables: dict[str, dict]) -> tuple[dict[Path, str], list[str]]:
    """Each document's text with its tables rewritten, and the problems found in all of them together (a table
    need be marked in one of them)."""
    texts = {doc: doc.read_text() for doc in docs}
    out, problems = {}, []
    for doc, text in texts.items():
        others = frozenset().union(*(marked(t) for d, t in texts.items() if d != doc))
        out[doc], found = render_document(text, tables, others)
        problems += [problem for problem in found if problem not in problems]
    return out, problems


def check(docs: Path | tuple[Path, ...] = DOCS, results_dir: Path = RESULTS_DIR) -> list[str]:
    """The tables (by id) whose text in ``docs`` differs from what their JSON renders, and other problems."""
    docs = (docs,) if isinstance(docs, Path) else docs
    tables = load_results(results_dir)
    _, problems = render_documents(docs, tables)
    for match in BLOCK.finditer("\n".join(doc.read_text() for doc in docs)):
        table = tables.get(match["id"])
        try:
            rendered = render_table(table) if table is not None else None
        except ValueError:
            continue  # reported by render_document
        if rendered is not None and match["body"] != rendered:
            problems.append(f"{match['id']}: the document's table differs from bench/results "
                            f"(run python bench/report.py)")
    return problems


# ---- folding a bench script's output into the store ---------------------------------------------------------


def rows_by_key(table: dict) -> dict[str, dict]:
    return {row["key"]: row for row in table["rows"]}


def update_quality(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``dasher-rnn eval --json`` (PPM, or the RNN with the floor or exact) or ``bench/comm_letter.py`` (with or
    without ``--fold-case``)."""
    if "published_bits_per_char" in out:
        folded = out.get("fold_case", False)
        rows_by_key(tables["peer"])["shipped"]["bpc_folded" if folded else "bpc"] = out["bits_per_char"]
        return "peer", "the case-folded figure" if folded else "the lower-case figure"
    settings = out["settings"]
    if settings.get("symbols"):
        raise SystemExit("the quality table scores every character; use bench/comm_letter.py for --symbols")
    if "zero initial state" in settings["model"]:
        raise SystemExit("the quality table has no zero-state column")
    column = "ppm" if settings["model"].startswith("PPM") else "rnn_exact" if settings["floor"] == 0 else "rnn"
    rows = rows_by_key(tables["quality"])
    for name, figures in [*out["files"].items(), ("overall", out["overall"])]:
        rows[name][column] = figures["bits_per_char"]
        rows[name]["chars"] = figures["chars"]
    rows["first10"][column] = out["overall"]["start_bits"]["10"]
    for row in rows.values():
        row["ratio"] = round(row["rnn"] / row["ppm"], 3)
    label = {c["key"]: c["label"] for c in tables["quality"]["columns"]}[column]
    return "quality", f"the column {label}"


def update_adaptation(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``bench/adaptation_bench.py --streams-only``."""
    rows = rows_by_key(tables["adaptation-streams"])
    for name, s in out["streams"].items():
        row = rows[name]
        row.update(chars=s["chars"], static=s["static_bpc"], adaptive=s["adaptive_bpc"], ratio=s["ratio"],
                   gain=round(s["static_bpc"] - s["adaptive_bpc"], 3), worst=s["worst_200_char_window_ratio"],
                   guard=s["guard_events"])
    return "adaptation-streams", None


def update_latency(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``bench/onnx_step_latency.py`` (one model) or ``bench/predictor_bench.py`` (64 nodes per backend)."""
    rows = rows_by_key(tables["latency"])
    if "steps" in out:
        (step,) = out["steps"].values()
        for name, figures in step.items():
            rows[name].update(p50=figures["p50_ms"], p99=figures["p99_ms"])
        return "latency", "the rows of one step"
    for backend, figures in out["backends"].items():
        (at64,) = [b for b in figures["batches"] if b["batch"] == 64]
        rows[backend].update(p50=at64["p50_ms"], p99=at64["p99_ms"])
    return "latency", "the rows of the predictor service"


def update_memory(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``bench/predictor_bench.py``: the 3000-node tree per backend."""
    rows = rows_by_key(tables["memory-tree"])
    for backend, figures in out["backends"].items():
        tree = figures["tree_memory"]
        rows[backend].update(nodes=tree["nodes"], pool=tree["state_pool_mb"], total=tree["tree_total_mb"],
                             per_node=tree["bytes_per_node"])
    return "memory-tree", None


def update_startup(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``bench/startup_bench.py``."""
    (row,) = tables["startup"]["rows"]
    row.update(runs=", ".join(f"{r['first_frame_s']:.2f}" for r in out["runs"]),
               median=out["median_first_frame_s"], load=", ".join(f"{x:.1f}" for x in out["load_average_before"] or []))
    return "startup", None


def update_api(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``bench/api_bench.py`` (``--model rnn``; or with ``--bursts``, issue 48's serve checks), ``bench/history/api_fairness.py``
    (with or without ``--request-timeout``) or ``bench/bcipy_bench.py``."""
    if "bursts" in out:
        return update_api_serve(tables, out)
    if "big_request" in out:
        rows = rows_by_key(tables["api-fairness"])
        big, behind = ("big_timeout", "small_behind_timeout") if out["serve_args"] else ("big", "small_behind_big")
        rows[big].update(status=out["big"]["status"] if "error" not in out["big"]
                         else f"{out['big']['status']} `{out['big']['error']}`", seconds=out["big"]["seconds"])
        rows[behind].update(status=out["small_behind_big"]["status"], seconds=out["small_behind_big"]["seconds"])
        if not out["serve_args"]:
            rows["small_alone"]["seconds"] = out["small_alone_s"]
        return "api-fairness", "the rows " + ("with" if out["serve_args"] else "without") + " --request-timeout"
    if "per_call_ms" in out:
        rows = rows_by_key(tables["bcipy"])
        for backend, figures in out["per_call_ms"].items():
            for length, ms in figures.items():
                rows[length][backend] = ms
        return "bcipy", None
    if out.get("model", "rnn") != "rnn":
        raise SystemExit("the API table is the RNN's; this output is for --model " + out["model"])
    rows = rows_by_key(tables["api"])
    for name, figures in out["latency"].items():
        rows[name].update(n=figures["n"], p50=figures["p50_ms"], p99=figures["p99_ms"])
    load = out["load"]
    rows["load"].update(n=load["requests"], p50=load["latency_under_load"]["p50_ms"],
                        p99=load["latency_under_load"]["p99_ms"],
                        what=f"{load['clients']} clients at once, {load['errors']} errors, "
                             f"{load['requests_per_s']:.0f} requests/s")
    return "api", None


def update_api_serve(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``bench/api_bench.py --bursts N``: memory over bursts of sessions, WebSockets beside HTTP."""
    rows = rows_by_key(tables["api-serve"])
    memory, beside = out["memory"], out["beside"]
    rows["memory_start"]["figure"] = f"{memory['start_mb']:,.0f} MB"
    rows["memory_bursts"]["figure"] = " / ".join(f"{mb:,.0f}" for mb in memory["after_bursts_mb"]) + " MB"
    rows["memory_bursts"]["what"] = (f"after each of {out['bursts']} bursts of {out['burst_sessions']} sessions, "
                                     "all closed")
    rows["memory_bursts"]["note"] = (f"{memory['last_over_start']:.2f} x the start (target: within 1.5 x); bursts "
                                     + ", ".join(f"{s:.0f}" for s in memory["burst_s"]) + " s")
    for kind in ("websocket", "http"):
        figures = beside[kind]
        rows[kind].update(p50=figures["p50_ms"], p99=figures["p99_ms"],
                          figure=f"{figures['n']:,} requests, {figures['requests_per_s']:.0f}/s, "
                                 f"{figures['errors']} errors")
        rows[kind]["what"] = (f"{out['ws_clients']} WebSocket clients x {out['ws_seconds']:.0f} s" if kind == "websocket"
                              else f"beside them, {out['http_clients']} HTTP clients, the same run")
    mb = beside["memory_mb"]
    rows["memory_beside"]["figure"] = f"{mb['before']:,.0f} / {mb['at_end']:,.0f} / {mb['sessions_closed']:,.0f} MB"
    return "api-serve", None


def update_entry_rate(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``dasher-rnn simulate ... --lines 50 --fps 30 --json`` (the row is the output's ``model``)."""
    rows = rows_by_key(tables["entry-rate"])
    rows[out["model"]].update(cpm=out["chars_per_minute"], bpc=out["bits_per_char"], reversed=out["reversals"],
                              failed=out["failed"])
    for row in rows.values():
        if row["key"] != "ppm":
            row["vs_ppm"] = round(row["cpm"] / rows["ppm"]["cpm"], 3)
    return "entry-rate", f"the {out['model']} row"


def update_input_floods(tables: dict[str, dict], out: dict) -> tuple[str, str | None]:
    """``bench/input_floods.py``: one row per flood."""
    rows = rows_by_key(tables["input-floods"])
    for figures in out["rows"]:
        row = rows[figures["key"]]
        kept = (f"{figures['kept']} ACK IDs kept, {figures['counted']:,} counted" if "kept" in figures else
                f"{figures['received']:,} samples used, {figures['superseded']:,} passed over, {figures['stale']:,} "
                f"stale, {figures['dropped_connections']} connections dropped")
        row.update(sent=figures["sent"], before=figures["rss_before_mb"], peak=figures["rss_peak_mb"],
                   after=figures["rss_after_mb"], said=kept)
    return "input-floods", None


UPDATERS = {"input_floods": update_input_floods, "quality": update_quality, "adaptation": update_adaptation,
            "latency": update_latency,
            "entry_rate": update_entry_rate, "startup": update_startup, "memory": update_memory, "api": update_api}


def read_bench_output(path: Path) -> dict:
    """The JSON object a bench script printed; scripts that print progress lines first end with the object."""
    text = path.read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start = text.rfind("\n{")
        return json.loads(text[start + 1:])


def this_machine() -> str:
    """``a 2-core <CPU model> machine``, for ``--update`` without ``--machine``."""
    model = platform.processor() or platform.machine()
    try:
        names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    except OSError:
        pass
    return f"a {os.cpu_count()}-core {model} machine"


def update(area: str, path: Path, date: str, machine: str, beside: str | None,
           results_dir: Path = RESULTS_DIR) -> str:
    """Fold ``path`` (a bench script's JSON) into ``results_dir/AREA.json``; the id of the table it changed.

    Output that covers a whole table replaces its date, machine, what ran beside and source. Output that covers
    only part of a table (one of several commands) leaves the table's date to the rest and says in its source
    what was re-measured, when, where and beside what."""
    if area not in UPDATERS:
        raise SystemExit(f"no updater for {area!r}; areas with one: {', '.join(UPDATERS)}")
    results_path = results_dir / f"{area}.json"
    results = json.loads(results_path.read_text())
    tables = {t["id"]: t for t in results["tables"]}
    out = read_bench_output(path)
    changed, part = UPDATERS[area](tables, out)
    table = tables[changed]
    if beside is None and out.get("load_average_before"):
        beside = "not recorded; load average before the runs " + ", ".join(map(str, out["load_average_before"]))
    beside = beside or "not recorded"
    how = f"`python bench/report.py --update {area}`"
    if part is None:
        table.update(date=date, machine=machine, beside=beside, source=f"Folded in by {how}.")
        table.pop("note", None)
        table.pop("remeasured", None)
    else:  # the part's previous re-measurement, if any, is replaced, never nested
        table.setdefault("remeasured", {})[part] = {"date": date, "machine": machine, "beside": beside, "by": how}
    results_path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return changed


# ---- command line --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a table differs from bench/results")
    parser.add_argument("--update", nargs=2, metavar=("AREA", "FILE"), help="fold a bench script's JSON output in")
    parser.add_argument("--date", default=datetime.date.today().isoformat(), help="with --update (default: today)")
    parser.add_argument("--machine", default=None, help="with --update (default: this machine)")
    parser.add_argument("--beside", default=None, help="with --update: what ran beside the measurement")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for problem in problems:
            print(f"docs/BENCHMARKS.md, docs/history/{HISTORY_DOC.name}: table {problem}", file=sys.stderr)
        return 1 if problems else 0
    if args.update:
        area, path = args.update
        changed = update(area, Path(path), args.date, args.machine or this_machine(), args.beside)
        print(f"bench/results/{area}.json: table {changed} updated")
    texts, problems = render_documents(DOCS, load_results())
    for problem in problems:
        print(f"docs/BENCHMARKS.md, docs/history/{HISTORY_DOC.name}: table {problem}", file=sys.stderr)
    for doc, text in texts.items():
        doc.write_text(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
