// speedscope_import.js - imports Chrome traces with speedscope's own importer
// (npm speedscope 1.25.0, its browser bundle dist/release/speedscope-*.js),
// headless under node, and counts the warnings it prints. speedscope's
// trace-event importer warns for every E that does not close the innermost
// open slice: slices that overlap their neighbour once times are read as
// doubles, or ends it cannot match to their begin.
//
// The bundle is an app for a browser with no exports: this finds the importer
// function (importTraceEvents: "Ny(t)?xy(t):sf(t)?Dl(t.traceEvents):...") and
// its lazy module initialiser by their shape in the minified text, adds one
// line that hands them out, and runs the bundle in a vm context without a DOM
// (the app's start fails on `window`, after every module is defined). Nothing
// of speedscope is kept in this repository; the npm package is installed by
// tests/e2e/speedscope_e2e.sh into a cache outside it.
//
// Usage: node speedscope_import.js BUNDLE.js TRACE.json...
// Prints "FILE: N profiles, W warnings" per file (and the first warnings);
// exits 1 if any file warns or yields no profile, 3 if the bundle's importer
// cannot be found (another speedscope version: the caller skips).
'use strict';
const fs = require('fs');
const vm = require('vm');

function loadImporter(bundlePath) {
  const src = fs.readFileSync(bundlePath, 'utf8');
  const imp = /function (\w+)\((\w)\)\{return \w+\(\2\)\?\w+\(\2\):\w+\(\2\)\?\w+\(\2\.traceEvents\)/.exec(src);
  const init = /var \w+,(\w+)=\w+\(\(\)=>\{"use strict";[\w();]*\w+=\["line","column","name"/.exec(src);
  if (!imp || !init) return null;
  const hook = `globalThis.__npusimImporter=()=>(${init[1]}(),${imp[1]});`;
  const ctx = {console: {log() {}, info() {}, warn() {}, error() {}}, setTimeout, clearTimeout};
  ctx.globalThis = ctx;
  vm.createContext(ctx);
  try {
    vm.runInContext(src.slice(0, init.index) + hook + src.slice(init.index), ctx);
  } catch (e) {
    // the app's start needs a browser; the modules before it are defined
  }
  if (typeof ctx.__npusimImporter !== 'function') return null;
  return {ctx, importer: ctx.__npusimImporter()};
}

const [bundle, ...traces] = process.argv.slice(2);
const loaded = bundle && loadImporter(bundle);
if (!loaded) {
  console.log(`speedscope_import.js: no trace-event importer found in ${bundle}`);
  process.exit(3);
}
let status = 0;
for (const path of traces) {
  const warnings = [];
  loaded.ctx.console.warn = (...a) => warnings.push(a.join(' '));
  const group = loaded.importer(JSON.parse(fs.readFileSync(path, 'utf8')));
  const n = group && group.profiles ? group.profiles.length : 0;
  console.log(`${path}: ${n} profiles, ${warnings.length} warnings`);
  for (const w of warnings.slice(0, 3)) console.log(`  ${w.slice(0, 300)}`);
  if (warnings.length || !n) status = 1;
}
process.exit(status);
