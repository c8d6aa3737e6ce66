#!/usr/bin/env python3
"""The project's two commands, and the plumbing behind them (standard library only, Python 3.10+).

    python tasks.py train [ARGS]   set up .venv and run the main job: `annotated-tx train ARGS`
    python tasks.py test  [--flags slow] [NOTEBOOK ...]
                                   set up .venv with the dev tools and run the notebooks as tests

and for developers:

    python tasks.py setup [--dev]  only create/update .venv
    python tasks.py sync           fail if nbdev-export / nbdev-clean would change a tracked file
    python tasks.py lint           ruff on the package: no line over 120 characters, one statement per line,
                                   pyflakes' F rules (no unused or undefined name, no redefinition)
    python tasks.py readme         write README.md from nbs/index.ipynb
    python tasks.py site           build the book as an offline static site in _site/ (tools/site/README.md)
    python tasks.py site-test      build it and check every page in headless Chromium (ends "N passed, M failed")
    python tasks.py stamp NOTEBOOK ...
                                   record what the slow, cuda and network cells' stored outputs were made from
                                   (nbs/kept/outputs.json; chapter 91 checks it): run after re-running such a cell

torch is installed first and on its own, so that no later step pulls a different build: `torch==2.13.0`
by default (the local CPU build on the project's machines; PyPI's CUDA build on a Linux machine with a
GPU). Set TORCH_SPEC (e.g. "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu") to choose.
"""
from __future__ import annotations
import hashlib, json, os, re, shlex, subprocess, sys, time, venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")


def sh(*args, **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(map(str, args)), flush=True)
    return subprocess.run([str(a) for a in args], check=True, **kw)


def _has(module: str) -> bool:
    return subprocess.run([str(PY), "-c", f"import {module}"], capture_output=True).returncode == 0


