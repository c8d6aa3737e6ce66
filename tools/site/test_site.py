#!/usr/bin/env python3
"""Browser test of the built site: `python tools/site/test_site.py [--build]` (from the repo's .venv).

Serves the site from a local HTTP server on 127.0.0.1, opens every page in headless Chromium (Debian's
chromium + chromedriver, driven by selenium) with every host name unresolvable (so nothing can come from a CDN),
and checks on each page:

- no console errors (uncaught exceptions, failed loads) and no request the server could not answer;
- one title heading (h1) in the article;
- every altair chart rendered (an svg or canvas inside its container, no vega-embed error);
- every math element typeset by MathJax (an mjx-container inside, no TeX error);
- every internal link resolves: the file exists and, for links with a #fragment, the target page has that id;
- every section link written in the notebooks (`NN_name.ipynb#anchor`, as the author wrote it, before MyST resolves
  it) and every exercise's section (`annotated_tx/exercises.py`, the link a reader's stub prints) lands: the target
  page has an element with that id (one test for all of them).

Screenshots of the index and of a chapter with a chart go to tools/site/_build/screenshots/ (look at them).
Ends with the line `N passed, M failed` (one test per page, plus one that at least one chart was checked).
`--build` first runs `build.py --fixture` (the fixture page guarantees a chart even before any chapter has one).
Installs chromium and chromium-driver with apt-get when they are missing and this runs as root.
"""
from __future__ import annotations

import argparse, ast, functools, http.server, json, os, re, shutil, subprocess, sys, tempfile, threading, time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                  "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                  "--window-size=1400,1000", "--hide-scrollbars"]

# Runs in the page: waits for MathJax and the charts, then reports what the test checks.
PAGE_REPORT_JS = r"""
const done = arguments[arguments.length - 1];
(async () => {
  const t0 = Date.now();
  while (document.readyState !== "complete" && Date.now() - t0 < 20000) await new Promise(r => setTimeout(r, 50));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    try { await MathJax.startup.promise; } catch (e) { console.error("MathJax: " + e); }
  }
  const charts = () => [...document.querySelectorAll(".atx-vega")];
  while (charts().some(c => !["rendered", "error"].includes(c.dataset.state)) && Date.now() - t0 < 20000)
    await new Promise(r => setTimeout(r, 100));
  const article = document.querySelector("article") || document.querySelector("main") || document.body;
  const maths = [...article.querySelectorAll(".math")];
  done({
    title: document.title,
    h1: [...article.querySelectorAll("h1")].map(h => h.textContent.replace(/#$/, "").trim()),
    charts: charts().map(c => ({id: c.id, state: c.dataset.state || "none",
                                drawn: !!c.querySelector("svg, canvas"), text: c.textContent.slice(0, 200)})),
    chart_like: document.querySelectorAll("[id^=altair-viz], .vega-embed").length,
    math: maths.length,
    math_typeset: maths.filter(m => m.querySelector("mjx-container")).length,
    math_errors: [...document.querySelectorAll("mjx-merror, [data-mjx-error]")].map(e => e.getAttribute("data-mjx-error") || e.textContent).slice(0, 5),
    raw_math: maths.filter(m => !m.querySelector("mjx-container")).map(m => m.textContent.slice(0, 80)).slice(0, 5),
    links: [...document.querySelectorAll("a[href]")].map(a => a.href),
    ids: [...document.querySelectorAll("[id]")].map(e => e.id).concat([...document.querySelectorAll("a[name]")].map(a => a.name)),
  });
})();
"""


def ensure_chromium(chromium: str, driver: str) -> None:
    "apt-get install chromium chromium-driver when missing (as root); otherwise say what to install."
    if Path(chromium).exists() and Path(driver).exists(): return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        sys.exit(f"need {chromium} and {driver}: apt-get install chromium chromium-driver")
    print("[site-test] installing Debian's chromium and chromium-driver", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium", "chromium-driver"],
                   check=True, env=env, stdout=subprocess.DEVNULL)


class Server:
    "The site on http://127.0.0.1:PORT/, recording every request that did not get a 2xx/3xx answer."
    def __init__(self, site: Path):
        self.failed: list[str] = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *a): pass
            def log_request(self, code="-", size="-"):
                if isinstance(code, int) and code >= 400 or str(code).startswith(("4", "5")):
                    outer.failed.append(f"{code} {self.path}")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self): self.httpd.shutdown()


