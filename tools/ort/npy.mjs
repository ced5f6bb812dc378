// A small NumPy .npy reader and writer (format versions 1.0-3.0, little-endian, C order) for
// the element types ONNX Runtime exchanges with quantkit: float32, int8, uint8, int32, int64
// (and bool). Every malformed file is an Error naming the file and what was found.
//
//   import { readNpy, writeNpy } from './npy.mjs';
//   const a = readNpy('x.npy');        // { dtype: 'float32', shape: [540, 1, 8, 8], data: Float32Array }
//   writeNpy('y.npy', a.dtype, a.shape, a.data);   // written to y.npy.tmp-<pid>, renamed when complete
import fs from 'node:fs';

// dtype name (ONNX Runtime's tensor type names) -> .npy descr, typed array, item size.
export const DTYPES = {
  float32: { descr: '<f4', array: Float32Array, size: 4 },
  int8: { descr: '|i1', array: Int8Array, size: 1 },
  uint8: { descr: '|u1', array: Uint8Array, size: 1 },
  int32: { descr: '<i4', array: Int32Array, size: 4 },
  int64: { descr: '<i8', array: BigInt64Array, size: 8 },
  bool: { descr: '|b1', array: Uint8Array, size: 1 },
};

// descr as written by numpy (single-byte types may carry '<', '|' or '>'... only '<'/'|' accepted).
function dtypeOfDescr(descr, file) {
  for (const [name, t] of Object.entries(DTYPES)) {
    if (descr === t.descr || (t.size === 1 && descr === '<' + t.descr.slice(1))) return name;
  }
  throw new Error(`file '${file}': .npy dtype '${descr}' is not supported; expected little-endian ` +
    `float32 (<f4), int8 (|i1), uint8 (|u1), int32 (<i4), int64 (<i8) or bool (|b1)`);
}

function headerValue(header, key, file) {
  const m = header.match(new RegExp(`'${key}'\\s*:\\s*('[^']*'|True|False|\\([^)]*\\))`));
  if (!m) throw new Error(`file '${file}': .npy header has no valid '${key}' entry: ${header.trim()}`);
  return m[1];
}

export function parseNpy(buf, file = '<buffer>') {
  const magic = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);  // \x93NUMPY
  if (buf.length < 10 || !buf.subarray(0, 6).equals(magic))
    throw new Error(`file '${file}': not a .npy file (bad magic); expected \\x93NUMPY`);
  const major = buf[6];
  let headerLen;
  let offset;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    offset = 10;
  } else if (major === 2 || major === 3) {
    if (buf.length < 12) throw new Error(`file '${file}': truncated .npy header`);
    headerLen = buf.readUInt32LE(8);
    offset = 12;
  } else {
    throw new Error(`file '${file}': .npy format version ${major}; expected 1, 2 or 3`);
  }
  if (offset + headerLen > buf.length) throw new Error(`file '${file}': truncated .npy header`);
  const header = buf.subarray(offset, offset + headerLen).toString('latin1');
  const dtype = dtypeOfDescr(headerValue(header, 'descr', file).slice(1, -1), file);
  if (headerValue(header, 'fortran_order', file) !== 'False')
    throw new Error(`file '${file}': Fortran-order array; expected C order (numpy.ascontiguousarray)`);
  const shapeText = headerValue(header, 'shape', file);
  const shape = shapeText.slice(1, -1).split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
    if (!/^\d+$/.test(s)) throw new Error(`file '${file}': malformed .npy shape ${shapeText}`);
    return Number(s);
  });
  const count = shape.reduce((a, b) => a * b, 1);
  const t = DTYPES[dtype];
  const payload = buf.length - offset - headerLen;
  if (!Number.isSafeInteger(count) || count * t.size !== payload)
    throw new Error(`file '${file}': shape ${shapeText} of ${dtype} needs ${count * t.size} bytes of data; ` +
      `the file has ${payload} (truncated or corrupt?)`);
  // Copy into a fresh, aligned buffer (the payload offset need not be a multiple of the item size).
  const bytes = new Uint8Array(payload);
  bytes.set(buf.subarray(offset + headerLen));
  return { dtype, shape, data: new t.array(bytes.buffer, 0, count) };
}

export function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    throw new Error(`file '${file}': cannot read: ${e.code || e.message}`);
  }
  return parseNpy(buf, file);
}

export function formatNpy(dtype, shape, data) {
  const t = DTYPES[dtype];
  if (!t) throw new Error(`cannot write a .npy of element type '${dtype}'; expected one of ${Object.keys(DTYPES).join(', ')}`);
  const count = shape.reduce((a, b) => a * b, 1);
  if (data.length !== count)
    throw new Error(`${data.length} values for shape [${shape.join(',')}]; expected ${count}`);
  const shapeText = `(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`;
  let header = `{'descr': '${t.descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  // numpy pads the header with spaces and a newline so that the data starts 64-byte aligned.
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  if (header.length > 0xffff) throw new Error(`.npy header too long for shape [${shape.join(',')}]`);
  const pre = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(pre);
  pre.writeUInt16LE(header.length, 8);
  let values;
  if (dtype === 'bool') {
    values = Uint8Array.from(data, (v) => (v ? 1 : 0));
  } else {
    values = data instanceof t.array ? data : t.array.from(data);
  }
  return Buffer.concat([pre, Buffer.from(header, 'latin1'),
    Buffer.from(values.buffer, values.byteOffset, values.byteLength)]);
}

export function writeNpy(file, dtype, shape, data) {
  const bytes = formatNpy(dtype, shape, data);
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    fs.writeFileSync(tmp, bytes);
    fs.renameSync(tmp, file);
  } catch (e) {
    try { fs.unlinkSync(tmp); } catch { /* not created */ }
    throw new Error(`file '${file}': cannot write: ${e.code || e.message}`);
  }
}
