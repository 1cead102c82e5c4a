const $ = (id) => document.getElementById(id);
const KEY = 'raglab-token';
$('token').value = localStorage.getItem(KEY) || '';
$('token').addEventListener('input', () => localStorage.setItem(KEY, $('token').value.trim()));
function headers() { return {'Authorization': 'Bearer ' + $('token').value.trim(), 'Content-Type': 'application/json'}; }
function message(status, data) {
  if (data && typeof data.detail === 'string') return 'Error ' + status + ': ' + data.detail;
  return 'Error ' + status;
}
function citeLink(c) {
  const a = document.createElement('a');
  a.className = 'cite'; a.href = '#'; a.textContent = '[' + c.n + ']';
  a.dataset.id = c.id; a.dataset.n = String(c.n); a.title = c.doc;
  return a;
}
// HTML rendered by the server (Markdown, raw HTML off) enters the page node by node: the parsed copy is
// inert (nothing in it runs or loads), only the tags in TAGS are rebuilt, an element of any other tag
// keeps its text only, and the only attributes kept are a link's http(s)/mailto address and a table
// cell's alignment class. Every text goes through onText (which makes text nodes, and cite links in
// an answer); no HTML string is ever written into the live page.
const TAGS = new Set(['P', 'BR', 'HR', 'STRONG', 'EM', 'CODE', 'PRE', 'BLOCKQUOTE', 'UL', 'OL', 'LI',
  'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'A']);
function safeHref(href) {
  try {
    const url = new URL(href, location.href);
    return ['http:', 'https:', 'mailto:'].includes(url.protocol) ? url.href : null;
  } catch (e) { return null; }
}
function copyHtml(html, into, onText) {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const walk = (src, dst) => {
    for (const node of src.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) { onText(dst, node.data); continue; }
      if (node.nodeType !== Node.ELEMENT_NODE) continue;
      if (!TAGS.has(node.tagName)) { onText(dst, node.textContent); continue; }
      const el = document.createElement(node.tagName.toLowerCase());
      if (node.tagName === 'A') {
        const href = safeHref(node.getAttribute('href') || '');
        if (href) { el.href = href; el.rel = 'noopener noreferrer'; }
      }
      const align = node.getAttribute('class') || '';
      if ((node.tagName === 'TH' || node.tagName === 'TD') && /^align-(left|center|right)$/.test(align)) el.className = align;
      dst.append(el);
      walk(node, el);
    }
  };
  walk(doc.body, into);
}
function plainText(dst, text) { dst.append(document.createTextNode(text)); }
function render(data) {
  const box = $('answer'); box.replaceChildren(); $('sources').replaceChildren();
  box.className = data.refused ? 'refused' : 'answered'; box.dataset.format = 'text';
  box.dataset.refused = String(data.refused);
  if (data.refused) {
    const p = document.createElement('strong'); p.id = 'refusal'; p.textContent = data.answer;
    const r = document.createElement('span'); r.className = 'reason'; r.textContent = 'Refused: ' + data.reason;
    box.append(p, r); return;
  }
  const byN = new Map(data.citations.map((c) => [String(c.n), c]));
  const withCites = (dst, text) => text.split(/\[(\d+)\]/).forEach((part, i) => {
    if (i % 2 === 0) { if (part) dst.append(document.createTextNode(part)); }
    else if (byN.has(part) && !dst.closest('a')) dst.append(citeLink(byN.get(part)));
    else dst.append(document.createTextNode('[' + part + ']'));
  });
  box.dataset.format = data.answer_html ? 'markdown' : 'text';
  if (data.answer_html) copyHtml(data.answer_html, box, withCites);
  else withCites(box, data.answer);
  for (const c of data.citations) {
    const li = document.createElement('li');
    li.append(citeLink(c), document.createTextNode(' ' + c.doc + ' \u2014 ' + c.snippet));
    $('sources').append(li);
  }
}
async function ask() {
  const question = $('question').value.trim();
  $('error').textContent = ''; $('chunk').hidden = true;
  if (!question) { $('error').textContent = 'Type a question first.'; return; }
  $('ask').disabled = true; $('status').textContent = 'Searching the documentation\u2026';
  try {
    const res = await fetch('/ask', {method: 'POST', headers: headers(), body: JSON.stringify({question})});
    const data = await res.json().catch(() => null);
    if (!res.ok) { $('answer').replaceChildren(); $('sources').replaceChildren(); $('error').textContent = message(res.status, data); return; }
    render(data);
  } catch (e) {
    $('error').textContent = 'The server cannot be reached.';
  } finally {
    $('ask').disabled = false; $('status').textContent = '';
  }
}
async function showChunk(link) {
  document.querySelectorAll('a.cite.active').forEach((a) => a.classList.remove('active'));
  link.classList.add('active');
  const path = link.dataset.id.split('/').map(encodeURIComponent).join('/');
  const res = await fetch('/chunks/' + path, {headers: headers()});
  const data = await res.json().catch(() => null);
  const panel = $('chunk'), text = $('chunk-text');
  text.replaceChildren(); text.dataset.format = 'text';
  if (!res.ok) { $('chunk-title').textContent = message(res.status, data); }
  else {
    $('chunk-title').textContent = '[' + link.dataset.n + '] ' + data.doc + (data.heading ? ' \u2014 ' + data.heading : '');
    if (data.html) { text.dataset.format = 'markdown'; copyHtml(data.html, text, plainText); }
    else text.textContent = data.text;
  }
  panel.dataset.id = link.dataset.id; panel.hidden = false;
}
$('ask').addEventListener('click', ask);
$('question').addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) ask(); });
document.addEventListener('click', (e) => {
  const link = e.target.closest('a.cite');
  if (link) { e.preventDefault(); showChunk(link); }
});
