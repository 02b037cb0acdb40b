/**
 * What /proc says about a process: resident memory (VmRSS, and its peak
 * VmHWM) and CPU time (user + system). Used to show where the time of a
 * scenario went (this process, the worker processes, PostgreSQL) and how much
 * memory a worker or the whole app holds at its peak.
 */

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const TICKS = 100;

function readText(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/** The fields of /proc/<pid>/stat after the command name. */
function statFields(pid: number): string[] | null {
  const text = readText(`/proc/${pid}/stat`);
  if (!text) return null;
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

/** User + system CPU seconds of `pid` so far; null when it is gone. */
export function cpuSeconds(pid: number): number | null {
  const f = statFields(pid);
  if (!f) return null;
  // After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
  return (Number(f[11]) + Number(f[12])) / TICKS;
}

/** CPU seconds of the children `pid` has waited for (exited backends). */
function reapedCpuSeconds(pid: number): number {
  const f = statFields(pid);
  return f ? (Number(f[13]) + Number(f[14])) / TICKS : 0;
}

/** The parent of `pid`, or null. */
export function parentPid(pid: number): number | null {
  const f = statFields(pid);
  return f ? Number(f[1]) : null;
}

/** VmRSS and VmHWM of `pid`, in MB; null when it is gone. */
export function memoryMb(pid: number): { rss: number; hwm: number } | null {
  const text = readText(`/proc/${pid}/status`);
  if (!text) return null;
  const kb = (key: string) => {
    const m = text.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"));
    return m ? Number(m[1]) : 0;
  };
  return { rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024 };
}

/**
 * CPU seconds of a PostgreSQL server: the postmaster, every live child
 * (backends, checkpointer, WAL writer...) and every child that has exited.
 */
export function postgresCpuSeconds(postmaster: number): number | null {
  const own = cpuSeconds(postmaster);
  if (own === null) return null;
  let total = own + reapedCpuSeconds(postmaster);
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const pid = Number(entry.name);
    if (parentPid(pid) === postmaster) total += cpuSeconds(pid) ?? 0;
  }
  return total;
}

/** Total memory of this machine in MB, from /proc/meminfo. */
export function machineMemoryMb(): number | null {
  const text = readText("/proc/meminfo");
  const m = text?.match(/^MemTotal:\s+(\d+) kB/m);
  return m ? Math.round(Number(m[1]) / 1024) : null;
}

/** The CPU model name, from /proc/cpuinfo. */
export function cpuModel(): string | null {
  const text = readText("/proc/cpuinfo");
  return text?.match(/^model name\s*:\s*(.+)$/m)?.[1].trim() ?? null;
}

/**
 * Samples the resident memory of `pid` every `everyMs` until stopped; the
 * peak is the larger of the sampled VmRSS and the kernel's VmHWM.
 */
export class MemorySampler {
  #timer: ReturnType<typeof setInterval>;
  peakRssMb = 0;
  hwmMb = 0;

  constructor(readonly pid: number, everyMs = 250) {
    this.sample();
    this.#timer = setInterval(() => this.sample(), everyMs);
  }

  sample() {
    const m = memoryMb(this.pid);
    if (!m) return;
    this.peakRssMb = Math.max(this.peakRssMb, m.rss);
    this.hwmMb = Math.max(this.hwmMb, m.hwm);
  }

  /** Takes a last sample and stops; returns the peak in MB. */
  stop(): number {
    this.sample();
    clearInterval(this.#timer);
    return Math.max(this.peakRssMb, this.hwmMb);
  }
}

/**
 * Busy CPU seconds of the whole machine (every process), from /proc/stat:
 * what is not idle or waiting for I/O.
 */
export function machineBusySeconds(): number | null {
  const line = readText("/proc/stat")?.split("\n")[0];
  if (!line?.startsWith("cpu ")) return null;
  const [user, nice, system, _idle, _iowait, irq, softirq, steal] = line
    .split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq + steal) / TICKS;
}
