"""Turn a recorded program run into the files and the console text of ``plan``."""

from __future__ import annotations

import json
from typing import Any

import yaml
from pulumi.runtime import rpc

from aiperf_kueue.common.render import columns, yaml_text
from aiperf_kueue.stackfile.loader import SECRET_PLACEHOLDER_PATTERN, fingerprint

#: What a Pulumi secret input becomes in ``plan`` output: a fingerprint of its plaintext, so that
#: ``diff`` sees it change. The plaintext is in clear in the stack file already (a ``secure:``
#: value arrives as its ``[encrypted ...]`` placeholder and stays that), so the digest reveals nothing new.
SECRET_VALUE = "[secret {fingerprint}]"


def secret_value(plain: Any) -> str:
    """A secret's plaintext (already :func:`clean`) → ``[secret 1a2b3c4d]``; a ``secure:``
    placeholder stays as it is."""
    if isinstance(plain, str) and SECRET_PLACEHOLDER_PATTERN.fullmatch(plain):
        return plain
    text = plain if isinstance(plain, str) else json.dumps(plain, sort_keys=True, separators=(",", ":"))
    return SECRET_VALUE.format(fingerprint=fingerprint(text))


def clean(value: Any) -> Any:
    """Recorded inputs → plain data: whole floats back to ints (protobuf doubles),
    secrets replaced by :func:`secret_value`."""
    if isinstance(value, dict):
        if rpc.is_rpc_secret(value):
            return secret_value(clean(value.get("value")))
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def provider_settings(provider: dict[str, Any]) -> dict[str, Any]:
    """The stack's ``kubernetes:*`` settings as ``plan.json`` shows them: kubeconfig contents (credentials,
    or their ciphertext) as a fingerprint, everything else as written."""
    shown: dict[str, Any] = {}
    for key, value in sorted(provider.items()):
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        if key == "kubernetes:kubeconfig" and ("\n" in text or text.lstrip().startswith(("{", "[encrypted"))):
            shown[key] = f"[kubeconfig {fingerprint(text)}]"
        else:
            shown[key] = value
    return shown


