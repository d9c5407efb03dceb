// The node's Prometheus metrics, read from /metrics.

// parseMetrics reads the Prometheus text format: [{name, labels, value}].
export function parseMetrics(text) {
  const out = [];
  const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
  const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const l of text.split("\n")) {
    if (!l || l[0] === "#") continue;
    const m = line.exec(l);
    if (!m) continue;
    const labels = {};
    for (const lm of (m[2] || "").matchAll(label)) {
      labels[lm[1]] = lm[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

// sumMetric adds the samples of a metric whose labels match (a label's
// wanted value, or a list of them).
export function sumMetric(samples, name, match) {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (match && !Object.entries(match).every(([k, v]) => (Array.isArray(v) ? v.includes(s.labels[k]) : s.labels[k] === v))) continue;
    total += s.value;
  }
  return total;
}
