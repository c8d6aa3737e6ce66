"""Sphinx configuration of the book's site; used by tools/site/build.py (sphinx-build -c tools/site)."""
import os
from pathlib import Path

_here = Path(__file__).resolve().parent
_assets = Path(os.environ.get("ATX_SITE_ASSETS", _here / "_build" / "assets"))

project = "annotated_tx"
author = "annotated_tx developers"
copyright = "annotated_tx developers, Apache-2.0"
html_title = "annotated_tx"

extensions = ["myst_nb"]
nb_execution_mode = "off"                 # the site shows the outputs stored in the notebooks
nb_merge_streams = True
nb_output_stderr = "show"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "html_image"]
myst_dmath_double_inline = True
myst_heading_anchors = 3                  # `chapter.ipynb#section` links (the glossary's) resolve to headings down to ###
suppress_warnings = ["myst.header",        # show_doc entries are ### headings, sometimes right under the title
                     "misc.highlighting_failure"]  # a code cell pygments cannot lex is shown plain, not an error
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
pygments_style = "default"

# MathJax 3, served from the site: tools/site/_build/assets/mathjax -> _static/mathjax
mathjax_path = "mathjax/tex-mml-chtml.js"
mathjax3_config = {"tex": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]}}

html_theme = "sphinx_book_theme"
html_static_path = [str(_here / "static"), str(_assets)]
html_css_files = ["atx.css"]
html_favicon = str(_here / "static" / "favicon.svg")   # else browsers ask for /favicon.ico (a 404 in the console)
html_context = {"default_mode": "light"}               # pydata-sphinx-theme logs an error when no mode is set
html_last_updated_fmt = None
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "navigation_with_keys": False,
    "search_bar_text": "Search the book...",
    "article_header_start": ["toggle-primary-sidebar"],
}


def _page_scripts(app, pagename, templatename, context, doctree):
    "vega, vega-lite, vega-embed and the chart loader only on pages that have an altair chart."
    if "atx-vega" in (context.get("body") or ""):
        for f in ("vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js", "atx-altair.js"):
            app.add_js_file(f, loading_method="defer")


def setup(app):
    app.connect("html-page-context", _page_scripts)
