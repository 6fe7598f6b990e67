"""Fuzz cases: every committed stack, mutated by structure, type, value, YAML feature and file system.

Each case is a set of files (a stack file, sometimes a ``plan --out`` directory) and the
``aiperf-kueue`` arguments to run on them. Case ``i`` of seed ``s`` is always the same case, so
a failure found in a long run is replayed with ``--only i``.

A mutation that makes the input invalid for certain (a duplicate key, an alias bomb, a value
Pulumi would change) marks the case ``must_reject``: exit 0 there is a "suspicious accept".
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))


@dataclass
class Case:
    """One run of the CLI: files to write under a fresh directory, then ``argv`` (``{dir}`` is
    that directory)."""

    index: int
    mutations: list[str]
    files: dict[str, bytes]
    argv: list[str]
    must_reject: bool = False
    #: Other paths (besides the stack file) that exit-2 lines may start with.
    sources: list[str] = field(default_factory=list)
    #: Directories that must not exist after exit 2 (``{dir}``-relative).
    must_not_write: list[str] = field(default_factory=list)
    #: The stack file (``{dir}``-relative), for the loader-level differential check.
    stack_file: str = ""
    #: Whether a ``plan --out`` directory is made first (for ``diff`` cases).
    plan_first: str = ""


# --- values: raw YAML spellings, by what they are

#: (raw YAML text, certainly invalid wherever it lands in a stack file)
SPELLINGS: list[tuple[str, bool]] = [
    ("yes", False),
    ("no", False),
    ("on", False),
    ("off", False),
    ("y", False),
    ("~", False),
    ("null", False),
    ("NULL", False),
    ('""', False),
    ("1:40", False),
    ("017", False),
    ("08", False),
    ("0o17", False),
    ("0x1F", False),
    ("0b101", False),
    ("1_000", False),
    ("4.0", False),
    ("1e6", False),
    ("1e21", False),
    ("-0.0", False),
    (".5", False),
    ("+12", False),
    ("0", False),
    ("-1", False),
    ("2147483648", False),
    ("9223372036854775807", False),
    ("9223372036854775808", False),
    ("18446744073709551616", False),
    ("9" * 4000, False),
    ("1e-999999999", False),
    ('"1e-999999999%"', False),
    ("1e999", False),
    (".nan", True),
    (".inf", True),
    ("-.inf", True),
    ("2020-01-01", True),
    ("2001-12-14t21:59:43.10-05:00", True),
    ("2020-02-30", False),
    ("!!binary aGVsbG8=", False),
    ("!!binary /w==", True),
    ("!!binary 'a b'", True),
    ("!!str 12", False),
    ('!!int "12"', False),
    ("!foo bar", True),
    ("!!bool maybe", True),
    ("!!timestamp 2020-01-01", True),
    ("!!float 3", False),
    ("!!int 1.5", True),
    ("!!null x", True),
    ("! 12", False),
    ('"7%"', False),
    ("7%", False),
    ('"100%"', False),
    ("true", False),
    ('"true"', False),
    ("True", False),
    ('"8"', False),
    ("8.5", False),
    ("[]", False),
    ("{}", False),
    ("[1, 2]", False),
    ("{a: 1}", False),
    ('"\\e[31mred\\e[0m"', False),
    ('"\\u202eevil"', False),
    ('"a\\tb"', False),
    ('"\\n leading"', True),
    ('"\\tx\\ny"', True),
    ('"x\\u0085y"', False),
    ('"x\\u2028y"', False),
    ('"\\0"', False),
    ("😀", False),
    ('"' + "a" * 64 + '"', False),
    ('"' + "a" * 254 + '"', False),
    ('"' + "b" * 300_000 + '"', True),
    ("!!set {a: ~}", True),
    ("!!omap [a: 1]", True),
    ("&x [*x]", True),
    ("&y {a: *y}", True),
    ("*undefined", True),
]

#: Mapping keys that are not text to yaml.v3 (Pulumi would rewrite them).
BAD_KEYS = ["~", "null", "true", "false", "1", "1.5", "0x10", "2020-01-01", "? [1, 2]", "? {a: 1}", ".nan"]

NEAR_MISSES = ["inventroy", "Inventory", "queue", "priority_classes", "jobz", "nodess", "gpu", "shares", "nodeLabel"]


def _billion_laughs(levels: int, width: int) -> str:
    lines = ['bomb0: &l0 ["lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"bomb{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


class _Raw:
    """Raw YAML text placed where a value or key goes."""

    def __init__(self, text: str) -> None:
        self.text = text


def _emit(document: Any) -> str:
    """YAML of ``document`` with every :class:`_Raw` written as its raw text."""
    raws: list[str] = []

    def mark(value: Any) -> Any:
        if isinstance(value, _Raw):
            raws.append(value.text)
            return f"RAWTOKEN{len(raws) - 1}Z"
        if isinstance(value, dict):
            return {mark(k): mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    text = yaml.safe_dump(mark(document), sort_keys=False, allow_unicode=True, width=10**9)
    return re.sub(r"RAWTOKEN(\d+)Z", lambda m: raws[int(m.group(1))], text)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a node under ``value``."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        root = root[part]
    return root


def _set(root: Any, path: tuple[Any, ...], value: Any) -> None:
    _get(root, path[:-1])[path[-1]] = value


# --- mutators on the document (structure, type, value); each returns markers of what it put in
# that makes the file certainly invalid: a :class:`_Raw` (value or key), ``(mapping, key)``, or
# ``("both", mapping, key, key)``. A later mutation may remove it, so only what is still there counts.

Marker = Any
Mutator = Callable[[random.Random, dict[str, Any]], list[Marker]]


def _objects_in(value: Any) -> list[Any]:
    """Every mapping, list, value and key object in ``value`` (by identity)."""
    out: list[Any] = [value]
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(k)
            out += _objects_in(v)
    elif isinstance(value, list):
        for v in value:
            out += _objects_in(v)
    return out


def present(doc: Any, markers: list[Marker]) -> bool:
    """Whether any invalid thing a mutation put in is still in ``doc``."""
    objects = {id(o) for o in _objects_in(doc)}
    for marker in markers:
        if isinstance(marker, _Raw):
            if id(marker) in objects:
                return True
        elif marker[0] == "both":
            _, mapping, first, second = marker
            if id(mapping) in objects and first in mapping and second in mapping:
                return True
        elif id(marker[0]) in objects and marker[1] in marker[0]:
            return True
    return False


def _config_path(rng: random.Random, doc: dict[str, Any]) -> tuple[Any, ...]:
    paths = [p for p in _paths(doc) if len(p) >= 2 and p[0] == "config"]
    return rng.choice(paths)


def m_value(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    path = _config_path(rng, doc)
    text, invalid = rng.choice(SPELLINGS)
    raw = _Raw(text)
    _set(doc, path, raw)
    return [raw] if invalid else []


def m_type(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    path = _config_path(rng, doc)
    _set(doc, path, rng.choice([None, True, False, 0, -7, 3.25, "text", [], {}, [1, "a"], {"k": "v"}]))
    return []


def m_delete(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    path = _config_path(rng, doc)
    parent = _get(doc, path[:-1])
    del parent[path[-1]]
    return []


def m_duplicate_item(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    lists = [p for p in _paths(doc) if isinstance(_get(doc, p), list) and _get(doc, p)]
    if not lists:
        return []
    items = _get(doc, rng.choice(lists))
    items.append(copy.deepcopy(rng.choice(items)))
    return []


#: Mappings whose keys are the user's own (chart values, labels, env): any key is allowed there.
_FREE_FORM = {"values", "nodeLabels", "labels", "annotations", "extra", "headers", "env", "extraResources", "share"}


def m_unknown_key(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    maps = [p for p in _paths(doc) if isinstance(_get(doc, p), dict) and len(p) >= 1]
    path = rng.choice(maps)
    target, key = _get(doc, path), rng.choice(NEAR_MISSES)
    target[key] = 1
    return [] if _FREE_FORM & {str(part) for part in path} or "spec" in path else [(target, key)]


def m_rename_key(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    maps = [p for p in _paths(doc) if isinstance(_get(doc, p), dict) and _get(doc, p) and len(p) >= 2]
    if not maps:
        return []
    target = _get(doc, rng.choice(maps))
    key = rng.choice(list(target))
    if not isinstance(key, str) or not key:
        return []
    i = rng.randrange(len(key))
    new = key[:i] + key[i + 1 :] if rng.random() < 0.5 else key[:i] + rng.choice("xz_-") + key[i:]
    if new in target or not new:
        return []
    target[new] = target.pop(key)
    return []


def m_bad_key(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    maps = [p for p in _paths(doc) if isinstance(_get(doc, p), dict) and len(p) >= 2]
    target = _get(doc, rng.choice(maps))
    raw = _Raw(rng.choice(BAD_KEYS))
    target[raw] = "x"
    return [raw]


def m_deep(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    depth = rng.choice([10, 60, 70, 200, 1000, 5000])
    flow = rng.random() < 0.5
    text = ("[" * depth + "1" + "]" * depth) if flow else "{a: " * depth + "1" + "}" * depth
    raw = _Raw(text)
    _set(doc, _config_path(rng, doc), raw)
    return [raw] if depth > 64 else []


def m_namespace(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    config = doc.get("config")
    if not isinstance(config, dict) or not config:
        return []
    key = rng.choice([k for k in config if isinstance(k, str)] or [None])
    if key is None:
        return []
    name = key.partition(":")[2] or key
    choice = rng.randrange(5)
    new = [f"aiperf_kueue:{name}", name, f"aiperf-kueue:config:{name}", f"Aiperf-Kueue:{name}", f"a:b:{name}"][choice]
    if choice == 1 and rng.random() < 0.5:
        config[new] = copy.deepcopy(config[key])  # both spellings: the same key twice
        return [("both", config, key, new)]
    config[new] = config.pop(key)
    return [(config, new)] if choice in (0, 3, 4) else []


def m_top_level(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    choice = rng.randrange(5)
    if choice == 0:
        doc["confg"] = doc.pop("config", {})
        return [(doc, "confg")]
    if choice == 1:
        doc["secretsprovider"] = "passphrase"
        doc["encryptionsalt"] = "v1:abc"
    elif choice == 2:
        doc["environment"] = ["dev-env"]
    elif choice == 3:
        doc["anchors"] = {"a": 1}  # a key Pulumi ignores, as YAML anchors are kept in: allowed
    else:
        doc["Config"] = {"a": 1}
        return [(doc, "Config")]
    return []


def m_secure(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    path = _config_path(rng, doc)
    _set(doc, path, rng.choice([{"secure": "v1:c2VjcmV0"}, {"secure": 7}, {"secure": None}, {"secure": "x", "y": 1}]))
    return []


def m_percent(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    paths = [p for p in _paths(doc) if p and p[-1] in ("headroom", "share")]
    if not paths:
        return []
    text, invalid = rng.choice(
        [("7", False), ("7.5", False), ('"7%"', False), ("7%", False), ('"7"', True), ("1e-999999999", False),
         ('"1e-999999999%"', True), ("101", True), ('"-1%"', True), ("1:40", True), ("0x10", False),
         ('"100 %"', True), ("33.333333333333333", False), (".nan", True)]
    )  # fmt: skip
    raw = _Raw(text)
    _set(doc, rng.choice(paths), raw)
    return [raw] if invalid else []


def m_count(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    paths = [p for p in _paths(doc) if p and p[-1] in ("nodes", "gpus")]
    if not paths:
        return []
    text, invalid = rng.choice(
        [('"8"', True), ("8.0", False), ("8.5", True), ("true", True), ("2147483648", False),
         ("9223372036854775808", True), ("9" * 4000, True), ("0x8", False), ("017", False), ("-1", True)]
    )  # fmt: skip
    raw = _Raw(text)
    _set(doc, rng.choice(paths), raw)
    return [raw] if invalid else []


#: Characters that make YAML resolve a plain scalar one way or another.
_SOUP = "0123456789+-._:eExXoObB~nNtTfFyY %!&*|>'\"#@`,[]{}?\\\t"
_SOUP_WORDS = ["0x", "0o", "0b", "1_0", ".inf", ".nan", "null", "true", "2020-", "-01", "T10:00:00", "Z", "e+", ":40"]


def m_soup(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    """A random scalar from the characters that steer resolution: both readers must agree on it."""
    parts = [rng.choice(_SOUP_WORDS) if rng.random() < 0.3 else rng.choice(_SOUP) for _ in range(rng.randint(1, 8))]
    text = "".join(parts).strip()
    if rng.random() < 0.3:
        quote = rng.choice(["'", '"'])
        text = quote + text.replace("'", "").replace('"', "").replace("\\", "") + quote
    _set(doc, _config_path(rng, doc), _Raw(text or "0"))
    return []


#: Every form of the Kubernetes quantity grammar (``resource.ParseQuantity``) and some it refuses:
#: (text, refused for CPU, refused for bytes and counts, refused where the operator reads CPU).
QUANTITY_FORMS: list[tuple[str, bool, bool, bool]] = [
    ("8", False, False, False),
    ("8Gi", True, False, True),
    ("2Ki", True, False, True),
    ("1Ei", True, False, True),
    ("1500m", False, True, False),
    ("1500u", False, True, True),
    ("7n", False, True, False),
    ("1k", False, False, True),
    ("4M", False, False, True),
    ("1E", False, False, True),
    ("1e3", False, False, True),
    ("2E1", False, False, True),
    ("5e-1", False, True, True),
    (".5", False, True, False),
    ("1.", False, False, False),
    ("+1", False, False, False),
    ("0.1Ki", True, True, True),
    ("12.5Mi", True, False, True),
    ("-1", True, True, True),
    ("0x10", True, True, True),
    ("8 ", True, True, True),
    ("8gi", True, True, True),
    ("", True, True, True),
]
#: Keys whose value is a quantity of CPU, and of bytes; and maps whose values are quantities by key.
_CPU_KEYS = {"cpu", "recordProcessorCpuRequest"}
_BYTE_KEYS = {"memory", "ephemeral-storage"}
_QUANTITY_MAPS = {"extraResources"}
_QUOTA_MAPS = {"nominalQuota", "borrowingLimit", "lendingLimit"}


def m_quantity(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    """Every quantity form at a typed quantity field: a pool's, a quota's, the operator's sizing."""
    paths = [
        p
        for p in _paths(doc)
        if p
        and isinstance(p[-1], str)
        and (
            p[-1] in _CPU_KEYS | _BYTE_KEYS
            or (len(p) >= 2 and p[-2] in _QUANTITY_MAPS)
            or (len(p) >= 3 and p[-3] in _QUOTA_MAPS)
        )
        and not isinstance(_get(doc, p), (dict, list))
        and "spec" not in p  # a job's podTemplate resources are the API server's to check
    ]
    if not paths:
        return []
    path = rng.choice(paths)
    text, cpu_bad, bytes_bad, operator_bad = rng.choice(QUANTITY_FORMS)
    raw = _Raw(json.dumps(text))
    _set(doc, path, raw)
    cpu = path[-1] in _CPU_KEYS
    invalid = (cpu_bad or ("sizing" in path and operator_bad)) if cpu else bytes_bad
    return [raw] if invalid else []


