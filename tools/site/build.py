#!/usr/bin/env python3
"""Build the book as a static HTML site that works offline: `python tools/site/build.py` (from the repo's .venv).

Steps (each one says what it does and how long it took):

1. install what the build needs, when missing: the Python packages in DOCS_REQUIREMENTS (pip, into the running
   interpreter's environment) and the JavaScript in tools/site/package.json (npm, into tools/site/_build/npm);
   nothing is downloaded when everything is already there;
2. check the notebooks' stored outputs (the site never runs a chapter): a code cell that prints, shows a plot or
   ends with a bare expression must have stored outputs; a chapter where one has none fails the build, naming
   the chapter and the cells (see `check_outputs`);
3. process each notebook with nbdev's own processors (show_doc rendered for every exported name, hidden cells
   dropped, backticked names linked to their API entries), then turn nbdev/Quarto conventions into MyST ones:
   the exported source is shown under its show_doc entry (nbdev's `#| exports`), except cells that only import;
   altair charts are re-emitted to load vega from the site itself;
4. write an API reference page (every public name of `annotated_tx`, module by module, linked to its entry);
5. run Sphinx (myst-nb, sphinx-book-theme, execution off) into _site/;
6. fail if any page loads a script, style sheet, image or font from another host (no CDN).

Output: _site/index.html. Work files: _proc/site/ (processed notebooks), tools/site/_build/ (npm packages, assets,
Sphinx doctrees). `--fixture` adds tools/site/fixtures/*.ipynb as pages that are not in the book's sidebar
(the browser test uses one to prove altair charts render). Python 3.10+.
"""
from __future__ import annotations

import argparse, ast, hashlib, html, json, os, re, shutil, subprocess, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUILD = HERE / "_build"
NPM_DIR, ASSETS = BUILD / "npm", BUILD / "assets"
PROC = ROOT / "_proc" / "site"
PKG = "annotated_tx"

# Keep in sync with the `docs` extra in pyproject.toml (the build installs these itself when any is missing).
DOCS_REQUIREMENTS = ["sphinx>=7.2,<10", "myst-nb>=1.1,<2", "sphinx-book-theme>=1.1,<2", "selenium>=4.20,<5"]
DOCS_MODULES = ["sphinx", "myst_nb", "sphinx_book_theme", "selenium"]


class BuildError(Exception):
    pass


def log(msg: str) -> None:
    print(f"[site] {msg}", flush=True)


class Step:
    "Context manager that logs a step and its wall time."
    def __init__(self, name): self.name = name
    def __enter__(self):
        self.t = time.time(); log(f"{self.name} ...")
    def __exit__(self, *exc):
        if exc[0] is None: log(f"{self.name}: done in {time.time() - self.t:.1f}s")


# ----------------------------------------------------------------------------------------------- 1. installs
def ensure_python_deps() -> None:
    "pip-install DOCS_REQUIREMENTS into this interpreter's environment when one of their modules is missing."
    import importlib.util
    missing = [m for m in DOCS_MODULES if importlib.util.find_spec(m) is None]
    if not missing: return
    log(f"installing the site's Python packages (missing: {', '.join(missing)})")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *DOCS_REQUIREMENTS], check=True)


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        if p.exists(): h.update(p.read_bytes())
    return h.hexdigest()


