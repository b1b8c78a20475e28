"""The certificate authority of the local twin home, and the leaf certificates it signs.

The front answers HTTPS for production host names (``www.data.gouv.fr``, …) by presenting a
certificate for that name signed by a CA generated on this machine, once per twin home. Clients
trust it through ``SSL_CERT_FILE`` / ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` pointing at
:attr:`CertificateAuthority.bundle_path`: the public roots (certifi's) followed by the local CA,
so the same bundle also validates real hosts a live run passes through.

Layout of the home (``<home>/front/``, git-ignored, never committed, never leaves the machine)::

    ca.pem          the CA certificate
    ca-key.pem      its private key (0600)
    bundle.pem      certifi's roots + ca.pem
    leaves/<host>.pem   one leaf key + certificate per host name, signed by the CA

Keys are ECDSA P-256: every TLS client supports them and a leaf costs about a millisecond to
make (an RSA key costs tens). Creation is serialised by a lock file, so parallel processes
sharing a home agree on one CA.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import ssl
import threading
from pathlib import Path

import certifi
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from datagouv_eval_pipeline.base.filelock import exclusive_lock

CA_NAME = "datagouv-eval local twin CA"
CA_DAYS = 3650
LEAF_DAYS = 365
# Backdating absorbs small clock differences between processes (and containers).
_BACKDATE = dt.timedelta(hours=1)
_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


class CertificateAuthority:
    """The local CA of one twin home: its files, and TLS server contexts for host names.

    Use :meth:`load_or_create`; contexts are made on demand and cached (in memory and as
    ``leaves/<host>.pem``).
    """

    def __init__(self, directory: Path, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate):
        self.directory = directory
        self._key = key
        self._cert = cert
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()

    @property
    def ca_path(self) -> Path:
        """The CA certificate alone (PEM)."""
        return self.directory / "ca.pem"

    @property
    def bundle_path(self) -> Path:
        """The public roots (certifi's) then the local CA (PEM): what clients should trust."""
        return self.directory / "bundle.pem"

    @classmethod
    def load_or_create(cls, home: Path) -> CertificateAuthority:
        """Return the CA under ``home/front``, generating it (and the bundle) on first use.

        Raises:
            OSError: the directory cannot be created or written.
        """
        directory = home / "front"
        (directory / "leaves").mkdir(parents=True, exist_ok=True)
        with exclusive_lock(directory / ".lock"):
            cert_path, key_path = directory / "ca.pem", directory / "ca-key.pem"
            if cert_path.exists() and key_path.exists():
                key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
                if not isinstance(key, ec.EllipticCurvePrivateKey):
                    raise ValueError(f"{key_path}: expected an EC private key")
                cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
            else:
                key, cert = _new_ca()
                _write(key_path, _key_pem(key), mode=0o600)
                _write(cert_path, cert.public_bytes(serialization.Encoding.PEM))
            bundle = Path(certifi.where()).read_bytes().rstrip(b"\n") + b"\n"
            bundle += cert.public_bytes(serialization.Encoding.PEM)
            bundle_path = directory / "bundle.pem"
            if not bundle_path.exists() or bundle_path.read_bytes() != bundle:
                _write(bundle_path, bundle)
        return cls(directory, key, cert)

    def server_context(self, host: str) -> ssl.SSLContext:
        """Return a TLS server context presenting a certificate for ``host`` (HTTP/1.1 only).

        Raises:
            ValueError: ``host`` is not a DNS name.
        """
        name = host.strip().rstrip(".").lower()
        with self._lock:
            context = self._contexts.get(name)
            if context is None:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.minimum_version = ssl.TLSVersion.TLSv1_2
                context.set_alpn_protocols(["http/1.1"])
                context.load_cert_chain(self.leaf_path(name))
                self._contexts[name] = context
            return context

    def leaf_path(self, host: str) -> Path:
        """Return ``leaves/<host>.pem`` (key + certificate), signing it first if needed.

        Raises:
            ValueError: ``host`` is not a DNS name.
        """
        if not _HOST_NAME.match(host):
            raise ValueError(f"cannot make a certificate for {host!r}: not a DNS host name")
        path = self.directory / "leaves" / f"{host}.pem"
        if path.exists():
            return path
        with exclusive_lock(self.directory / ".lock"):
            if not path.exists():
                key = ec.generate_private_key(ec.SECP256R1())
                cert = self._sign_leaf(host, key)
                _write(
                    path, _key_pem(key) + cert.public_bytes(serialization.Encoding.PEM), mode=0o600
                )
        return path

    def _sign_leaf(self, host: str, key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
        now = dt.datetime.now(dt.UTC) - _BACKDATE
        ca_ski = self._cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=LEAF_DAYS))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), False
            )
            .sign(self._key, hashes.SHA256())
        )


def _new_ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    now = dt.datetime.now(dt.UTC) - _BACKDATE
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write atomically (a reader never sees half a file)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.chmod(temporary, mode)
    os.replace(temporary, path)
