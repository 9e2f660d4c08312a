// Trove's only script: progressive enhancement. Every page works without
// it. It copies snippets to the clipboard, runs the search as you type and
// filters a module's inputs and a provider's documentation pages.
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
  // filter shows the items whose text contains what box holds (any case),
  // hides the others and the groups left empty, and says how many show.
  function filter(box, items, groups, count, noun) {
    box.parentNode.hidden = false;
    box.addEventListener("input", function () {
      var words = box.value.trim().toLowerCase(), shown = 0;
      items.forEach(function (it) {
        var hit = words === "" || it.textContent.toLowerCase().indexOf(words) >= 0;
        it.hidden = !hit;
        if (hit) { shown++; }
      });
      groups.forEach(function (g) { g.hidden = !g.querySelector("li:not([hidden])"); });
      if (count) { count.textContent = words === "" ? "" : shown + " of " + items.length + " " + noun; }
    });
  }
  document.querySelectorAll("input[data-filter]").forEach(function (box) {
    var list = document.getElementById(box.getAttribute("data-filter"));
    if (!list) { return; }
    var groups = [];
    list.querySelectorAll("ul.inputs").forEach(function (ul) {
      var h = ul.previousElementSibling;
      groups.push({ set hidden(v) { ul.hidden = v; if (h) { h.hidden = v; } }, querySelector: function (q) { return ul.querySelector(q); } });
    });
    filter(box, Array.prototype.slice.call(list.querySelectorAll("li.input")), groups,
      document.getElementById(box.id.replace(/-filter$/, "-count")), "inputs");
  });
  var docBox = document.getElementById("docnav-filter");
  if (docBox) {
    var nav = docBox.closest("nav");
    filter(docBox, Array.prototype.slice.call(nav.querySelectorAll(".docnav-group li")),
      Array.prototype.slice.call(nav.querySelectorAll(".docnav-group")), document.getElementById("docnav-count"), "pages");
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
