"""devkit.tooling: the report `make client-matrix-tools` and `make authorizer-tools` give of their builders."""

from __future__ import annotations

from pathlib import Path

import pytest

from devkit.tooling import ToolingMissing, report_made


def test_every_made_path_is_printed_one_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    status = report_made("tools", lambda: Path("/cache/server"), lambda: [Path("/cache/a.jar"), Path("/cache/b.jar")])

    assert status == 0
    assert capsys.readouterr().out.splitlines() == ["/cache/server", "/cache/a.jar", "/cache/b.jar"]


def test_a_missing_tool_is_one_line_on_stderr_naming_it_and_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    def missing() -> Path:
        raise ToolingMissing("go not found: the server is built from its Go module")

    status = report_made("authorizer tools", lambda: Path("/cache/plugin.jar"), missing)

    captured = capsys.readouterr()
    assert status == 1
    assert captured.out.splitlines() == ["/cache/plugin.jar"]
    assert captured.err == "authorizer tools: go not found: the server is built from its Go module\n"


def test_an_error_that_is_not_a_missing_tool_is_not_swallowed() -> None:
    def broken() -> Path:
        raise ValueError("a bug, not a missing tool")

    with pytest.raises(ValueError):
        report_made("tools", broken)