def ensure_js_assets() -> None:
    """npm-install tools/site/package.json (exact versions, package-lock.json when present) into _build/npm,
    then copy the files the site serves into _build/assets: vega/*.min.js and a MathJax 3 tree."""
    want = _digest(HERE / "package.json", HERE / "package-lock.json", Path(__file__))
    stamp = ASSETS / ".stamp"
    if stamp.exists() and stamp.read_text() == want: return
    npm = shutil.which("npm")
    if npm is None:
        raise BuildError("npm is not installed: the site serves vega and MathJax from the npm registry's packages "
                         "(Debian: apt-get install -y nodejs npm)")
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        if (HERE / f).exists(): shutil.copy2(HERE / f, NPM_DIR / f)
    cmd = [npm, "ci" if (HERE / "package-lock.json").exists() else "install", "--no-audit", "--no-fund",
           "--loglevel=error"]
    log(" ".join(cmd[1:]) + f" (in {NPM_DIR.relative_to(ROOT)})")
    subprocess.run(cmd, cwd=NPM_DIR, check=True)
    if (NPM_DIR / "package-lock.json").exists() and not (HERE / "package-lock.json").exists():
        shutil.copy2(NPM_DIR / "package-lock.json", HERE / "package-lock.json")
    nm = NPM_DIR / "node_modules"
    shutil.rmtree(ASSETS, ignore_errors=True)
    (ASSETS / "vega").mkdir(parents=True)
    for pkg, f in (("vega", "vega.min.js"), ("vega-lite", "vega-lite.min.js"), ("vega-embed", "vega-embed.min.js")):
        src = nm / pkg / "build" / f
        if not src.exists(): raise BuildError(f"npm package {pkg} has no build/{f}")
        shutil.copy2(src, ASSETS / "vega" / f)
    mj = nm / "mathjax" / "es5"
    shutil.copytree(mj, ASSETS / "mathjax", ignore=shutil.ignore_patterns(
        "*-svg*.js", "mml-*.js", "tex-chtml*.js", "tex-svg*.js", "node-main.js", "svg", "svg.js", "*.map",
        "latest.js"))  # latest.js would load MathJax from a CDN
    stamp.write_text(want)


# ------------------------------------------------------------------------------------- 2. stored outputs
_NO_OUTPUT_CALLS = re.compile(r"^(test(_\w+)?|assert\w*|seed|manual_seed|set_printoptions|close|tight_layout|"
                              r"set_\w+|legend|update|append|extend|write|mkdir|unlink|sleep)$")


def _call_name(node: ast.AST) -> str:
    f = node.func if isinstance(node, ast.Call) else node
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _runs_print(stmts) -> bool:
    "Does this code call print/display/plt.show outside function and class bodies?"
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)): continue
        if isinstance(n, ast.Call) and _call_name(n) in ("print", "display", "show") \
                and not any(k.arg == "file" for k in n.keywords): return True  # print(..., file=f) shows nothing
        todo.extend(ast.iter_child_nodes(n))
    return False


def expects_output(source: str) -> str | None:
    """Why a code cell must have stored outputs, or None. A cell must have outputs when it calls print, display
    or `.show()` (outside a def), or ends with a bare expression (IPython displays its value) that is not a
    call (a call may return None); a final call to an altair/matplotlib plotting method counts too. A trailing
    `;` silences the value, as in IPython."""
    lines = [l for l in source.splitlines() if not re.match(r"\s*#\|", l)]
    code = "\n".join(l for l in lines if not l.lstrip().startswith(("%", "!")))
    try: tree = ast.parse(code)
    except SyntaxError: return None
    if not tree.body: return None
    if _runs_print(tree.body): return "it prints or shows a figure"
    last = tree.body[-1]
    if not isinstance(last, ast.Expr) or code.rstrip().endswith(";"): return None
    v = last.value
    if isinstance(v, (ast.Await, ast.Yield, ast.YieldFrom)) or (isinstance(v, ast.Constant) and v.value is None):
        return None
    if isinstance(v, ast.Constant) and isinstance(v.value, str): return None  # a bare string is a comment
    if not isinstance(v, ast.Call): return "it ends with an expression whose value is displayed"
    name = _call_name(v)
    chart = re.match(r"^(mark_\w+|encode|properties|interactive|configure\w*|resolve_\w+|layer|hconcat|vconcat|"
                     r"facet|repeat|transform_\w+|add_params|Chart|imshow|plot|bar|scatter|hist|subplots)$", name)
    if chart and not _NO_OUTPUT_CALLS.match(name): return f"it ends with a plot or chart (`{name}(...)`)"
    return None


def check_outputs(nb_path: Path, nb: dict) -> list[str]:
    """The build's rule for stored outputs: every code cell that `expects_output` must have at least one output,
    except cells the site does not show (`#| hide`, `#| export`...), cells not run by default (`#| eval: false`,
    `#| cuda`: no GPU on the project's machines; `#| network`: no network there). Returns one message per offending cell."""
    problems = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code": continue
        src = "".join(cell["source"])
        dirs = _directives(src)
        if dirs & {"hide", "export", "exporti", "default_exp", "cuda", "network"} or dirs_value(src, "eval") == "false": continue
        why = expects_output(src)
        if why and not cell.get("outputs"):
            first = next((l for l in src.splitlines() if l.strip() and not l.startswith("#|")), "")
            problems.append(f"  cell {i} ({why}) has no stored output: {first[:70]}")
    return problems


