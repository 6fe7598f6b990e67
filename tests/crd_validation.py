"""Check Kubernetes objects against upstream CRDs (Kueue, AIPerf) as the API server would on create.

For each object and each CRD version that serves its ``apiVersion`` and ``kind``:

1. ``apiVersion`` and ``kind`` must be the CRD version's; ``metadata`` is checked like
   ObjectMeta on a create: name (or a generateName prefix) a DNS-1123 subdomain, namespace
   present exactly when the CRD is namespaced, label keys and values well formed, no
   unknown metadata fields.
2. Structural defaults (``default:``) are applied, as the API server does before validating.
3. The ``openAPIV3Schema``, converted to JSON Schema (draft 4, which OpenAPI 3.0 schemas
   follow), validates the defaulted object. Objects that declare ``properties`` (or nothing)
   and neither ``additionalProperties`` nor ``x-kubernetes-preserve-unknown-fields`` reject
   unknown fields: the API server would prune them silently, which for a program that
   means to set them is a bug too. ``metadata`` is exempt (step 1 covers it).
   ``pattern`` has Go regexp semantics, as in the API server: ``$`` is the end of the text,
   never "before a trailing newline" as in Python's ``re``. Integers with ``format: int32``
   must fit in 32 bits; any integer beyond 64 bits fails before validation, as decoding does.
4. ``x-kubernetes-list-type: set`` / ``map`` lists must not repeat items / map keys.
5. Every ``x-kubernetes-validations`` CEL rule is evaluated with ``self`` bound to the value
   at its node (nodes absent from the object are not evaluated, as in Kubernetes).
   Transition rules (those that reference ``oldSelf``) do not run on create and are
   skipped; so is a rule calling a function cel-python lacks. Every skip is recorded
   with its reason in :attr:`Result.skipped`, never dropped silently.

The Kueue CRDs come from the upstream Go modules (:mod:`tests.upstream`); the AIPerfJob CRD,
which no package publishes, from ``../shared/reference/aiperf`` next to the repository
(``AIPERF_KUEUE_SHARED`` may point elsewhere). None of them is copied into the project.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import celpy
import celpy.evaluation
import jsonschema
import yaml
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

#: ``../shared`` next to the repository root (or ``AIPERF_KUEUE_SHARED``).
SHARED = Path(os.environ.get("AIPERF_KUEUE_SHARED") or Path(__file__).resolve().parents[1].parent / "shared")
CRD_PLURALS = ("clusterqueues", "cohorts", "localqueues", "resourceflavors", "workloadpriorityclasses")
#: The AIPerfJob CRD (chart ``crd-aiperfjob.yaml@08ec5fdf`` as plain YAML; aiperf NOTES §1).
AIPERF_REFERENCE = SHARED / "reference" / "aiperf"
AIPERF_JOB_CRD = AIPERF_REFERENCE / "aiperfjobs.aiperf.nvidia.com.crd.yaml"

#: CEL macros; everything else called in a rule must be a cel-python function.
CEL_MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})
#: Why a transition rule is skipped.
TRANSITION = "transition rule (references oldSelf): not run on create"
_OLD_SELF = re.compile(r"\boldSelf\b")
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")

# JSON Schema keywords taken over as they are, and CRD keywords handled elsewhere or
# deliberately not checked (``format``: int32/int64/quantity etc.; ``description``).
_KEPT = frozenset(
    {
        "type", "required", "enum", "pattern", "minLength", "maxLength", "minItems", "maxItems",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems",
        "minProperties", "maxProperties",
    }
)  # fmt: skip
_NOT_JSON_SCHEMA = frozenset(
    {
        "description", "format", "default", "example", "title",
        "nullable", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-validations", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
    }
)  # fmt: skip

# Matched with fullmatch: the API server's Go regexps have no trailing-newline exception.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
#: ``format`` → the range an integer of that format must lie in. ``int64`` needs no entry:
#: beyond it nothing decodes, which :func:`validate` reports first.
INT_FORMATS = {"int32": (-(2**31), 2**31 - 1)}
_OBJECT_META_FIELDS = frozenset(
    {"name", "generateName", "namespace", "labels", "annotations", "finalizers", "ownerReferences"}
)


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry and where it sits in the schema."""

    schema_path: str
    rule: str
    message: str

    @property
    def transition(self) -> bool:
        """References ``oldSelf``: checked on update only."""
        return bool(_OLD_SELF.search(self.rule))

    @property
    def unsupported_functions(self) -> frozenset[str]:
        """Functions the rule calls that neither CEL macros nor cel-python provide."""
        return functions_called(self.rule) - CEL_MACROS - frozenset(celpy.evaluation.base_functions)


