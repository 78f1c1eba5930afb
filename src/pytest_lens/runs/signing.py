"""Signing a bundle's manifest with a key its author already has, and checking it: OpenSSH's ``ssh-keygen -Y``.

No cryptography of our own. ``ssh-keygen -Y sign`` (OpenSSH 8.0 and later, on every Linux and macOS machine and in
Git for Windows) signs the manifest in the SSHSIG format under the namespace :data:`NAMESPACE`, with an SSH key the
author already has (or one held by ``ssh-agent``, given by its public half). ``ssh-keygen -Y verify`` checks the
signature against the public key the reader trusts; the manifest holds every other member's SHA-256, so a good
signature covers the whole bundle.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NAMESPACE", "SigningError", "sign", "signed_by", "verify"]

#: What the signature is for: a signature made for anything else (git commits, files) does not verify as a bundle's.
NAMESPACE = "pytest-lens-bundle"
#: The name the reader's key goes by in the allowed-signers file built for one check.
_PRINCIPAL = "bundle-signer"
_SSH_TIMEOUT_S = 60


class SigningError(ValueError):
    """A signature cannot be made or does not verify; the message says which and why."""


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise SigningError("signing and checking a bundle's signature need OpenSSH's ssh-keygen (8.0 or later) on PATH")
    return found


def sign(manifest: bytes, key: Path) -> bytes:
    """The SSHSIG signature of ``manifest`` by ``key`` (a private key file, or the public key of one in ``ssh-agent``)."""
    if not key.is_file():
        raise SigningError(f"--sign {key}: no such key file")
    with tempfile.TemporaryDirectory(prefix="lens-sign-") as tmp:
        target = Path(tmp) / "MANIFEST.json"
        target.write_bytes(manifest)
        # stdin stays the terminal's: ssh-keygen asks there for the passphrase of an encrypted key.
        done = subprocess.run(
            [_ssh_keygen(), "-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(target)],
            capture_output=True,
            text=True,
            check=False,
            timeout=_SSH_TIMEOUT_S,
        )
        signature = target.with_name(target.name + ".sig")
        if done.returncode != 0 or not signature.is_file():
            raise SigningError(f"--sign {key}: ssh-keygen could not sign: {_said(done)}")
        return signature.read_bytes()


def _public_key(signer: str) -> str:
    """``TYPE BASE64`` of ``signer``: a public key file (``id_ed25519.pub``) or the key's text."""
    path = Path(signer).expanduser()
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else signer
    fields = text.strip().split()
    if len(fields) < 2 or not fields[0].startswith(("ssh-", "ecdsa-", "sk-")):
        raise SigningError(f"--signer {signer}: not an SSH public key (a file such as id_ed25519.pub, or its text 'ssh-ed25519 AAAA...')")
    return f"{fields[0]} {fields[1]}"


def verify(manifest: bytes, signature: bytes, signer: str) -> str:
    """Check that ``signature`` is ``signer``'s over ``manifest``; what ssh-keygen says of it (the key's fingerprint).

    :class:`SigningError` when it is not: another key signed, or the manifest changed after signing.
    """
    allowed = f'{_PRINCIPAL} namespaces="{NAMESPACE}" {_public_key(signer)}\n'
    said = _check(manifest, signature, ["-Y", "verify", "-I", _PRINCIPAL, "-n", NAMESPACE], allowed=allowed)
    if said.failed:
        raise SigningError(f"the bundle's signature is not {signer}'s over its MANIFEST.json: {said.text or 'ssh-keygen refused it'}")
    return said.text.splitlines()[0] if said.text else "good signature"


def signed_by(manifest: bytes, signature: bytes) -> str:
    """Which key made ``signature`` over ``manifest`` (not whether to trust it): ``ED25519 key SHA256:...``."""
    said = _check(manifest, signature, ["-Y", "check-novalidate", "-n", NAMESPACE])
    if said.failed:
        raise SigningError(f"the bundle's signature does not match its MANIFEST.json: {said.text or 'ssh-keygen refused it'}")
    return said.text.rsplit(" with ", 1)[-1] if " with " in said.text else said.text


@dataclass(frozen=True)
class _Said:
    failed: bool
    text: str


def _check(manifest: bytes, signature: bytes, arguments: list[str], *, allowed: str | None = None) -> _Said:
    """Run ``ssh-keygen ARGUMENTS -s SIG [-f ALLOWED]`` on ``manifest``: whether it refused, and what it said."""
    with tempfile.TemporaryDirectory(prefix="lens-verify-") as tmp:
        sig = Path(tmp) / "MANIFEST.json.sig"
        sig.write_bytes(signature)
        extra = []
        if allowed is not None:
            (Path(tmp) / "allowed_signers").write_text(allowed, encoding="utf-8")
            extra = ["-f", str(Path(tmp) / "allowed_signers")]
        done = subprocess.run(
            [_ssh_keygen(), *arguments, "-s", str(sig), *extra], input=manifest, capture_output=True, check=False, timeout=_SSH_TIMEOUT_S
        )
    return _Said(done.returncode != 0, (done.stdout + done.stderr).decode("utf-8", errors="replace").strip())


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr or done.stdout or f"exit status {done.returncode}").strip().splitlines()[-1]
