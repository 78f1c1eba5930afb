"""``lens bundle`` and ``lens reproduce``: real runs through pytest, bundled, checked member by member and run again offline."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.cli.main import main as lens
from pytest_lens.runs.bundle import MANIFEST, secret_lines
from tests.support import COLD_CHAIN_DEMO, assert_answered

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", f"--lens-dataset={COLD_CHAIN_DEMO}")
#: The secrets of the LLM run: in the endpoint's user-info and query string, and in the key's environment variable.
SECRETS = {"user": "lensuser77", "password": "hunter2pass99", "query": "QUERYSECRET12345", "key": "sk-lensTESTkeyABCDEF1234567890"}


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running


def members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle, "r:gz") as tar:
        return {info.name: tar.extractfile(info).read() for info in tar if info.isfile()}  # type: ignore[union-attr]


def rewrite(bundle: Path, out: Path, change: Callable[[str, bytes], bytes]) -> Path:
    """``bundle`` with ``change(name, data)`` applied to every member (the manifest as it was, unless changed too)."""
    with tarfile.open(out, "w:gz") as tar:
        for name, data in members(bundle).items():
            new = change(name, data)
            info = tarfile.TarInfo(name)
            info.size = len(new)
            tar.addfile(info, io.BytesIO(new))
    return out


def flip_a_reply_byte(name: str, data: bytes) -> bytes:
    if not name.startswith("llm/") or flip_a_reply_byte.done:  # type: ignore[attr-defined]
        return data
    flip_a_reply_byte.done = True  # type: ignore[attr-defined]
    at = data.index(b'"finish_reason": "', data.index(b'"response"')) + len(b'"finish_reason": "')  # every reply has one
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]


@pytest.fixture(scope="module")
def offline_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bm25 run of the cold-chain demo (in a pytest process of its own, saved as ``main``) and its bundle: ``run.json``,
    ``run.lens.tar.gz``."""
    where = tmp_path_factory.mktemp("offline")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--lens-adapter=bm25", *QUIET, "--lens-json=run.json", "--lens-save=main"],
        cwd=where,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert lens(["bundle", str(where / "run.json"), "--out", str(where / "run.lens.tar.gz")]) == 0
    return where / "run.lens.tar.gz"


def test_an_offline_run_reproduces_bit_for_bit(
    offline_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    found = members(offline_bundle)
    run_members = {"run/artifact.json", "run/run.rows.jsonl", "run/settings.json", "data/00/cold_chain_demo.json"}
    assert set(found) == {MANIFEST, "README.txt", "environment.json", *run_members}
    assert found["data/00/cold_chain_demo.json"] == COLD_CHAIN_DEMO.read_bytes()  # the data byte for byte
    manifest = json.loads(found[MANIFEST])
    assert {name: entry["sha256"] for name, entry in manifest["members"].items()} == {
        name: hashlib.sha256(data).hexdigest() for name, data in found.items() if name != MANIFEST
    }
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)  # --keep relative to here, the run set up again under another --rootdir
    assert lens(["reproduce", str(offline_bundle), "--keep", "kept", "--rootdir", str(offline_bundle.parent)]) == 0
    out = capsys.readouterr().out
    assert "reproduced 8 of 8 questions bit for bit; summaries, statistics and verdict identical" in out
    assert (tmp_path / "kept" / "reproduced.json").is_file() and (tmp_path / "kept" / "bundle" / "run" / "settings.json").is_file()