def _directives(src: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^\s*#\|\s*([\w-]+)", src, flags=re.M)}


def dirs_value(src: str, key: str) -> str | None:
    m = re.search(rf"^\s*#\|\s*{key}\s*:?\s*(\S*)", src, flags=re.M)
    return m.group(1).lower() if m else None


# ----------------------------------------------------------------------------------- 3. notebook processing
APPENDIX = re.compile(r"^(00|9\d)_")   # the runtime appendix (00) and the appendices 90-99


def learners_path(index: Path) -> list[str]:
    "The notebooks of the index's numbered list under 'The learner's path', in its order."
    text = "\n".join("".join(c["source"]) for c in json.loads(index.read_text())["cells"] if c["cell_type"] == "markdown")
    m = re.search(r"learner's path[^\n]*\n\s*((?:\d+\.\s[^\n]*(?:\n|$))+)", text, flags=re.I)
    if not m: raise BuildError(f"{index}: no numbered list after 'The learner's path' (the sidebar's reading order)")
    return re.findall(r"^\d+\.\s[^\n]*?\]\((\d\d_[\w-]+)\.ipynb", m.group(1), flags=re.M)


def chapters(nbs: Path) -> list[Path]:
    """The book's notebooks in reading order: the index, the learner's path as the index lists it, the other chapters by
    file name, then the appendices (00, 90-99). Files starting with _ are skipped."""
    found = sorted(p for p in nbs.glob("*.ipynb") if not p.name.startswith(("_", ".")))
    if not any(p.name == "index.ipynb" for p in found): raise BuildError(f"{nbs}/index.ipynb is missing")
    path = learners_path(nbs / "index.ipynb")
    def rank(p: Path) -> tuple:
        if p.name == "index.ipynb": return (0, 0, p.name)
        if p.stem in path: return (1, path.index(p.stem), p.name)
        return (3 if APPENDIX.match(p.name) else 2, 0, p.name)
    return sorted(found, key=rank)


def part(p: Path, path: list[str]) -> str:
    "The sidebar caption a chapter is listed under, given the learner's path."
    if p.stem in path: return "The learner's path"
    return "Appendices" if APPENDIX.match(p.name) else "More chapters"


def _only_imports(src: str) -> bool:
    try: tree = ast.parse("\n".join(l for l in src.splitlines() if not l.lstrip().startswith("#|")))
    except SyntaxError: return False
    return bool(tree.body) and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)


def _strip_directives(src: str) -> str:
    return "\n".join(l for l in src.splitlines() if not re.match(r"\s*#\|", l)).strip("\n")


def _ntext(x) -> str:
    return "".join(x) if isinstance(x, list) else (x or "")


_VEGA_MIME = re.compile(r"^application/vnd\.vegalite\.v\d+\+json$")


def _altair_spec(data: dict):
    """(spec, embed options) of an altair output, whether stored as a vega-lite mime bundle or as the HTML of
    altair's default renderer (which loads vega from a CDN); None if this output is not a chart."""
    for k, v in data.items():
        if _VEGA_MIME.match(k): return (json.loads(v) if isinstance(v, str) else v), {"mode": "vega-lite"}
    h = _ntext(data.get("text/html"))
    if "vegaEmbed" not in h or "})(" not in h: return None
    start = h.rindex("})(") + 3
    dec = json.JSONDecoder()
    spec, end = dec.raw_decode(h, start)
    rest = h[end:].lstrip().lstrip(",").lstrip()
    opt = dec.raw_decode(rest)[0] if rest.startswith("{") else {}
    return spec, opt


def chart_html(spec: dict, opt: dict, n: int) -> str:
    "The site's chart output: an empty container plus its spec as JSON; _static/atx-altair.js embeds it."
    payload = json.dumps({"spec": spec, "opt": opt}).replace("</", "<\\/")
    return (f'<div class="atx-vega" id="atx-vega-{n}"></div>\n'
            f'<script type="application/json" class="atx-vega-spec" data-for="atx-vega-{n}">{payload}</script>\n')


class Page:
    def __init__(self, src: Path, name: str, module: str | None, others: tuple = ()):
        self.src, self.name, self.module = src, name, module
        self.modules = ([module] if module else []) + [m for m in others if m != module]   # `#| export OTHER` too
        self.title, self.anchors = name, {}   # anchors: documented name -> html id


