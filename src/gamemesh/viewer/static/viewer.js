// gamemesh viewer: shows model.glb (the file converted by `gamemesh view`, relative to the page:
// / for one file, /m/N/ in the folder browser) with three.js.
// The counts in the panel are measured on what three.js loaded, not copied from the server's
// info, so a test can compare them with `gamemesh info`. window.gamemeshViewer is the page's
// small API for tests and the console: play(name), pause(), seek(t), state(), counts.

import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';

const FOV = 35;
const AZIMUTH = THREE.MathUtils.degToRad(35);   // same view as the thumbnails
const ELEVATION = THREE.MathUtils.degToRad(20);
const NAV_KINDS = ['navmesh', 'nav_mesh', 'navigation_mesh'];

const api = { ready: false, error: null, counts: null, clips: [], frames: 0, playedSeconds: 0 };
window.gamemeshViewer = api;

const $ = (id) => document.getElementById(id);
const canvas = $('view');
const status = $('status');

const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(window.devicePixelRatio || 1);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x30343a);
const camera = new THREE.PerspectiveCamera(FOV, 1, 0.01, 1000);
const controls = new OrbitControls(camera, canvas);
const mixerClock = new THREE.Clock(false);

let mixer = null;
let action = null;
let playing = false;
let renderQueued = false;
let skeletonHelper = null;
const navObjects = [];

// The rule of gamemesh/viewer/flags.py: {"navmesh": k} (k may be 0) at the top of the extras
// or inside a per-format dict ({"splashpack": {"navmesh": 0}}), or kind/role/type "navmesh".
function marksNavmesh(d) {
  if (!d || typeof d !== 'object') return false;
  const flag = d.navmesh ?? d.is_navmesh;
  if (flag !== undefined && flag !== null && flag !== false) return true;
  return ['kind', 'role', 'type'].some((k) => NAV_KINDS.includes(String(d[k] ?? '').toLowerCase()));
}

// gamemesh writes a structured extras value as JSON text under "key.json" (gltf/extras.py).
function unpacked([key, value]) {
  if (!key.endsWith('.json') || typeof value !== 'string') return value;
  try { return JSON.parse(value); } catch { return value; }
}

function isNavmesh(userData) {
  if (marksNavmesh(userData)) return true;
  return Object.entries(userData ?? {}).some((kv) => marksNavmesh(unpacked(kv)));
}

function resize() {
  const w = canvas.clientWidth || 1;
  const h = canvas.clientHeight || 1;
  renderer.setSize(w, h, false);
  camera.aspect = w / h;
  camera.updateProjectionMatrix();
  requestRender();
}

function requestRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(frame);
}

function frame() {
  renderQueued = false;
  if (playing && mixer) {
    const dt = mixerClock.getDelta();
    mixer.update(dt);
    api.playedSeconds += dt;
    showTime();
  }
  controls.update();
  renderer.render(scene, camera);
  api.frames += 1;
  if (playing) requestRender();
}

function frameCamera(root) {
  root.updateMatrixWorld(true);
  // Frame the model, not a level-sized navmesh around it (unless there is nothing else).
  const box = new THREE.Box3();
  root.traverse((obj) => {
    if (obj.isMesh && !navObjects.includes(obj)) box.expandByObject(obj, false);
  });
  if (box.isEmpty()) box.setFromObject(root);
  if (box.isEmpty()) box.set(new THREE.Vector3(-1, -1, -1), new THREE.Vector3(1, 1, 1));
  const center = box.getCenter(new THREE.Vector3());
  const radius = Math.max(box.getSize(new THREE.Vector3()).length() / 2, 1e-6);
  const vfov = THREE.MathUtils.degToRad(FOV);
  const hfov = 2 * Math.atan(Math.tan(vfov / 2) * camera.aspect);
  const dist = radius / Math.sin(Math.min(vfov, hfov) / 2) * 1.02;
  const dir = new THREE.Vector3(Math.cos(ELEVATION) * Math.sin(AZIMUTH), Math.sin(ELEVATION),
    Math.cos(ELEVATION) * Math.cos(AZIMUTH));
  camera.position.copy(center).addScaledVector(dir, dist);
  camera.near = Math.max(dist - radius * 2, dist * 1e-3);
  camera.far = dist + radius * 4;
  camera.updateProjectionMatrix();
  controls.target.copy(center);
  controls.update();
  // Key light over the viewer's left shoulder, fill from the right, as in the thumbnails.
  const right = new THREE.Vector3().crossVectors(new THREE.Vector3(0, 1, 0), dir).normalize();
  const key = new THREE.DirectionalLight(0xffffff, 2.2);
  key.position.copy(center).addScaledVector(dir.clone().addScaledVector(right, -0.4).add(new THREE.Vector3(0, 0.5, 0)), dist);
  key.target.position.copy(center);
  const fill = new THREE.DirectionalLight(0xffffff, 0.7);
  fill.position.copy(center).addScaledVector(dir.clone().addScaledVector(right, 0.8).add(new THREE.Vector3(0, -0.2, 0)), dist);
  fill.target.position.copy(center);
  scene.add(key, key.target, fill, fill.target, new THREE.HemisphereLight(0xffffff, 0x404040, 1.0));
}

