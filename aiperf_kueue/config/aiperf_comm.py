"""``spec.benchmark.runtime.communication`` as AIPerf 0.13.0 accepts it (``CommunicationConfig``).

Upstream: aiperf 0.13.0 aiperf/config/comm/inputs.py, aiperf/common/enums/enums.py

A union discriminated by ``type`` (``ipc``, ``tcp`` or ``dual``, exact lower case: the release's
tags are ``CommunicationType`` members, which a tag in another case does not match), each type
closed to its own keys; every port 1-65535. The operator overwrites the whole section for every job, so its
values change nothing the program predicts, but a value the release refuses fails the job at
creation: it is refused here first.

Integers are JSON integers (``StrictInt``), as everywhere in the spec models: the release's lax
parsing would also take ``"5557"`` or ``5557.0``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from aiperf_kueue.common.display import show
from aiperf_kueue.common.suggest import did_you_mean
from aiperf_kueue.config.aiperf_base import CrdModel

Port = Annotated[StrictInt, Field(ge=1, le=65535)]


class TcpProxy(CrdModel):
    """A ZMQ proxy's TCP ports (``TcpProxyConfig``): both required."""

    frontend_port: Port
    """TCP port of the proxy frontend, 1-65535 (required)."""

    backend_port: Port
    """TCP port of the proxy backend, 1-65535 (required)."""


#: Keys per ``type`` (camelCase; each release model is closed, ``extra="forbid"``).
_PORT_KEYS = (
    "controlPort", "creditReturnPushPullPort", "creditRouterPort", "datasetManagerProxy", "eventBusProxy",
    "rawInferenceProxy", "recordsPort",
)  # fmt: skip
KEYS: dict[str, frozenset[str]] = {
    "ipc": frozenset({"type", "path"}),
    "tcp": frozenset({"type", "host", *_PORT_KEYS}),
    "dual": frozenset({"type", "ipcPath", "tcpHost", "controllerHost", *_PORT_KEYS}),
}


class Communication(CrdModel):
    """``runtime.communication``: a union discriminated by ``type`` (``IpcCommunicationConfig``,
    ``TcpCommunicationConfig``, ``DualBindCommunicationConfig``), one model here so that a message
    names the key as written; each type takes only its own keys."""

    type: Literal["ipc", "tcp", "dual"]
    """``ipc`` (Unix sockets), ``tcp`` or ``dual`` (IPC locally, TCP for worker pods); required."""

    path: StrictStr | None = None
    """``ipc``: directory of the socket files (default ``/tmp/aiperf``)."""

    host: StrictStr | None = None
    """``tcp``: host address (default ``127.0.0.1``)."""

    ipc_path: StrictStr | None = None
    """``dual``: directory of the socket files (default ``/tmp/aiperf``)."""

    tcp_host: StrictStr | None = None
    """``dual``: TCP bind host of the proxies (default ``0.0.0.0``)."""

    controller_host: StrictStr | None = None
    """``dual``: controller host for remote TCP connections (default none: IPC)."""

    records_port: Port | None = None
    """``tcp``/``dual``: records push/pull port, 1-65535 (default 5557)."""

    credit_router_port: Port | None = None
    """``tcp``/``dual``: credit router port, 1-65535 (default 5564)."""

    control_port: Port | None = None
    """``tcp``/``dual``: control channel port, 1-65535 (default 5667)."""

    credit_return_push_pull_port: Port | None = None
    """``tcp``/``dual``: credit-return fan-in port, 1-65535 (default 5669)."""

    event_bus_proxy: TcpProxy | None = None
    """``tcp``/``dual``: event bus proxy ports (default: AIPerf's environment)."""

    dataset_manager_proxy: TcpProxy | None = None
    """``tcp``/``dual``: dataset manager proxy ports (default 5661/5662)."""

    raw_inference_proxy: TcpProxy | None = None
    """``tcp``/``dual``: raw inference proxy ports (default 5665/5666)."""

    @model_validator(mode="before")
    @classmethod
    def _keys_of_its_type(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"must be a mapping with a type ({', '.join(KEYS)}), got {show(data)}")
        kind = data.get("type")
        if kind not in KEYS:
            given = "no type" if "type" not in data else f"type {show(kind)}"
            raise ValueError(f"type must be one of {', '.join(KEYS)} (lower case), got {given}")
        allowed = KEYS[kind]
        for key in data:
            if key not in allowed and not (isinstance(key, str) and to_camel(key) in allowed):
                raise ValueError(
                    f"unknown key {show(key)} for type {kind}{did_you_mean(str(key), allowed)}; "
                    f"allowed: {', '.join(sorted(allowed))}"
                )
        return data