def test_the_same_run_bundles_to_the_same_bytes(offline_bundle: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.lens.tar.gz"
    assert lens(["bundle", str(offline_bundle.parent / "run.json"), "--out", str(again)]) == 0
    assert again.read_bytes() == offline_bundle.read_bytes()


def test_a_consistently_changed_score_does_not_reproduce(offline_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bundle whose claim was edited and its manifest updated to match: the run made again says where it differs."""
    rows = [json.loads(line) for line in members(offline_bundle)["run/run.rows.jsonl"].splitlines()]
    first = rows[0]
    first["metrics"]["evidence_coverage"] = 0.123
    first["duration_s"] = 99.0  # a wall-clock field alone would not count
    edited = b"".join((json.dumps(row) + "\n").encode() for row in rows)

    def change(name: str, data: bytes) -> bytes:
        if name == "run/run.rows.jsonl":
            return edited
        if name == MANIFEST:
            manifest = json.loads(data)
            manifest["members"]["run/run.rows.jsonl"] = {"sha256": hashlib.sha256(edited).hexdigest(), "bytes": len(edited)}
            return json.dumps(manifest).encode()
        return data

    forged = rewrite(offline_bundle, tmp_path / "forged.lens.tar.gz", change)
    capsys.readouterr()
    assert lens(["reproduce", str(forged)]) == 1
    out = capsys.readouterr().out
    assert "NOT reproduced: 7 of 8 questions bit for bit; first differences:" in out
    assert f"question bm25/{first['scope_id']}/16k/{first['question_id']}: metrics.evidence_coverage: 0.123 -> " in out
    assert "duration_s" not in out


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../escape.json", "bundle member '../escape.json' is not a plain file inside the bundle: refused"),
        ("data/extra.json", "data/extra.json: in the bundle but not listed in MANIFEST.json"),
    ],
)
def test_a_member_the_manifest_does_not_vouch_for_is_refused(
    offline_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    bad = tmp_path / "bad.lens.tar.gz"
    shutil.copy(offline_bundle, bad)
    with tarfile.open(bad, "r:gz") as tar:
        kept = [(info, tar.extractfile(info).read()) for info in tar]  # type: ignore[union-attr]
    with tarfile.open(bad, "w:gz") as tar:
        for info, data in [*kept, (tarfile.TarInfo(name), b"{}")]:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    capsys.readouterr()
    assert lens(["reproduce", str(bad)]) == 2
    assert message in capsys.readouterr().err


def llm_run(pytester: pytest.Pytester, server: OpenAITestServer, *extra: str) -> list[str]:
    base_url = server.base_url.replace("://", f"://{SECRETS['user']}:{SECRETS['password']}@") + f"?api_key={SECRETS['query']}"
    return [
        "--lens-adapter=bm25",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        "--lens-judge=llm",
        f"--lens-llm-base-url={base_url}",
        *QUIET,
        *extra,
    ]


def test_an_llm_run_bundles_without_its_secrets_and_reproduces_from_its_replies_alone(
    pytester: pytest.Pytester, server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["key"])
    assert_answered(pytester.runpytest(*llm_run(pytester, server), "--lens-json=run.json"), 8)
    sent = server.count(path="/v1/chat/completions")
    assert sent > 8 * 3  # agent turns, judgments, baselines
    assert server.requests[0].query == f"api_key={SECRETS['query']}" and server.requests[0].authorization  # the secrets were used
    bundle = pytester.path / "llm.lens.tar.gz"
    elsewhere = pytester.mkdir("elsewhere")  # the cache is where the run's settings say, under the directory it ran in
    assert lens(["bundle", str(pytester.path / "run.json"), "--out", str(bundle), "--rootdir", str(elsewhere)]) == 2
    assert f"its request cache {elsewhere}/.lens/llm-cache.sqlite is not there: run lens bundle in the" in capsys.readouterr().err
    assert lens(["bundle", str(pytester.path / "run.json"), "--out", str(bundle)]) == 0

    # No secret in any member, by value or by the masking's own reading; every request the run made, and nothing else.
    found = members(bundle)
    assert sum(1 for name in found if name.startswith("llm/")) == sent
    for name, data in found.items():
        text = data.decode("utf-8")
        assert not [secret for secret in SECRETS.values() if secret in text], name
        assert secret_lines(text) == [], name
    assert json.loads(found["run/settings.json"])["llm"]["base_url"] == server.base_url.replace("://", "://***@") + "?api_key=***"

    # Offline, without the key, from the bundle's replies alone: nothing reaches the endpoint.
    monkeypatch.delenv("OPENAI_API_KEY")
    server.reset()
    capsys.readouterr()
    assert lens(["reproduce", str(bundle)]) == 0
    assert server.count() == 0
    assert "reproduced 8 of 8 questions bit for bit" in capsys.readouterr().out

    # One byte of one reply changed: named, and nothing runs.
    flip_a_reply_byte.done = False  # type: ignore[attr-defined]
    tampered = rewrite(bundle, pytester.path / "tampered.lens.tar.gz", flip_a_reply_byte)
    assert lens(["reproduce", str(tampered)]) == 2
    err = capsys.readouterr().err
    assert "1 bundle member(s) do not match the manifest (changed since it was bundled): llm/" in err
    assert "request to scripted and its reply): sha256 " in err
    assert server.count() == 0


def ssh_key(where: Path, name: str) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(where / name)], check=True)
    return where / name


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="OpenSSH's ssh-keygen is not installed")
def test_a_signed_bundle_is_checked_against_the_signers_key(
    offline_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    author, stranger = ssh_key(tmp_path, "author"), ssh_key(tmp_path, "stranger")
    signed = tmp_path / "signed.lens.tar.gz"
    assert lens(["bundle", str(offline_bundle.parent / "run.json"), "--out", str(signed), "--sign", str(author)]) == 0
    capsys.readouterr()
    assert lens(["reproduce", str(signed), "--signer", f"{author}.pub", "--check-only"]) == 0
    assert 'signature: Good "pytest-lens-bundle" signature for bundle-signer with ED25519 key SHA256:' in capsys.readouterr().out
    assert lens(["reproduce", str(signed), "--signer", f"{stranger}.pub", "--check-only"]) == 2
    assert f"the bundle's signature is not {stranger}.pub's over its MANIFEST.json" in capsys.readouterr().err
    assert lens(["reproduce", str(offline_bundle), "--signer", f"{author}.pub"]) == 2
    assert "is not signed (no MANIFEST.json.sig)" in capsys.readouterr().err

    def forge(name: str, data: bytes) -> bytes:  # a changed member, and a manifest changed to vouch for it
        return data.replace(b'"results": 8', b'"results": 9') if name == MANIFEST else data

    forged = rewrite(signed, tmp_path / "forged.lens.tar.gz", forge)
    assert lens(["reproduce", str(forged), "--signer", f"{author}.pub", "--check-only"]) == 2
    assert "Signature verification failed" in capsys.readouterr().err


def test_a_secret_in_a_member_refuses_the_bundle(offline_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(offline_bundle.parent / "run.json", tmp_path / "run.json")
    rows = (offline_bundle.parent / "run.rows.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first["answer"] = "see http://admin:s3cretPassw0rd@db.internal/ for the logs"  # written unmasked
    (tmp_path / "run.rows.jsonl").write_text("\n".join([json.dumps(first), *rows[1:]]) + "\n")
    capsys.readouterr()
    assert lens(["bundle", str(tmp_path / "run.json"), "--out", str(tmp_path / "x.lens.tar.gz")]) == 2
    err = capsys.readouterr().err
    assert "bundle member run/run.rows.jsonl line 1 holds what reads as a secret (" in err and "s3cretPassw0rd" not in err
    assert not (tmp_path / "x.lens.tar.gz").exists()


def test_an_incomplete_run_is_not_bundled(offline_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads((offline_bundle.parent / "run.json").read_text())
    document["incomplete"] = ["incomplete: 3 questions missing from groups bm25/cold_chain_demo (interrupted)"]
    (tmp_path / "run.json").write_text(json.dumps(document))
    shutil.copy(offline_bundle.parent / "run.rows.jsonl", tmp_path / "run.rows.jsonl")
    capsys.readouterr()
    assert lens(["bundle", str(tmp_path / "run.json"), "--out", str(tmp_path / "x.lens.tar.gz")]) == 2
    assert "the run is incomplete (incomplete: 3 questions missing" in capsys.readouterr().err
    assert not (tmp_path / "x.lens.tar.gz").exists()


def test_a_run_compared_with_a_baseline_carries_it_and_reproduces_the_comparison(
    offline_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = offline_bundle.parent  # the fixture's run is the baseline, saved as main
    compared = ["--lens-baseline=main", "--lens-compare-fail", "--lens-compare-partial", "--lens-json=compared.json"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--lens-adapter=bm25", *QUIET, *compared], cwd=where, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert json.loads((where / "compared.json").read_text())["comparison"]["adapters"][0]["regression"] is not None  # the document
    bundle = where / "compared.lens.tar.gz"
    assert lens(["bundle", str(where / "compared.json"), "--out", str(bundle), "--rootdir", str(where)]) == 0
    assert {"run/baseline/0001_main.json", "run/baseline/0001_main.rows.jsonl"} <= set(members(bundle))
    capsys.readouterr()
    assert lens(["reproduce", str(bundle)]) == 0  # the comparison and its gate, again
    assert "reproduced 8 of 8 questions bit for bit" in capsys.readouterr().out
