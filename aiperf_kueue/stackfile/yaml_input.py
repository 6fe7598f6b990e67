# One job in ~630 lines: the Pulumi CLI's reading of a stack file, step by step; split, the steps only call each other.
"""Stack files read as the Pulumi CLI reads them, within bounds (docs/yaml.md says how and why).

Upstream: pulumi v3.274.0 sdk/go/common/resource/config (stack files via gopkg.in/yaml.v3 v3.0.1 decode.go, parser.go)

The Pulumi CLI (v3.274.0) reads ``Pulumi.<stack>.yaml`` with ``gopkg.in/yaml.v3`` v3.0.1: it
decodes the file into Go values, writes them back as YAML, decodes that into its config map,
and hands each value to the program as text (objects as JSON). This module does the same steps,
so that ``plan`` sees exactly the values ``pulumi up`` hands the program:

- libyaml (PyYAML's C parser, the library yaml.v3 was ported from) turns the text into events;
  nodes are built here, with yaml.v3's rules for tags, duplicate keys, merge keys (``<<``) and
  aliases, and :mod:`aiperf_kueue.stackfile.go_yaml` resolves plain scalars as yaml.v3 does;
- numbers come out as the program receives them: yaml.v3 writes a float with Go's shortest
  format and reads it back (``4.0`` is the integer 4), and the config values reach the program
  as Go-encoded JSON (integers beyond int64 become floats);
- spellings Pulumi would silently turn into something other than what was written (an unquoted
  date becomes ``2020-01-01 00:00:00 +0000 UTC``, a mapping key ``~`` becomes ``<nil>``, a
  multi-line text starting with a space loses its first line break) are refused with the fix,
  and so is everything yaml.v3 refuses;
- every bound in :mod:`aiperf_kueue.common.limits` is checked while reading: file size, nesting,
  nodes after alias expansion, string length.

Problems are :class:`~aiperf_kueue.common.errors.ConfigError` lines naming the key path and, for
YAML syntax, the line and column.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from aiperf_kueue.common import limits
from aiperf_kueue.common.display import escape, quoted, show
from aiperf_kueue.common.errors import PROJECT, ConfigError, Problem, key_path
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.stackfile import go_yaml

DocPath = tuple[str | int, ...]

#: The top-level keys of a stack file (``workspace.ProjectStack``); Pulumi ignores any other.
STACK_FILE_KEYS = ("secretsprovider", "encryptedkey", "encryptionsalt", "config", "environment")

#: Where a multi-line text must not start: yaml.v3 writes it back as a literal block and loses
#: the first line break, or writes a tab where it then refuses one.
_LEADING_BLANKS = " \t\n\r\x85\u2028\u2029"


@dataclass(frozen=True)
class Secure:
    """A ``{secure: <ciphertext>}`` value."""

    ciphertext: str


@dataclass(frozen=True)
class StackDocument:
    """What a stack file holds, as Pulumi reads it."""

    config: dict[str, Any]
    """Full config key (``aiperf-kueue:inventory``, ``kubernetes:context``) → value: ``None``,
    ``bool``, ``int``, ``float``, ``str``, :class:`Secure`, or lists and mappings of these, with
    numbers as the program receives them. Keys without a namespace carry the project's."""


class _StopError(Exception):
    """Reading cannot go on; the problems so far say why."""


class _Node:
    __slots__ = ("anchor", "flow", "items", "kind", "line", "plain", "tag", "target", "value")

    def __init__(self, kind: str, tag: str, line: int, value: str = "", plain: bool = False) -> None:
        self.kind = kind  # "scalar", "map", "seq" or "alias"
        self.tag = tag  # "" when none was written
        self.line = line  # 1-based
        self.value = value  # scalar text, or the anchor name of an alias
        self.plain = plain  # a plain (unquoted, not block) scalar
        self.items: list[_Node] = []  # map: key, value, key, value...; seq: the items
        self.target: _Node | None = None  # what an alias refers to
        self.anchor = ""
        self.flow = False  # a collection written in flow style ([ ], { })


