// DOM helpers. Everything the API returns goes on the page through these
// as text (textContent, createElement), never as HTML.

export function $(id) {
  return document.getElementById(id);
}

// el makes an element; children are nodes or strings (as text).
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = String(v);
    else if (k === "title") node.title = String(v);
    else if (k === "href") node.setAttribute("href", v);
    else if (k === "data") Object.assign(node.dataset, v);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else node[k] = v;
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    node.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return node;
}

export function show(node, on) {
  node.hidden = !on;
}

// say puts an answer (text) in node; kind is "good", "bad" or "".
export function say(node, text, kind) {
  node.textContent = text;
  node.className = "answer" + (kind ? " " + kind : "");
  node.hidden = !text;
}

// flash shows a problem above the view, or clears it.
export function flash(text) {
  const f = $("flash");
  f.textContent = text || "";
  f.hidden = !text;
}
