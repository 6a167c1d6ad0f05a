"""The version is written in one place (pyproject.toml), and every release is listed in CHANGELOG.md."""

import re
import tomllib
from pathlib import Path

import dasher_rnn

ROOT = Path(__file__).resolve().parents[1]
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def pyproject_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_the_package_reports_the_version_in_pyproject():
    # the installed metadata is written at install time: after changing the version, reinstall (make install-dev)
    assert dasher_rnn.__version__ == pyproject_version()


def test_the_changelog_opens_with_unreleased_then_the_current_version():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = RELEASE.findall(changelog)
    assert releases, "CHANGELOG.md lists no release as '## [X.Y.Z] - YYYY-MM-DD'"
    assert releases[0][0] == pyproject_version(), "the newest release in CHANGELOG.md is not pyproject.toml's version"
    assert changelog.index("## [Unreleased]") < changelog.index(f"## [{releases[0][0]}]")


def test_the_releases_are_listed_newest_first():
    releases = RELEASE.findall((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    versions = [tuple(int(n) for n in v.split(".")) for v, _ in releases]
    dates = [d for _, d in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    assert dates == sorted(dates, reverse=True)