def _page_anchor(module: str | None, name: str) -> str:
    return f"{PKG}.{module}.{name}" if module else name


def process_notebook(path: Path, page: Page, lookup) -> dict:
    "One notebook through nbdev's processors and the MyST conversion; returns the processed notebook (a dict)."
    from fastcore.nbio import read_nb
    from nbdev.process import NBProcessor
    from nbdev import processors as P

    class exec_show_docs(P.exec_show_docs):
        "nbdev's, but only exported cells, cells that only import, and show_doc cells run (no test cells)."
        def __call__(self, cell):
            if not getattr(self.nb, "has_docs_", None) or not hasattr(self, "k"): return
            if cell.cell_type != "code" or not cell.source: return
            d = cell.directives_
            run = (d.keys() & {"export", "exports", "exporti", "exec_doc"} or _only_imports(cell.source)
                   or P._re_showdoc.search(cell.source))
            if not run or str(d.get("eval", "")).lower() == "false": return
            self.k.cell(cell)
            if (e := self.k.exc):
                raise BuildError(f"{path.name}: cell {cell.idx_} failed while rendering the API docs:\n"
                                 f"{cell.source}\n{type(e).__name__}: {e}")

    class mv_exports(P.Processor):
        "nbdev's moves one show_doc above its `exports` cell; this moves all of them, in definition order."
        def begin(self):
            cells, out, i = self.nb.cells, [], 0
            while i < len(cells):
                c, j = cells[i], i + 1
                while j < len(cells) and getattr(cells[j], "has_sd", False): j += 1
                if c.cell_type == "code" and "exports" in c.directives_ and j > i + 1:
                    out += list(reversed(cells[i + 1:j])) + [c]
                else:
                    out += cells[i:j]
                i = j
            self.nb.cells = out

    nb = read_nb(path)
    nb.path_ = str(path)
    for c in nb.cells:  # the book shows exported source: treat `#| export` like nbdev's `#| exports`
        if c.cell_type == "code" and re.search(r"^\s*#\|\s*export\s*$", c.source, flags=re.M) \
                and not _only_imports(c.source):
            c.source = re.sub(r"^(\s*#\|\s*)export\s*$", r"\1exports", c.source, count=1, flags=re.M)
    procs = [P.populate_language, P.add_show_docs, P.strip_ansi, P.hide_line, P.filter_stream_,
             P.rm_header_dash, exec_show_docs, P.clean_magics, P.hide_, P.add_links, mv_exports,
             P.strip_hidden_metadata]
    NBProcessor(nb=nb, procs=procs, rm_directives=False).process()

    cells, n_chart = [], 0
    for c in nb.cells:
        src = c.source or ""
        if c.cell_type == "markdown":
            if page.title == page.name and (m := re.search(r"^#\s+(.+?)\s*$", src, flags=re.M)): page.title = m.group(1)
            cells.append({"cell_type": "markdown", "metadata": {}, "source": link_api(src, lookup)})
            continue
        if c.cell_type == "raw":
            continue
        d = c.directives_
        if getattr(c, "has_sd", False) or P._re_showdoc.search(src):
            md = next((_ntext(o["data"]["text/markdown"]) for o in c.get("outputs", [])
                       if "text/markdown" in o.get("data", {})), None)
            if md is None: raise BuildError(f"{path.name}: show_doc cell gave no markdown: {src}")
            cells.append({"cell_type": "markdown", "metadata": {},
                          "source": showdoc_md(md, page, lookup, source_follows=getattr(c, "has_sd", False))})
            continue
        if d.keys() & {"hide", "default_exp"} or str(d.get("include", "")).lower() == "false": continue
        if d.keys() & {"export", "exporti"} and _only_imports(src): continue
        tags = []
        if str(d.get("echo", "")).lower() == "false": tags.append("remove-input")
        if str(d.get("output", "")).lower() == "false": tags.append("remove-output")
        if "slow" in d: tags.append("atx-slow")
        if "cuda" in d: tags.append("atx-cuda")
        if "network" in d: tags.append("atx-network")
        outputs = []
        for o in c.get("outputs", []):
            o = json.loads(json.dumps(o))  # plain dict
            if o.get("output_type") in ("display_data", "execute_result"):
                chart = _altair_spec(o.get("data", {}))
                if chart:
                    n_chart += 1
                    o = {"output_type": "display_data", "metadata": {},
                         "data": {"text/html": chart_html(*chart, n=n_chart)}}
                else:
                    o["data"] = {k: v for k, v in o["data"].items() if k != "application/vnd.jupyter.widget-view+json"}
                    if not o["data"]: continue
                o.pop("execution_count", None); o["output_type"] = "display_data"
            outputs.append(o)
        cells.append({"cell_type": "code", "metadata": {"tags": tags} if tags else {}, "source": _strip_directives(src),
                      "outputs": outputs, "execution_count": None})
    for i, c in enumerate(cells): c["id"] = f"cell-{i}"
    meta = {k: v for k, v in dict(nb.metadata).items() if k in ("kernelspec", "language_info")}
    meta.setdefault("kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"})
    return {"cells": cells, "metadata": json.loads(json.dumps(meta)), "nbformat": 4, "nbformat_minor": 5}


