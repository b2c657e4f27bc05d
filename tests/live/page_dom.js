// The game page's script (knockcam/live/web.py PAGE) run once in Node against a running page, with a stub of the
// few DOM calls it makes; prints what each element shows as JSON (tests/live/test_live_web.py). Not a browser.
const elements = {};
function element(id) {
  const e = { id, textContent: "", hidden: false, className: "", src: "", style: {}, children: [], rows: [],
    replaceChildren() { this.children = []; this.rows = []; },
    append(...children) { this.children.push(...children); },
    insertRow() { const row = { cells: [], insertCell() { const c = { textContent: "", className: "" }; this.cells.push(c); return c; } };
                  this.rows.push(row); return row; } };
  return e;
}
globalThis.document = {
  getElementById(id) { return elements[id] || (elements[id] = element(id)); },
  createElement(tag) { return element(tag); },
};
const base = process.argv[2];
const realFetch = globalThis.fetch;
globalThis.fetch = (url, opts) => realFetch(new URL(url, base), opts);
globalThis.setInterval = () => 0;
const script = require("fs").readFileSync(process.argv[3], "utf8");
eval(script.replace("refresh(); setInterval(refresh, 1000);", ""));
// argv[4], when given, is what a player's phone does: "type:TEXT" (typed into the answer box and sent) or
// "click:ID:N" (the Nth child of element ID clicked)
async function play() {
  await refresh();
  const action = process.argv[4];
  if (action && action.startsWith("type:")) {
    document.getElementById("reply").value = action.slice(5);
    await document.getElementById("answer").onsubmit({ preventDefault() {} });
  } else if (action && action.startsWith("click:")) {
    const [, id, n] = action.split(":");
    await document.getElementById(id).children[Number(n)].onclick();
  }
}
play().then(() => {
  const out = {};
  out.document_title = document.title;
  for (const [id, e] of Object.entries(elements)) {
    out[id] = { text: e.textContent, hidden: e.hidden, src: e.src,
      rows: e.rows.map(r => r.cells.map(c => [c.textContent, c.className])), items: e.children.map(c => c.textContent),
      spans: e.children.map(c => [c.textContent, c.className, c.style.left, c.style.top]),
      nested: e.children.map(c => (c.children || []).map(g => g.src || g.textContent)) };
  }
  console.log(JSON.stringify(out));
});
