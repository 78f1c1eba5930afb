// pytest-lens report: question filters, column sorting, transcripts and the episode side panel.
// Transcripts and episode texts travel as JSON inside the page; nothing is fetched. Text is always
// inserted as text (textContent), never as markup.
(function () {
  "use strict";

  function data(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  var transcripts = data("lens-transcripts") || [];
  var episodes = data("lens-episodes") || {};
  var byAnchor = {};
  transcripts.forEach(function (item, index) { byAnchor[item.anchor] = index; });

  // h("tag.class", {attr: value}, child, ...): children are nodes, strings (as text) or arrays of them.
  function h(spec, attrs) {
    var parts = spec.split(".");
    var node = document.createElement(parts[0]);
    if (parts.length > 1) node.className = parts.slice(1).join(" ");
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        if (attrs[key] !== null && attrs[key] !== undefined && attrs[key] !== false) node.setAttribute(key, attrs[key]);
      });
    }
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }

  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }

  function num(value, digits) { return value === null || value === undefined ? "-" : Number(value).toFixed(digits === undefined ? 3 : digits); }
  function thousands(value) { return Number(value).toLocaleString("en-US"); }
  function badge(outcome) { return h("span.badge." + outcome, null, outcome); }

  function marks(required, cited) {
    return [required ? h("span.mark.req", { title: "required by the dataset" }, "R") : null, cited ? h("span.mark.cit", { title: "cited by the answer" }, "C") : null];
  }

  function episodeLink(scope, ref, label, cls) {
    var known = episodes[scope] && episodes[scope][ref];
    if (!known) return h("span" + (cls ? "." + cls : ""), null, label);
    return h("a" + (cls ? "." + cls : ".ep-link"), { href: "#", "data-scope": scope, "data-ref": ref }, label);
  }

  function isFlat(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value) &&
      Object.keys(value).every(function (key) { return value[key] === null || typeof value[key] !== "object"; });
  }

  // Scorer details as the judge left them: lists of flat records (verdicts) become tables, the rest nested lists.
  function tree(value) {
    if (Array.isArray(value) && value.length && value.every(isFlat)) {
      var keys = [];
      value.forEach(function (row) { Object.keys(row).forEach(function (key) { if (keys.indexOf(key) === -1) keys.push(key); }); });
      return h("div.scroll", null, h("table.data.verdicts", null,
        h("thead", null, h("tr", null, keys.map(function (key) { return h("th", null, key); }))),
        h("tbody", null, value.map(function (row) {
          return h("tr", null, keys.map(function (key) { return h("td", null, row[key] === null || row[key] === undefined ? "" : String(row[key])); }));
        }))));
    }
    if (Array.isArray(value)) {
      if (value.length && typeof value[0] === "object" && value[0] !== null) return h("ol.tree", null, value.map(function (v) { return h("li", null, tree(v)); }));
      return h("span.scalar", null, JSON.stringify(value));
    }
    if (value !== null && typeof value === "object") {
      var list = h("dl.tree");
      Object.keys(value).forEach(function (key) { append(list, [h("dt", null, key), h("dd", null, tree(value[key]))]); });
      return list;
    }
    if (typeof value === "string" && (value.indexOf("\n") !== -1 || value.length > 120)) return h("pre.raw", null, value);
    return h("span.scalar", null, value === null ? "null" : String(value));
  }

  function callView(t, call) {
    var meta = "turn " + call.turn + " · " + call.status + " · " + thousands(call.tokens) + " result tokens";
    if (call.tokens_left !== null) meta += " · budget left " + thousands(call.tokens_left) + " tokens";
    if (call.calls_left !== null) meta += ", " + call.calls_left + " calls";
    meta += " · " + Math.round(call.ms) + " ms";
    var body = [h("div.call-head", null, h("span.idx", null, String(call.index)), h("code.sig", null, call.signature)), h("div.call-meta", null, meta)];
    if (call.error) body.push(h("div.error", null, call.error));
    if (call.hits.length) {
      body.push(h("table.hits", null,
        h("thead", null, h("tr", null, h("th", null, "#"), h("th", null, "ref"), h("th", null, "score"),
          h("th", { title: "R: required by the dataset, C: cited by the answer" }, "marks"), h("th", null, "returned text (start)"))),
        h("tbody", null, call.hits.map(function (hit, i) {
          return h("tr" + (hit[3] ? ".required" : "") + (hit[4] ? ".cited" : ""), null,
            h("td.num", null, String(i + 1)), h("td", null, episodeLink(t.scope, hit[0], hit[0])),
            h("td.num", null, hit[1] === null ? "" : num(hit[1], 4)),
            h("td.marks", null, marks(hit[3], hit[4])),
            h("td.snippet", null, hit[2]));
        }))));
    }
    call.returned.forEach(function (group) {
      body.push(h("div.returned", null, (call.hits.length ? "also " : "") + group[0] + ": ",
        group[1].map(function (ref, i) { return [i ? ", " : "", episodeLink(t.scope, ref[0], ref[0]), marks(ref[1], ref[2])]; })));
    });
    return h("li.call." + call.status, null, body);
  }

  function answerView(t) {
    if (!t.answer.length) return h("div.answer", null, h("em", null, "(empty)"));
    return h("div.answer", null, t.answer.map(function (part) {
      if (typeof part === "string") return part;
      return ["[", part.map(function (c, i) {
        var cls = "cite." + (c[2] ? "grounded" : "ungrounded") + (c[3] ? ".required" : "");
        var title = c[1] + ": " + (c[2] ? "returned to the agent" : "never returned to the agent (not grounded)") + (c[3] ? "; required evidence" : "");
        var link = episodeLink(t.scope, c[1], c[0], cls);
        link.setAttribute("title", title);
        return [i ? ", " : "", link];
      }), "]"];
    }));
  }

  function transcriptView(t, index) {
    var r = [];
    var nav = h("div.tnav", null, h("a", { href: "#row-" + t.anchor }, "↑ questions"));
    if (index > 0) append(nav, h("a", { href: "#" + transcripts[index - 1].anchor }, "‹ previous"));
    if (index < transcripts.length - 1) append(nav, h("a", { href: "#" + transcripts[index + 1].anchor }, "next ›"));
    r.push(nav, h("h2.tid", null, t.test_id));
    r.push(h("p.meta", null, "adapter ", h("strong", null, t.adapter), " · budget " + t.budget + " · scope " + t.scope + " after " + t.checkpoint +
      (t.stream_length ? " of " + t.stream_length : "") + " episodes · type " + t.type + " (" + t.category + ") · suite " + t.suite +
      " · agent " + t.agent + (t.judge ? " · judge " + t.judge : "")));
    if (t.skipped !== null) {
      r.push(h("p.outcome-line", null, badge(t.outcome), " " + t.skipped));
      return r;
    }
    r.push(h("p.outcome-line", null, badge(t.outcome), " headline ", h("strong", null, num(t.headline)),
      Math.abs(t.headline - t.composite) > 5e-4 ? " (composite " + num(t.composite) + ")" : "",
      t.gate_reasons.length ? " — gated: " + t.gate_reasons.join("; ") : "", " · " + num(t.duration_s, 2) + " s"));
    r.push(h("h3", null, "Question"), h("blockquote.prompt", null, t.prompt));
    if (t.canonical_answer || t.key_facts.length) {
      var stated = t.key_facts.filter(function (f) { return f[1]; }).length;
      r.push(h("details.reference", { open: "" },
        h("summary", null, "Reference answer" + (t.key_facts.length ? " and key facts (" + stated + " of " + t.key_facts.length + " stated in the answer)" : "")),
        t.canonical_answer ? h("p.canonical", null, t.canonical_answer) : null,
        t.key_facts.length ? h("ul.facts", null, t.key_facts.map(function (f) { return h("li." + (f[1] ? "found" : "missed"), null, (f[1] ? "✓ " : "✗ ") + f[0]); })) : null));
    }
    var usage = t.usage;
    r.push(h("h3", null, "Tool calls ", h("span.sub", null, "(" + usage.calls + "; " + thousands(usage.result_tokens) + " result tokens, " + usage.turns + " turns" +
      (usage.agent_tokens ? ", " + thousands(usage.agent_tokens) + " agent tokens" : "") + ")")));
    r.push(t.calls.length ? h("ol.calls", null, t.calls.map(function (call) { return callView(t, call); })) : h("p.note", null, "No tool calls."));
    r.push(h("h3", null, "Answer"), answerView(t));
    r.push(h("p.legend", null, h("span.cite.grounded", null, "returned"), h("span.cite.ungrounded", null, "not returned"),
      h("span.cite.grounded.required", null, "required"), " citations open the cited episode's text."));
    r.push(h("h3", null, "Evidence"));
    if (t.evidence.length) {
      r.push(h("table.data.evidence", null,
        h("thead", null, h("tr", null, ["ref", "required", "cited", "returned", "what happened", "episode"].map(function (x) { return h("th", null, x); }))),
        h("tbody", null, t.evidence.map(function (e) {
          var missed = e[1] && !(e[2] && e[3]);
          return h("tr" + (e[1] ? ".required" : "") + (missed ? ".missed" : ""), null,
            h("td", null, h("code", null, e[0])), h("td", null, e[1] ? "✓" : ""), h("td", null, e[2] ? "✓" : ""),
            h("td", null, e[4] !== null ? "call " + e[4] : (e[3] ? "✓" : "")), h("td", null, e[5]),
            h("td", null, e[6] ? episodeLink(t.scope, e[0], e[6].slice(0, 10)) : ""));
        }))));
    } else {
      r.push(h("p.note", null, "No evidence required, cited or returned."));
    }
    var aliases = Object.keys(t.aliases);
    if (aliases.length) r.push(h("p.note", null, "The agent saw aliases: " + aliases.map(function (a) { return a + " = " + t.aliases[a]; }).join(", ")));
    r.push(h("h3", null, "Scores"));
    r.push(h("table.data.metrics", null, h("tbody", null,
      Object.keys(t.metrics).map(function (name) { return h("tr", null, h("td", null, name), h("td.num", null, num(t.metrics[name]))); }),
      h("tr.total", null, h("td", null, "headline"), h("td.num", null, num(t.headline))),
      h("tr.total", null, h("td", null, "composite"), h("td.num", null, num(t.composite))))));
    Object.keys(t.scorers).forEach(function (name) {
      r.push(h("details.scorer", { open: "" }, h("summary", null, "scorer ", h("strong", null, name)), tree(t.scorers[name])));
    });
    if (t.problems.length) {
      r.push(h("h3", null, "Problems"), h("ul.problems", null, t.problems.map(function (p) { return h("li." + p[0], null, p[1]); })));
    }
    return r;
  }

  var view = document.getElementById("transcript");

  function showTranscript() {
    var anchor = decodeURIComponent(location.hash.slice(1));
    var index = byAnchor[anchor];
    if (!view) return;
    if (index === undefined) {
      view.hidden = true;
      return;
    }
    while (view.firstChild) view.removeChild(view.firstChild);
    append(view, transcriptView(transcripts[index], index));
    view.setAttribute("data-anchor", anchor);
    view.hidden = false;
    view.scrollIntoView();
  }
  window.addEventListener("hashchange", showTranscript);

  // Questions: filters, and sorting by a column.
  var table = document.getElementById("question-table");
  var rows = table ? Array.prototype.slice.call(table.tBodies[0].rows) : [];
  var controls = Array.prototype.slice.call(document.querySelectorAll("[data-filter]"));
  var count = document.getElementById("shown-count");

  function applyFilters() {
    var shown = 0;
    rows.forEach(function (row) {
      var visible = controls.every(function (control) {
        var wanted = control.value.trim().toLowerCase();
        if (!wanted) return true;
        var name = control.getAttribute("data-filter");
        var value = (row.getAttribute("data-" + name) || "").toLowerCase();
        return name === "text" ? value.indexOf(wanted) !== -1 : value === wanted;
      });
      row.hidden = !visible;
      if (visible) shown += 1;
    });
    if (count) count.textContent = shown + " of " + rows.length + " shown";
  }

  controls.forEach(function (control) {
    control.addEventListener(control.tagName === "SELECT" ? "change" : "input", applyFilters);
  });

  // Links like the adapter names in the headline table set a filter, then show the questions.
  Array.prototype.forEach.call(document.querySelectorAll("[data-filter-link]"), function (link) {
    link.addEventListener("click", function () {
      var parts = link.getAttribute("data-filter-link").split("=");
      controls.forEach(function (control) {
        control.value = control.getAttribute("data-filter") === parts[0] ? parts.slice(1).join("=") : "";
      });
      applyFilters();
    });
  });

  function cellValue(row, index, numeric) {
    var text = row.cells[index] ? row.cells[index].textContent.trim() : "";
    if (!numeric) return text.toLowerCase();
    var number = parseFloat(text);
    return isNaN(number) ? -Infinity : number;
  }

  if (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (heading, index) {
      if (!heading.hasAttribute("data-sort")) return;
      heading.addEventListener("click", function () {
        var numeric = heading.getAttribute("data-sort") === "num";
        var ascending = heading.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) { cell.removeAttribute("aria-sort"); });
        heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var order = rows.slice().sort(function (a, b) {
          var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
          if (x < y) return ascending ? -1 : 1;
          if (x > y) return ascending ? 1 : -1;
          return 0;
        });
        var body = table.tBodies[0];
        order.forEach(function (row) { body.appendChild(row); });
      });
    });
  }

  // Citations and evidence links open the episode beside the transcript.
  var panel = document.getElementById("episode-panel");
  var panelTitle = document.getElementById("episode-title");
  var panelBody = document.getElementById("episode-body");
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("[data-ref]") : null;
    if (!link || !panel) return;
    var scope = link.getAttribute("data-scope"), ref = link.getAttribute("data-ref");
    var episode = episodes[scope] && episodes[scope][ref];
    if (!episode) return;
    event.preventDefault();
    panelTitle.textContent = ref + " · " + episode[0];
    panelBody.textContent = episode[1];
    panel.hidden = false;
  });
  var close = document.getElementById("episode-close");
  if (close) close.addEventListener("click", function () { panel.hidden = true; });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && panel) panel.hidden = true;
  });

  // Figures: each <figure class="plot"> carries a Vega-Lite spec, drawn here by Vega as SVG. A figure that
  // cannot be drawn says so in its place and on the console; the rest of the page works on.
  function figureFailed(figure, error) {
    figure.setAttribute("data-drawn", "failed");
    append(figure, h("p.note", null, "This figure could not be drawn (" + error + "); the tables beside it hold its numbers."));
    if (window.console) console.error("pytest-lens report: figure " + figure.getAttribute("data-figure") + " could not be drawn:", error);
  }

  function drawFigures() {
    var figures = document.querySelectorAll("figure.plot");
    Array.prototype.forEach.call(figures, function (figure) {
      try {
        if (typeof vega === "undefined" || typeof vegaLite === "undefined") throw new Error("the plotting library did not load");
        var spec = JSON.parse(figure.querySelector("script.lens-plot").textContent);
        var target = h("div.plot-view");
        figure.appendChild(target);
        var view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: "svg", container: target, hover: true });
        view.runAsync().then(
          function () { figure.setAttribute("data-drawn", "true"); },
          function (error) { figureFailed(figure, error); }
        );
      } catch (error) {
        figureFailed(figure, error);
      }
    });
  }

  drawFigures();
  showTranscript();
})();
