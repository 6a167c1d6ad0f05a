"""docs/BENCHMARKS.md's tables are what bench/results/*.json renders (bench/report.py); no model is needed."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "bench" / "report.py"


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("bench_report", REPORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE = {
    "id": "sample",
    "columns": [{"key": "name", "label": "file"}, {"key": "bpc", "label": "bits/char", "align": "right", "format": ".3f"},
                {"key": "chars", "label": "characters", "align": "right", "format": ","}],
    "rows": [{"key": "a", "name": "a|b", "bpc": 1.85871, "chars": 50418}, {"key": "b", "name": "overall", "bpc": None}],
    "commands": ["dasher-rnn eval ../shared/corpora/eval/*.txt"],
    "date": "2026-11-25",
    "machine": "a test machine",
    "beside": "nothing",
    "model": "none",
    "source": "Written for the test.",
}


def test_the_documents_tables_match_bench_results():
    result = subprocess.run([sys.executable, str(REPORT), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_document_is_short_and_every_table_has_its_command_and_date(report):
    text = report.DOC.read_text()
    # current figures only (answered questions and how they came about are in docs/history/), issue 49
    assert len(text.splitlines()) < 250
    tables = report.load_results()
    assert tables
    for table in tables.values():
        assert table["commands"] and table["date"][:4].isdigit() and table["machine"] and table["beside"]


def test_a_table_renders_from_a_sample(report):
    text = report.render_table(SAMPLE)
    lines = text.splitlines()
    assert lines[0] == "| file | bits/char | characters |"
    assert lines[1] == "|---|---:|---:|"
    assert lines[2] == "| a\\|b | 1.859 | 50,418 |"
    assert lines[3] == "| overall |  |  |"
    assert "    dasher-rnn eval ../shared/corpora/eval/*.txt" in lines
    assert lines[-1] == "*2026-11-25, a test machine; beside it: nothing; model: none.*"  # one line, no source
    assert "Written for the test" not in text


def test_a_table_without_its_command_or_date_is_refused(report):
    with pytest.raises(ValueError, match="commands"):
        report.render_table({**SAMPLE, "commands": []})
    with pytest.raises(ValueError, match="date"):
        report.render_table({**SAMPLE, "date": ""})


def test_check_names_the_table_that_drifted_and_rendering_repairs_it(report, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "sample.json").write_text(json.dumps({"area": "sample", "tables": [SAMPLE]}))
    doc = tmp_path / "doc.md"
    doc.write_text("# Doc\n\nProse stays.\n\n<!-- table: sample -->\n<!-- /table -->\n\nMore prose.\n")
    assert report.check(doc, results) == ["sample: the document's table differs from bench/results "
                                          "(run python bench/report.py)"]
    text, problems = report.render_document(doc.read_text(), report.load_results(results))
    assert not problems
    assert text.startswith("# Doc\n\nProse stays.\n\n<!-- table: sample -->\n| file |")
    assert text.endswith("<!-- /table -->\n\nMore prose.\n")
    doc.write_text(text)
    assert report.check(doc, results) == []
    doc.write_text(text.replace("1.859", "1.860"))
    assert [p.split(":")[0] for p in report.check(doc, results)] == ["sample"]
    doc.write_text(text + "\n<!-- table: ghost -->\n<!-- /table -->\n")
    assert report.check(doc, results) == ["ghost: marked in the document but in no bench/results/*.json"]


def test_update_folds_a_bench_output_into_the_store(report, tmp_path):
    store = json.loads((report.RESULTS_DIR / "startup.json").read_text())
    results = tmp_path / "results"
    results.mkdir()
    (results / "startup.json").write_text(json.dumps(store))
    out = tmp_path / "out.json"
    out.write_text(json.dumps({"runs": [{"first_frame_s": 1.5}, {"first_frame_s": 1.25}], "median_first_frame_s": 1.375,
                               "load_average_before": [0.5, 0.4, 0.3]}))
    assert report.update("startup", out, "2030-01-02", "a test machine", None, results) == "startup"
    (table,) = json.loads((results / "startup.json").read_text())["tables"]
    assert table["date"] == "2030-01-02" and table["machine"] == "a test machine"
    assert table["rows"][0]["median"] == 1.375 and table["rows"][0]["runs"] == "1.50, 1.25"
    assert "0.5" in table["beside"]


def test_a_part_measured_again_replaces_its_earlier_remeasurement(report, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "latency.json").write_text((report.RESULTS_DIR / "latency.json").read_text())
    out = tmp_path / "out.json"
    for date, p50 in (("2030-01-02", 2.0), ("2030-02-03", 1.5)):
        out.write_text(json.dumps({"steps": {"model": {"int8": {"p50_ms": p50, "p99_ms": 3.0},
                                                       "fp32": {"p50_ms": 4.0, "p99_ms": 5.0}}}}))
        assert report.update("latency", out, date, "a test machine", "nothing", results) == "latency"
    table = next(t for t in json.loads((results / "latency.json").read_text())["tables"] if t["id"] == "latency")
    rendered = report.render_table(table)
    assert "2030-02-03" in rendered and "2030-01-02" not in rendered
    assert rendered.splitlines()[-1].count("2030-02-03") == 1
    assert next(r for r in table["rows"] if r["key"] == "int8")["p50"] == 1.5


def test_parts_measured_again_together_are_named_once_in_the_provenance_line(report):
    again = {"date": "2030-01-02", "machine": "another machine", "beside": "a training run"}
    text = report.render_table({**SAMPLE, "remeasured": {"the column bits/char": again,
                                                         "the column characters": again}})
    line = text.splitlines()[-1]
    assert line == ("*2026-11-25, a test machine; beside it: nothing; model: none. The column bits/char and the column "
                    "characters: 2030-01-02, another machine; beside it: a training run.*")


def test_a_table_may_live_in_the_history_page_and_is_checked_there(report, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "sample.json").write_text(json.dumps({"area": "sample", "tables": [SAMPLE]}))
    page, history = tmp_path / "page.md", tmp_path / "history.md"
    page.write_text("# Page\n")
    history.write_text("# History\n\n<!-- table: sample -->\n<!-- /table -->\n")
    assert report.check((page, history), results) == ["sample: the document's table differs from bench/results "
                                                      "(run python bench/report.py)"]
    texts, problems = report.render_documents((page, history), report.load_results(results))
    assert not problems and texts[page] == "# Page\n"
    history.write_text(texts[history])
    assert report.check((page, history), results) == []
    assert report.check(page, results) == ["sample: in bench/results but not marked in the document"]
