"""A throwaway test CA for a local broker: its server certificate and client certificates.

For development and tests only: the CA key sits unencrypted beside the
certificates. Every file is made with ``openssl``; nothing secret goes on its
command line (keys are files, never passphrases).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bus.errors import BrokerSetupError

BROKER_USER = "mosquitto"  # the user Mosquitto drops to when started as root
_CLIENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def prepare_dir(directory: Path) -> Path:
    """``directory`` created 0700 (if new) and known writable; its absolute path."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        probe = directory / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise BrokerSetupError(
            f"cannot write broker directory {directory}: {exc.strerror}"
        ) from exc
    return directory.resolve()


def give_to_broker_user(*paths: Path) -> None:
    """As root, Mosquitto drops to user ``mosquitto``: let it read and write these."""
    if os.geteuid() != 0:
        return
    try:
        entry = pwd.getpwnam(BROKER_USER)
    except KeyError:
        return
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.chown(path, entry.pw_uid, entry.pw_gid)


def run_tool(argv: Sequence[str], what: str) -> None:
    """Run a setup tool; its last error line becomes one ``BrokerSetupError`` line."""
    try:
        subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as exc:
        raise BrokerSetupError(f"{argv[0]} is not installed") from exc
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()
        raise BrokerSetupError(f"{what} failed: {detail[-1] if detail else exc}") from exc


def _openssl() -> str:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise BrokerSetupError("openssl is not installed")
    return openssl


@dataclass(frozen=True)
class TlsFiles:
    """A CA and the server certificate it signed."""

    ca_cert: Path
    server_cert: Path
    server_key: Path


@dataclass(frozen=True)
class ClientCert:
    """A client certificate (and its key) signed by the test CA, for mTLS."""

    cert: Path
    key: Path


def _sign(
    openssl: str, certs: Path, name: str, subject: str, extensions: str, days: int
) -> tuple[Path, Path]:
    """A new key ``name.key`` and certificate ``name.crt`` signed by the CA in ``certs``."""
    key, csr, crt = certs / f"{name}.key", certs / f"{name}.csr", certs / f"{name}.crt"
    ext = certs / f"{name}.ext"
    ext.write_text(extensions)
    try:
        run_tool(
            [openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
             "-out", str(csr), "-subj", subject],
            f"creating the key for {name}",
        )  # fmt: skip
        key.chmod(0o600)
        run_tool(
            [openssl, "x509", "-req", "-in", str(csr), "-CA", str(certs / "ca.crt"),
             "-CAkey", str(certs / "ca.key"), "-CAcreateserial", "-out", str(crt),
             "-days", str(days), "-extfile", str(ext)],
            f"signing the certificate for {name}",
        )  # fmt: skip
    finally:
        csr.unlink(missing_ok=True)
        ext.unlink(missing_ok=True)
    return crt, key


def create_test_ca(directory: Path, days: int = 365) -> TlsFiles:
    """A throwaway CA and a server cert for localhost/127.0.0.1 (development and tests).

    Clients trust it with MQTT_CA_CERTS=<directory>/ca.crt.
    """
    openssl = _openssl()
    certs = prepare_dir(directory)
    ca_key, ca_crt = certs / "ca.key", certs / "ca.crt"
    run_tool(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days),
         "-keyout", str(ca_key), "-out", str(ca_crt), "-subj", "/CN=orchestrate test CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        "creating the test CA",
    )  # fmt: skip
    ca_key.chmod(0o600)
    crt, key = _sign(
        openssl, certs, "server", "/CN=localhost",
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
        "authorityKeyIdentifier=keyid\n",
        days,
    )  # fmt: skip
    give_to_broker_user(key, crt, ca_crt)
    return TlsFiles(ca_cert=ca_crt, server_cert=crt, server_key=key)


def issue_client_cert(certs: Path, name: str, days: int = 365) -> ClientCert:
    """A client certificate ``client-NAME.crt`` (CN=NAME) signed by the test CA in
    ``certs``, for a broker configured with ``--require-certificate``."""
    if not _CLIENT_NAME.fullmatch(name):
        raise BrokerSetupError(
            f"client name must be letters, digits, '.', '_' or '-' (at most 64), got {name!r}"
        )
    if not (certs / "ca.key").exists() or not (certs / "ca.crt").exists():
        raise BrokerSetupError(f"no test CA in {certs} (run broker config --tls first)")
    crt, key = _sign(
        _openssl(), certs, f"client-{name}", f"/CN={name}",
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=clientAuth\n"
        "authorityKeyIdentifier=keyid\n",
        days,
    )  # fmt: skip
    return ClientCert(cert=crt, key=key)
