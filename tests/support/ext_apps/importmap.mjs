// Prints the import map that lets a browser load the pinned packages' ES modules as they
// ship in node_modules, with no bundler: the bare specifiers given (argv) and every one
// their modules import, resolved as Node resolves them for a browser ("browser" and
// "import" conditions: run with --conditions=browser), each as a path under node_modules;
// and every file the browser will fetch, so the test serves exactly those.
//
// Copied next to node_modules and run there: Node 20 resolves import.meta.resolve from the
// script's own directory, whoever imports the specifier, which is right for the flat tree
// the pinned lock installs (ext_apps_host.py checks that no package nests its own).

import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve('node_modules');
const imports = {};
const seen = new Set();
const queue = [];
const SOURCES = /(?:\bimport|\bexport)\s*(?:[\w*{}\s,$]*?\bfrom\s*)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

function bare(specifier) {
    if (specifier.startsWith('node:')) throw new Error(`${specifier} is Node's own: no browser has it`);
    const target = import.meta.resolve(specifier);
    imports[specifier] = '/' + relative(root, fileURLToPath(target)).split('\\').join('/');
    queue.push(target);
}

for (const specifier of process.argv.slice(2)) bare(specifier);

for (let steps = 0; queue.length && steps < 5000; steps++) {
    const url = queue.shift();
    if (seen.has(url)) continue;
    seen.add(url);
    const text = readFileSync(fileURLToPath(url), 'utf8');
    for (const match of text.matchAll(SOURCES)) {
        const specifier = match[1] ?? match[2];
        if (specifier.startsWith('.') || specifier.startsWith('/')) queue.push(new URL(specifier, url).href);
        else bare(specifier);
    }
}
const files = [...seen].map(url => '/' + relative(root, fileURLToPath(url)).split('\\').join('/'));
process.stdout.write(JSON.stringify({ imports, files }) + '\n');
