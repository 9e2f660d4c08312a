// Trove's only script: progressive enhancement. Every page works without
// it. It copies snippets to the clipboard and runs the search as you type.
"use strict";
(function () {
  document.querySelectorAll("button.copy[data-copy]").forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function () {
      var src = document.getElementById(b.getAttribute("data-copy"));
      if (!src || !navigator.clipboard) { return; }
      navigator.clipboard.writeText(src.textContent).then(function () {
        var label = b.textContent;
        b.textContent = "Copied";
        b.setAttribute("aria-live", "polite");
        setTimeout(function () { b.textContent = label; }, 1500);
      });
    });
  });
  var select = document.getElementById("version-select");
  if (select) {
    select.addEventListener("change", function () {
      var opt = select.options[select.selectedIndex];
      if (opt && opt.getAttribute("data-href")) { window.location.assign(opt.getAttribute("data-href")); }
    });
    var go = document.getElementById("version-go");
    if (go) { go.hidden = true; }
  }
  var live = document.getElementById("live-search");
  var results = document.getElementById("results");
  if (live && results) {
    var timer = null, seq = 0;
    live.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var form = live.form, params = new URLSearchParams(new FormData(form));
        params.set("fragment", "1");
        var mine = ++seq;
        fetch(form.action + "?" + params.toString(), { credentials: "same-origin" })
          .then(function (r) { return r.ok ? r.text() : null; })
          .then(function (html) {
            if (html === null || mine !== seq) { return; }
            results.innerHTML = html;
            params.delete("fragment");
            var box = document.getElementById("site-search");
            if (box) { box.value = live.value; }
            history.replaceState(null, "", form.action + "?" + params.toString());
          });
      }, 150);
    });
  }
})();
