// Times praetorians-model-viewer's PBA parser (dcooliave/praetorians-model-viewer, MIT) on
// PBA files, from in-memory buffers, and prints one JSON line per file.
//
//   node tools/peers/pba_peer.mjs CHECKOUT [--repeat N] FILE.pba...
//
// CHECKOUT is a checkout of the peer repository (this script fetches nothing). Its
// src/parse-pba.js is an ES module in a folder without package.json: Node >= 20.19 detects
// that by itself; older Node needs --experimental-detect-module.
//
// Timing: best of N of process.cpuUsage() (user + system CPU time, what the gamemesh figures
// use: the machine is shared, so wall time would count other processes; it is printed too, as
// wall_s). Every file is parsed N times untimed first, so the JIT has compiled the parser
// before any timed run. Each file's bytes are read once; every parse gets a fresh ArrayBuffer
// copy made outside the timed region (the parser slices that buffer, so sharing one across
// runs would be fair too, but a copy keeps each run independent). The counts printed are what
// the parser returned, so a caller can check that it parsed the whole model and not just the
// header.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

function parseArgs(argv) {
  const out = { checkout: null, repeat: 5, files: [] }
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--repeat') out.repeat = Number(argv[++i])
    else if (out.checkout === null) out.checkout = argv[i]
    else out.files.push(argv[i])
  }
  if (out.checkout === null || out.files.length === 0 || !(out.repeat >= 1)) {
    console.error('usage: node pba_peer.mjs CHECKOUT [--repeat N] FILE.pba...')
    process.exit(2)
  }
  return out
}

function cpuSeconds(since) {
  const u = process.cpuUsage(since)
  return (u.user + u.system) / 1e6
}

function counts(parsed) {
  // What the parser produced: meshes, rigid vertices / surfaces and animated vertices, the
  // vertex tracks' key frames. Vertices are 36-byte records in sliced ArrayBuffers.
  let vertices = 0
  let surfaces = 0
  let indices = 0
  for (const mesh of parsed.meshes) {
    const g = mesh.geometry
    const vs = Array.isArray(g.vertices) ? g.vertices : [g.vertices]
    for (const v of vs) vertices += v.byteLength / 36
    surfaces += g.surfaces.length
    for (const s of g.surfaces) indices += s.indices.byteLength / 2
  }
  let frames = 0
  for (const a of parsed.animations) for (const t of a.tracks) frames += t.times.length
  return {
    format: parsed.format, meshes: parsed.meshes.length, surfaces, vertices, indices,
    transforms: parsed.transforms.length, animations: parsed.animations.length, frames,
  }
}

const args = parseArgs(process.argv.slice(2))
const url = pathToFileURL(resolve(args.checkout, 'src', 'parse-pba.js')).href
const parsePBA = (await import(url)).default

function fresh(bytes) {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
}

const inputs = args.files.map((file) => ({ file, bytes: readFileSync(file) }))
for (const { bytes } of inputs) {
  for (let i = 0; i < args.repeat; i++) {
    try { parsePBA(fresh(bytes)) } catch { break }
  }
}

for (const { file, bytes } of inputs) {
  let best = Infinity
  let bestWall = Infinity
  let parsed = null
  let error = null
  for (let i = 0; i < args.repeat; i++) {
    const buffer = fresh(bytes)
    const t0 = process.cpuUsage()
    const w0 = process.hrtime.bigint()
    try {
      parsed = parsePBA(buffer)
    } catch (e) {
      error = String(e)
      break
    }
    bestWall = Math.min(bestWall, Number(process.hrtime.bigint() - w0) / 1e9)
    best = Math.min(best, cpuSeconds(t0))
  }
  const row = { file, size: bytes.byteLength, peer: 'praetorians-model-viewer parse-pba.js' }
  if (error !== null) row.error = error
  else {
    Object.assign(row, { parse_s: best, wall_s: bestWall, mb_s: bytes.byteLength / best / 1e6 },
                  counts(parsed))
  }
  console.log(JSON.stringify(row))
}
