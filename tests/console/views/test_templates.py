"""The console's templates as source: short lines, and states read through model properties and
enums, never compared with status strings (issue 40; docs/STYLE.md, Console)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template.loader import get_template

TEMPLATES = Path(__file__).resolve().parents[3] / "console" / "templates"
SOURCES = sorted(TEMPLATES.rglob("*.html"))
# `x.status == "draft"`, `plan.sync_status != 'failed'`, `"stale" == x.status`
STATUS_STRING = re.compile(r"""\.(status|sync_status)\s*(==|!=|in)\s*["']"""
                           r"""|["']\s*(==|!=)\s*\w+(\.\w+)*\.(status|sync_status)\b""")


def test_templates_exist() -> None:
    assert len(SOURCES) > 30


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_templates_no_line_over_160_characters(source: Path) -> None:
    long = [f"{source.name}:{n}: {len(line)}" for n, line in enumerate(source.read_text().splitlines(), 1)
            if len(line) > 160]
    assert long == []


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_templates_read_states_through_properties_not_status_strings(source: Path) -> None:
    found = [f"{source.name}:{n}: {m.group(0)}" for n, line in enumerate(source.read_text().splitlines(), 1)
             for m in STATUS_STRING.finditer(line)]
    assert found == []


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_templates_compile_with_every_tag_on_one_line(source: Path) -> None:
    get_template(str(source.relative_to(TEMPLATES)))
