// The folder browser (gamemesh view DIR): a grid of thumbnails from /api/models.json, a filter
// and grouping by folder, kind or format. Thumbnails load as they scroll into view.
const $ = (id) => document.getElementById(id);

function card(m) {
  const a = document.createElement('a');
  a.className = 'card';
  a.href = `m/${m.index}/`;
  a.dataset.index = m.index;
  const img = document.createElement('img');
  img.loading = 'lazy';
  img.alt = m.path;
  img.src = `thumbs/${m.index}.png`;
  img.onerror = () => { const d = document.createElement('div'); d.className = 'noimg'; img.replaceWith(d); };
  const name = document.createElement('div');
  name.className = 'name';
  name.textContent = m.path.split('/').pop();
  const small = document.createElement('small');
  small.textContent = `${m.format} ${m.kind}, ${m.size.toLocaleString('en')} bytes`;
  a.append(img, name, small);
  return a;
}

function render(models, cards) {
  const words = $('filter').value.toLowerCase().split(/\s+/).filter(Boolean);
  const key = $('group').value;
  const groups = new Map();
  let shown = 0;
  for (const m of models) {
    const text = `${m.path} ${m.format} ${m.kind}`.toLowerCase();
    if (!words.every((w) => text.includes(w))) continue;
    shown += 1;
    const g = m[key];
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(m);
  }
  const root = $('groups');
  root.replaceChildren();
  for (const g of [...groups.keys()].sort()) {
    const section = document.createElement('section');
    section.className = 'group';
    const h = document.createElement('h2');
    h.textContent = `${g} (${groups.get(g).length})`;
    const grid = document.createElement('div');
    grid.className = 'grid';
    grid.append(...groups.get(g).map((m) => cards.get(m.index)));
    section.append(h, grid);
    root.append(section);
  }
  $('shown').textContent = `${shown} of ${models.length} models`;
}

async function main() {
  const models = await (await fetch('api/models.json')).json();
  const cards = new Map(models.map((m) => [m.index, card(m)]));
  $('filter').addEventListener('input', () => render(models, cards));
  $('group').addEventListener('change', () => render(models, cards));
  render(models, cards);
  window.gamemeshBrowser = { ready: true, models: models.length };
}

main().catch((err) => { $('shown').textContent = `error: ${err}`; });