def showdoc_md(md: str, page: Page, lookup, source_follows: bool = False) -> str:
    """nbdev's show_doc markdown as MyST: an anchor named like the Python object, no rule, no link to GitHub (the
    code is on the page); when the exported source follows (show_doc added by nbdev), no signature block either:
    the code right below shows it, with its parameter comments."""
    m = re.search(r"^#{2,4}\s+(\S+)\s*$", md, flags=re.M)
    name = m.group(1) if m else None
    md = re.sub(r"^---\s*$", "", md, flags=re.M)
    md = re.sub(r"^\[source\]\([^)]+\)(\{[^}]*\})?\s*$", "", md, flags=re.M)
    if source_follows: md = re.sub(r"^```python\n.*?^```\s*$", "", md, count=1, flags=re.M | re.S)
    if name:
        anchor = _page_anchor(page.module, name)
        page.anchors[name] = anchor
        md = f'<span id="{html.escape(anchor)}"></span>\n\n' + md.strip()
    return link_api(md, lookup)


_MD_LINK = re.compile(r"\[(`[^`\]]+`)\]\((https?://[^)\s]+)\)")


def link_api(md: str, lookup) -> str:
    "Point nbdev's links to the package's online docs at this site's pages; leave other links alone."
    return _MD_LINK.sub(lambda m: lookup(m.group(1), m.group(2)) or m.group(0), md)


# ----------------------------------------------------------------------------------------- 4. API reference
def load_modidx():
    import importlib
    return importlib.import_module(f"{PKG}._modidx").d


def api_page(pages: list[Page], d: dict) -> str:
    "Markdown of the API reference: each module of the package, its chapter, and every public name with a link."
    import importlib, inspect
    out = ["# API reference", "",
           f"Every public name of the `{PKG}` package, module by module, in chapter order. Each name links to its "
           "entry in the chapter that builds it: the signature, the docstring and the code. "
           "`from annotated_tx.<module> import <name>` imports it.", ""]
    for p, module in ((p, m) for p in pages for m in p.modules if not m.startswith("_")):
        modname = f"{PKG}.{module}"
        syms = d["syms"].get(modname, {})
        try: mod = importlib.import_module(modname)
        except Exception as e: raise BuildError(f"cannot import {modname} for the API reference: {e}")
        public = list(getattr(mod, "__all__", []))
        out += [f"## {modname}", "", f"Built in the chapter [{p.title}]({p.name}.ipynb).", "",
                "| name | what it is |", "|---|---|"]
        for name in public:
            obj = getattr(mod, name, None)
            doc = (inspect.getdoc(obj) or "").strip().split("\n")[0] if obj is not None else ""
            if obj is not None and not callable(obj) and not inspect.isclass(obj): doc = f"constant ({type(obj).__name__})"
            href = _href(p, name)
            out.append(f"| {_code_link(name, href)} | {_cell(doc)} |")
            methods = [k.split(".", 3)[-1] for k in syms if k.startswith(f"{modname}.{name}.")
                       and not k.rsplit(".", 1)[-1].startswith("_")]
            for meth in methods:  # its own docstring only (not one inherited from nn.Module, say)
                mobj = vars(obj).get(meth.split(".")[-1]) if inspect.isclass(obj) else None
                mobj = getattr(mobj, "__func__", mobj)
                mdoc = ((getattr(mobj, "__doc__", None) or "").strip().split("\n") or [""])[0]
                out.append(f"| {_code_link(name + '.' + meth, _href(p, name + '.' + meth))} | {_cell(mdoc)} |")
        out.append("")
    return "\n".join(out) + "\n"


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def _href(p: Page, name: str) -> str:
    "Link to `name`'s entry in page p: its own show_doc, else its class's, else the top of the chapter."
    for n in (name, name.split(".")[0]):
        if n in p.anchors: return f"{p.name}.html#{p.anchors[n]}"
    return f"{p.name}.html"


