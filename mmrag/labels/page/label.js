// The labelling page. Every piece of run data goes in with textContent or as a data: URI, never as HTML.
(function () {
  "use strict";
  var KEYS = { c: "correct", d: "deflection", h: "hallucination", s: "skip" };
  var S = { keys: [], labels: new Map(), order: [], index: 0, items: new Map(), shownAt: 0, times: [], chain: Promise.resolve(), showJudge: false };
  // actions run one after another, in key order, however fast the keys come
  function enqueue(fn) { S.chain = S.chain.then(fn).catch(function (e) { fail(e.message); }); }

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function image(uri, cls) {
    if (uri && uri.indexOf("data:image/") === 0) { var im = el("img", cls); im.src = uri; im.alt = "image"; return im; }
    return el("span", "noimg", "image missing");
  }
  function fail(msg) { $("error").textContent = msg; }
  function api(path, body) {
    var opts = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
    return fetch("api/" + path, opts).then(function (r) {
      return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || ("HTTP " + r.status)); return j; });
    });
  }
  function clock(s) { s = Math.round(s); return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); }
  function labelled() { var n = 0; S.labels.forEach(function (v) { if (v !== "skip") n++; }); return n; }
  function firstOpen(from) {
    for (var k = 0; k < S.keys.length; k++) { var i = (from + k) % S.keys.length; if (!S.labels.has(S.keys[i])) return i; }
    return -1;
  }
  function progress() {
    var skipped = S.labels.size - labelled();
    $("progress").textContent = labelled() + " / " + S.keys.length + " labelled" + (skipped ? " · " + skipped + " skipped" : "") +
      " · item " + (S.index + 1) + " of " + S.keys.length;
    var mean = S.times.length ? S.times.reduce(function (a, b) { return a + b; }, 0) / S.times.length : null;
    $("timing").textContent = "this item " + clock((performance.now() - S.shownAt) / 1000) +
      (mean === null ? "" : " · " + mean.toFixed(1) + " s per label");
    $("done").textContent = firstOpen(0) < 0 ? "all items done" : "";
    document.body.dataset.labelled = String(labelled());
  }

  // where the evidence's span sits in the reply: its offsets when they hold the span (Python
  // counts code points, JavaScript UTF-16 units), else its first occurrence; null when absent
  function spanAt(text, ev) {
    if (!ev || !ev.span) return null;
    if (typeof ev.start === "number" && typeof ev.end === "number" && text.slice(ev.start, ev.end) === ev.span) return [ev.start, ev.end];
    var i = text.indexOf(ev.span);
    return i < 0 ? null : [i, i + ev.span.length];
  }
  function reply(it) {
    var pre = clear($("reply"));
    if (it.response === "") { pre.textContent = "(empty reply)"; return; }
    var at = S.showJudge && it.judge ? spanAt(it.response, it.judge.evidence) : null;
    if (!at) { pre.textContent = it.response; return; }
    pre.appendChild(document.createTextNode(it.response.slice(0, at[0])));
    pre.appendChild(el("mark", "evidence", it.response.slice(at[0], at[1])));
    pre.appendChild(document.createTextNode(it.response.slice(at[1])));
  }

  function render(it) {
    var main = $("item");
    main.dataset.key = it.key; main.dataset.index = String(it.index);
    $("question").textContent = it.question;
    var qi = clear($("query-images"));
    it.images.forEach(function (u) { qi.appendChild(image(u, "q")); });
    var ref = clear($("reference"));
    if (it.choices.length) {
      var ul = el("ul");
      it.choices.forEach(function (c) {
        var li = el("li", c.letter === it.gold ? "gold" : null, c.letter + ". " + c.text + (c.letter === it.gold ? "   ← gold" : ""));
        ul.appendChild(li);
      });
      ref.appendChild(ul);
    } else {
      var ua = el("ul");
      it.answers.forEach(function (a) { ua.appendChild(el("li", null, a)); });
      if (!it.answers.length) ua.appendChild(el("li", "muted", "(no reference answer)"));
      ref.appendChild(ua);
    }
    ref.appendChild(el("div", "muted", it.source + " · " + it.scenario));
    reply(it);
    var ctx = clear($("contexts"));
    if (!it.contexts.length) ctx.appendChild(el("p", "muted", "no retrieved contexts in this scenario"));
    it.contexts.forEach(function (c, k) {
      var d = el("div", "ctx");
      d.dataset.role = c.role;
      d.appendChild(el("div", "role", "#" + (k + 1) + " · " + c.role + " · " + c.modality + (c.title ? " · " + c.title : "")));
      if (c.image) d.appendChild(image(c.image, "c"));
      if (c.text) d.appendChild(el("div", null, c.text));
      ctx.appendChild(d);
    });
    $("toggle-contexts").textContent = ($("contexts").hidden ? "show" : "hide") + " retrieved contexts (" + it.contexts.length + ") (t)";
    if (S.showJudge && it.judge) {
      $("judge").hidden = false;
      $("judge-verdict").textContent = it.judge.outcome + " — " + (it.judge.reason || "");
      var ev = it.judge.evidence, box = clear($("judge-evidence"));
      box.hidden = !ev;
      if (ev) {
        box.appendChild(el("div", null, "evidence · step " + ev.step + (ev.rule ? " · " + ev.rule : "")));
        if (ev.span) box.appendChild(el("div", null, "span: " + ev.span));
        if (ev.reference !== null && ev.reference !== undefined) box.appendChild(el("div", "ref", "reference: " + ev.reference));
      }
    }
    $("current-label").textContent = S.labels.get(it.key) || "—";
    S.shownAt = performance.now();
    progress();
  }
  function show(i) {
    if (i < 0 || i >= S.keys.length) return Promise.resolve();
    S.index = i;
    if (S.items.has(i)) { render(S.items.get(i)); return Promise.resolve(); }
    return api("item/" + i).then(function (it) { S.items.set(i, it); if (S.index === i) render(it); }).catch(function (e) { fail(e.message); });
  }
  function setLabel(key, label) {
    if (label === null) S.labels.delete(key); else { S.labels.delete(key); S.labels.set(key, label); }
    S.order = S.order.filter(function (k) { return k !== key; });
    if (label !== null) S.order.push(key);
  }
  function give(label) {
    if (!S.keys.length) return Promise.resolve();
    var key = S.keys[S.index], spent = (performance.now() - S.shownAt) / 1000;
    return api("label", { key: key, label: label }).then(function () {
      setLabel(key, label);
      if (label !== "skip") S.times.push(spent);
      fail("");
      var next = firstOpen(S.index + 1);
      return show(next < 0 ? Math.min(S.index + 1, S.keys.length - 1) : next);
    }).catch(function (e) { fail("not saved: " + e.message); }).then(progress);
  }
  function undo() {
    if (!S.order.length) return Promise.resolve();
    var key = S.order[S.order.length - 1];
    return api("label", { key: key, label: null }).then(function () {
      setLabel(key, null);
      return show(S.keys.indexOf(key));
    }).catch(function (e) { fail("not undone: " + e.message); }).then(progress);
  }
  function toggle() {
    var c = $("contexts");
    c.hidden = !c.hidden;
    var it = S.items.get(S.index);
    $("toggle-contexts").textContent = (c.hidden ? "show" : "hide") + " retrieved contexts (" + (it ? it.contexts.length : 0) + ") (t)";
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var k = ev.key;
    if (KEYS[k]) { ev.preventDefault(); enqueue(function () { return give(KEYS[k]); }); }
    else if (k === "u") { ev.preventDefault(); enqueue(undo); }
    else if (k === "t") { ev.preventDefault(); toggle(); }
    else if (k === "ArrowRight") { ev.preventDefault(); enqueue(function () { return show(S.index + 1); }); }
    else if (k === "ArrowLeft") { ev.preventDefault(); enqueue(function () { return show(S.index - 1); }); }
  });
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("button");
    if (!b) return;
    if (b.id === "toggle-contexts") toggle();
    else if (b.dataset.label) enqueue(function () { return give(b.dataset.label); });
    else if (b.dataset.action === "undo") enqueue(undo);
    else if (b.dataset.action === "prev") enqueue(function () { return show(S.index - 1); });
    else if (b.dataset.action === "next") enqueue(function () { return show(S.index + 1); });
    b.blur();
  });
  setInterval(function () { if (S.keys.length) progress(); }, 1000);

  S.chain = api("state").then(function (st) {
    S.keys = st.keys; S.showJudge = st.show_judge;
    st.labels.forEach(function (p) { S.labels.set(p[0], p[1]); S.order.push(p[0]); });
    $("title").textContent = st.title + " · labeller " + st.labeller + (st.undecided ? " · " + st.undecided + " undecided replies first" : "");
    document.title = "mmrag label · " + st.labeller;
    var i = firstOpen(0);
    document.body.dataset.ready = "1";
    return show(i < 0 ? 0 : i);
  }).catch(function (e) { fail(e.message); });
})();
