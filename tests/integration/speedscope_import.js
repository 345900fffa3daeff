// SPDX-License-Identifier: MIT
//
// Imports a file with speedscope's own importer, under node, and prints what
// speedscope made of it as JSON on stdout:
//
//   {"name": ..., "indexToView": N, "schemaErrors": [...] or null,
//    "profiles": [{"name", "unit", "totalWeight",
//                  "stacks": {"frame;frame": weight}}]}
//
// where a frame is "name (file:line)" as speedscope holds it.
//
// usage: node speedscope_import.js NODE_CACHE_DIR PROFILE
//
// The npm package ships speedscope only as a minified browser bundle: its
// importer is inside, behind the app's start-up code, and not exported. So
// the bundle is run in a vm context with a few browser globals stubbed, after
// one textual change: right where the bundle sets up its lazy import module
// (the object whose members include importFromFileSystemDirectoryEntry and
// importProfileGroupFromText), hand that module to us and stop before the UI
// starts. Everything the importer needs is defined before that point. The
// patterns are checked, so a speedscope release that moves things around
// fails loudly here instead of passing vacuously.
'use strict';

const fs = require('fs');
const path = require('path');
const vm = require('vm');

function fail(msg) {
	process.stderr.write('speedscope_import: ' + msg + '\n');
	process.exit(2);
}

function bundlePath(cache) {
	const dir = path.join(cache, 'node_modules', 'speedscope', 'dist', 'release');
	const js = fs.readdirSync(dir).filter(f => /^speedscope-[\w-]+\.js$/.test(f));
	if (js.length !== 1)
		fail('expected one speedscope-*.js bundle in ' + dir + ', found ' + js.length);
	return path.join(dir, js[0]);
}

// The bundle, with the import module handed to globalThis.__pbpImporter.
function patchedBundle(file) {
	const src = fs.readFileSync(file, 'utf8');
	const mod = /([\w$]+)\(([\w$]+),\{importFromFileSystemDirectoryEntry:/.exec(src);
	if (!mod)
		fail('import module not found in ' + file);
	const m = mod[2].replace(/\$/g, '\\$');
	const init = new RegExp('var [\\w$]+=Promise\\.resolve\\(\\)\\.then\\(\\(\\)=>\\(([\\w$]+)\\(\\),' + m + '\\)\\);').exec(src);
	if (!init)
		fail('lazy initializer of the import module not found in ' + file);
	const at = init.index + init[0].length;
	const hook = 'if(globalThis.__pbpImporter){globalThis.__pbpImporter(()=>(' + init[1] + '(),' + mod[2] + '));return;}';
	return src.slice(0, at) + hook + src.slice(at);
}

// Browser globals the bundle touches while defining its modules. Anything
// else it reaches for is a plain no-op object, enough for definitions.
function sandbox() {
	const inert = new Proxy(function () {}, {
		get: (t, k) => (k === Symbol.toPrimitive ? () => '' : inert),
		apply: () => inert,
		construct: () => inert,
	});
	const g = {
		console: { log() {}, warn() {}, error: console.error, info() {}, debug() {} },
		setTimeout, clearTimeout, setInterval, clearInterval, queueMicrotask,
		TextDecoder, TextEncoder, URL, URLSearchParams, Blob: globalThis.Blob,
		atob, btoa, performance,
		navigator: { userAgent: 'node', platform: 'linux' },
		document: inert, location: { hash: '', search: '', href: 'file:///', protocol: 'file:' },
		localStorage: { getItem: () => null, setItem() {}, removeItem() {} },
		requestAnimationFrame: () => 0, addEventListener() {}, removeEventListener() {},
		matchMedia: () => ({ matches: false, addEventListener() {}, addListener() {} }),
		devicePixelRatio: 1,
	};
	g.window = g.self = g.globalThis = g;
	return vm.createContext(g);
}

function frameText(f) {
	if (f.file === undefined)
		return f.name;
	return f.line === undefined ? `${f.name} (${f.file})` : `${f.name} (${f.file}:${f.line})`;
}

// speedscope's Profile keeps every appended sample as a call tree leaf plus a weight.
function stacksOf(profile) {
	const out = {};
	profile.samples.forEach((node, i) => {
		const frames = [];
		for (let n = node; n && !n.isRoot(); n = n.parent)
			frames.unshift(frameText(n.frame));
		const key = frames.join(';');
		out[key] = (out[key] || 0) + profile.weights[i];
	});
	return out;
}

function schemaErrors(cache, text) {
	const Ajv = require(path.join(cache, 'node_modules', 'ajv'));
	const schema = JSON.parse(fs.readFileSync(path.join(cache, 'node_modules', 'speedscope', 'dist',
		'release', 'file-format-schema.json'), 'utf8'));
	const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
	return validate(JSON.parse(text)) ? null : validate.errors;
}

async function main() {
	const [cache, file] = process.argv.slice(2);
	if (!cache || !file)
		fail('usage: node speedscope_import.js NODE_CACHE_DIR PROFILE');
	const ctx = sandbox();
	let getModule = null;
	ctx.__pbpImporter = f => { getModule = f; };
	vm.runInContext(patchedBundle(bundlePath(cache)), ctx, { filename: 'speedscope-bundle.js' });
	if (!getModule)
		fail('the bundle never reached the import module');
	const text = fs.readFileSync(file, 'utf8');
	const group = await getModule().importProfileGroupFromText(path.basename(file), text);
	if (!group)
		fail('speedscope did not recognise ' + file);
	const result = {
		name: group.name,
		indexToView: group.indexToView,
		schemaErrors: schemaErrors(cache, text),
		profiles: group.profiles.map(p => ({
			name: p.getName(),
			unit: p.getWeightUnit(),
			totalWeight: p.getTotalWeight(),
			stacks: stacksOf(p),
		})),
	};
	process.stdout.write(JSON.stringify(result, null, 1) + '\n');
}

main().catch(e => fail(e && e.stack ? e.stack : String(e)));