def _code_link(name: str, href: str) -> str:
    return (f'<a class="reference internal" href="{html.escape(href)}"><code class="docutils literal notranslate">'
            f'<span class="pre">{html.escape(name)}</span></code></a>')


def make_lookup(pages: list[Page], d: dict):
    """A function (link text, url) -> raw HTML link into this site for URLs that nbdev's linkify made for names of
    this package (they point at the package's online docs), None for any other URL."""
    s = d["settings"]
    base = (s.get("doc_host", "") + s.get("doc_baseurl", "")).rstrip("/") + "/"
    by_url = {}
    by_mod = {m: p for p in pages for m in p.modules}
    for modname, syms in d["syms"].items():
        p = by_mod.get(modname.split(".", 1)[-1])
        if p is None: continue
        for qual, (docpath, _) in syms.items():
            by_url[base + docpath] = (p, qual.split(".", 2)[-1])

    def lookup(text: str, url: str) -> str | None:
        hit = by_url.get(url)
        if hit: return _code_link(text.strip("`"), _href(hit[0], hit[1]))
        return text if url.startswith(base) else None  # a name whose chapter is not in the site: no link
    return lookup


# ------------------------------------------------------------------------------------------------ 5. sphinx
def no_cdn_check(site: Path) -> list[str]:
    "Every script, style sheet, image, font, frame and media file a page loads must come from the site itself."
    bad = []
    tag = re.compile(r"<(script|link|img|iframe|source|video|audio|embed)\b[^>]*?\b(src|href)\s*=\s*[\"']"
                     r"((?:https?:)?//[^\"']+)", re.I)
    for f in sorted(site.rglob("*.html")):
        for m in tag.finditer(f.read_text(errors="replace")):
            if m.group(1).lower() == "link" and re.search(r"rel=[\"'](canonical|alternate|author|license)",
                                                            m.group(0) + ">", re.I):
                continue
            bad.append(f"{f.relative_to(site)}: <{m.group(1)} {m.group(2)}={m.group(3)}>")
    for f in sorted(site.rglob("*.css")):
        for m in re.finditer(r"(?:url\(\s*[\"']?|@import\s+[\"'])((?:https?:)?//[^\"')\s]+)", f.read_text(errors="replace")):
            bad.append(f"{f.relative_to(site)}: {m.group(1)}")
    return bad


