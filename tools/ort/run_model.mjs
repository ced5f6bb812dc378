#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (npm onnxruntime-node, CPU) on inputs from .npy files
// and writes every graph output to DIR/<name>.npy: the real client quantkit's ONNX files
// (float models, QDQ models) are checked against.
//
// usage: node tools/ort/run_model.mjs MODEL.onnx --input NAME=X.npy [--input NAME=X.npy ...]
//            --output-dir DIR [--threads N] [--graph-optimization all|extended|basic|disabled]
//
//   --input NAME=FILE      one per model input; element type and rank must match the model's
//   --output-dir DIR       created if missing; output names with characters outside
//                          [A-Za-z0-9._-] are written with those characters replaced by '_'
//   --threads N            intra-op threads (default 1; inter-op is always 1, sequential)
//   --graph-optimization   ONNX Runtime's graph optimization level (default all, what users
//                          get; disabled runs the graph as written, node by node)
//   --x64-quant-precision on|off|auto
//                          ONNX Runtime's session.x64quantprecision (default off, what users get).
//                          On x86-64 CPUs without VNNI, ONNX Runtime's uint8 x int8 kernels sum
//                          each pair of products with VPMADDUBSW, saturating at int16 (255 x 127 x 2
//                          = 64770): results differ from the integer arithmetic the model states
//                          wherever a pair overflows. "on" makes ONNX Runtime shift the int8
//                          weights to uint8 (exact uint8 x uint8 kernels); ORT does that as a
//                          level-2 rewrite, so it needs --graph-optimization extended or all.
//                          "auto": on, and at least extended, only on such CPUs (what the exactness
//                          tests use: elsewhere the default kernels are exact and are what is checked)
//
// Exit status: 0 done, 1 the model or a file failed, 2 usage error, 3 onnxruntime-node is not
// installed (run tools/ort/install.sh).
// .npy element types: float32, int8, uint8, int32, int64, bool; C order, little-endian.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { DTYPES, readNpy, writeNpy } from './npy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ORT_DIR = path.join(here, 'node_modules', 'onnxruntime-node');

class UsageError extends Error {}
export class OrtMissing extends Error {}

export function loadOrt() {
  const require = createRequire(import.meta.url);
  try {
    return require(ORT_DIR);
  } catch (e) {
    if (e.code === 'MODULE_NOT_FOUND' && !fs.existsSync(ORT_DIR))
      throw new OrtMissing(`onnxruntime-node is not installed in ${path.dirname(ORT_DIR)}; run tools/ort/install.sh`);
    throw new Error(`cannot load onnxruntime-node from ${ORT_DIR}: ${e.message}`);
  }
}

function parseArgs(argv) {
  const usage = 'usage: node tools/ort/run_model.mjs MODEL.onnx --input NAME=X.npy [--input ...] ' +
    '--output-dir DIR [--threads N] [--graph-optimization all|extended|basic|disabled] [--x64-quant-precision on|off|auto]';
  const opts = { model: null, inputs: [], outputDir: null, threads: 1, graphOptimization: 'all', x64QuantPrecision: 'off' };
  const value = (i, flag) => {
    if (i + 1 >= argv.length) throw new UsageError(`${flag} needs a value\n${usage}`);
    return argv[i + 1];
  };
  for (let i = 0; i < argv.length; ++i) {
    let a = argv[i];
    let v = null;
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    if (eq > 0 && a.slice(0, eq) !== '--input') [a, v] = [a.slice(0, eq), a.slice(eq + 1)];
    if (a === '--help' || a === '-h') throw new UsageError(usage);
    if (a === '--input' || a.startsWith('--input=')) {
      const spec = a === '--input' ? value(i++, a) : a.slice('--input='.length);
      const k = spec.indexOf('=');
      if (k <= 0 || k === spec.length - 1)
        throw new UsageError(`--input '${spec}': expected NAME=FILE.npy\n${usage}`);
      opts.inputs.push({ name: spec.slice(0, k), file: spec.slice(k + 1) });
    } else if (a === '--output-dir') {
      opts.outputDir = v ?? value(i++, a);
    } else if (a === '--threads') {
      const s = v ?? value(i++, a);
      opts.threads = Number(s);
      if (!Number.isInteger(opts.threads) || opts.threads < 1)
        throw new UsageError(`--threads '${s}': expected a positive integer`);
    } else if (a === '--graph-optimization') {
      opts.graphOptimization = v ?? value(i++, a);
      if (!['all', 'extended', 'basic', 'disabled'].includes(opts.graphOptimization))
        throw new UsageError(`--graph-optimization '${opts.graphOptimization}': expected all, extended, basic or disabled`);
    } else if (a === '--x64-quant-precision') {
      opts.x64QuantPrecision = v ?? value(i++, a);
      if (!['on', 'off', 'auto'].includes(opts.x64QuantPrecision))
        throw new UsageError(`--x64-quant-precision '${opts.x64QuantPrecision}': expected on, off or auto`);
    } else if (a.startsWith('-')) {
      throw new UsageError(`unknown option '${a}'\n${usage}`);
    } else if (opts.model === null) {
      opts.model = a;
    } else {
      throw new UsageError(`unexpected argument '${a}' (the model is '${opts.model}')\n${usage}`);
    }
  }
  if (opts.model === null) throw new UsageError(`no model given\n${usage}`);
  if (opts.outputDir === null) throw new UsageError(`no --output-dir given\n${usage}`);
  if (opts.x64QuantPrecision === 'on' && !['extended', 'all'].includes(opts.graphOptimization))
    throw new UsageError(`--x64-quant-precision on needs --graph-optimization extended or all ` +
      `(ONNX Runtime applies it as a level-2 graph rewrite); got ${opts.graphOptimization}`);
  return opts;
}

