// Render every altair chart of the page with the vega, vega-lite and vega-embed served from this site.
// build.py writes each chart as <div class="atx-vega" id=...> plus <script type="application/json" data-for=id>.
(function () {
  function render() {
    document.querySelectorAll("script.atx-vega-spec").forEach(function (s) {
      var el = document.getElementById(s.dataset.for);
      if (!el || el.dataset.state) return;
      el.dataset.state = "loading";
      var payload = JSON.parse(s.textContent);
      var opt = Object.assign({ actions: { export: true, source: true, compiled: false, editor: false } }, payload.opt || {});
      vegaEmbed(el, payload.spec, opt)
        .then(function () { el.dataset.state = "rendered"; })
        .catch(function (err) {
          el.dataset.state = "error";
          el.textContent = "chart failed to render: " + err.message;
          console.error("altair chart " + el.id + ": " + err);
        });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", render);
  else render();
})();
