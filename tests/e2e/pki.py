"""Per-run certificates for the local cluster: a CA, the API server's serving cert, an admin client cert,
the service-account key pair, one serving cert for the webhook servers (Kueue, JobSet), all for 127.0.0.1, and the
aggregator's front-proxy client cert (with which the API server calls an aggregated API such as Kueue's visibility
server)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALID = datetime.timedelta(days=2)
#: The common name the API server's ``--requestheader-allowed-names`` accepts (kubeadm's).
FRONT_PROXY_CLIENT = "front-proxy-client"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


@dataclass(frozen=True)
class Pki:
    """File paths of one run's certificates and keys."""

    dir: Path
    ca_crt: Path
    apiserver_crt: Path
    apiserver_key: Path
    admin_crt: Path
    admin_key: Path
    sa_pub: Path
    sa_key: Path
    webhook_crt: Path
    webhook_key: Path
    proxy_crt: Path
    proxy_key: Path

    @property
    def ca_pem(self) -> bytes:
        """The CA certificate, for caBundle fields."""
        return self.ca_crt.read_bytes()


def make_pki(directory: Path, service_ip: str = "10.0.0.1") -> Pki:
    """Write a fresh CA and every certificate the cluster needs into ``directory`` (``service_ip``: the
    ``kubernetes`` Service's, the first of the cluster's Service range)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key = _key()
    ca_name = _name("aiperf-kueue-e2e-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + _VALID)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(
        cn: str, *, org: str | None = None, dns: tuple[str, ...] = (), ips: tuple[str, ...] = (), server: bool
    ) -> tuple[bytes, bytes]:
        key = _key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, org))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + _VALID)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
        )
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)

    def write(name: str, data: bytes) -> Path:
        path = directory / name
        path.write_bytes(data)
        path.chmod(0o600)
        return path

    ca_crt = write("ca.crt", ca.public_bytes(serialization.Encoding.PEM))
    api_crt, api_key = leaf(
        "kube-apiserver",
        dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
        ips=("127.0.0.1", service_ip),
        server=True,
    )
    admin_crt, admin_key = leaf("aiperf-kueue-e2e-admin", org="system:masters", server=False)
    hook_crt, hook_key = leaf("webhooks", dns=("localhost",), ips=("127.0.0.1",), server=True)
    proxy_crt, proxy_key = leaf(FRONT_PROXY_CLIENT, server=False)
    sa = _key()
    sa_pub = sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return Pki(
        dir=directory,
        ca_crt=ca_crt,
        apiserver_crt=write("apiserver.crt", api_crt),
        apiserver_key=write("apiserver.key", api_key),
        admin_crt=write("admin.crt", admin_crt),
        admin_key=write("admin.key", admin_key),
        sa_pub=write("sa.pub", sa_pub),
        sa_key=write("sa.key", _key_pem(sa)),
        webhook_crt=write("webhook.crt", hook_crt),
        webhook_key=write("webhook.key", hook_key),
        proxy_crt=write("front-proxy-client.crt", proxy_crt),
        proxy_key=write("front-proxy-client.key", proxy_key),
    )
