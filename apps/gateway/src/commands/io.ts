/** Where a command writes: stdout lines and stderr lines (tests capture both). */
export interface CommandIo {
  out(line: string): void;
  err(line: string): void;
}

export const processIo: CommandIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};