@dataclass(frozen=True)
class Finding:
    """Why the API server would reject the object (``check``: served, metadata, schema, list or cel)."""

    path: str
    check: str
    message: str
    rule: str | None = None


@dataclass(frozen=True)
class Skip:
    """A CEL rule that applied to a node but was not evaluated, and why."""

    path: str
    rule: str
    reason: str


@dataclass
class Result:
    """The outcome of validating one object against one CRD version."""

    crd: CrdVersion
    findings: list[Finding] = field(default_factory=list)
    evaluated: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No findings."""
        return not self.findings


@dataclass
class CrdVersion:
    """One version of one CRD of one reference release."""

    release: str
    group: str
    kind: str
    version: str
    namespaced: bool
    deprecated: bool
    schema: dict[str, Any]
    validator: Any = field(init=False, repr=False)
    rules: list[Rule] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        json_schema = to_json_schema(self.schema)
        props = json_schema.setdefault("properties", {})
        # TypeMeta is implicit at the root of every CRD: the API server accepts apiVersion and kind
        # even where the schema does not list them (the AIPerfJob CRD lists only spec and status).
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props["metadata"] = {"type": "object"}  # checked as ObjectMeta instead
        jsonschema.Draft4Validator.check_schema(json_schema)
        self.validator = KubernetesValidator(json_schema)
        self.rules = list(_rules(self.schema, ""))

    @property
    def api_version(self) -> str:
        """``group/version``."""
        return f"{self.group}/{self.version}"

    @property
    def label(self) -> str:
        """E.g. ``0.19.2 kueue.x-k8s.io/v1beta2 ClusterQueue``."""
        return f"{self.release} {self.api_version} {self.kind}"


class Catalog:
    """Every served CRD version of the reference releases, by (release, apiVersion, kind)."""

    def __init__(self, crds: Iterable[CrdVersion]) -> None:
        self.crds = {(c.release, c.api_version, c.kind): c for c in crds}

    @classmethod
    def load(cls, releases: dict[str, Path]) -> Catalog:
        """Read the CRD files of ``releases`` (release → directory of its CRDs)."""
        crds: list[CrdVersion] = []
        for release, directory in releases.items():
            for plural in CRD_PLURALS:
                crds += load_crd(directory / f"kueue.x-k8s.io_{plural}.yaml", release)
        return cls(crds)

    def get(self, release: str, api_version: str, kind: str) -> CrdVersion | None:
        """The CRD version of ``release`` serving ``api_version`` ``kind``, if any."""
        return self.crds.get((release, api_version, kind))

    def served(self, release: str) -> dict[str, list[str]]:
        """Kind → served versions in ``release``."""
        out: dict[str, list[str]] = {}
        for crd in self.crds.values():
            if crd.release == release:
                out.setdefault(crd.kind, []).append(crd.version)
        return out


def load_crd(path: Path, release: str) -> list[CrdVersion]:
    """The served versions of the CRD in ``path``."""
    doc = yaml.safe_load(path.read_text())
    spec = doc["spec"]
    return [
        CrdVersion(
            release=release,
            group=spec["group"],
            kind=spec["names"]["kind"],
            version=v["name"],
            namespaced=spec["scope"] == "Namespaced",
            deprecated=bool(v.get("deprecated", False)),
            schema=v["schema"]["openAPIV3Schema"],
        )
        for v in spec["versions"]
        if v.get("served", False)
    ]


# --------------------------------------------------------------------------- schema


def to_json_schema(node: dict[str, Any]) -> dict[str, Any]:
    """A CRD ``openAPIV3Schema`` node → JSON Schema (draft 4) as the API server applies it.

    Raises ``ValueError`` on a keyword it does not know, so nothing new is ignored silently.
    """
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = to_json_schema(value) if isinstance(value, dict) else value
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = [to_json_schema(sub) for sub in value]
        elif key in _KEPT:
            out[key] = copy.deepcopy(value)
        elif key == "format" and value in INT_FORMATS:
            out[key] = value
        elif key not in _NOT_JSON_SCHEMA:
            raise ValueError(f"unhandled CRD schema keyword {key!r}")
    if node.get("x-kubernetes-int-or-string") and "type" not in out and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    if (
        node.get("type") == "object"
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def apply_defaults(value: Any, node: dict[str, Any]) -> Any:
    """Structural defaulting, in place: a missing (or null, non-nullable) property with a
    ``default`` gets a copy of it; then defaults apply inside every value, new ones too."""
    if isinstance(value, dict):
        props = node.get("properties", {})
        for name, sub in props.items():
            if "default" in sub and (name not in value or (value[name] is None and not sub.get("nullable"))):
                value[name] = copy.deepcopy(sub["default"])
        extra = node.get("additionalProperties")
        for name, item in value.items():
            if name in props:
                apply_defaults(item, props[name])
            elif isinstance(extra, dict):
                apply_defaults(item, extra)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value:
            apply_defaults(item, node["items"])
    return value


@functools.cache
def go_regex(pattern: str) -> re.Pattern[str]:
    """``pattern`` (RE2 syntax, as CRDs use) compiled with Go's meaning of ``$``: end of text.

    Python's ``$`` also matches before a final newline, so a name ending in a newline would
    pass ``^[a-z]+$`` here and fail in the API server. Every ``$`` outside a character class
    becomes Python's end-of-string anchor; the rest of the CRDs' patterns means the same in
    both dialects.
    """
    out: list[str] = []
    class_start: int | None = None  # index in out just after the "[" of the open class
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if class_start is not None:
            # A "]" first in the class ("[]a]", "[^]a]") is a literal, as in RE2.
            first = len(out) == class_start or out[class_start:] == ["^"]
            if char == "]" and not first:
                class_start = None
        elif char == "[":
            class_start = len(out) + 1
        elif char == "$":
            char = r"\Z"
        out.append(char)
        i += 1
    return re.compile("".join(out))


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    if isinstance(instance, str) and not go_regex(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _int_format(validator: Any, fmt: str, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    low, high = INT_FORMATS[fmt]
    if isinstance(instance, int) and not isinstance(instance, bool) and not low <= instance <= high:
        yield jsonschema.ValidationError(f"{instance!r} is out of range for format {fmt}")


#: Draft 4 with the API server's ``pattern`` and integer ``format`` semantics.
KubernetesValidator = jsonschema.validators.extend(
    jsonschema.Draft4Validator, {"pattern": _pattern, "format": _int_format}
)


# --------------------------------------------------------------------------- CEL


def functions_called(rule: str) -> frozenset[str]:
    """Names called in a CEL rule (global or receiver style), string literals ignored."""
    return frozenset(_CALL.findall(_STRING_LITERAL.sub("''", rule)))


@functools.cache
def compile_rule(rule: str) -> Any:
    """The cel-python program of ``rule`` (cached); raises ``celpy.CELParseError``."""
    env = celpy.Environment()
    return env.program(env.compile(rule))


def evaluate_rule(rule: str, value: Any) -> str | None:
    """``None`` if ``rule`` holds for ``self`` = ``value``; else why not."""
    try:
        outcome = compile_rule(rule).evaluate({"self": json_to_cel(value)})
    except CELParseError as exc:
        return f"rule does not compile: {exc}"
    except CELEvalError as exc:
        return f"evaluation error: {exc.args[0] if exc.args else exc}"
    if isinstance(outcome, CELEvalError):
        return f"evaluation error: {outcome.args[0] if outcome.args else outcome}"
    if isinstance(outcome, celpy.celtypes.BoolType):
        return None if bool(outcome) else "rule is false"
    return f"rule returned {outcome!r}, not a bool"


def _rules(node: dict[str, Any], path: str) -> Iterator[Rule]:
    for spec in node.get("x-kubernetes-validations", []):
        yield Rule(path or ".", spec["rule"], spec.get("message", ""))
    for name, sub in node.get("properties", {}).items():
        yield from _rules(sub, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _rules(node["items"], f"{path}[*]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _rules(node["additionalProperties"], f"{path}{{*}}")


# --------------------------------------------------------------------------- validation


def validate(obj: dict[str, Any], crd: CrdVersion) -> Result:
    """Every reason the API server serving ``crd`` would reject creating ``obj``."""
    result = Result(crd)
    overflows = list(_int64_overflows(obj, ""))
    if overflows:
        # The API server cannot even decode the object: nothing else runs (nor could CEL hold it).
        result.findings += [Finding(path, "decode", f"{n} does not fit in a 64-bit integer") for path, n in overflows]
        return result
    if obj.get("apiVersion") != crd.api_version or obj.get("kind") != crd.kind:
        result.findings.append(
            Finding("", "served", f"{obj.get('apiVersion')} {obj.get('kind')} is not {crd.api_version} {crd.kind}")
        )
    _check_metadata(obj.get("metadata"), crd.namespaced, result)
    defaulted = apply_defaults(copy.deepcopy(obj), crd.schema)
    for error in sorted(
        crd.validator.iter_errors(defaulted), key=lambda e: (list(map(str, e.absolute_path)), e.message)
    ):
        result.findings.append(Finding(_format_path(error.absolute_path), "schema", error.message))
    _walk(defaulted, crd.schema, "", result)
    return result


def _int64_overflows(value: Any, path: str) -> Iterator[tuple[str, int]]:
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        yield path, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _int64_overflows(item, _join(path, str(name)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _int64_overflows(item, f"{path}[{i}]")


def _format_path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(value: Any, node: dict[str, Any], path: str, result: Result) -> None:
    if value is None:
        return
    for spec in node.get("x-kubernetes-validations", []):
        rule = Rule(path, spec["rule"], spec.get("message", ""))
        if rule.transition:
            result.skipped.append(Skip(path, rule.rule, TRANSITION))
            continue
        if rule.unsupported_functions:
            missing = ", ".join(sorted(rule.unsupported_functions))
            result.skipped.append(Skip(path, rule.rule, f"calls {missing}, which cel-python does not provide"))
            continue
        result.evaluated.append((path, rule.rule))
        why = evaluate_rule(rule.rule, value)
        if why is not None:
            result.findings.append(Finding(path, "cel", f"{rule.message} ({why})", rule.rule))
    if isinstance(value, list):
        _check_list_type(value, node, path, result)
        if isinstance(node.get("items"), dict):
            for i, item in enumerate(value):
                _walk(item, node["items"], f"{path}[{i}]", result)
    elif isinstance(value, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        for name, item in value.items():
            if name in props:
                _walk(item, props[name], _join(path, name), result)
            elif isinstance(extra, dict):
                _walk(item, extra, _join(path, name), result)


def _check_list_type(value: list[Any], node: dict[str, Any], path: str, result: Result) -> None:
    kind = node.get("x-kubernetes-list-type")
    if kind == "set":
        keys = [json.dumps(item, sort_keys=True) for item in value]
    elif kind == "map":
        names = node.get("x-kubernetes-list-map-keys", [])
        keys = [json.dumps({k: item.get(k) for k in names} if isinstance(item, dict) else item) for item in value]
    else:
        return
    seen: set[str] = set()
    for i, key in enumerate(keys):
        if key in seen:
            result.findings.append(Finding(f"{path}[{i}]", "list", f"Duplicate value: {key}"))
        seen.add(key)


def _check_metadata(meta: Any, namespaced: bool, result: Result) -> None:
    def bad(where: str, message: str) -> None:
        result.findings.append(Finding(_join("metadata", where) if where else "metadata", "metadata", message))

    if not isinstance(meta, dict):
        bad("", "metadata must be an object")
        return
    for name in sorted(set(meta) - _OBJECT_META_FIELDS):
        bad(name, "unknown ObjectMeta field (the API server would drop it)")
    name = meta.get("name")
    if name is None and isinstance(meta.get("generateName"), str):
        # The server appends random characters; a trailing '-' is fine in the prefix.
        prefix = meta["generateName"]
        if not _is_dns_subdomain(prefix[:-1] + "a" if prefix.endswith("-") else prefix):
            bad("generateName", f"must be a DNS-1123 subdomain prefix, got {prefix!r}")
    elif not isinstance(name, str) or not _is_dns_subdomain(name):
        bad("name", f"must be a DNS-1123 subdomain, got {name!r}")
    ns = meta.get("namespace")
    if namespaced and (not isinstance(ns, str) or len(ns) > 63 or not _DNS_LABEL.fullmatch(ns)):
        bad("namespace", f"a namespaced object needs a DNS-1123 label namespace, got {ns!r}")
    if not namespaced and ns is not None:
        bad("namespace", f"a cluster-scoped object has no namespace, got {ns!r}")
    for what in ("labels", "annotations"):
        pairs = meta.get(what, {})
        if not isinstance(pairs, dict):
            bad(what, "must be a map of string to string")
            continue
        for key, val in pairs.items():
            if not _is_qualified_name(key):
                bad(f"{what}.{key}", "key must be a qualified name ([prefix/]name)")
            if not isinstance(val, str) or (what == "labels" and (len(val) > 63 or not _LABEL_VALUE.fullmatch(val))):
                bad(f"{what}.{key}", f"invalid value {val!r}")


def _is_dns_subdomain(text: str) -> bool:
    return len(text) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(text))


def _is_qualified_name(key: Any) -> bool:
    if not isinstance(key, str):
        return False
    prefix, slash, name = key.rpartition("/")
    if slash and not _is_dns_subdomain(prefix):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.fullmatch(name))
