#!/usr/bin/env node
// Compares two .npy arrays (e.g. ONNX Runtime's logits and PyTorch's): same element type and
// shape, and max |actual - expected| <= atol. With --labels (int64 [N], for [N,C] logits) it
// also reports the argmax agreement and both accuracies, and requires identical argmax.
//
// usage: node tools/ort/compare_npy.mjs ACTUAL.npy EXPECTED.npy [--atol 1e-4] [--labels Y.npy]
// Exit status: 0 agree, 1 differ (or a file is malformed), 2 usage error.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { readNpy } from './npy.mjs';

function argmaxRows(a) {
  const [n, c] = a.shape;
  const out = new Array(n);
  for (let i = 0; i < n; ++i) {
    let best = 0;
    for (let j = 1; j < c; ++j) if (a.data[i * c + j] > a.data[i * c + best]) best = j;
    out[i] = best;
  }
  return out;
}

// Returns { ok, lines } describing the comparison.
export function compareNpy(actualFile, expectedFile, { atol = 1e-4, labels = null } = {}) {
  const a = readNpy(actualFile);
  const e = readNpy(expectedFile);
  const lines = [];
  if (a.dtype !== e.dtype || a.shape.join(',') !== e.shape.join(',')) {
    lines.push(`${actualFile}: ${a.dtype} [${a.shape.join(',')}]; expected ${e.dtype} [${e.shape.join(',')}] as in ${expectedFile}`);
    return { ok: false, lines };
  }
  let maxDiff = 0;
  let where = -1;
  for (let i = 0; i < a.data.length; ++i) {
    const x = Number(a.data[i]);
    const y = Number(e.data[i]);
    const d = Number.isNaN(x) || Number.isNaN(y) ? (Number.isNaN(x) && Number.isNaN(y) ? 0 : Infinity) : Math.abs(x - y);
    if (d > maxDiff || (where < 0 && d === Infinity)) {
      maxDiff = d;
      where = i;
    }
  }
  let ok = maxDiff <= atol;
  lines.push(`${path.basename(actualFile)} vs ${path.basename(expectedFile)}: ${a.dtype} [${a.shape.join(',')}], ` +
    `max abs diff ${maxDiff.toExponential(3)} (tolerance ${atol})` +
    (where >= 0 ? ` at flat index ${where}: ${Number(a.data[where])} vs ${Number(e.data[where])}` : ''));
  if (labels !== null) {
    const y = readNpy(labels);
    if (a.shape.length !== 2 || y.shape.length !== 1 || y.shape[0] !== a.shape[0]) {
      lines.push(`--labels ${labels}: [${y.shape.join(',')}] does not fit logits [${a.shape.join(',')}]; expected [N] for [N,C]`);
      return { ok: false, lines };
    }
    const pa = argmaxRows(a);
    const pe = argmaxRows(e);
    const n = pa.length;
    let same = 0;
    let ca = 0;
    let ce = 0;
    for (let i = 0; i < n; ++i) {
      same += pa[i] === pe[i];
      ca += BigInt(pa[i]) === BigInt(y.data[i]);
      ce += BigInt(pe[i]) === BigInt(y.data[i]);
    }
    lines.push(`argmax agrees on ${same}/${n}; accuracy ${(ca / n).toFixed(4)} (${ca}/${n}) vs ${(ce / n).toFixed(4)} (${ce}/${n})`);
    ok = ok && same === n;
  }
  return { ok, lines };
}

function main() {
  const argv = process.argv.slice(2);
  const usage = 'usage: node tools/ort/compare_npy.mjs ACTUAL.npy EXPECTED.npy [--atol 1e-4] [--labels Y.npy]';
  const files = [];
  let atol = 1e-4;
  let labels = null;
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--atol' && i + 1 < argv.length) {
      atol = Number(argv[++i]);
      if (!(atol >= 0)) { console.error(`compare_npy: --atol '${argv[i]}': expected a number >= 0`); process.exit(2); }
    } else if (argv[i] === '--labels' && i + 1 < argv.length) {
      labels = argv[++i];
    } else if (argv[i].startsWith('-')) {
      console.error(`compare_npy: unknown option or missing value '${argv[i]}'\n${usage}`);
      process.exit(2);
    } else {
      files.push(argv[i]);
    }
  }
  if (files.length !== 2) { console.error(usage); process.exit(2); }
  try {
    const { ok, lines } = compareNpy(files[0], files[1], { atol, labels });
    for (const l of lines) console.log(`compare_npy: ${l}`);
    console.log(`compare_npy: ${ok ? 'agree' : 'DIFFER'}`);
    process.exit(ok ? 0 : 1);
  } catch (e) {
    console.error(`compare_npy: ${e.message}`);
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) main();