def make_driver(chromium: str, chromedriver: str, profile: str):
    os.environ.setdefault("SE_OFFLINE", "true")   # selenium must not try to download a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for f in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]: opts.add_argument(f)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=Service(executable_path=chromedriver))
    d.set_script_timeout(60); d.set_page_load_timeout(60)
    return d


def site_pages(site: Path) -> list[str]:
    "Every HTML page of the site (not Sphinx's internal _static/_sources folders), index first."
    pages = [p.relative_to(site).as_posix() for p in site.rglob("*.html")
             if not any(part.startswith("_") for part in p.relative_to(site).parts)]
    return sorted(pages, key=lambda p: (p != "index.html", p))


def book_anchors(nbs: Path = ROOT / "nbs") -> list[tuple[str, str, str]]:
    """(where, page, id) for every section link of the notebooks' markdown (`NN_name.ipynb#anchor`) and every
    exercise's section in annotated_tx/exercises.py (`NN_name.html#anchor`, read from its `@exercise(...)` calls)."""
    found = []
    for nb in sorted(nbs.glob("*.ipynb")):
        if nb.name.startswith(("_", ".")): continue
        for i, c in enumerate(json.loads(nb.read_text())["cells"]):
            if c["cell_type"] != "markdown": continue
            text = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for page, frag in re.findall(r"\]\(\s*<?(?:\./)?(\d\d_[\w-]+)\.ipynb#([^)\s>]+)", text):
                found.append((f"{nb.name}, cell {i}", f"{page}.html", unquote(frag)))
    for n in ast.walk(ast.parse((ROOT / "annotated_tx" / "exercises.py").read_text())):
        for d in getattr(n, "decorator_list", []):
            if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "exercise" and "#" in (section := ast.literal_eval(d.args[3])):
                found.append((f"exercises.py ({ast.literal_eval(d.args[0])})", *section.split("#", 1)))
    return found


def screenshot(driver, path: Path, element=None, full: bool = False) -> None:
    if element is not None:
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
        time.sleep(0.3)
    if full:
        h = driver.execute_script("return Math.min(document.documentElement.scrollHeight, 6000)")
        driver.set_window_size(1400, max(1000, h))
    driver.save_screenshot(str(path))
    if full: driver.set_window_size(1400, 1000)
    print(f"[site-test] screenshot {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", flush=True)