function measure(gltf) {
  const meshes = new Set();
  const bones = new Set();
  gltf.scene.traverse((obj) => {
    const assoc = gltf.parser.associations.get(obj);
    if (obj.isMesh && assoc && assoc.meshes !== undefined) meshes.add(assoc.meshes);
    if (obj.isSkinnedMesh) obj.skeleton.bones.forEach((b) => bones.add(b.uuid));
  });
  return { meshes: meshes.size, bones: bones.size, clips: gltf.animations.length };
}

function setupNavmesh(root) {
  root.traverse((obj) => {
    let flagged = false;
    for (let o = obj; o && !flagged; o = o.parent) flagged = isNavmesh(o.userData);
    if (!flagged || !obj.isMesh) return;
    obj.material = new THREE.MeshBasicMaterial({ color: 0x34d058, transparent: true, opacity: 0.45,
      side: THREE.DoubleSide, depthWrite: false, polygonOffset: true, polygonOffsetFactor: -2 });
    obj.renderOrder = 10;
    obj.visible = false; // overlays and helper models start hidden; the toggle shows them
    navObjects.push(obj);
  });
  if (navObjects.length) {
    $('navmesh').checked = false;
    $('navmesh-toggle').hidden = false;
    $('navmesh').addEventListener('change', (e) => {
      navObjects.forEach((o) => { o.visible = e.target.checked; });
      requestRender();
    });
  }
}

function setupToggles(root) {
  $('wireframe').addEventListener('change', (e) => {
    root.traverse((obj) => {
      if (!obj.isMesh || navObjects.includes(obj)) return;
      (Array.isArray(obj.material) ? obj.material : [obj.material]).forEach((m) => { m.wireframe = e.target.checked; });
    });
    requestRender();
  });
  skeletonHelper = new THREE.SkeletonHelper(root);
  skeletonHelper.visible = false;
  skeletonHelper.material.depthTest = false;
  skeletonHelper.renderOrder = 20;
  scene.add(skeletonHelper);
  const box = $('skeleton');
  box.disabled = skeletonHelper.bones.length === 0;
  box.addEventListener('change', (e) => { skeletonHelper.visible = e.target.checked; requestRender(); });
}

function showTime() {
  const t = action ? action.time : 0;
  $('time').value = String(t);
  $('time-label').textContent = `${t.toFixed(2)} s`;
}

function selectClip(name) {
  const clip = api.clipObjects.find((c) => c.name === name) ?? api.clipObjects[Number(name)];
  if (!clip) throw new Error(`no clip ${name}`);
  if (action && action.getClip() === clip) return action;
  if (action) action.stop();
  action = mixer.clipAction(clip);
  action.play();
  action.paused = !playing;
  $('clips').value = clip.name;
  $('time').max = String(Math.max(clip.duration, 0.001));
  showTime();
  return action;
}

function setupAnimation(gltf) {
  mixer = new THREE.AnimationMixer(gltf.scene);
  api.clipObjects = gltf.animations;
  api.clips = gltf.animations.map((c) => c.name);
  const list = $('clips');
  gltf.animations.forEach((c, i) => {
    const opt = document.createElement('option');
    opt.value = c.name;
    opt.textContent = `${c.name || `clip ${i}`}  (${c.duration.toFixed(2)} s)`;
    list.append(opt);
  });
  $('anim-section').hidden = gltf.animations.length === 0;
  list.addEventListener('change', () => { selectClip(list.value); mixer.update(0); requestRender(); });
  $('play').addEventListener('click', () => api.play());
  $('pause').addEventListener('click', () => api.pause());
  $('time').addEventListener('input', (e) => api.seek(Number(e.target.value)));
}

api.play = (name) => {
  if (!mixer || !api.clipObjects.length) return false;
  selectClip(name ?? (action ? action.getClip().name : api.clipObjects[0].name));
  playing = true;
  action.paused = false;
  mixerClock.start();
  requestRender();
  return true;
};
api.pause = () => {
  playing = false;
  if (action) action.paused = true;
  mixerClock.stop();
  requestRender();
};
api.seek = (t, name) => {
  if (!mixer || !api.clipObjects.length) return;
  selectClip(name ?? (action ? action.getClip().name : api.clipObjects[0].name));
  action.time = t;
  mixer.update(0);
  showTime();
  requestRender();
};
api.state = () => ({ playing, clip: action ? action.getClip().name : null,
  time: action ? action.time : 0, frames: api.frames, playedSeconds: api.playedSeconds });
