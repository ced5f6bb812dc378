#!/usr/bin/env node
// The "peer" test of the demo model: ONNX Runtime runs examples/data/demo/digits_cnn.onnx on
// the test set through the command line (tools/ort/run_model.mjs), and its logits must equal
// PyTorch's (digits_test_logits_torch.npy) within 1e-4, with the same argmax on every sample
// and the accuracy tools/demo/make_demo_model.py recorded in digits_cnn.json.
//
// usage: node tools/ort/check_demo_model.mjs OUT_DIR [--data-dir examples/data/demo]
// Exit status: 0 agree, 1 differ or failed, 77 skipped (onnxruntime-node not installed: run
// tools/ort/install.sh); ctest maps 77 to "skipped" (SKIP_RETURN_CODE).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { compareNpy } from './compare_npy.mjs';
import { readNpy } from './npy.mjs';

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
let dataDir = path.join(here, '..', '..', 'examples', 'data', 'demo');
const rest = [];
for (let i = 0; i < argv.length; ++i) {
  if (argv[i] === '--data-dir' && i + 1 < argv.length) dataDir = argv[++i];
  else rest.push(argv[i]);
}
if (rest.length !== 1 || rest[0].startsWith('-')) {
  console.error('usage: node tools/ort/check_demo_model.mjs OUT_DIR [--data-dir examples/data/demo]');
  process.exit(2);
}
const outDir = rest[0];

if (!fs.existsSync(path.join(here, 'node_modules', 'onnxruntime-node', 'package.json'))) {
  console.log(`check_demo_model: SKIPPED: onnxruntime-node is not installed in ${path.join(here, 'node_modules')}; ` +
    'run tools/ort/install.sh (scripts/install_deps.sh does)');
  process.exit(SKIP);
}

const file = (name) => path.join(dataDir, name);
const run = spawnSync(process.execPath, [
  path.join(here, 'run_model.mjs'), file('digits_cnn.onnx'),
  '--input', `input=${file('digits_test_x.npy')}`, '--output-dir', outDir, '--threads', '1',
], { encoding: 'utf8' });
process.stdout.write(run.stdout || '');
process.stderr.write(run.stderr || '');
if (run.error || run.status !== 0) {
  console.error(`check_demo_model: run_model.mjs failed (${run.error ? run.error.message : `exit ${run.status}`})`);
  process.exit(1);
}

try {
  const logits = path.join(outDir, 'logits.npy');
  const { ok, lines } = compareNpy(logits, file('digits_test_logits_torch.npy'),
    { atol: 1e-4, labels: file('digits_test_y.npy') });
  for (const l of lines) console.log(`check_demo_model: ORT vs PyTorch: ${l}`);

  // Accuracy as recorded by make_demo_model.py.
  const meta = JSON.parse(fs.readFileSync(file('digits_cnn.json'), 'utf8'));
  const a = readNpy(logits);
  const y = readNpy(file('digits_test_y.npy'));
  const [n, c] = a.shape;
  let correct = 0;
  for (let i = 0; i < n; ++i) {
    let best = 0;
    for (let j = 1; j < c; ++j) if (a.data[i * c + j] > a.data[i * c + best]) best = j;
    correct += BigInt(best) === y.data[i];
  }
  const accOk = correct === meta.test_correct && n === meta.test_samples;
  console.log(`check_demo_model: ORT accuracy ${correct}/${n}; digits_cnn.json records ` +
    `${meta.test_correct}/${meta.test_samples}${accOk ? '' : ' -- MISMATCH'}`);
  if (!ok || !accOk) {
    console.error('check_demo_model: FAILED: ONNX Runtime and PyTorch disagree on the demo model');
    process.exit(1);
  }
  console.log('check_demo_model: passed');
} catch (e) {
  console.error(`check_demo_model: ${e.message}`);
  process.exit(1);
}
