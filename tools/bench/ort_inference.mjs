#!/usr/bin/env node
// Times ONNX Runtime (npm onnxruntime-node, CPU, intra-op 1 thread, inter-op 1, sequential,
// graph optimizations "all") on the models bench_inference writes (its manifest.json: one case
// per model file, with the .npy batch to feed) and writes Google-Benchmark-shaped JSON for
// tools/bench/render_inference.py.
//
// Time per case: the median of single session.run wall-clock times over at least --min_time
// seconds (at least 5 runs), the median of --repetitions such medians; a warm-up first. The
// feeds are built once; the outputs are fetched (and allocated by ONNX Runtime) on every run,
// as a caller gets them.
//
// usage: node tools/bench/ort_inference.mjs MANIFEST.json OUT.json [--min_time=0.5] [--repetitions=3]
//            [--filter=SUBSTRING]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { readNpy } from '../ort/npy.mjs';
import { loadOrt } from '../ort/run_model.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

function option(name, dflt) {
  const a = process.argv.find((s) => s.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3) : dflt;
}
const MIN_TIME = Number(option('min_time', '0.5'));
const REPETITIONS = Number(option('repetitions', '3'));
const FILTER = option('filter', '');

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function timeRuns(session, feeds) {
  const warm = process.hrtime.bigint();
  let warmRuns = 0;
  while (warmRuns < 3 || Number(process.hrtime.bigint() - warm) / 1e9 < Math.min(0.2, MIN_TIME)) {
    await session.run(feeds);
    ++warmRuns;
  }
  const medians = [];
  let runs = 0;
  for (let r = 0; r < REPETITIONS; ++r) {
    const times = [];
    const start = process.hrtime.bigint();
    while (Number(process.hrtime.bigint() - start) / 1e9 < MIN_TIME || times.length < 5) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
    runs += times.length;
    medians.push(median(times));
  }
  return { seconds: median(medians), runs };
}

async function main() {
  const [manifestPath, outPath] = process.argv.slice(2).filter((s) => !s.startsWith('--'));
  if (!manifestPath || !outPath) {
    console.error('usage: node tools/bench/ort_inference.mjs MANIFEST.json OUT.json [--min_time=S] ' +
                  '[--repetitions=N] [--filter=SUBSTRING]');
    process.exit(2);
  }
  const ort = loadOrt();
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const benchmarks = [];
  for (const c of manifest.cases) {
    if (FILTER && !c.bench.includes(FILTER)) continue;
    const name = c.bench;
    try {
      const session = await ort.InferenceSession.create(c.model, {
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
        logSeverityLevel: 3,  // errors only (not the unused-initializer warnings of BN models)
      });
      const a = readNpy(c.npy);
      const feeds = { [c.input]: new ort.Tensor(a.dtype, a.data, a.shape) };
      const { seconds, runs } = await timeRuns(session, feeds);
      await session.release();
      const row = {
        name, run_name: name, run_type: 'aggregate', aggregate_name: 'median', repetitions: REPETITIONS,
        iterations: runs, real_time: seconds * 1e3, cpu_time: seconds * 1e3, time_unit: 'ms',
      };
      if (c.counter === 'ops') row.GOPS = c.items / seconds / 1e9;
      else row.samples_per_s = c.items / seconds;
      benchmarks.push(row);
      console.error(`ort_inference: ${name}: ${(seconds * 1e3).toFixed(3)} ms (${runs} runs)`);
    } catch (e) {
      const msg = String(e && e.message ? e.message : e).split('\n')[0];
      console.error(`ort_inference: ${name}: ${msg}`);
      benchmarks.push({ name, run_name: name, error_occurred: true, error_message: msg });
    }
  }
  const out = {
    context: {
      date: new Date().toISOString(), host_name: os.hostname(), executable: path.relative(process.cwd(), path.join(here, 'ort_inference.mjs')),
      peer: `onnxruntime-node ${ort.env.versions ? ort.env.versions.node : '?'}`,
      num_cpus: os.cpus().length, cpu: os.cpus()[0] ? os.cpus()[0].model : '?',
      threads: 'intra-op 1, inter-op 1, sequential', graph_optimization: 'all',
      time: 'median wall time of single session.run calls', min_time: MIN_TIME, repetitions: REPETITIONS,
      batch: manifest.batch,
    },
    benchmarks,
  };
  const tmp = `${outPath}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(out, null, 1));
  fs.renameSync(tmp, outPath);
}

main().catch((e) => {
  console.error(`ort_inference: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