@dataclass
class _Reader:
    source: str
    problems: list[Problem] = field(default_factory=list)
    decodes: int = 0
    alias_decodes: int = 0
    alias_depth: int = 0
    expanding: set[int] = field(default_factory=set)
    merged: set[str] | None = None

    # --- problems

    def problem(self, path: DocPath, message: str) -> None:
        if len(self.problems) < limits.MAX_PROBLEMS:
            self.problems.append(_located(path, message))

    def stop(self, path: DocPath, message: str) -> _StopError:
        self.problem(path, message)
        return _StopError()

    # --- events → nodes (yaml.v3's parser.go)

    def compose(self, text: str) -> _Node | None:
        loader = yaml.CSafeLoader(text)
        try:
            return self._compose(loader)
        except yaml.MarkedYAMLError as exc:
            raise self.stop(self._path_at_error, _syntax(exc)) from None
        except yaml.YAMLError as exc:
            raise self.stop(self._path_at_error, f"not valid YAML: {escape(str(exc)).splitlines()[0]}") from None
        finally:
            loader.dispose()

    _path_at_error: DocPath = ()

    def _compose(self, loader: yaml.CSafeLoader) -> _Node | None:
        anchors: dict[str, _Node] = {}
        stack: list[_Node] = []
        root: _Node | None = None
        nodes = 0
        documents = 0
        while loader.check_event():
            self._path_at_error = _open_path(stack)
            event = loader.get_event()
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise self.stop(
                        (),
                        f"line {_line(event)}: a second YAML document ('---'); Pulumi reads only "
                        "the first, so a stack file must hold one",
                    )
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                stack.pop()
                continue
            if not isinstance(
                event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent, yaml.AliasEvent)
            ):
                continue
            nodes += 1
            if nodes > limits.MAX_NODES:
                raise self.stop(_open_path(stack), f"more than {limits.MAX_NODES:,} YAML nodes")
            line = _line(event)
            if isinstance(event, yaml.AliasEvent):
                node = _Node("alias", "", line, event.anchor or "")
                node.target = anchors.get(node.value)
                if node.target is None:
                    raise self.stop(_open_path(stack), f"line {line}: unknown anchor {quoted(node.value)} referenced")
            elif isinstance(event, yaml.ScalarEvent):
                node = _Node("scalar", event.tag or "", line, event.value, plain=not event.style)
                self._check_scalar(node, stack)
                if node.plain and "?" in node.value and any(open_node.flow for open_node in stack):
                    # libyaml reads [a?b] as one value; yaml.v3 (Pulumi) ends the value at '?' and fails.
                    raise self.stop(
                        _open_path(stack),
                        f"line {line}: {quoted(node.value)}: a '?' inside an unquoted value in [ ] or {{ }} is an "
                        "error to Pulumi's YAML reader; quote the value",
                    )
            else:
                node = _Node("map" if isinstance(event, yaml.MappingStartEvent) else "seq", event.tag or "", line)
                node.flow = bool(event.flow_style)
            anchor = getattr(event, "anchor", None)
            if anchor and node.kind != "alias":
                node.anchor = anchor
                anchors[anchor] = node  # a later anchor of the same name wins, as in yaml.v3
            if stack:
                stack[-1].items.append(node)
            else:
                root = node
            if node.kind in ("map", "seq"):
                stack.append(node)
                if len(stack) > limits.MAX_DEPTH:
                    raise self.stop(_open_path(stack), f"nested more than {limits.MAX_DEPTH} levels deep")
        return root

    def _check_scalar(self, node: _Node, stack: list[_Node]) -> None:
        is_key = bool(stack) and stack[-1].kind == "map" and len(stack[-1].items) % 2 == 0
        limit = limits.MAX_KEY if is_key else limits.MAX_STRING
        if len(node.value) > limit:
            what = "mapping key" if is_key else "string"
            raise self.stop(
                _open_path(stack), f"a {what} of {len(node.value):,} characters, more than the {limit:,} allowed"
            )

    # --- nodes → values (yaml.v3's decode.go, decoding into interface{})

    def decode(self, node: _Node, path: DocPath, depth: int, into: dict[str, Any] | None = None) -> Any:
        self.decodes += 1
        if self.alias_depth > 0:
            self.alias_decodes += 1
        if self.decodes > limits.MAX_NODES:
            raise self.stop(path, f"more than {limits.MAX_NODES:,} YAML nodes once aliases are expanded")
        if (
            self.alias_decodes > 100
            and self.decodes > 1000
            and self.alias_decodes / self.decodes > _allowed_alias_ratio(self.decodes)
        ):
            raise self.stop(path, "aliases expand to most of the document (Pulumi refuses it too: excessive aliasing)")
        if depth > limits.MAX_DEPTH:
            raise self.stop(path, f"nested more than {limits.MAX_DEPTH} levels deep once aliases are expanded")
        if node.kind == "alias":
            assert node.target is not None
            if id(node) in self.expanding:
                raise self.stop(path, f"anchor {quoted(node.value)} contains an alias to itself")
            self.expanding.add(id(node))
            self.alias_depth += 1
            try:
                return self.decode(node.target, path, depth, into)
            finally:
                self.alias_depth -= 1
                self.expanding.discard(id(node))
        if node.kind == "scalar":
            return self.scalar(node, path)
        self.collection_tag(node, path)
        if node.kind == "seq":
            return [self.decode(item, (*path, i), depth + 1) for i, item in enumerate(node.items)]
        return self.mapping(node, path, depth, into)

    def scalar(self, node: _Node, path: DocPath) -> Any:
        # yaml.v3's parser treats the non-specific tag "!" as no tag at all.
        tag = "" if node.tag == "!" else go_yaml.short_tag(node.tag)
        if tag == go_yaml.STR or (tag == "" and not node.plain):
            return node.value
        try:
            rtag, value = go_yaml.resolve(tag, node.value)
        except go_yaml.ResolveError as exc:
            self.problem(path, f"line {node.line}: {exc} (Pulumi refuses it too)")
            return node.value
        if rtag == go_yaml.BINARY:
            return self.binary(node, path)
        if rtag == go_yaml.TIMESTAMP:
            self.problem(
                path,
                f"line {node.line}: {node.value} is a date/time to YAML, and Pulumi hands the program Go's text for it "
                f'("{node.value[:10]} 00:00:00 +0000 UTC" for a date); quote it to mean the text: "{node.value}"',
            )
            return node.value
        if tag not in ("", go_yaml.STR, go_yaml.INT, go_yaml.FLOAT, go_yaml.BOOL, go_yaml.NULL):
            self.problem(
                path,
                f"line {node.line}: tag {quoted(node.tag)} is not supported: Pulumi ignores it and reads the text "
                f"{quoted(node.value)}; remove the tag",
            )
        return value

    def binary(self, node: _Node, path: DocPath) -> str:
        try:
            data = base64.b64decode(node.value.replace("\n", "").replace("\r", ""), validate=True)
        except (binascii.Error, ValueError):
            self.problem(path, f"line {node.line}: !!binary value is not valid base64 (Pulumi refuses it too)")
            return ""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.problem(
                path,
                f"line {node.line}: !!binary value decodes to {len(data)} bytes that are not UTF-8 text; Pulumi would "
                "hand the program U+FFFD for the bytes it cannot read; write the text itself",
            )
            return ""

    def collection_tag(self, node: _Node, path: DocPath) -> None:
        tag = go_yaml.short_tag(node.tag)
        allowed = ("", "!", "!!map" if node.kind == "map" else "!!seq")
        if tag not in allowed:
            kind = "mapping" if node.kind == "map" else "list"
            self.problem(
                path,
                f"line {node.line}: tag {quoted(node.tag)} on a {kind} is not supported: Pulumi ignores it; remove it",
            )

    def mapping(self, node: _Node, path: DocPath, depth: int, into: dict[str, Any] | None) -> dict[str, Any]:
        pairs = list(zip(node.items[::2], node.items[1::2], strict=True))
        seen: dict[tuple[str, str], int] = {}
        duplicate = False
        for written, _ in pairs:
            if (written.kind, written.value) in seen:
                self.problem(
                    (*path, written.value),
                    f"line {written.line}: duplicate key {quoted(written.value)} "
                    f"(first at line {seen[(written.kind, written.value)]}); "
                    "Pulumi refuses duplicate keys: keep one"
                    + ("; to merge several, write <<: [*a, *b]" if _is_merge(written) else ""),
                )
                duplicate = True
            seen.setdefault((written.kind, written.value), written.line)
        out: dict[str, Any] = {} if into is None else into
        if duplicate:
            return out
        merged, self.merged = self.merged, None
        merge_node: _Node | None = None
        for key_node, value_node in pairs:
            if _is_merge(key_node):
                merge_node = value_node
                continue
            key = self.key(key_node, path, depth)
            if key is None:
                continue
            if merged is not None:
                if key in merged:
                    continue
                merged.add(key)
            out[key] = self.decode(value_node, (*path, key), depth + 1)
        self.merged = merged
        if merge_node is not None:
            self.merge(node, merge_node, out, path, depth)
        return out

    def key(self, node: _Node, path: DocPath, depth: int) -> str | None:
        key = self.decode(node, (*path, node.value if node.kind == "scalar" else "?"), depth + 1)
        if isinstance(key, str):
            return key
        where = (*path, node.value if node.kind == "scalar" else "?")
        if node.kind in ("map", "seq") or isinstance(key, (dict, list)):
            self.problem(where, f"line {node.line}: a mapping key must be text, not a {_kind(key)}")
        else:
            self.problem(
                where,
                f"line {node.line}: a mapping key must be text; YAML reads {node.value or '(empty)'} as {show(key)} "
                f'(Pulumi would make it {quoted(_go_key(key))}); quote it: "{node.value}"',
            )
        return None

    def merge(self, parent: _Node, merge: _Node, out: dict[str, Any], path: DocPath, depth: int) -> None:
        saved = self.merged
        if saved is None:
            self.merged = set()
            for key_node in parent.items[::2]:
                key = self.decode(key_node, (*path, "<<"), depth + 1)
                if isinstance(key, str):
                    self.merged.add(key)
        sources = merge.items if merge.kind == "seq" else [merge]
        for source in sources:
            target = source.target if source.kind == "alias" else source
            if target is None or target.kind != "map":
                self.merged = saved
                raise self.stop(
                    (*path, "<<"), f"line {merge.line}: a merge key (<<) takes a mapping or a list of mappings"
                )
            self.decode(source, path, depth, into=out)
        self.merged = saved


