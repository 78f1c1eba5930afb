"""examples/ci/lens-ci.sh end to end: its real `base` and `head` steps in a throw-away git repository.

Each case builds a base and a head commit of a tiny project (a small in-memory adapter, after examples/my_memory.py),
then runs `lens-ci.sh base BASE_SHA` and `lens-ci.sh head` as the workflow does: real pytest-lens runs on one bundled
scope (`-k cts01`: clinical_trial_s01's 24 questions). The `install` step is replaced by a throw-away virtual
environment whose python imports this pytest-lens and its dependencies, and into which LENS_PROJECT_INSTALL installs
offline (pip --no-index); nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path

import pytest

import pytest_lens

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash"),
    # The throw-away environment runs this environment's pip; LENS_PROJECT_INSTALL builds without build isolation.
    pytest.mark.skipif(find_spec("pip") is None or find_spec("setuptools") is None, reason="needs pip and setuptools"),
]

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "ci" / "lens-ci.sh"
ADAPTER = "mymem:Memory"
# One bundled scope keeps each run to a few seconds; --lens-max-drop as examples/ci/lens.yml sets it.
LENS_ARGS = "-k cts01 --lens-max-drop=0.02"

MEMORY = '''"""A small in-memory adapter: search ranks episodes by the query words they contain."""

from __future__ import annotations

import re
from typing import Any

from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult
{imports}

def tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class Memory(MemoryAdapter):
    """Episodes in a dict."""

    max_results = {max_results}
    lens_thread_safe = True
    lens_isolated_instances = True

    def __init__(self) -> None:
        {init}self.episodes: dict[str, tuple[str, str]] = {{}}

    def reset(self, scope_id: str) -> None:
        self.episodes.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        self.episodes[episode_id] = (timestamp, text)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        terms = tokens(query)
        hits = [
            SearchResult(ref_id, text[:240], float(len(terms & tokens(text))), {{"timestamp": timestamp}})
            for ref_id, (timestamp, text) in self.episodes.items()
            if terms & tokens(text)
        ]
        hits.sort(key=lambda hit: (-hit.score, hit.ref_id))
        return hits[: min(limit or self.max_results, self.max_results)]

    def retrieve(self, ref_id: str) -> Document | None:
        stored = self.episodes.get(ref_id)
        return Document(ref_id, stored[1], {{"timestamp": stored[0]}}) if stored else None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=["keyword"], max_results_per_search=self.max_results)
'''


def memory(max_results: int = 10, imports: str = "", init: str = "") -> str:
    return MEMORY.format(max_results=max_results, imports=imports, init=init)


#: The adapter's own dependency, a package in the repository that only LENS_PROJECT_INSTALL installs (as pip would
#: install a vector store's client from requirements.txt). The adapter takes its tokenizer from it.
DEPENDENCY = {
    "deps/lensdep/pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
    '[project]\nname = "lensdep-xyz"\nversion = "0.1"\n',
    "deps/lensdep/lensdep_xyz/__init__.py": 'import re\n\n\ndef tokens(text):\n    return set(re.findall(r"[a-z0-9]+", text.lower()))\n',
}
PROJECT_INSTALL = "--no-index --no-deps --no-build-isolation ./deps/lensdep"


def memory_with_dependency(max_results: int = 10, before: str = "") -> str:
    """The adapter, with its tokenizer from ``lensdep_xyz``; ``before`` runs before that import."""
    return memory(max_results, imports=f"{before}from lensdep_xyz import tokens").replace("\ndef tokens(", "\ndef own_tokens(")


class Project:
    """A throw-away git repository, the lens-ci.sh steps run in it, and what they leave behind."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "repo"
        self.out = root / "lens-artifacts"
        self.runner_temp = root / "runner-temp"
        self.runner_temp.mkdir(parents=True)
        self.env = {key: value for key, value in os.environ.items() if not key.startswith(("LENS_", "PYTEST_", "RUNNER_", "GIT_"))}
        self.env.update(
            HOME=str(root / "home"),
            GIT_AUTHOR_NAME="lens",
            GIT_AUTHOR_EMAIL="lens@example.invalid",
            GIT_COMMITTER_NAME="lens",
            GIT_COMMITTER_EMAIL="lens@example.invalid",
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            LENS_ADAPTER=ADAPTER,
            LENS_VENV=str(make_venv(root / "venv")),
            LENS_CACHE_DIR=str(root / "cache"),
            LENS_OUT=str(self.out),
            LENS_ARGS=LENS_ARGS,
            RUNNER_TEMP=str(self.runner_temp),
        )
        self.git("init", "-q", "-b", "main", str(self.repo), cwd=root)

    def git(self, *args: str, cwd: Path | None = None) -> str:
        done = subprocess.run(["git", *args], cwd=cwd or self.repo, env=self.env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    def commit(self, message: str, files: dict[str, str | None], parent: str | None = None) -> str:
        """Commit ``files`` (text, or None to delete) on top of ``parent`` (default: the current commit), checked out."""
        if parent is not None:
            self.git("checkout", "-q", "--detach", parent)
        for name, text in files.items():
            path = self.repo / name
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def lens_ci(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["bash", str(SCRIPT), *args], cwd=self.repo, env={**self.env, **env}, capture_output=True, text=True, timeout=300
        )
        # What the job log would show, for a failing assertion.
        print(f"$ lens-ci.sh {' '.join(args)}  -> exit {done.returncode}\n{done.stdout}\n{done.stderr}")
        if args[0] == "base":  # the base commit's worktree is gone and unregistered, whatever the outcome
            assert self.git("worktree", "list", "--porcelain").count("worktree ") == 1
            assert not list(self.runner_temp.glob("lens-base-tree*"))
        return done

    def record(self) -> str | None:
        path = self.out / "base-record.txt"
        return path.read_text() if path.exists() else None


def make_venv(path: Path) -> Path:
    """A virtual environment of its own (LENS_PROJECT_INSTALL installs into it) that imports this pytest-lens.

    Its site-packages first, then where this pytest-lens is, then this environment's site-packages (its .pth files
    processed, so an editable install resolves); bin/pip and bin/pytest are this environment's, run by its python.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    lines = [str(Path(pytest_lens.__file__).resolve().parents[1])]
    lines += [f"import site; site.addsitedir({directory!r})" for directory in site.getsitepackages()]
    Path(purelib, "_lens_ci_parent.pth").write_text("\n".join(lines) + "\n")
    for name in ("pip", "pytest"):  # the console scripts pip would write, for this environment's entry points
        entry = next(iter(entry_points(group="console_scripts", name=name)))
        script = path / "bin" / name
        script.write_text(f"#!{python}\nimport sys\nfrom {entry.module} import {entry.attr} as main\nsys.exit(main())\n")
        script.chmod(0o755)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def test_a_regression_fails_the_job_and_a_harmless_change_passes(project: Project) -> None:
    base = project.commit("the adapter", {"mymem.py": memory(), "README.md": "A memory.\n"})

    saved = project.lens_ci("base", base)
    assert saved.returncode == 0
    assert f"base commit {base[:12]}: {ADAPTER} loads, from " in saved.stdout
    assert "lens-ci: base run saved (pytest exit status 0)" in saved.stdout
    assert project.record() == f"baseline {base}\n"

    # (a) the pull request cuts search to 2 results: compared with the base, the job fails.
    project.commit("search: at most 2 results", {"mymem.py": memory(max_results=2)})
    regression = project.lens_ci("head")
    assert regression.returncode == 1
    assert "FAIL  --lens-compare-fail: vs baseline 0001_base: Memory retrieval_score" in regression.stdout
    assert "lens-ci: pytest exit status 1" in regression.stdout

    # (b) a pull request that changes nothing the benchmark measures passes.
    project.commit(
        "docs",
        {"README.md": "A memory, in a dict.\n", "mymem.py": memory().replace("Episodes in a dict.", "Episodes, kept in a dict.")},
        parent=base,
    )
    harmless = project.lens_ci("head")
    assert harmless.returncode == 0
    assert "pass  --lens-compare-fail: no significant regression vs baseline 0001_base" in harmless.stdout
    assert "lens-ci: pytest exit status 0" in harmless.stdout


def test_the_pull_request_that_adds_the_adapter_runs_ungated_and_says_why(project: Project) -> None:
    base = project.commit("no adapter yet", {"README.md": "A memory, one day.\n"})
    project.commit("the adapter", {"mymem.py": memory()})

    skipped = project.lens_ci("base", base)
    assert skipped.returncode == 0
    assert (
        f"lens-ci: the base commit {base[:12]} does not define the adapter {ADAPTER} (no module named 'mymem' there): "
        "the head is benchmarked without a baseline, and not gated"
    ) in skipped.stdout
    assert project.record() == f"none {base}\nno module named 'mymem' there\n"

    head = project.lens_ci("head")
    assert head.returncode == 0
    assert "this run is not compared" in head.stdout
    assert "--lens-compare-fail" not in head.stdout


@pytest.mark.parametrize(
    ("adapter", "files", "reason"),
    [
        ("memstore.memory:Memory", {"README.md": "No memstore package yet.\n"}, "no module named 'memstore' there"),
        ("mymem:Memory", {"mymem.py": "class OtherMemory:\n    pass\n"}, "module 'mymem' has no 'Memory' there"),
    ],
    ids=["package-absent", "class-absent"],
)
def test_a_base_that_does_not_define_the_adapter_is_skipped_plainly(
    project: Project, adapter: str, files: dict[str, str | None], reason: str
) -> None:
    base = project.commit("base", files)
    skipped = project.lens_ci("base", base, LENS_ADAPTER=adapter)
    assert skipped.returncode == 0
    assert f"does not define the adapter {adapter} ({reason})" in skipped.stdout
    assert project.record() == f"none {base}\n{reason}\n"


def test_the_adapter_s_dependency_is_installed_before_the_base_is_judged(project: Project) -> None:
    """(d) The adapter imports a package that only LENS_PROJECT_INSTALL installs: the base is benchmarked and the regression caught.

    The script used to judge the base before installing the project: the import failed on the dependency, the base
    was taken for one without the adapter, and the head ran ungated (exit 0).
    """
    base = project.commit("the adapter, on lensdep_xyz", {"mymem.py": memory_with_dependency(), **DEPENDENCY})
    project.commit("search: at most 2 results", {"mymem.py": memory_with_dependency(max_results=2)})

    saved = project.lens_ci("base", base, LENS_PROJECT_INSTALL=PROJECT_INSTALL)
    assert saved.returncode == 0
    assert f"{ADAPTER} loads" in saved.stdout
    assert project.record() == f"baseline {base}\n"

    regression = project.lens_ci("head", LENS_PROJECT_INSTALL=PROJECT_INSTALL)
    assert regression.returncode == 1
    assert "FAIL  --lens-compare-fail: vs baseline 0001_base" in regression.stdout


WARNS_THEN_NEEDS_DEPENDENCY = memory_with_dependency(
    before='import warnings\n\nwarnings.warn("mymem: the v1 API is deprecated", DeprecationWarning, stacklevel=1)\n'
)


@pytest.mark.parametrize(
    ("adapter", "files", "error"),
    [
        # The dependency is not installed (no LENS_PROJECT_INSTALL); the DeprecationWarning before it is no error.
        ("mymem:Memory", {"mymem.py": WARNS_THEN_NEEDS_DEPENDENCY, **DEPENDENCY}, "ModuleNotFoundError: No module named 'lensdep_xyz'"),
        (
            "mymem:Memory",
            {"mymem.py": 'raise RuntimeError("qdrant at localhost:6333 refused the connection")\n'},
            "RuntimeError: qdrant at",
        ),
        # The package is there; a module that the adapter's module imports is not: defined, and broken.
        (
            "memstore.memory:Memory",
            {"memstore/__init__.py": "", "memstore/memory.py": memory(imports="from memstore.backend import Store")},
            "ModuleNotFoundError: No module named 'memstore.backend'",
        ),
    ],
    ids=["dependency-missing", "error-in-module", "sibling-module-missing"],
)
def test_an_adapter_that_fails_to_import_at_the_base_fails_the_job(
    project: Project, adapter: str, files: dict[str, str | None], error: str
) -> None:
    base = project.commit("a broken adapter", files)
    failed = project.lens_ci("base", base, LENS_ADAPTER=adapter, PYTHONWARNINGS="always::DeprecationWarning")
    assert failed.returncode == 1
    reason = next(line for line in failed.stderr.splitlines() if "but it cannot be loaded there" in line)
    assert reason.startswith(f"lens-ci: the base commit {base[:12]} defines the adapter {adapter}, but it cannot be loaded there: ")
    assert error in reason
    assert "deprecated" not in reason
    assert "does not define" not in failed.stdout + failed.stderr
    assert project.record() is None
    # The head step never runs ungated after a base that recorded nothing.
    head = project.lens_ci("head", LENS_ADAPTER=adapter)
    assert head.returncode == 1
    assert "no base run recorded" in head.stderr


def test_an_adapter_that_cannot_be_constructed_at_the_base_fails_the_job(project: Project) -> None:
    base = project.commit(
        "an adapter that needs a server", {"mymem.py": memory(init='raise RuntimeError("no vector store at localhost:6333")\n        ')}
    )
    failed = project.lens_ci("base", base)
    assert failed.returncode == 1
    assert f"lens-ci: the adapter {ADAPTER} failed at the base commit {base[:12]}: --lens-max-fault-rate=" in failed.stderr
    assert "first: Memory.__init__(): RuntimeError: no vector store at localhost:6333" in failed.stderr
    assert project.record() is None
