// Cycles between the top folders of src/, read from dependency-cruiser's graph collapsed to them
// (`depcruise src --config .dependency-cruiser.cjs --collapse '^src/[^/]+/' --output-type json | node scripts/folder-cycles.mjs`).
// Its folder rule sees an import arrive at the importee's own subfolder, so a cycle through two subfolders of one top
// folder can pass it; this check sees every top folder as one.
import { readFileSync } from 'node:fs';

const { modules } = JSON.parse(readFileSync(0, 'utf8'));
const topFolder = (path) => /^src\/[^/]+\/$/.test(path) && path;
const imports = new Map();
for (const module of modules.filter((m) => topFolder(m.source))) {
  const targets = module.dependencies.map((d) => topFolder(d.resolved)).filter((t) => t && t !== module.source);
  imports.set(module.source, [...new Set(targets)]);
}

// Tarjan's strongly connected components: each component of more than one folder is a cycle.
const index = new Map();
const low = new Map();
const stack = [];
const cycles = [];
let next = 0;
function visit(folder) {
  index.set(folder, next);
  low.set(folder, next++);
  stack.push(folder);
  for (const target of imports.get(folder) ?? []) {
    if (!index.has(target)) {
      visit(target);
      low.set(folder, Math.min(low.get(folder), low.get(target)));
    } else if (stack.includes(target)) low.set(folder, Math.min(low.get(folder), index.get(target)));
  }
  if (low.get(folder) === index.get(folder)) {
    const component = stack.splice(stack.indexOf(folder));
    if (component.length > 1) cycles.push(component);
  }
}
for (const folder of imports.keys()) if (!index.has(folder)) visit(folder);

for (const cycle of cycles) console.error(`  error no-top-folder-cycles: ${cycle.join(' ⇄ ')}`);
if (cycles.length) process.exit(1);
console.log(`✔ no cycle between the ${imports.size} top folders of src/`);