// World positions of the skeleton's bones: lets a test see that playing moves the model.
api.bonePositions = () => (skeletonHelper ? skeletonHelper.bones.map((b) => {
  b.updateWorldMatrix(true, false);
  return new THREE.Vector3().setFromMatrixPosition(b.matrixWorld).toArray();
}) : []);
// Every object's world matrix and morph weights, flattened: a test compares two of these to
// see that playing a clip moves the model (bones, rigid parts or morphs alike).
api.poseSignature = () => {
  const out = [];
  if (!api.root) return out;
  api.root.updateMatrixWorld(true);
  api.root.traverse((obj) => {
    out.push(...obj.matrixWorld.elements);
    if (obj.morphTargetInfluences) out.push(...obj.morphTargetInfluences);
  });
  return out;
};
// What the wireframe, skeleton and navmesh toggles currently show.
api.toggles = () => {
  let wireframe = false;
  api.root?.traverse((obj) => {
    if (!obj.isMesh || navObjects.includes(obj)) return;
    (Array.isArray(obj.material) ? obj.material : [obj.material]).forEach((m) => { wireframe ||= m.wireframe; });
  });
  return { wireframe, skeleton: Boolean(skeletonHelper?.visible),
    skeletonBones: skeletonHelper ? skeletonHelper.bones.length : 0,
    navmesh: navObjects.some((o) => o.visible) };
};
api.whenRendered = () => new Promise((resolve) => {
  requestRender();
  requestAnimationFrame(() => requestAnimationFrame(() => resolve(api.frames)));
});

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = text;
  row.append(td);
}

function showInfo(info) {
  // A model of a folder browser (/m/N/) links back to the list.
  if (/^\/m\/\d+\/$/.test(location.pathname)) $('back').hidden = false;
  $('title').textContent = info.viewer?.file ?? info.file;
  document.title = `${info.viewer?.file ?? info.file} – gamemesh viewer`;
  const table = $('info');
  const rows = [['format', info.format], ['size', `${info.size} bytes`]];
  for (const [k, v] of info.viewer?.native_words ?? []) rows.push([k, v]);
  for (const k of ['nodes', 'meshes', 'primitives', 'vertices', 'triangles', 'materials', 'textures', 'skins', 'bones', 'morph_targets']) {
    if (k in info) rows.push([k, String(info[k])]);
  }
  if (info.bounds) rows.push(['bounds', `${info.bounds.min.join(', ')} .. ${info.bounds.max.join(', ')}`]);
  for (const a of info.animations ?? []) rows.push([`clip ${a.name}`, `${a.keys} keys, ${a.duration.toFixed(3)} s, ${a.channels} channels`]);
  for (const [k, v] of rows) {
    const tr = document.createElement('tr');
    cell(tr, k);
    cell(tr, v);
    table.append(tr);
  }
  const notes = $('notes');
  for (const n of info.notes ?? []) {
    const li = document.createElement('li');
    li.className = n.level;
    li.textContent = `${n.code}: ${n.message}`;
    notes.append(li);
  }
  if (!(info.notes ?? []).length) notes.textContent = 'none';
  const textures = $('textures');
  for (const t of info.viewer?.textures ?? []) {
    const fig = document.createElement('figure');
    if (t.url) {
      const img = document.createElement('img');
      img.src = t.url;
      img.alt = t.name;
      fig.append(img);
    }
    const cap = document.createElement('figcaption');
    cap.textContent = t.url ? `${t.name}${t.width ? ` ${t.width}×${t.height}` : ''}` : `${t.name} (missing)`;
    fig.append(cap);
    textures.append(fig);
  }
  if (!(info.viewer?.textures ?? []).length) textures.textContent = 'none';
  const exports = info.viewer?.exports ?? [];
  if (exports.length) {
    $('exports-section').hidden = false;
    $('exports-title').textContent = exports[0].label;
    for (const e of exports) {
      const img = document.createElement('img');
      img.src = e.url;
      img.alt = e.name;
      img.id = `export-${exports.indexOf(e)}`;
      $('exports').append(img);
    }
  }
}

async function main() {
  resize();
  window.addEventListener('resize', resize);
  controls.addEventListener('change', requestRender);
  const info = await (await fetch('api/info.json')).json();
  api.info = info;
  showInfo(info);
  const gltf = await new GLTFLoader().loadAsync('model.glb');
  scene.add(gltf.scene);
  api.root = gltf.scene;
  setupNavmesh(gltf.scene);
  setupToggles(gltf.scene);
  setupAnimation(gltf);
  frameCamera(gltf.scene);
  api.counts = { ...measure(gltf), navmeshes: navObjects.length };
  $('count-meshes').textContent = String(api.counts.meshes);
  $('count-bones').textContent = String(api.counts.bones);
  $('count-clips').textContent = String(api.counts.clips);
  status.textContent = '';
  await api.whenRendered();
  api.ready = true;
}

main().catch((err) => {
  api.error = String(err && err.stack ? err.stack : err);
  status.textContent = `error: ${err}`;
  status.className = 'error';
  console.error(err);
});