def read_stack_document(path: Path, source: str | None = None) -> StackDocument:
    """Read and check the stack file at ``path`` (problems named after ``source``, default the path)."""
    source = source if source is not None else str(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(limits.MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(source, [Problem("", f"cannot read stack file: {exc.strerror or exc}")]) from None
    if len(data) > limits.MAX_FILE_BYTES:
        raise ConfigError(
            source, [Problem("", f"a stack file of more than {limits.MAX_FILE_BYTES:,} bytes; that is the limit")]
        )
    return parse_stack_document(data, source)


def _read(data: bytes, source: str) -> tuple[Any, _Reader]:
    """The YAML document in DATA, bounded (aliases, depth, size), and the reader that read it (to add problems);
    :class:`ConfigError` naming SOURCE for every problem."""
    data = data.removeprefix(b"\xef\xbb\xbf")  # Pulumi strips a UTF-8 byte order mark
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(source, [Problem("", f"not UTF-8 text: {exc.reason} at byte {exc.start}")]) from None
    reader = _Reader(source)
    try:
        root = reader.compose(text)
        document = reader.decode(root, (), 0) if root is not None else None
    except _StopError:
        raise ConfigError(source, reader.problems) from None
    except RecursionError:
        raise ConfigError(source, [Problem("", f"nested more than {limits.MAX_DEPTH} levels deep")]) from None
    if reader.problems:
        raise ConfigError(source, reader.problems)
    return document, reader


def parse_stack_document(data: bytes, source: str) -> StackDocument:
    """A stack file's bytes as Pulumi reads them; :class:`ConfigError` for every problem."""
    document, reader = _read(data, source)
    for where, problem in _pulumi_problems(document, ()):
        # A number JSON cannot hold fails Pulumi only where it reads values: in the config.
        if where[:1] == ("config",) or "multi-line" in problem:
            reader.problem(where, problem)
    config = _config_section(document, reader)
    if reader.problems:
        raise ConfigError(source, reader.problems)
    return StackDocument(config)


def parse_yaml_document(data: bytes, source: str) -> Any:
    """Any YAML document (``kubectl get nodes -o yaml``), read with the same bounds as a stack file
    (aliases, depth, size); :class:`ConfigError` naming ``source`` for every problem."""
    return _read(data, source)[0]


def _config_section(document: Any, reader: _Reader) -> dict[str, Any]:
    if document is None:
        return {}
    if not isinstance(document, dict):
        reader.problem((), f"a stack file must be a mapping with a 'config' key, got {_kind(document)}")
        return {}
    for key in document:
        # Pulumi ignores other top-level keys, and a key that holds YAML anchors for the config is
        # a common idiom; a misspelling of a stack file key, or a file without 'config', is not.
        if key not in STACK_FILE_KEYS and (did_you_mean(key, STACK_FILE_KEYS) or "config" not in document):
            reader.problem(
                (key,),
                f"unknown top-level key in a stack file{did_you_mean(key, STACK_FILE_KEYS)}: Pulumi ignores it"
                + ("" if "config" in document else ", and the file has no 'config'")
                + f"; the keys Pulumi reads: {', '.join(STACK_FILE_KEYS)}",
            )
    raw = document.get("config")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        reader.problem(("config",), f"must be a mapping of config key to value, got {_kind(raw)}")
        return {}
    config: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for written, value in raw.items():
        full = _config_key(written, reader)
        if full is None:
            continue
        if full in spelled:
            reader.problem(
                ("config", written),
                f"sets {full} again (also as {quoted(spelled[full])}); Pulumi would keep one of them at random: "
                "keep one",
            )
            continue
        spelled[full] = written
        config[full] = _as_received(value)
    return config


def _config_key(written: str, reader: _Reader) -> str | None:
    """A stack file's config key as Pulumi reads it (``ParseKey``, after the project's namespace
    is added to bare keys), or ``None`` with a problem."""
    parts = written.split(":")
    if len(parts) == 1:
        return f"{PROJECT}:{written}"
    if len(parts) == 3 and parts[1] == "config":
        return f"{parts[0]}:{parts[2]}"
    if len(parts) != 2:
        reader.problem(
            ("config", written),
            "not a config key: Pulumi reads '<namespace>:<name>' (or '<name>' for this project's keys)",
        )
        return None
    namespace = parts[0]
    if namespace != PROJECT and did_you_mean(namespace, [PROJECT]):
        reader.problem(
            ("config", written),
            f"namespace {quoted(namespace)} is not this project's, so Pulumi hands the value to nothing; "
            f"did you mean '{PROJECT}:{parts[1]}'?",
        )
        return None
    return written


def _pulumi_problems(value: Any, path: DocPath) -> Iterator[tuple[DocPath, str]]:
    """Values Pulumi cannot hand the program as they were written."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path, f"{show(value)} is not a number JSON can hold; Pulumi refuses it ('json: unsupported value')"
    elif isinstance(value, str):
        if "\n" in value and value[0] in _LEADING_BLANKS:
            yield (
                path,
                (
                    f"{quoted(value)}: a multi-line text starting with a space or line break, which Pulumi's "
                    "stack file loader (yaml.v3) loses or refuses when it rewrites the file; start it with a visible "
                    "character"
                ),
            )
    elif isinstance(value, dict):
        for k, v in value.items():
            if "\n" in k and k[0] in _LEADING_BLANKS:
                yield (
                    (*path, k),
                    "a multi-line mapping key starting with a space or line break; Pulumi loses or refuses it",
                )
            yield from _pulumi_problems(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _pulumi_problems(v, (*path, i))


def _as_received(value: Any) -> Any:
    """``value`` as the program receives it: a float Go writes without a fraction is read back as
    an integer, an integer beyond int64 as a float; ``{secure: <text>}`` as :class:`Secure`."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if limits.INT64_MIN <= value <= limits.INT64_MAX else _as_received(float(value))
    if isinstance(value, float):
        # Go writes an integral float below 1e21 as its shortest digits padded with zeros
        # (2**64 as 18446744073709552000), which the program reads back as an integer.
        if math.isfinite(value) and value == int(value) and abs(value) < 1e21:
            return int(Decimal(repr(value)))
        return value
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("secure"), str):
            return Secure(value["secure"])
        return {k: _as_received(v) for k, v in sorted(value.items())}
    return [_as_received(v) for v in value]


def engine_text(value: Any) -> tuple[str, bool]:
    """The text Pulumi hands the program for a config value, and whether it is an object
    (JSON): ``config.Value.MarshalString`` after decryption, secrets as their ciphertext."""
    if value is None:
        return "", False
    if isinstance(value, Secure):
        return value.ciphertext, False
    if isinstance(value, str):
        return value, False
    if isinstance(value, (bool, int, float)):
        return go_json(value), False
    return go_json(value), True


def go_json(value: Any) -> str:
    """``value`` as Go's ``encoding/json`` writes it: keys sorted, ``<>&`` and U+2028/9 escaped,
    floats in Go's shortest form (``1e-7``, ``0.000025``, ``1e+21``); a :class:`Secure` as its text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, Secure):
        return _go_string(value.ciphertext)
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_string(k)}:{go_json(v)}" for k, v in sorted(value.items())) + "}"
    return "[" + ",".join(go_json(v) for v in value) + "]"


_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _go_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch < " " or ch in "<>&\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _go_float(number: float) -> str:
    size = abs(number)
    if size != 0 and (size < 1e-6 or size >= 1e21):
        mantissa, _, exponent = repr(number).partition("e")
        sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
        return f"{mantissa.removesuffix('.0')}e{sign}{digits}"
    text = format(Decimal(repr(number)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _allowed_alias_ratio(decodes: int) -> float:
    """yaml.v3's ``allowedAliasRatio``."""
    if decodes <= 400_000:
        return 0.99
    if decodes >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * ((decodes - 400_000) / 3_600_000)


def _is_merge(node: _Node) -> bool:
    return node.kind == "scalar" and node.value == "<<" and go_yaml.short_tag(node.tag) in ("", "!", go_yaml.MERGE)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return show(value)


def _go_key(key: Any) -> str:
    """The key Pulumi makes of a non-text key (Go's ``fmt.Sprintf("%v", key)``)."""
    if key is None:
        return "<nil>"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float):
        return str(_as_received(key)) if math.isfinite(key) else ("NaN" if math.isnan(key) else "+Inf")
    return str(key)


