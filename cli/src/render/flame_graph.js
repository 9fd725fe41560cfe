// An interactive flame graph of one process's heap, drawn from the report's merged trees: root at
// the top, each frame as wide as the bytes below it. Buttons pick the weighting, a click on a frame
// zooms into it (the crumbs and "reset zoom" zoom out), the search box marks the frames whose name
// holds its text and sums what they hold without counting a frame inside another twice.
const FLAME_METRICS = [["peak", "Live heap at the peak"], ["leaked", "Live heap at exit"], ["allocated", "Allocated over the run"]];
const ROW = 18;
const hue = s => { let h = 0; for (const c of s) h = (h * 31 + c.codePointAt(0)) >>> 0; return h; };
const pct = (part, whole) => (whole > 0 ? (100 * part / whole).toFixed(1) : "0.0") + "%";
function flameGraph(p) {
  const box = el("div", { class: "flamegraph", "data-pid": p.pid });
  const buttons = FLAME_METRICS.map(([m, label]) => el("button", { type: "button", "data-metric": m }, label));
  const search = el("input", { type: "search", class: "flame-search", placeholder: "search frames: a function or a file", "aria-label": "search frames" });
  const reset = el("button", { type: "button", class: "flame-reset" }, "reset zoom");
  const crumbs = el("div", { class: "crumbs" }), graph = el("div", { class: "flame" });
  const status = el("div", { class: "flame-status" }), note = el("div", { class: "facts" });
  const tip = el("div", { class: "flame-tip" });
  box.append(el("div", { class: "flame-controls" }, ...buttons, search, reset), crumbs, graph, status, note, tip);
  let metric = "peak", path = [], view = null;
  // The report lists frames flat, each after its parent: put the tree back together once.
  const roots = {};
  for (const [m] of FLAME_METRICS) {
    const t = p.flame[m], all = t.nodes.map(n => ({ ...n, children: [] }));
    const root = { name: "all", kind: "root", bytes: t.bytes, blocks: t.blocks, children: [] };
    for (const n of all) (n.parent == null ? root : all[n.parent]).children.push(n);
    roots[m] = root;
  }
  function draw() {
    const tree = p.flame[metric];
    const chain = [roots[metric]];
    // The zoom is kept by frame names, so that it survives a change of weighting where it can.
    for (const name of path) {
      const next = chain[chain.length - 1].children.find(c => c.name === name && c.kind !== "other");
      if (!next) break;
      chain.push(next);
    }
    path = chain.slice(1).map(n => n.name);
    view = chain[chain.length - 1];
    buttons.forEach(b => b.classList.toggle("on", b.dataset.metric === metric));
    crumbs.replaceChildren(...chain.flatMap((n, i) => {
      const c = el("span", { class: "crumb" }, n.name);
      c.addEventListener("click", () => { path = path.slice(0, i); draw(); });
      return i ? [" \u203a ", c] : [c];
    }));
    graph.replaceChildren();
    let depth = 0;
    const place = (node, names, left, width, level) => {
      // Frames narrower than a pixel or so in a page 1000 px wide are left out of the drawing.
      if (width < 0.05) return;
      depth = Math.max(depth, level);
      const d = el("div", { "data-name": node.name, "data-bytes": node.bytes, "data-blocks": node.blocks, "data-kind": node.kind },
        `${node.name} ${bytes(node.bytes)}`);
      d.style.left = left + "%"; d.style.width = width + "%"; d.style.top = level * ROW + "px";
      d.style.background = node.kind === "other" || node.kind === "root" ? "#d0d7de"
        : node.kind === "python" ? `hsl(${200 + hue(node.name) % 30}, 70%, ${72 + level % 3 * 4}%)`
        : `hsl(${15 + hue(node.name) % 40}, 85%, ${64 + level % 3 * 5}%)`;
      if (node.kind !== "other" && level > 0) d.addEventListener("click", () => { path = names; draw(); });
      else if (level === 0 && names.length) d.addEventListener("click", () => { path = names.slice(0, -1); draw(); });
      graph.append(d);
      let x = left;
      for (const k of node.children) {
        const w = width * k.bytes / node.bytes;
        place(k, [...names, k.name], x, w, level + 1); x += w;
      }
    };
    if (view.bytes > 0) place(view, path, 0, 100, 0);
    graph.style.height = (depth + 1) * ROW + "px";
    note.textContent = `${bytes(tree.bytes)} in ${tree.blocks} blocks` + (tree.merged_frames
      ? `; ${tree.merged_frames} frames under ${bytes(tree.cut_below_bytes)} each merged into "other" to keep the page small (the JSON report has the same tree)` : "");
    mark();
  }
  function mark() {
    const q = search.value.trim().toLowerCase();
    let count = 0;
    for (const d of graph.children) {
      const hit = q !== "" && d.dataset.name.toLowerCase().includes(q);
      d.classList.toggle("match", hit); if (hit) count++;
    }
    const held = n => (q !== "" && n.name.toLowerCase().includes(q) ? n.bytes : n.children.reduce((a, k) => a + held(k), 0));
    const matched = q === "" ? 0 : held(view);
    graph.dataset.matched = count;
    status.textContent = q === "" ? "" : count || matched
      ? `matched ${bytes(matched)}, ${pct(matched, view.bytes)} of the view, in ${count} frame${count === 1 ? "" : "s"}`
      : `no frame in the view matches \u201c${search.value.trim()}\u201d`;
  }
  buttons.forEach(b => b.addEventListener("click", () => { metric = b.dataset.metric; draw(); }));
  reset.addEventListener("click", () => { path = []; draw(); });
  search.addEventListener("input", mark);
  graph.addEventListener("mousemove", e => {
    const d = e.target.closest(".flame > div");
    if (!d) { tip.style.display = "none"; return; }
    const b = Number(d.dataset.bytes);
    tip.textContent = `${d.dataset.name}\n${bytes(b)} in ${d.dataset.blocks} blocks: ${pct(b, view.bytes)} of the view, ${pct(b, p.flame[metric].bytes)} of all`;
    tip.style.display = "block";
    tip.style.left = Math.min(e.clientX + 12, window.innerWidth - 320) + "px"; tip.style.top = e.clientY + 14 + "px";
  });
  graph.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  draw();
  return box;
}

