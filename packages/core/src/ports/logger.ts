/**
 * The logging port: the subset of pino the packages use. Only the app creates the pino root;
 * packages receive a logger and derive children per component and per message. Object first,
 * constant lowercase message second, errors under `err`.
 */
export interface Logger {
  debug(bindings: object, message: string): void;
  info(bindings: object, message: string): void;
  warn(bindings: object, message: string): void;
  error(bindings: object, message: string): void;
  child(bindings: object): Logger;
}

/** A logger that discards everything: the default in tests and benchmarks. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