def build(out: Path, nbs: Path, fixtures: bool, jobs: str) -> int:
    t0 = time.time()
    with Step("install build tools (pip, npm) where missing"):
        ensure_python_deps()
        ensure_js_assets()

    books = chapters(nbs)
    fix = sorted((HERE / "fixtures").glob("*.ipynb")) if fixtures else []
    with Step(f"check stored outputs of {len(books)} notebooks"):
        failed = []
        for p in books + fix:
            probs = check_outputs(p, json.loads(p.read_text()))
            if probs: failed.append(f"{p.relative_to(ROOT)}: {len(probs)} cell(s) without their stored outputs\n"
                                    + "\n".join(probs))
        if failed:
            raise BuildError("chapters whose outputs are missing (run them and store the outputs: "
                             "`nbdev-test NOTEBOOK --save && nbdev-clean`):\n" + "\n".join(failed))

    d = load_modidx()
    pages = []
    for p in books + fix:
        nb = json.loads(p.read_text())
        m = next((re.search(r"^\s*#\|\s*default_exp\s+(\S+)", "".join(c["source"]), flags=re.M)
                  for c in nb["cells"] if c["cell_type"] == "code"
                  and re.search(r"^\s*#\|\s*default_exp", "".join(c["source"]), flags=re.M)), None)
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        others = tuple(dict.fromkeys(re.findall(r"^[ \t]*#\|[ \t]*export[ \t]+(\w+)", code, flags=re.M)))
        pages.append(Page(p, p.stem, m.group(1) if m else None, others))
    lookup = make_lookup(pages, d)
    src_dir = PROC
    with Step(f"process {len(pages)} notebooks (nbdev processors, show_doc, MyST)"):
        shutil.rmtree(src_dir, ignore_errors=True)
        src_dir.mkdir(parents=True)
        cwd = os.getcwd(); os.chdir(ROOT)  # nbdev reads its config from the repo's pyproject.toml
        try:
            for pass_ in (1, 2):  # pass 1 finds every page's anchors, pass 2 links to them
                for page in pages:
                    page.title = page.name
                    if pass_ == 1: page.anchors = {}
                    out_nb = process_notebook(page.src, page, lookup)
                    if pass_ == 2:
                        if page.src.parent == HERE / "fixtures": out_nb["metadata"]["orphan"] = True
                        (src_dir / f"{page.name}.ipynb").write_text(json.dumps(out_nb, indent=1))
                if not any(p.module for p in pages): break
        finally:
            os.chdir(cwd)
        for f in nbs.rglob("*"):  # images and other files the notebooks link to
            rel = f.relative_to(nbs)
            if f.is_file() and f.suffix.lower() in (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf") \
                    and not any(part.startswith((".", "_")) or part == "runs" for part in rel.parts):
                (src_dir / rel).parent.mkdir(parents=True, exist_ok=True); shutil.copy2(f, src_dir / rel)
        (src_dir / "api.md").write_text(api_page(pages, d))
        toc, path = [], learners_path(nbs / "index.ipynb")
        for caption in ("The learner's path", "More chapters", "Appendices"):
            names = [p.name for p in pages[1:] if p.src.parent != HERE / "fixtures" and part(p.src, path) == caption]
            if names: toc += ["", "```{toctree}", ":hidden:", f":caption: {caption}", "", *names, "```"]
        toc += ["", "```{toctree}", ":hidden:", ":caption: Reference", "", "api", "```", ""]
        index = json.loads((src_dir / "index.ipynb").read_text())
        index["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "\n".join(toc)})
        (src_dir / "index.ipynb").write_text(json.dumps(index, indent=1))

    with Step("sphinx-build (myst-nb, execution off)"):
        html_dir = BUILD / "html"  # myst-nb writes <outdir>/../jupyter_execute: keep both under _build, then move
        shutil.rmtree(html_dir, ignore_errors=True)
        cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-j", jobs,
               "-c", str(HERE), "-d", str(BUILD / "doctrees"), str(src_dir), str(html_dir)]
        env = dict(os.environ, ATX_SITE_ASSETS=str(ASSETS), ATX_SITE_ROOT=str(ROOT))
        res = subprocess.run(cmd, env=env)
        if res.returncode: raise BuildError(f"sphinx-build failed (exit {res.returncode}); its warnings are above")
        if out.exists(): shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(html_dir), str(out))

    with Step("no-CDN check"):
        bad = no_cdn_check(out)
        if bad: raise BuildError("pages load files from other hosts (the site must work offline):\n  " + "\n  ".join(bad))
    n = len(list(out.rglob("*.html")))
    log(f"built {n} pages into {out} in {time.time() - t0:.0f}s; open {out / 'index.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the book as an offline static HTML site (Sphinx + myst-nb).")
    ap.add_argument("--out", type=Path, default=ROOT / "_site", help="output folder (default: _site)")
    ap.add_argument("--nbs", type=Path, default=ROOT / "nbs", help="notebook folder (default: nbs)")
    ap.add_argument("--fixture", action="store_true",
                    help="also build tools/site/fixtures/*.ipynb as pages outside the sidebar (for the browser test)")
    ap.add_argument("--check-outputs", action="store_true", help="only check the notebooks' stored outputs")
    ap.add_argument("-j", "--jobs", default="1", help="sphinx-build parallel jobs (default 1; 'auto' = all cores)")
    a = ap.parse_args(argv)
    try:
        if a.check_outputs:
            bad = {p: check_outputs(p, json.loads(p.read_text())) for p in chapters(a.nbs.resolve())}
            for p, probs in bad.items():
                print(f"{'FAIL' if probs else 'ok  '} {p.name}" + "".join("\n" + x for x in probs))
            return 1 if any(bad.values()) else 0
        return build(a.out.resolve(), a.nbs.resolve(), a.fixture, a.jobs)
    except BuildError as e:
        print(f"[site] BUILD FAILED: {e}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