#: Characters no config string needs (controls, invisible and bidi ones), and the line breaks and tab,
#: which some strings may hold: (character, certainly refused anywhere).
CONTROL_CHARACTERS = [
    ("\x00", True), ("\x07", True), ("\x1b", True), ("\x7f", True), ("\x85", True), ("\u200b", True),
    ("\u2028", True), ("\u202e", True), ("\ufeff", True), ("\u2066", True), ("\n", False), ("\r", False),
    ("\t", False),
]  # fmt: skip


def m_control(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    """A control or invisible character inside any string of the config (a name, a URL, a header)."""
    paths = [p for p in _paths(doc) if len(p) >= 2 and p[0] == "config" and isinstance(_get(doc, p), str)]
    if not paths:
        return []
    path = rng.choice(paths)
    text = _get(doc, path)
    char, refused = rng.choice(CONTROL_CHARACTERS)
    at = rng.randint(0, len(text))
    raw = _Raw(json.dumps(text[:at] + char + text[at:]))
    _set(doc, path, raw)
    return [raw] if refused else []


#: Leaves whose value is one of a fixed set of words: a number or a list there is nonsense.
_ENUM_KEYS = {"type", "effect", "operator", "queueingStrategy", "stopPolicy", "apiVersion", "resourceMode", "mode"}


def m_type_leaf(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    """A type swap at a leaf, with the values messages must show short: a 41-digit number, a list of
    a thousand items, a wide mapping."""
    paths = [p for p in _paths(doc) if len(p) >= 2 and p[0] == "config" and not isinstance(_get(doc, p), (dict, list))]
    path = rng.choice(paths)
    value = rng.choice(
        [10**40, -(10**40), list(range(1000)), [str(i) for i in range(5)], {f"k{i}": i for i in range(50)}, 2.5, None]
    )
    raw = _Raw(json.dumps(value))
    _set(doc, path, raw)
    enum = isinstance(path[-1], str) and path[-1] in _ENUM_KEYS and "values" not in path and "extra" not in path
    return [raw] if enum and value is not None else []


def m_fleet(rng: random.Random, doc: dict[str, Any]) -> list[Marker]:
    """A fleet: 1,000 or 5,000 namespaces, or 1,000 ClusterQueues whose shares add up past 100%."""
    queues = doc["config"]["aiperf-kueue:queues"]
    first = queues["clusterQueues"][0]
    # A valid plan of 1,000 namespaces takes ~20 s on 2 cores: one fleet in ten, so a run stays in budget.
    choice = rng.choice([0, 1, 1, 1, 1, 2, 2, 2, 2, 2])
    if choice == 0:
        first["namespaces"] = list(first.get("namespaces") or []) + [{"name": f"fleet-{i}"} for i in range(1000)]
        return []
    if choice == 1:
        # 5,000 namespaces, one of them twice: refused (a plan of 5,000 is `make bench`'s, not each case's).
        first["namespaces"] = [{"name": f"fleet-{i}"} for i in range(5000)] + [{"name": "fleet-0"}]
        return [(first, "namespaces")]
    queues["clusterQueues"] = [
        {"name": f"team-{i}", "share": 1, "namespaces": [{"name": f"fleet-{i}"}]} for i in range(1000)
    ]
    return [(queues, "clusterQueues")]


DOC_MUTATORS: dict[str, Mutator] = {
    "quantity": m_quantity,
    "control": m_control,
    "type-leaf": m_type_leaf,
    "fleet": m_fleet,
    "soup": m_soup,
    "value": m_value,
    "type": m_type,
    "delete": m_delete,
    "duplicate-item": m_duplicate_item,
    "unknown-key": m_unknown_key,
    "rename-key": m_rename_key,
    "non-text-key": m_bad_key,
    "deep": m_deep,
    "namespace": m_namespace,
    "top-level": m_top_level,
    "secure": m_secure,
    "percent": m_percent,
    "count": m_count,
}


# --- mutators on the YAML text


def t_alias_bomb(rng: random.Random, text: str) -> tuple[str, bool]:
    levels, width = rng.choice([(3, 3), (5, 10), (9, 9), (12, 10), (4, 20)])
    target = f"*l{levels}"
    bomb = _billion_laughs(levels, width)
    expanded = width**levels
    lines = text.split("\n")
    spots = [i for i, line in enumerate(lines) if re.match(r"^\s+[\w.-]+: \S", line)]
    if not spots:
        return bomb + text, expanded > 100_000
    i = rng.choice(spots)
    lines[i] = re.sub(r": \S.*$", f": {target}", lines[i])
    return bomb + "\n".join(lines), expanded > 100_000


def t_duplicate_line(rng: random.Random, text: str) -> tuple[str, bool]:
    lines = text.split("\n")
    spots = [i for i, line in enumerate(lines) if re.match(r"^\s*[\w.:-]+: \S", line)]
    if not spots:
        return text, False
    i = rng.choice(spots)
    lines.insert(i + 1, lines[i])
    return "\n".join(lines), True


def t_merge(rng: random.Random, text: str) -> tuple[str, bool]:
    lines = text.split("\n")
    spots = [i for i, line in enumerate(lines) if re.match(r"^\s+[\w.-]+:$", line)]
    if not spots:
        return text, False
    i = rng.choice(spots)
    indent = len(lines[i]) - len(lines[i].lstrip()) + 2
    lines.insert(i + 1, " " * indent + rng.choice(["<<: *base", "<<: [*base, *base2]", "<<: *notamap", "<<: 3"]))
    header = "base: &base {extra: 1, name: merged}\nbase2: &base2 {other: 2}\nnotamap: &notamap [1]\n"
    return header + "\n".join(lines), False


def t_multidoc(rng: random.Random, text: str) -> tuple[str, bool]:
    end = rng.choice(["---\nconfig: {}\n", "--- [bad\n", "...\n"])
    return text + end, end != "...\n"  # '...' only ends the document


def t_encoding(rng: random.Random, text: str) -> tuple[str, bool]:
    choice = rng.randrange(5)
    if choice == 0:
        return "\ufeff" + text, False
    if choice == 1:
        return text.replace("\n", "\r\n"), False
    if choice == 2:
        return text.replace("  ", "\t", 1), True
    if choice == 3:
        return text + "# comment \u202e with bidi\n", False
    return text.replace(":", ": \u00a0", 1), False


def t_truncate(rng: random.Random, text: str) -> tuple[str, bool]:
    return text[: rng.randrange(len(text) + 1)], False


def t_tag_collection(rng: random.Random, text: str) -> tuple[str, bool]:
    lines = text.split("\n")
    spots = [i for i, line in enumerate(lines) if re.match(r"^\s+[\w.-]+:$", line)]
    if not spots:
        return text, False
    i = rng.choice(spots)
    tag = rng.choice(["!!map", "!!set", "!foo", "!!omap"])
    lines[i] = f"{lines[i]} {tag}"
    return "\n".join(lines), tag != "!!map"


TEXT_MUTATORS: dict[str, Callable[[random.Random, str], tuple[str, bool]]] = {
    "alias-bomb": t_alias_bomb,
    "duplicate-key": t_duplicate_line,
    "merge-key": t_merge,
    "multi-document": t_multidoc,
    "encoding": t_encoding,
    "truncate": t_truncate,
    "collection-tag": t_tag_collection,
}


def t_bytes(rng: random.Random, data: bytes) -> tuple[bytes, bool]:
    choice = rng.randrange(3)
    if choice == 0:
        i = rng.randrange(len(data) + 1)
        return data[:i] + b"\xff\xfe" + data[i:], True
    if choice == 1:
        i = rng.randrange(len(data) + 1)
        return data[:i] + b"\x00" + data[i:], True
    return b"x: " + b"y" * (4 * 2**20 + 10) + b"\n" + data, True


# --- file system


STACK_NAMES = ["fuzz", "a::b", "a b", "x" * 101, "\x1b[31mred", "ok.name_1-2", "", "ünïcode", "a/b"]


def generate(index: int, seed: int = 0) -> Case:
    """Case ``index`` of the run with ``seed``."""
    rng = random.Random(f"{seed}:{index}")
    source = rng.choice(SEEDS)
    doc = yaml.safe_load(source.read_text())
    mutations: list[str] = []
    markers: list[Marker] = []
    kind = rng.random()
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        name = rng.choice(list(DOC_MUTATORS))
        try:
            markers += DOC_MUTATORS[name](rng, doc)
        except (IndexError, KeyError, TypeError):
            continue
        mutations.append(name)
    invalid = present(doc, markers)
    text = _emit(doc)
    if rng.random() < 0.35:
        name = rng.choice(list(TEXT_MUTATORS))
        text, certain = TEXT_MUTATORS[name](rng, text)
        # A cut can remove whatever made the file invalid.
        invalid = certain if name == "truncate" else invalid or certain
        mutations.append(name)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:
        data, certain = t_bytes(rng, data)
        invalid |= certain
        mutations.append("bytes")
    stack = "fuzz"
    if rng.random() < 0.08:
        stack = rng.choice(STACK_NAMES)
        mutations.append("stack-name")
        invalid |= stack != "fuzz" and stack != "ok.name_1-2"
    file_name = f"Pulumi.{stack}.yaml"
    case = Case(index, [f"{source.stem.removeprefix('Pulumi.')}:{m}" for m in mutations] or ["unchanged"], {}, [])
    case.must_reject = invalid
    if "/" in stack or len(file_name.encode()) > 255:
        # Not a file that can exist: the argument itself is the input.
        case.argv = ["plan", "{dir}/" + file_name, "--out", "{dir}/out"]
        case.must_reject = True
        case.must_not_write = ["out"]
        return case
    case.files[file_name] = data
    case.stack_file = file_name
    if kind < 0.85:
        case.argv = ["plan", "{dir}/" + file_name, "--out", "{dir}/out"]
        case.must_not_write = ["out"]
    elif kind < 0.93:
        _diff_case(rng, case, file_name)
    else:
        _file_system_case(rng, case, file_name)
    return case


def _diff_case(rng: random.Random, case: Case, file_name: str) -> None:
    """``diff`` of a committed stack against the mutated one, or against a mutated plan directory."""
    base = rng.choice(SEEDS)
    if rng.random() < 0.5:
        case.argv = ["diff", str(base), "{dir}/" + file_name, "--out", "{dir}/report.md"]
        case.mutations.append("diff-stack")
        return
    case.plan_first = str(base)
    case.mutations = [f"{base.stem.removeprefix('Pulumi.')}:plan-dir"]
    case.must_reject = False
    target = rng.choice(["plan.json", "resources.json"])
    corruption = rng.choice(["deep", "nan", "type", "truncate", "bytes", "bigint", "none", "field", "field", "field"])
    if corruption == "field":
        # A wrong type at any one field of the file, chosen when the file is there.
        corruption = f"field:{rng.randrange(2**32)}"
    case.files[f"corrupt/{target}"] = corruption.encode()
    case.mutations.append(f"{target}:{corruption.partition(':')[0]}")
    case.must_reject = corruption in ("deep", "nan", "truncate", "bytes", "bigint")
    case.argv = ["diff", "{dir}/plan", str(base), "--out", "{dir}/report.md"]
    case.sources = ["{dir}/plan"]
    case.must_not_write = ["report.md"]


def corrupt(path: Path, how: str) -> None:
    """Corrupt a ``plan --out`` file in place."""
    text = path.read_text()
    if how == "deep":
        path.write_text('{"stack": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif how == "nan":
        number = re.compile(r'(": *)(-?[0-9]+)')
        path.write_text(number.sub(r"\1NaN", text, count=1) if number.search(text) else "NaN")
    elif how == "type":
        value = json.loads(text)
        path.write_text(json.dumps(list(value) if isinstance(value, dict) else {"a": value}))
    elif how == "truncate":
        path.write_text(text[: len(text) // 2])
    elif how == "bytes":
        path.write_bytes(b"\xff" + text.encode())
    elif how == "bigint":
        path.write_text("[" + "9" * 5000 + "]")
    elif how.startswith("field:"):
        rng = random.Random(how)
        value = json.loads(text)
        fields = [p for p in _paths(value) if p]
        _set(value, rng.choice(fields), rng.choice([None, True, 7, "x", [1, 2], {"a": 1}, {"a": {"b": 1}}, []]))
        path.write_text(json.dumps(value))


def _file_system_case(rng: random.Random, case: Case, file_name: str) -> None:
    choice = rng.randrange(6)
    case.must_not_write = ["out"]
    if choice == 0:
        case.files = {f"{file_name}/inside": b"a directory, not a file"}
        case.argv = ["plan", "{dir}/" + file_name, "--out", "{dir}/out"]
        case.mutations.append("stack-is-a-directory")
        case.must_reject = True
    elif choice == 1:
        case.files["out"] = b"a file where the plan directory goes"
        case.argv = ["plan", "{dir}/" + file_name, "--out", "{dir}/out"]
        case.mutations.append("out-is-a-file")
        case.must_reject = True
        case.must_not_write = []
    elif choice == 2:
        case.files["blocker"] = b"a file"
        case.argv = ["plan", "{dir}/" + file_name, "--out", "{dir}/blocker/out"]
        case.mutations.append("out-under-a-file")
        case.must_reject = True
        case.must_not_write = []
    elif choice == 3:
        case.files = {}
        case.argv = ["plan", "{dir}/" + file_name, "--out", "{dir}/out"]
        case.mutations.append("missing-file")
        case.must_reject = True
    elif choice == 4:
        case.files[file_name] = b""
        case.argv = ["plan", "{dir}/" + file_name, "--out", "{dir}/out"]
        case.mutations.append("empty-file")
        case.must_reject = True
    else:
        rev = rng.choice(["HEAD", "no-such-rev", "-p", "HEAD~999999", "x" * 300, "HEAD^{tree}"])
        stack = rng.choice(["dev", "prod", "nope", "../../etc/passwd", "a" * 300, "stacks/Pulumi.dev.yaml"])
        case.argv = ["diff", f"{rev}:{stack}", "dev", "--out", "{dir}/report.md"]
        case.mutations.append("revision-argument")
        case.sources = [f"{rev}:", rev[:80], f"{rev}:{stack}"[:80], "stacks/"]
        case.must_not_write = ["report.md"]
        case.must_reject = stack in ("nope", "../../etc/passwd", "a" * 300) or rev in (
            "no-such-rev",
            "-p",
            "x" * 300,
            "HEAD~999999",
        )
