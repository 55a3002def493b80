import { readdirSync, readFileSync } from 'node:fs';

const SAMPLE_MS = 50;
/**
 * The whole process table is read for new descendants every this many samples (a scan of /proc costs about a
 * millisecond); in between only the known processes are read. This kernel has no /proc/<pid>/task/<tid>/children.
 */
const DISCOVER_EVERY = 4;

/** The resident memory of a process and all its descendants (forked workers included), sampled from /proc. */
export class ProcessTree {
  private pids: number[];
  private currentKb = 0;
  private peakKb = 0;
  private mostProcesses = 0;
  private mostThreads = 0;

  constructor(readonly pid: number) {
    this.pids = [pid];
  }

  /** Resident memory of the tree at the last sample. */
  rssMb(): number {
    return Math.round(this.currentKb / 1024);
  }

  /** The largest sum of the tree's resident memory since it was tracked. */
  peakRssMb(): number {
    return Math.round(this.peakKb / 1024);
  }

  /** The most processes the tree had at once (1, unless the app forks). */
  peakProcesses(): number {
    return this.mostProcesses;
  }

  /** The most threads of all its processes at once (worker threads, libuv's pool and V8's included). */
  peakThreads(): number {
    return this.mostThreads;
  }

  /** The processes of the tree other than its root, read from the process table now. */
  descendants(): number[] {
    return descendantsOf(this.pid, processChildren()).slice(1);
  }

  /** Reads the tree's memory; with the process table, finds its processes anew first. Returns the sum in kB. */
  sample(children: Map<number, number[]> | null): number {
    if (children) this.pids = descendantsOf(this.pid, children);
    const alive: number[] = [];
    let kb = 0;
    let threads = 0;
    for (const pid of this.pids) {
      const status = readStatus(pid);
      if (!status) continue;
      alive.push(pid);
      kb += status.rssKb;
      threads += status.threads;
    }
    this.pids = alive;
    this.currentKb = kb;
    this.peakKb = Math.max(this.peakKb, kb);
    this.mostProcesses = Math.max(this.mostProcesses, alive.length);
    this.mostThreads = Math.max(this.mostThreads, threads);
    return kb;
  }
}

/**
 * The largest memory of one tracked tree (one app: a service installation) while the window is open. Apps that run
 * side by side in a comparison (limiter off and on, say) are alternatives, not parts of one service.
 */
export interface PeakWindow {
  peakRssMb(): number;
  close(): void;
}

const trees = new Set<ProcessTree>();
const windows = new Set<{ peakKb: number }>();
let timer: NodeJS.Timeout | undefined;
let ticks = 0;

/** Samples the tree of `pid` every SAMPLE_MS until `untrack`; its memory counts in every open window. */
export function trackProcessTree(pid: number): ProcessTree {
  const tree = new ProcessTree(pid);
  trees.add(tree);
  sampleAll(true);
  timer ??= setInterval(() => sampleAll(++ticks % DISCOVER_EVERY === 0), SAMPLE_MS).unref();
  return tree;
}

export function untrackProcessTree(tree: ProcessTree): void {
  tree.sample(processChildren());
  trees.delete(tree);
  if (trees.size === 0 && timer) {
    clearInterval(timer);
    timer = undefined;
  }
}

/** Opens a window that keeps the peak of any one tracked tree from now until it is closed. */
export function openPeakWindow(): PeakWindow {
  const window = { peakKb: 0 };
  windows.add(window);
  return {
    peakRssMb: () => Math.round(window.peakKb / 1024),
    close: () => windows.delete(window),
  };
}

function sampleAll(discover: boolean): void {
  const children = discover ? processChildren() : null;
  let largestKb = 0;
  for (const tree of trees) largestKb = Math.max(largestKb, tree.sample(children));
  for (const window of windows) window.peakKb = Math.max(window.peakKb, largestKb);
}

/** Whether a process still exists (a zombie not yet reaped counts). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function descendantsOf(root: number, children: Map<number, number[]>): number[] {
  const found = [root];
  for (let i = 0; i < found.length; i++) found.push(...(children.get(found[i]) ?? []));
  return found;
}

/** Every process's children, from the parent pid in /proc/<pid>/stat. */
function processChildren(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid …", where comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ', 2)[1]);
    const siblings = children.get(ppid);
    if (siblings) siblings.push(pid);
    else children.set(ppid, [pid]);
  }
  return children;
}

/** VmRSS of a process in kB (0 for a zombie) and its threads, or null once it is gone. */
function readStatus(pid: number): { rssKb: number; threads: number } | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return null;
  }
  return { rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0), threads: Number(/Threads:\s+(\d+)/.exec(status)?.[1] ?? 0) };
}
