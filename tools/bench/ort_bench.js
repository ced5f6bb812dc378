#!/usr/bin/env node
// Times ONNX Runtime (npm onnxruntime-node, CPU, 1 intra-op thread, 1 inter-op thread) on the
// models of make_models.py and writes Google-Benchmark-shaped JSON (name, size, bpe,
// items_per_second, aggregate_name "median") for tools/bench/render.py.
//
// Two rows per case:
//   <op>/<variant>/<gran>/ort/<n>      one session.run of the 1-op model: what a caller pays,
//                                       binding, output allocation and copy included;
//   <op>/<variant>/<gran>/ort_op/<n>   one op inside a graph: (T_K - T_1) / (K - 1) from the
//                                       K-copy model (the per-run overhead cancels).
// Time: the median of single runs' wall-clock times (robust to a shared machine's preemptions).
//
// usage: node ort_bench.js MANIFEST.json OUT.json [--min_time=0.2] [--repetitions=3]
'use strict';
const fs = require('fs');
const path = require('path');
const os = require('os');

const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

function arg(name, dflt) {
  const a = process.argv.find((s) => s.startsWith(`--${name}=`));
  return a ? Number(a.split('=')[1]) : dflt;
}
const MIN_TIME = arg('min_time', 0.2);
const REPETITIONS = arg('repetitions', 3);

// The data bench_kernels uses, from a small deterministic generator (same distributions).
function makeInput(spec) {
  const n = spec.dims.reduce((a, b) => a * b, 1);
  let s = 20240611 >>> 0;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  let data;
  if (spec.type === 'float32') {
    data = new Float32Array(n);
    for (let i = 0; i < n; ++i) data[i] = -1.1 + 2.2 * next();
  } else if (spec.type === 'int8') {
    data = new Int8Array(n);
    for (let i = 0; i < n; ++i) data[i] = Math.floor(next() * 256) - 128;
  } else {
    data = new Int32Array(n);
    for (let i = 0; i < n; ++i) data[i] = Math.floor(next() * 40001) - 20000;
  }
  return new ort.Tensor(spec.type, data, spec.dims);
}

async function openSession(file) {
  return ort.InferenceSession.create(file, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
}

// Seconds per run: each repetition times single runs (wall clock, process.hrtime) for at
// least MIN_TIME and keeps their median, which a shared machine's preemptions do not move;
// the result is the median of REPETITIONS repetitions.
async function timeRuns(session, feeds, fetch) {
  const warm = process.hrtime.bigint();
  while (Number(process.hrtime.bigint() - warm) / 1e9 < Math.min(0.05, MIN_TIME)) {
    await session.run(feeds, [fetch]);
  }
  const medians = [];
  for (let r = 0; r < REPETITIONS; ++r) {
    const times = [];
    const start = process.hrtime.bigint();
    while (Number(process.hrtime.bigint() - start) / 1e9 < MIN_TIME || times.length < 5) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds, [fetch]);
      times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
    medians.push(median(times));
  }
  return median(medians);
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function row(name, n, bpe, secondsPerIter, extra) {
  return Object.assign({
    name, run_name: name, run_type: 'aggregate', aggregate_name: 'median',
    repetitions: REPETITIONS, iterations: 0, real_time: secondsPerIter * 1e9,
    cpu_time: secondsPerIter * 1e9, time_unit: 'ns', size: n, bpe,
    items_per_second: n / secondsPerIter, bytes_per_second: (n * bpe) / secondsPerIter,
  }, extra || {});
}

async function main() {
  const [manifestPath, outPath] = process.argv.slice(2).filter((s) => !s.startsWith('--'));
  if (!manifestPath || !outPath) {
    console.error('usage: node ort_bench.js MANIFEST.json OUT.json [--min_time=S] [--repetitions=N]');
    process.exit(2);
  }
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const benchmarks = [];
  for (const c of manifest) {
    const [op, variant, gran] = c.bench.split('/');
    const feeds = { [c.input.name]: makeInput(c.input) };
    let t1;
    let tk;
    try {
      const sk = await openSession(c.model_k);
      tk = await timeRuns(sk, feeds, 'y0');
      await sk.release();
      const s1 = await openSession(c.model_1);
      t1 = await timeRuns(s1, feeds, 'y0');
      await s1.release();
    } catch (e) {
      const msg = String(e && e.message ? e.message : e).split('\n')[0];
      console.error(`ort_bench: ${c.bench}/${c.size}: ${msg}`);
      benchmarks.push({ name: `${c.bench}/ort/${c.size}`, run_name: `${c.bench}/ort/${c.size}`,
                        size: c.size, bpe: c.bpe, error_occurred: true, error_message: msg });
      continue;
    }
    const perOp = (tk - t1) / (c.copies - 1);
    benchmarks.push(row(`${op}/${variant}/${gran}/ort/${c.size}`, c.size, c.bpe, t1));
    const opName = `${op}/${variant}/${gran}/ort_op/${c.size}`;
    if (!(perOp > 0)) {
      // Noise larger than K - 1 ops: no number rather than a wrong one.
      benchmarks.push({ name: opName, run_name: opName, size: c.size, bpe: c.bpe, error_occurred: true,
                        error_message: `not resolved: ${c.copies} copies took no longer than 1` });
      continue;
    }
    benchmarks.push(row(opName, c.size, c.bpe, perOp, { copies: c.copies, session_run_time: t1 * 1e9 }));
    console.error(`ort_bench: ${c.bench}/${c.size}: run ${(t1 * 1e6).toFixed(1)} us, ` +
                  `op ${(perOp * 1e6).toFixed(1)} us (${(c.size / perOp / 1e9).toFixed(2)} Gelem/s)`);
  }
  const out = {
    context: {
      date: new Date().toISOString(), host_name: os.hostname(), executable: 'ort_bench.js',
      peer: `onnxruntime-node ${ort.env.versions ? ort.env.versions.node : '?'}`,
      num_cpus: os.cpus().length, cpu: os.cpus()[0] ? os.cpus()[0].model : '?',
      threads: 'intra-op 1, inter-op 1', time: 'median wall time of single runs',
      min_time: MIN_TIME, repetitions: REPETITIONS,
    },
    benchmarks,
  };
  const tmp = `${outPath}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(out, null, 1));
  fs.renameSync(tmp, outPath);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