// True on x86-64 CPUs whose ONNX Runtime int8 kernels saturate uint8 x int8 pair sums: no
// AVX-512 VNNI, AVX-VNNI or AMX-INT8 (Linux: the flags in /proc/cpuinfo).
export function int8PairsSaturate() {
  if (process.arch !== 'x64') return false;
  let info;
  try {
    info = fs.readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return false;  // not Linux: unknown, assume the default kernels
  }
  const line = info.split('\n').find((l) => l.startsWith('flags'));
  if (!line) return false;
  const flags = new Set(line.slice(line.indexOf(':') + 1).trim().split(/\s+/));
  return !['avx512_vnni', 'avx_vnni', 'amx_int8'].some((f) => flags.has(f));
}

// The session options for a graph optimization level and an --x64-quant-precision mode:
// { options, graphOptimization, x64QuantPrecision } with the mode resolved to on or off.
export function sessionSettings(graphOptimization, x64QuantPrecision) {
  let level = graphOptimization;
  let precise = x64QuantPrecision === 'on';
  if (x64QuantPrecision === 'auto' && int8PairsSaturate()) {
    precise = true;
    if (!['extended', 'all'].includes(level)) level = 'extended';
  }
  const options = { graphOptimizationLevel: level };
  if (precise) options.extra = { session: { x64quantprecision: '1' } };
  return { options, graphOptimization: level, x64QuantPrecision: precise ? 'on' : 'off' };
}

export function safeFileName(name) {
  const s = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return s === '' ? '_' : s;
}

// Runs `model` on `inputs` ([{name, file}]) and writes the outputs; returns
// [{name, file, dtype, shape}] of what was written.
export async function runModel({ model, inputs, outputDir, threads = 1, graphOptimization = 'all', x64QuantPrecision = 'off' }) {
  const ort = loadOrt();
  if (!fs.existsSync(model)) throw new Error(`model '${model}': no such file`);
  const settings = sessionSettings(graphOptimization, x64QuantPrecision);
  let session;
  try {
    session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      ...settings.options,
    });
  } catch (e) {
    throw new Error(`model '${model}': ONNX Runtime cannot load it: ${e.message}`);
  }
  const meta = new Map((session.inputMetadata || []).map((m) => [m.name, m]));
  const feeds = {};
  for (const { name, file } of inputs) {
    if (!session.inputNames.includes(name))
      throw new Error(`--input ${name}=${file}: the model has no input '${name}'; its inputs: ${session.inputNames.join(', ')}`);
    if (name in feeds) throw new Error(`--input ${name}: given twice`);
    const a = readNpy(file);
    const m = meta.get(name);
    if (m && m.isTensor) {
      if (m.type !== a.dtype)
        throw new Error(`input '${name}': '${file}' holds ${a.dtype}; the model expects ${m.type}`);
      const dims = m.shape || [];
      const fits = dims.length === 0 ||
        (dims.length === a.shape.length && dims.every((d, k) => typeof d !== 'number' || d < 0 || d === a.shape[k]));
      if (!fits)
        throw new Error(`input '${name}': '${file}' has shape [${a.shape.join(',')}]; the model expects [${dims.join(',')}]`);
    }
    feeds[name] = new ort.Tensor(a.dtype, a.data, a.shape);
  }
  const given = new Set(inputs.map((i) => i.name));
  for (const name of session.inputNames)
    if (!given.has(name))
      throw new Error(`model '${model}': input '${name}' is not given (--input ${name}=FILE.npy); ` +
        `the model's inputs: ${session.inputNames.join(', ')}`);
  let results;
  try {
    results = await session.run(feeds);
  } catch (e) {
    throw new Error(`model '${model}': ONNX Runtime failed to run it: ${e.message}`);
  }
  fs.mkdirSync(outputDir, { recursive: true });
  const written = [];
  const files = new Set();
  for (const name of session.outputNames) {
    const t = results[name];
    if (!t || typeof t.dims === 'undefined')
      throw new Error(`output '${name}' is not a tensor; only tensor outputs can be written as .npy`);
    if (!DTYPES[t.type])
      throw new Error(`output '${name}' has element type ${t.type}; .npy output supports ${Object.keys(DTYPES).join(', ')}`);
    let base = safeFileName(name);
    for (let k = 1; files.has(base); ++k) base = `${safeFileName(name)}_${k}`;
    files.add(base);
    const file = path.join(outputDir, `${base}.npy`);
    writeNpy(file, t.type, Array.from(t.dims), t.data);
    written.push({ name, file, dtype: t.type, shape: Array.from(t.dims) });
  }
  await session.release();
  written.settings = settings;
  return written;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`run_model: ${e.message}`);
    process.exit(e instanceof UsageError ? 2 : 1);
  }
  try {
    const ort = loadOrt();
    const written = await runModel(opts);
    console.log(`run_model: onnxruntime-node ${ort.env.versions.node ?? '?'}, ${opts.threads} thread(s), ` +
      `graph optimization ${written.settings.graphOptimization}, x64 quant precision ` +
      `${written.settings.x64QuantPrecision}: ${opts.model}`);
    for (const w of written) console.log(`  ${w.name}: ${w.dtype} [${w.shape.join(',')}] -> ${w.file}`);
  } catch (e) {
    console.error(`run_model: ${e.message}`);
    process.exit(e instanceof OrtMissing ? 3 : 1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) main();