def _line(event: yaml.Event) -> int:
    return event.start_mark.line + 1 if event.start_mark is not None else 0


def _open_path(stack: list[_Node]) -> DocPath:
    """The key path at the point being read: the nearest key of each open mapping, the index in
    each open list."""
    path: list[str | int] = []
    for node in stack:
        if node.kind == "seq":
            path.append(max(len(node.items) - 1, 0) if node is not stack[-1] else len(node.items))
            continue
        keys = node.items[::2]
        if not keys:
            break
        key = keys[-1]
        path.append(key.value if key.kind == "scalar" else "?")
    return tuple(path)


def _syntax(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"
    what = exc.problem or exc.context or "not valid YAML"
    context = f" ({exc.context})" if exc.context and exc.problem else ""
    return f"not valid YAML at {where}: {escape(what)}{escape(context)}"


def _located(path: DocPath, message: str) -> Problem:
    """A problem at a path in the file: below ``aiperf-kueue:`` when it is there."""
    if len(path) >= 2 and path[0] == "config" and isinstance(path[1], str):
        namespace, colon, name = path[1].partition(":")
        if not colon:
            namespace, name = PROJECT, path[1]
        if namespace == PROJECT:
            return Problem(key_path(name, *path[2:]) if name else "", message)
    return Problem(key_path(*path) if path else "", message, in_config=False)
