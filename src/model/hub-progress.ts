// How a download shows itself: a cli-progress bar on a terminal, else one line per file at
// its start and its end (logs stay readable when stderr is a file or a pipe).
import cliProgress from 'cli-progress';

export interface DownloadProgress {
  /** `done` bytes are already on disk (a resumed download) out of `total` */
  start(file: string, total: number, done: number): void;
  /** `done` bytes now on disk */
  update(done: number): void;
  /** the file is complete */
  finish(): void;
  /** the transfer stopped (error); leaves the terminal clean */
  abort(): void;
}

/** Lines go to `log`. */
export type HubLog = (line: string) => void;

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

export function createProgress(log: HubLog, tty: boolean): DownloadProgress {
  return tty ? new BarProgress() : new LineProgress(log);
}

class LineProgress implements DownloadProgress {
  private file = '';
  private total = 0;
  private startedAt = 0;
  private startDone = 0;
  constructor(private readonly log: HubLog) {}

  start(file: string, total: number, done: number): void {
    this.file = file;
    this.total = total;
    this.startDone = done;
    this.startedAt = Date.now();
    const resume = done > 0 ? `, resuming at ${formatBytes(done)}` : '';
    this.log(`loom: downloading ${file} (${formatBytes(total)}${resume})`);
  }

  update(): void {}

  finish(): void {
    const seconds = (Date.now() - this.startedAt) / 1000;
    const rate = seconds > 0 ? `, ${formatBytes((this.total - this.startDone) / seconds)}/s` : '';
    this.log(`loom: downloaded ${this.file} (${formatBytes(this.total)} in ${seconds.toFixed(1)} s${rate})`);
  }

  abort(): void {}
}

class BarProgress implements DownloadProgress {
  private bar: cliProgress.SingleBar | undefined;
  private total = 0;

  start(file: string, total: number, done: number): void {
    this.total = total;
    this.bar = new cliProgress.SingleBar(
      {
        format: `${file} {bar} {percentage}% | {sofar} / {size} | {eta_formatted}`,
        stream: process.stderr,
        hideCursor: true,
        clearOnComplete: false,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    this.bar.start(total, done, { sofar: formatBytes(done), size: formatBytes(total) });
  }

  update(done: number): void {
    this.bar?.update(done, { sofar: formatBytes(done) });
  }

  finish(): void {
    this.bar?.update(this.total, { sofar: formatBytes(this.total) });
    this.bar?.stop();
    this.bar = undefined;
  }

  abort(): void {
    this.bar?.stop();
    this.bar = undefined;
  }
}