def run(site: Path, shots: Path, chromium: str, chromedriver: str) -> int:
    if not (site / "index.html").exists(): sys.exit(f"no site at {site}: build it first (tools/site/build.py)")
    ensure_chromium(chromium, chromedriver)
    shots.mkdir(parents=True, exist_ok=True)
    server = Server(site)
    profile = tempfile.mkdtemp(prefix="atx-chromium-")
    driver = make_driver(chromium, chromedriver, profile)
    pages = site_pages(site)
    from selenium.webdriver.common.by import By
    reports, failures, t0 = {}, {}, time.time()
    try:
        for page in pages:
            driver.get(server.url + page)
            r = driver.execute_async_script(PAGE_REPORT_JS)
            r["console"] = [f"{e['level']}: {e['message']}" for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            reports[page] = r
        # screenshots: the index (top), a chapter with a chart (the chart), a chapter's top (code, math, prose)
        driver.get(server.url + "index.html"); driver.execute_async_script(PAGE_REPORT_JS)
        screenshot(driver, shots / "index.png")
        with_chart = [p for p in pages if reports[p]["charts"]]
        chapter = next((p for p in with_chart if not p.startswith("altair_fixture")), with_chart[0] if with_chart else None)
        if chapter:
            driver.get(server.url + chapter); driver.execute_async_script(PAGE_REPORT_JS)
            screenshot(driver, shots / f"chart-{Path(chapter).stem}.png", driver.find_elements(By.CSS_SELECTOR, ".atx-vega")[0])
            driver.execute_script("window.scrollTo(0, 0);"); time.sleep(0.2)
            screenshot(driver, shots / f"top-{Path(chapter).stem}.png")
        for p in (p for p in with_chart if p.startswith("altair_fixture")):
            driver.get(server.url + p); driver.execute_async_script(PAGE_REPORT_JS)
            screenshot(driver, shots / "chart-fixture.png", driver.find_elements(By.CSS_SELECTOR, ".atx-vega")[0])
        driver.get(server.url + "api.html"); driver.execute_async_script(PAGE_REPORT_JS)
        screenshot(driver, shots / "api.png")
    finally:
        driver.quit()
        server.close()
        shutil.rmtree(profile, ignore_errors=True)

    ids = {p: set(r["ids"]) for p, r in reports.items()}
    n_charts = 0
    for page, r in reports.items():
        errs = []
        errs += [f"console {c}" for c in r["console"]]
        if len(r["h1"]) != 1: errs.append(f"expected one title heading (h1), found {r['h1']}")
        for c in r["charts"]:
            n_charts += 1
            if c["state"] != "rendered" or not c["drawn"]:
                errs.append(f"altair chart {c['id']} not rendered (state {c['state']}, svg/canvas: {c['drawn']}): {c['text']}")
        if r["chart_like"] > len(r["charts"]) and not r["charts"]:
            errs.append("a vega chart that is not an .atx-vega container (altair output not converted by build.py?)")
        if r["math"] != r["math_typeset"]: errs.append(f"math not typeset ({r['math_typeset']}/{r['math']}): {r['raw_math']}")
        if r["math_errors"]: errs.append(f"MathJax errors: {r['math_errors']}")
        base = urlparse(server.url)
        for href in sorted(set(r["links"])):
            u = urlparse(href)
            if u.scheme in ("mailto", "javascript") or (u.scheme in ("http", "https") and u.netloc != base.netloc): continue
            target, frag = urldefrag(href)
            path = unquote(urlparse(target).path).lstrip("/") or "index.html"
            if path.endswith("/"): path += "index.html"
            if not (site / path).is_file():
                errs.append(f"broken link {href} (no file {path})")
            elif frag and path.endswith(".html"):
                if path not in ids:
                    if not any(part.startswith("_") for part in Path(path).parts):
                        errs.append(f"link {href}: page {path} was not visited")
                elif unquote(frag) not in ids[path]:
                    errs.append(f"broken link {href} (no id {unquote(frag)!r} in {path})")
        if errs: failures[page] = errs
        status = "FAIL" if errs else "PASS"
        print(f"{status} {page}: h1 {r['h1'][:1]}, {len(r['charts'])} chart(s), {r['math']} math, "
              f"{len(set(r['links']))} links", flush=True)
        for e in errs: print(f"    {e}", flush=True)
    extra_fail = []
    anchors = book_anchors()
    missing = [f"{where}: {page}#{frag}" for where, page, frag in anchors if page in ids and frag not in ids[page]]
    missing += [f"{where}: {page} was not visited" for where, page, _ in anchors if page not in ids]
    if missing: extra_fail.append(f"section links that do not land ({len(missing)} of {len(anchors)}): {missing}")
    print(f"{'FAIL' if missing else 'PASS'} {len(anchors)} section links of the notebooks and the exercises land", flush=True)
    if server.failed: extra_fail.append(f"requests the site could not answer: {sorted(set(server.failed))}")
    if n_charts == 0: extra_fail.append("no altair chart on any page: nothing proved that charts render (build with --fixture)")
    for e in extra_fail: print(f"FAIL {e}", flush=True)
    n_tests = len(reports) + 3
    failed = len(failures) + len(extra_fail)
    print(f"[site-test] {len(reports)} pages, {n_charts} charts checked in {time.time() - t0:.1f}s; screenshots in {shots}")
    print(f"{n_tests - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Open every page of the built site in headless Chromium and check it.")
    ap.add_argument("--site", type=Path, default=ROOT / "_site", help="the built site (default: _site)")
    ap.add_argument("--build", action="store_true", help="build the site first (build.py --fixture)")
    ap.add_argument("--nbs", type=Path, default=None, help="with --build: the notebook folder (default: nbs)")
    ap.add_argument("--screenshots", type=Path, default=HERE / "_build" / "screenshots", help="where screenshots go")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    a = ap.parse_args(argv)
    if a.build:
        sys.path.insert(0, str(HERE))
        import build
        args = ["--fixture", "--out", str(a.site)] + (["--nbs", str(a.nbs)] if a.nbs else [])
        if build.main(args): print("0 passed, 1 failed"); return 1
    return run(a.site.resolve(), a.screenshots.resolve(), a.chromium, a.chromedriver)


if __name__ == "__main__":
    sys.exit(main())