def setup(dev: bool = False) -> None:
    "Create .venv if needed; install torch first, then the package (editable), with the dev extra if asked."
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = [PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if not _has("torch"): sh(*pip, *shlex.split(TORCH_SPEC))
    stamp = VENV / (".installed-dev" if dev else ".installed")
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text() != want:   # reinstall when the dependencies may have changed
        sh(*pip, "-e", f"{ROOT}[dev]" if dev else str(ROOT))
        stamp.write_text(want)


def data_env() -> dict:
    "The environment for runs: ANNOTATED_TX_DATA defaults to ../shared/data when that directory exists."
    env = dict(os.environ)
    shared = ROOT.parent / "shared" / "data"
    if "ANNOTATED_TX_DATA" not in env and shared.is_dir(): env["ANNOTATED_TX_DATA"] = str(shared)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def notebooks(names: list[str]) -> list[Path]:
    "The notebooks named (a path, or a name in nbs/ with or without .ipynb), or all of nbs/; a name that is none of these stops here."
    if not names: return sorted(p for p in (ROOT / "nbs").glob("*.ipynb") if not p.name.startswith("_"))
    found = []
    for n in names:
        p = next((c.resolve() for c in (Path(n), ROOT / "nbs" / n, ROOT / "nbs" / f"{n}.ipynb") if c.is_file()), None)
        if p is None: raise SystemExit(f"tasks.py test: no notebook {n!r} (looked for it as a path and in {ROOT / 'nbs'})")
        found.append(p)
    return found


def _test_one(nb: Path, flags: str, threads: int) -> tuple[Path, bool, float, str]:
    env = data_env()
    env.setdefault("OMP_NUM_THREADS", str(threads))
    start = time.time()
    cmd = [str(BIN / "nbdev-test"), str(nb), "--flags", flags]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    return nb, res.returncode == 0, time.time() - start, (res.stdout + res.stderr).strip()


def test(flags: str = "", names: list[str] | None = None, jobs: int = 1) -> int:
    "Run each notebook as a test (cells flagged with anything but `flags` are skipped); print `N passed, M failed`."
    setup(dev=True)
    nbs = notebooks(names or [])
    threads = max(1, (os.cpu_count() or 1) // jobs)
    passed, failed, start = 0, 0, time.time()
    with ThreadPoolExecutor(jobs) as pool:
        for nb, ok, secs, out in pool.map(lambda p: _test_one(p, flags, threads), nbs):
            print(f"{'PASS' if ok else 'FAIL'} {nb.relative_to(ROOT)} ({secs:.0f}s)", flush=True)
            if not ok: print(out[-6000:], flush=True)
            passed, failed = passed + ok, failed + (not ok)
    print(f"total {time.time() - start:.0f}s for {len(nbs)} notebooks (flags: {flags or 'none'})")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not nbs else 0


def sync() -> int:
    "Fail when nbdev-export or nbdev-clean changes a tracked file: the package must match the notebooks."
    setup(dev=True)
    env = data_env()
    sh(BIN / "nbdev-export", cwd=ROOT, env=env)
    sh(BIN / "nbdev-clean", cwd=ROOT, env=env)
    changed = subprocess.run(["git", "status", "--porcelain", "--", "nbs", "annotated_tx"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
    if changed:
        print("The package or notebooks are out of sync (run nbdev-export and nbdev-clean, then commit):")
        print(changed)
        subprocess.run(["git", "--no-pager", "diff", "--stat"], cwd=ROOT)
        return 1
    print("package and notebooks are in sync")
    return 0


def lint() -> int:
    "ruff on the package (pyproject.toml's [tool.ruff]) but for the lines nbdev writes; ends 'N passed, M failed'."
    setup(dev=True)
    res = subprocess.run([str(BIN / "ruff"), "check", "annotated_tx", "--output-format", "json"], cwd=ROOT,
                         capture_output=True, text=True)
    found = []
    for v in json.loads(res.stdout or "[]"):
        line = Path(v["filename"]).read_text().splitlines()[v["location"]["row"] - 1]
        # nbdev writes two lines itself: `__all__` (wrapped at 120 before its prefix), the chapter's quote as docstring
        if v["code"] == "E501" and (line.startswith("__all__ = [") or v["location"]["row"] == 1):
            continue
        found.append(f"{Path(v['filename']).relative_to(ROOT)}:{v['location']['row']}: {v['code']} {v['message']}")
    print("\n".join(found) or "ruff: no line over 120 characters, one statement per line, no unused or undefined name")
    print(f"{int(not found)} passed, {int(bool(found))} failed")
    return int(bool(found))


def readme() -> int:
    "Write README.md from nbs/index.ipynb: markdown cells as they are, code cells as fenced blocks."
    nb = json.loads((ROOT / "nbs" / "index.ipynb").read_text())
    parts = ["<!-- Written by `python tasks.py readme` from nbs/index.ipynb: edit the notebook, not this file. -->"]
    for cell in nb["cells"]:
        src = "".join(cell["source"]).strip()
        if not src or src.startswith("#| hide"): continue
        if cell["cell_type"] == "markdown":     # links between chapters are relative to nbs/; the README sits above it
            parts.append(re.sub(r"\]\((\d\d_[\w-]+\.ipynb(?:#[\w-]*)?)\)", r"](nbs/\1)", src))
        else: parts.append(f"```python\n{src}\n```")
    (ROOT / "README.md").write_text("\n\n".join(parts) + "\n")
    print("wrote README.md")
    return 0


def site(args: list[str], check: bool = False) -> int:
    "Build the static site (tools/site/build.py); with check, also open every page in headless Chromium."
    setup(dev=True)   # build.py installs the docs packages, npm assets and chromium itself when missing
    script = ROOT / "tools" / "site" / ("test_site.py" if check else "build.py")
    return subprocess.run([str(PY), str(script), *(["--build"] if check else []), *args],
                          cwd=ROOT, env=data_env()).returncode


STAMPS = ROOT / "nbs" / "kept" / "outputs.json"
FLAGGED = re.compile(r"^\s*#\|\s*(?:slow|cuda|network)\b", re.M)
KEPT_NAMED = re.compile(r"""["'](kept/[\w./-]*\w)["']""")


def _source(cell: dict) -> str: return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def digest(data) -> str:
    "A short sha256 of bytes, or of a JSON value written with sorted keys."
    return hashlib.sha256(data if isinstance(data, bytes) else json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def kept_files(code: str, root: Path) -> list[Path]:
    "The kept files a cell names in a string literal (a folder stands for every file under it); `root` is nbs/."
    found = []
    for name in KEPT_NAMED.findall(code):
        p = root / name
        found += sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
    return found


def stamp_of(cell: dict, root: Path) -> dict:
    "What a flagged cell's stored output was made from: its source, its outputs, the kept files it names."
    return {"source": digest(_source(cell)), "outputs": digest(cell.get("outputs", [])),
            "reads": {f.relative_to(root).as_posix(): digest(f.read_bytes()) for f in kept_files(_source(cell), root)}}


def stamp(names: list[str]) -> int:
    "Stamp every slow, cuda and network cell of the notebooks named, after their outputs were re-made."
    if not names: print("tasks.py stamp: name the notebooks whose flagged cells you re-ran"); return 2
    stamps = json.loads(STAMPS.read_text()) if STAMPS.exists() else {}
    for nb in notebooks(names):
        cells = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code" and FLAGGED.search(_source(c))]
        stamps[nb.stem] = {c["id"]: stamp_of(c, nb.parent) for c in cells}
        if not cells: del stamps[nb.stem]
        print(f"{nb.name}: {len(cells)} flagged cells stamped")
    STAMPS.write_text(json.dumps(dict(sorted(stamps.items())), indent=1) + "\n")
    return 0


def train(args: list[str]) -> int:
    setup(dev=False)
    return subprocess.run([str(BIN / "annotated-tx"), "train", *args], cwd=ROOT, env=data_env()).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__); return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "setup": setup(dev="--dev" in rest); return 0
    if cmd == "train": return train(rest)
    if cmd == "sync": return sync()
    if cmd == "readme": return readme()
    if cmd == "lint": return lint()
    if cmd == "site": return site(rest)
    if cmd == "site-test": return site(rest, check=True)
    if cmd == "stamp": return stamp(rest)
    if cmd == "test":
        flags, jobs, names = "", 1, []
        it = iter(rest)
        for a in it:
            if a == "--flags": flags = next(it)
            elif a == "--jobs": jobs = int(next(it))
            else: names.append(a)
        return test(flags, names, jobs)
    print(f"unknown command {cmd!r}\n{__doc__}"); return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
