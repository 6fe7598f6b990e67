"""Rewrite ``aiperf-kueue:inventory`` in a stack file and leave every other byte as it was.

A stack file is reviewed in pull requests, so the import must change only what it owns. The
file is read with a round-trip YAML library (ruamel.yaml: comments, quoting and key order
survive), the inventory is updated in place (an existing pool keeps its comments, its name and
every field the import does not own), the document is written out, and then only the lines of
the ``aiperf-kueue:inventory`` entry are taken from that output and spliced into the original
text. Everything outside that entry is the original text byte for byte, by construction; the
result is read back and compared with what was meant before it is returned.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable, Mapping
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.error import YAMLError as RuamelYAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from aiperf_kueue.common.errors import PROJECT, ConfigError, Problem
from aiperf_kueue.inventory.inventory_nodes import (
    DEFAULT_GPU_RESOURCE,
    OWNED_FIELDS,
    ExistingPool,
    InventoryImport,
    PoolImport,
)

INVENTORY_KEY = f"{PROJECT}:inventory"
QUEUES_KEY = f"{PROJECT}:queues"
#: Where a new inventory entry goes: after this key when the stack has it, else first.
_AFTER = f"{PROJECT}:kueue"
#: What a new stack file gets besides the inventory, so that it plans at once.
STARTER_QUEUES = {
    "clusterQueues": [{"name": "benchmarks", "share": 100, "namespaces": [{"name": "aiperf-benchmarks"}]}]
}


class SpliceError(Exception):
    """The edited file would not read back as intended (a bug here, never the user's input)."""


def _yaml(mapping: int = 2, offset: int = 2) -> YAML:
    rt = YAML()  # round-trip
    rt.preserve_quotes = True
    rt.width = 4096  # never fold a long value onto a second line
    rt.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    return rt


def _load(rt: YAML, text: str, source: str) -> Any:
    try:
        return rt.load(text)
    except MarkedYAMLError as exc:
        # One line, as the stack file reader words it: where, then what.
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = exc.problem or exc.context or "unreadable"
        raise ConfigError(source, [Problem("", f"not valid YAML{where}: {what}")]) from None
    except RuamelYAMLError as exc:
        raise ConfigError(source, [Problem("", f"not valid YAML: {str(exc).splitlines()[0]}")]) from None


def pool_values(pool: PoolImport) -> dict[str, Any]:
    """A new pool as written: ``name`` first, then the fields the nodes give."""
    return {"name": pool.name, **pool.values()}


def inventory_value(result: InventoryImport, current: Any) -> dict[str, Any]:
    """The plain ``aiperf-kueue:inventory`` value the import means to write (for tests and checks)."""
    node = apply_import(_plain_to_commented(current), result)
    return _plain(node)  # type: ignore[no-any-return]


def apply_import(current: Any, result: InventoryImport) -> CommentedMap:
    """Update (in place, when it is a mapping) or create the inventory node: pools in
    ``result.order()``, existing ones updated field by field so that what is unchanged keeps
    its quoting and comments, new ones appended; ``headroom`` and any other key stay."""
    inventory = current if isinstance(current, CommentedMap) else CommentedMap()
    old = inventory.get("pools")
    old_items = list(old) if isinstance(old, list) else []
    items: list[Any] = []
    for pool in result.order():
        if isinstance(pool, ExistingPool):
            items.append(old_items[pool.index])
        elif pool.existing is not None and isinstance(old_items[pool.existing], CommentedMap):
            item = old_items[pool.existing]
            _update(item, pool.values())
            if "name" not in item:
                item.insert(0, "name", pool.name)
            items.append(item)
        else:
            item = _commented(pool_values(pool))
            for key, comment in pool.comments.items():
                item.yaml_add_eol_comment(comment, key)
            items.append(item)
    if isinstance(old, CommentedSeq):
        old[:] = items  # the same sequence: comments on the ``pools`` key stay
    else:
        inventory["pools"] = CommentedSeq(items)
    return inventory


def _update(item: CommentedMap, values: Mapping[str, Any]) -> None:
    """Set the owned fields of an existing pool that changed; drop the ones the nodes no longer give."""
    order = ["name", *OWNED_FIELDS]
    for key in OWNED_FIELDS:
        if key == "gpuResource":
            if "gpus" not in values:
                continue  # a pool without GPUs ignores it: leave what the user wrote
            wanted = values.get("gpuResource", DEFAULT_GPU_RESOURCE)
            if "gpuResource" not in item and wanted == DEFAULT_GPU_RESOURCE:
                continue
            _set(item, key, wanted, order)
        elif key == "extraResources":
            if key in values:
                current = item.get(key)
                if isinstance(current, CommentedMap):
                    for res, amount in values[key].items():
                        if current.get(res) != amount:
                            current[res] = _scalar(amount)
                else:
                    _set(item, key, values[key], order)
        elif key in values:
            _set(item, key, values[key], order)
        elif key in item:
            del item[key]


def _set(item: CommentedMap, key: str, value: Any, order: list[str]) -> None:
    if key in item:
        if _plain(item[key]) != value:
            item[key] = _commented(value)
        return
    before = [k for k in order[: order.index(key)] if k in item]
    position = list(item).index(before[-1]) + 1 if before else 0
    item.insert(position, key, _commented(value))


def _scalar(value: Any) -> Any:
    # "63" must stay a string: plain, YAML would read it back as the number 63.
    if isinstance(value, str) and yaml.safe_load(value) != value:
        return DoubleQuotedScalarString(value)
    return value


def _commented(value: Any) -> Any:
    if isinstance(value, Mapping):
        out = CommentedMap()
        for k, v in value.items():
            out[k] = _commented(v)
        return out
    if isinstance(value, list):
        return CommentedSeq([_commented(v) for v in value])
    return _scalar(value)


def _plain_to_commented(value: Any) -> Any:
    return _commented(value) if isinstance(value, Mapping) else None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def new_stack_text(result: InventoryImport) -> str:
    """A new stack file: the inventory and a starter ClusterQueue, so that it plans at once."""
    rt = _yaml()
    config = CommentedMap()
    config[INVENTORY_KEY] = apply_import(None, result)
    config[QUEUES_KEY] = _commented(STARTER_QUEUES)
    config.yaml_set_comment_before_after_key(
        QUEUES_KEY, before="A starting point: one ClusterQueue with every pool's quota. Edit it.", indent=2
    )
    doc = CommentedMap()
    doc["config"] = config
    doc.yaml_set_start_comment("Inventory written by `aiperf-kueue inventory import`; review it before `pulumi up`.")
    out = io.StringIO()
    rt.dump(doc, out)
    return out.getvalue()


def set_inventory(text: str, source: str, edit: Callable[[Any], CommentedMap]) -> str:
    """``text`` with ``config["aiperf-kueue:inventory"]`` replaced by ``edit(current node)``.

    Only the lines of that entry change (or, without one, new lines are inserted after
    ``aiperf-kueue:kueue``, else first in ``config``). :class:`ConfigError` if ``text`` is not
    YAML; :class:`SpliceError` if the result would not read back as meant.
    """
    mapping, offset = _indents(text)
    rt = _yaml(mapping, offset)
    doc = _load(rt, text, source)
    lines = text.splitlines(keepends=True)
    config = doc.get("config") if isinstance(doc, CommentedMap) else None
    if not isinstance(config, CommentedMap) or config.fa.flow_style() or not config:
        return _whole_document(text, source, doc, edit)
    keys = list(config)
    trailing: list[str] = []
    if INVENTORY_KEY in config:
        start = config.lc.key(INVENTORY_KEY)[0]
        following = _end_of_entry(doc, config, keys, INVENTORY_KEY, len(lines))
        end = _trim(lines, start, following)
        if end < following:
            # The comments after the entry introduce what follows, but ruamel hangs them on the
            # inventory's last value, which the edit may move or replace: edit without them, and
            # put them back where they were.
            trailing = lines[end:following]
            lines = lines[:end] + lines[following:]
            doc = _load(rt, "".join(lines), source)
            config = doc["config"]
        column = config.lc.key(INVENTORY_KEY)[1]
        config[INVENTORY_KEY] = edit(config[INVENTORY_KEY])
    else:
        column = config.lc.key(keys[0])[1]
        if _AFTER in config:
            position = keys.index(_AFTER) + 1
            start = end = _trim(lines, config.lc.key(_AFTER)[0], _end_of_entry(doc, config, keys, _AFTER, len(lines)))
        else:
            position = 0
            start = end = _leading_comments(lines, config.lc.key(keys[0])[0])
        config.insert(position, INVENTORY_KEY, edit(None))
    block = _dumped_block(rt, doc, column)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    block = [line.rstrip("\n") + newline for line in block]
    head = lines[:start]
    if head and not head[-1].endswith("\n"):
        head[-1] += newline
    result = "".join([*head, *block, *trailing, *lines[end:]])
    _check(text, result, source, _plain(config[INVENTORY_KEY]))
    return result


def _indents(text: str) -> tuple[int, int]:
    """The file's mapping indent and sequence dash offset, so that the new lines look like the rest."""
    mapping, offset = 2, 2
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for line in lines:
        if line.startswith(" ") and not line.lstrip().startswith("- "):
            mapping = len(line) - len(line.lstrip())
            break
    for before, line in itertools.pairwise(lines):
        if before.rstrip().endswith(":") and line.lstrip().startswith("- "):
            offset = (len(line) - len(line.lstrip())) - (len(before) - len(before.lstrip()))
            break
    return max(mapping, 1), max(offset, 0)


def _end_of_entry(doc: CommentedMap, config: CommentedMap, keys: list[str], key: str, total: int) -> int:
    """The line where the entry after ``key`` starts (the next config key, the next top-level key, or the end)."""
    after = keys.index(key) + 1
    if after < len(keys):
        return int(config.lc.key(keys[after])[0])
    top = list(doc)
    following = top.index("config") + 1
    return int(doc.lc.key(top[following])[0]) if following < len(top) else total


def _trim(lines: list[str], start: int, end: int) -> int:
    """Leave out the blank and comment lines that end an entry: they introduce what follows."""
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def _leading_comments(lines: list[str], line: int) -> int:
    while line > 0 and lines[line - 1].lstrip().startswith("#"):
        line -= 1
    return line


def _dumped_block(rt: YAML, doc: CommentedMap, column: int) -> list[str]:
    """The inventory entry's lines as ruamel writes the edited document, shifted to ``column``."""
    out = io.StringIO()
    rt.dump(doc, out)
    text = out.getvalue()
    again = rt.load(text)
    config = again["config"]
    keys = list(config)
    lines = text.splitlines(keepends=True)
    start = config.lc.key(INVENTORY_KEY)[0]
    end = _trim(lines, start, _end_of_entry(again, config, keys, INVENTORY_KEY, len(lines)))
    shift = column - config.lc.key(INVENTORY_KEY)[1]
    block = lines[start:end]
    if shift > 0:
        return [(" " * shift + line) if line.strip() else line for line in block]
    if shift < 0:
        if any(line.strip() and not line.startswith(" " * -shift) for line in block):
            raise SpliceError("the new inventory lines cannot be indented like the stack file's")
        return [line[-shift:] if line.strip() else line for line in block]
    return block


def _whole_document(text: str, source: str, doc: Any, edit: Callable[[Any], CommentedMap]) -> str:
    """A file without a block ``config`` mapping to splice into: append one, or (``config: {}``,
    ``config:`` with nothing) write the document anew, round-trip, comments kept."""
    rt = _yaml(*_indents(text))
    if doc is None or (isinstance(doc, CommentedMap) and "config" not in doc):
        config = CommentedMap()
        config[INVENTORY_KEY] = edit(None)
        out = io.StringIO()
        rt.dump({"config": config}, out)
        head = text if not text or text.endswith("\n") else text + "\n"
        result = head + out.getvalue()
    elif isinstance(doc, CommentedMap) and (doc["config"] is None or isinstance(doc["config"], CommentedMap)):
        config = doc["config"] if doc["config"] is not None else CommentedMap()
        config[INVENTORY_KEY] = edit(config.get(INVENTORY_KEY))
        doc["config"] = config
        out = io.StringIO()
        rt.dump(doc, out)
        result = out.getvalue()
    else:
        raise ConfigError(source, [Problem("", "a stack file must be a mapping with a 'config' key")])
    _check(text, result, source, _plain(config[INVENTORY_KEY]))
    return result


def _check(before: str, after: str, source: str, inventory: Any) -> None:
    """``after`` must read as ``before`` with only the inventory replaced."""
    try:
        old = yaml.safe_load(before) or {}
        new = yaml.safe_load(after)
    except yaml.YAMLError as exc:
        raise SpliceError(f"{source}: the edited stack file does not read back: {exc}") from None
    expected = dict(old)
    expected["config"] = {**(old.get("config") or {}), INVENTORY_KEY: inventory}
    if new != expected:
        raise SpliceError(f"{source}: the edited stack file does not read back as intended")