def resource_records(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``resources.json`` rows: type, name, parent, dependsOn, options and inputs."""
    return [
        {
            "type": r["type"],
            "name": r["name"],
            "urn": r["urn"],
            "parent": r["parent"] or None,
            "dependsOn": r["dependsOn"],
            "protect": r["protect"],
            **({"protectsCrds": True} if r.get("protectsCrds") else {}),
            "retainOnDelete": r["retainOnDelete"],
            "deleteBeforeReplace": r["deleteBeforeReplace"],
            "replaceOnChanges": r["replaceOnChanges"],
            # Former types or names the engine matches the resource by (an update, not a delete + create).
            **({"aliases": r["aliases"]} if r.get("aliases") else {}),
            "inputs": sorted_keys(_without_provider_blob(clean(r["inputs"]))),
        }
        for r in resources
    ]


def sorted_keys(value: Any) -> Any:
    """Every mapping's keys sorted, at every depth. Recorded inputs reach the engine as protobuf
    Structs, whose map order is the protobuf runtime's (upb's differs from the pure-Python one's):
    sorted, the files are the same bytes whichever runtime, process or machine planned them."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def _without_provider_blob(inputs: Any) -> Any:
    # A dynamic resource carries its provider as a pickled blob: noise in a review.
    if isinstance(inputs, dict) and "__provider" in inputs:
        return {**inputs, "__provider": "(dynamic provider: pickled Python, see components/)"}
    return inputs


def is_kubernetes_object(record: dict[str, Any]) -> bool:
    """A Kubernetes object the program declares directly (not a chart, provider or component)."""
    inputs = record["inputs"]
    return (
        record["type"].startswith("kubernetes:")
        and not record["type"].startswith("kubernetes:helm.sh/")
        and not record["type"].startswith("kubernetes:yaml/")
        and isinstance(inputs, dict)
        and "kind" in inputs
        and "apiVersion" in inputs
    )


def _first(mapping: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    ordered = {k: mapping[k] for k in keys if k in mapping}
    ordered.update({k: v for k, v in mapping.items() if k not in ordered})
    return ordered


def manifest_of(record: dict[str, Any]) -> dict[str, Any]:
    """The object as it would be applied: apiVersion, kind, metadata (name and namespace first), then the rest."""
    ordered = _first(record["inputs"], ("apiVersion", "kind", "metadata"))
    if isinstance(ordered.get("metadata"), dict):
        ordered["metadata"] = _first(ordered["metadata"], ("name", "namespace"))
    return ordered


#: Kinds in the order they can be applied to a cluster that has only Kueue, JobSet and the
#: operator: namespaces first, then the cluster-scoped Kueue objects (a ClusterQueue names its
#: flavors and cohort), then what lives in the namespaces (LocalQueues name a ClusterQueue), the
#: operator's env patch, and last the jobs (they name a LocalQueue and a priority class).
APPLY_ORDER = (
    "Namespace",
    "ResourceFlavor",
    "Cohort",
    "ClusterQueue",
    "WorkloadPriorityClass",
    "ClusterRole",
    "Role",
    "RoleBinding",
    "LocalQueue",
    "Deployment",
    "AIPerfJob",
)


def apply_rank(record: dict[str, Any]) -> int:
    """Where the record's kind comes in :data:`APPLY_ORDER` (anything else after it)."""
    inputs = record.get("inputs")
    kind = inputs.get("kind") if isinstance(inputs, dict) else None
    return APPLY_ORDER.index(kind) if kind in APPLY_ORDER else len(APPLY_ORDER)


def in_apply_order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` by :func:`apply_rank`; within a kind, as they were (by URN)."""
    return sorted(records, key=apply_rank)


def manifests_yaml(records: list[dict[str, Any]]) -> str:
    """Multi-document YAML in apply order (:data:`APPLY_ORDER`); each document says which Pulumi
    resource declares it, so a ``NamespacePatch`` (which also says ``kind: Namespace``) is told
    from a created one."""
    docs = [
        f"# {record['type']} {record['name']}\n" + yaml_text(manifest_of(record))
        for record in in_apply_order(records)
        if is_kubernetes_object(record)
    ]
    return "---\n".join(docs)


def _apply_depth(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many dependency steps each resource is from the start of ``pulumi up``."""
    by_urn = {r["urn"]: r for r in records}
    depth: dict[str, int] = {}

    def of(urn: str) -> int:
        if urn not in depth:
            depth[urn] = 0  # guards against cycles, which Pulumi rejects anyway
            deps = [d for d in by_urn[urn]["dependsOn"] if d in by_urn]
            depth[urn] = 1 + max((of(d) for d in deps), default=-1)
        return depth[urn]

    for urn in by_urn:
        of(urn)
    # A component sits where its latest child does.
    for r in records:
        parent = r["parent"]
        if parent in depth:
            depth[parent] = max(depth[parent], depth[r["urn"]])
    return depth


def tree(records: list[dict[str, Any]]) -> list[str]:
    """The resource tree in apply order, children under their component, with the options that matter."""
    by_parent: dict[str | None, list[dict[str, Any]]] = {}
    urns = {r["urn"] for r in records}
    depth = _apply_depth(records)
    for r in sorted(records, key=lambda r: (depth[r["urn"]], r["name"])):
        parent = r["parent"] if r["parent"] in urns else None
        by_parent.setdefault(parent, []).append(r)
    lines: list[str] = []

    def walk(parent: str | None, indent: str) -> None:
        children = by_parent.get(parent, [])
        for i, r in enumerate(children):
            last = i == len(children) - 1
            branch = "" if parent is None else ("└─ " if last else "├─ ")
            lines.append(f"{indent}{branch}{_describe(r)}")
            walk(r["urn"], indent + ("" if parent is None else ("   " if last else "│  ")))

    walk(None, "")
    return lines


def _describe(r: dict[str, Any]) -> str:
    kind = r["type"].split(":", 2)[-1] if r["type"].startswith("kubernetes:") else r["type"]
    if r["type"].startswith("kubernetes:helm.sh/"):
        chart = r["inputs"].get("chart", "")
        version = r["inputs"].get("version")
        kind = f"helm {chart}" + (f" {version}" if version else "")
    flags = []
    if r["protect"]:
        flags.append("protect")
    if r.get("protectsCrds"):
        flags.append("CRDs protected")
    if r["retainOnDelete"]:
        flags.append("retain")
    if r["replaceOnChanges"]:
        flags.append("replace on " + ",".join(r["replaceOnChanges"]))
    if r["deleteBeforeReplace"]:
        flags.append("delete before replace")
    meta = r["inputs"].get("metadata") if isinstance(r["inputs"], dict) else None
    where = ""
    if isinstance(meta, dict) and "name" in meta:
        where = f" {meta['namespace']}/{meta['name']}" if meta.get("namespace") else f" {meta['name']}"
    return f"{r['name']}  [{kind}{where}]" + (f"  ({'; '.join(flags)})" if flags else "")


def percent_text(value: Any) -> str:
    """``50`` → ``50%``, ``33.33`` → ``33.33%``."""
    return f"{value}%"


def quota_table(quotas: dict[str, Any], pools: dict[str, Any], shares: dict[str, Any] | None = None) -> list[str]:
    """ClusterQueue × flavor rows, one column per resource (each quota with its share of the pool,
    where the pool has any), then the pool totals."""
    resources: list[str] = []
    for row in pools.values():
        for res in row:
            if res not in resources:
                resources.append(res)
    header = ["ClusterQueue", "flavor", *resources]
    rows = [header]
    for cq, flavors in quotas.items():
        for flavor, amounts in flavors.items():
            share = ((shares or {}).get(cq) or {}).get(flavor) or {}
            rows.append(
                [
                    cq,
                    flavor,
                    *[
                        str(amounts.get(r, "")) + (f" ({percent_text(share[r])})" if r in share else "")
                        for r in resources
                    ],
                ]
            )
    for pool, totals in pools.items():
        rows.append(["(pool total)", pool, *[str(totals.get(r, "")) for r in resources]])
    return columns(rows)


def limits_table(borrowing: dict[str, Any], lending: dict[str, Any]) -> list[str]:
    """One row per ClusterQueue × flavor × resource with a borrowingLimit or lendingLimit set."""
    cells: list[tuple[str, str, str]] = []
    for limits in (borrowing, lending):
        for cq, flavors in limits.items():
            for flavor, amounts in flavors.items():
                for res in amounts:
                    if (cq, flavor, res) not in cells:
                        cells.append((cq, flavor, res))
    if not cells:
        return []
    rows = [["ClusterQueue", "flavor", "resource", "borrowingLimit", "lendingLimit"]]
    for cq, flavor, res in cells:
        got = [str(limits.get(cq, {}).get(flavor, {}).get(res, "-")) for limits in (borrowing, lending)]
        rows.append([cq, flavor, res, *got])
    return columns(rows)


def _zero(quantity_text: Any) -> bool:
    return str(quantity_text) in ("0", "0m")


def cohort_lines(tree: dict[str, Any] | None) -> list[str]:
    """The Cohort tree of ``plan.json``'s ``cohorts`` as a table: each node (roots first, children indented
    under their parent) × flavor, one column per resource. A Cohort shows its SubtreeQuota (its own quota in
    parentheses where it has one), a ClusterQueue the most it can reach; flavors where all are 0 are left out."""
    if not tree:
        return []
    cohorts, queues = tree.get("cohorts") or {}, tree.get("clusterQueues") or {}
    resources: list[str] = []
    for node in [*cohorts.values(), *queues.values()]:
        for amounts in (node.get("subtree") or node.get("reach") or {}).values():
            resources += [r for r in amounts if r not in resources]
    children: dict[str | None, list[str]] = {}
    for name, node in [*cohorts.items(), *queues.items()]:
        children.setdefault(node.get("parent"), []).append(name)
    rows = [["node", "what", "flavor", *resources]]

    def walk(name: str, lead: str, indent: str) -> None:
        cohort = cohorts.get(name)
        label = f"{lead}{'Cohort' if cohort is not None else 'ClusterQueue'} {name}"
        what = "subtree" if cohort is not None else "reach"
        values = cohort["subtree"] if cohort is not None else queues[name]["reach"]
        own = cohort.get("own") or {} if cohort is not None else {}
        shown = [f for f, amounts in values.items() if not all(_zero(q) for q in amounts.values())]
        for k, flavor in enumerate(shown or list(values)[:1]):
            mine = own.get(flavor) or {}
            cells = [
                str(values[flavor].get(r, "")) + ("" if _zero(mine.get(r, 0)) else f" (own {mine[r]})")
                for r in resources
            ]
            rows.append([label if k == 0 else "", what if k == 0 else "", flavor, *cells])
        kids = children.get(name, [])
        for k, kid in enumerate(kids):
            last = k == len(kids) - 1
            walk(kid, indent + ("└─ " if last else "├─ "), indent + ("   " if last else "│  "))

    seen = set(cohorts) | set(queues)
    for root in [n for n in cohorts if cohorts[n].get("parent") not in seen]:
        walk(root, "", "")
    limits = [
        f"Cohort {name} {key[:-1]}: "
        + "; ".join(
            f"{flavor} " + ", ".join(f"{r} {q}" for r, q in amounts.items()) for flavor, amounts in table.items()
        )
        for name, node in cohorts.items()
        for key in ("borrowingLimits", "lendingLimits")
        if (table := node.get(key))
    ]
    return columns(rows) + limits


def charts_yaml(charts: dict[str, Any]) -> str:
    """``charts.yaml``: per release, the chart, version, namespace and merged values.

    PyYAML's own emitter: LibYAML folds a long double-quoted scalar (the Kueue manager
    configuration) at other places, and the text of a plan must not depend on the emitter."""
    return yaml_text(charts, yaml.SafeDumper) if charts else "{}\n"


def jobs_table(jobs: list[dict[str, Any]]) -> list[str]:
    """AIPerfJob, namespace, queue, pods, CPU, memory, flavor, and how many fit at once on nominal quota.

    A job shows by its object's name, ``<job>-<digest>``: its config name with the digest of its
    spec (a plan from before digests has only the config name)."""
    if not jobs:
        return []
    header = ["AIPerfJob", "namespace", "queue", "priority", "pods", "cpu", "memory", "flavor", "fit at once"]
    rows = [header]
    for job in jobs:
        at_once = job["fitOnNominal"]
        rows.append(
            [
                job.get("objectName") or job["name"],
                job["namespace"],
                job["queue"],
                job["priorityClass"] or "-",
                str(job["pods"]),
                str(job["requests"].get("cpu", "0")),
                str(job["requests"].get("memory", "0")),
                ",".join(job["flavor"]) or "-",
                "unlimited" if at_once is None else str(at_once) + (" (borrowing)" if job["borrowing"] else ""),
            ]
        )
    return columns(rows)


def fleet_lines(fleet: dict[str, Any] | None) -> list[str]:
    """A MultiKueue fleet (the ``fleet`` output): on a manager, every worker's quotas with its pool totals, then
    per job the flavor each worker would admit it on (or ``never``); on a worker, its manager. None: no lines."""
    if not fleet:
        return []
    if fleet["role"] == "worker":
        exported = {
            "minted": "minted at pulumi up from its multikueue ServiceAccount's token Secret and multikueue.server",
            "config": "multikueue.kubeconfig",
        }.get(fleet.get("kubeconfig") or "")
        return [
            f"MultiKueue worker of manager stack {fleet['manager']}: its queues and priority classes are the "
            "manager's, its quotas its own pools'",
            f"exports multikueueKubeconfig (a secret output, read by the manager): {exported}"
            if exported
            else "exports no kubeconfig: the manager's multikueue.workers[].kubeconfig must give it",
        ]
    workers = fleet.get("workers") or {}
    out = [
        f"MultiKueue manager of {len(workers)} workers (the quotas above are the fleet's total: the workers' pools "
        "summed by name):"
    ]
    for name, worker in workers.items():
        out.append(f"worker {name} (stack {worker['stack']}):")
        out += [f"  {line}" for line in quota_table(worker["quotas"], worker["pools"])]
    jobs = fleet.get("jobs") or {}
    if jobs:
        out.append("Where each job can run (per worker: the flavor its Kueue would admit it on, or never):")
        rows = [["job", *workers]]
        for job, placed in jobs.items():
            rows.append([job, *[",".join(placed[w]["flavor"]) if "flavor" in placed[w] else "never" for w in workers]])
        out += [f"  {line}" for line in columns(rows)]
    return out
