"""How everything aiperf-kueue prints or writes is laid out: text columns, Markdown tables, JSON, YAML.

One writer for each shape, so that ``plan``'s console text and ``drift``'s table align alike, every
Markdown table (``diff`` and ``plan --format markdown``, ``simulate``'s timeline, the generated
docs) escapes its cells alike, and every JSON and YAML file is written alike. What goes in the
rows is decided where the data is (:mod:`aiperf_kueue.cli.report`, :mod:`aiperf_kueue.review.markdown`,
:mod:`aiperf_kueue.simulate.report`...); only the layout lives here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

#: LibYAML's emitter where PyYAML was built with it (its wheels are), else PyYAML's own: the same
#: text for manifests, several times faster on the thousands of them a large stack has.
FAST_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as left-aligned text columns two spaces apart, each line without trailing spaces
    (the first row is the header, if there is one)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def markdown_cell(text: str) -> str:
    """Table-cell safe: no pipes or line breaks that would split the row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, escape: bool = True) -> list[str]:
    """A GitHub table: header, separator, rows; every row as wide as the header. ``escape``: each
    cell made safe by :func:`markdown_cell` (off for cells already written as Markdown, pipes escaped)."""
    cell = markdown_cell if escape else str
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells under a header of {len(header)}: {list(row)}")
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return lines


def json_text(data: Any, *, ensure_ascii: bool = True) -> str:
    """A JSON document as every file of aiperf-kueue is written: two-space indents, keys in their
    order, a final newline (``ensure_ascii=False``: non-ASCII text as it is)."""
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=ensure_ascii) + "\n"


def yaml_text(data: Any, dumper: type[yaml.SafeDumper] = FAST_DUMPER) -> str:
    """Block-style YAML, keys in their order (``yaml.safe_dump(data, sort_keys=False)``), with ``dumper``."""
    return yaml.dump(data, Dumper=dumper, sort_keys=False, default_flow_style=False)
