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

/**
 * A child of `parent` with `bindings()`, made on first use: for the loggers of things that seldom
 * log (a turn logs on failures only), as a pino child costs a copy of its bindings through the
 * root's redaction each time one is made.
 */
export function lazyChild(parent: Logger, bindings: () => object): Logger {
  let made: Logger | undefined;
  const logger = () => {
    made ??= parent.child(bindings());
    return made;
  };
  return {
    debug: (fields, message) => logger().debug(fields, message),
    info: (fields, message) => logger().info(fields, message),
    warn: (fields, message) => logger().warn(fields, message),
    error: (fields, message) => logger().error(fields, message),
    child: (fields) => logger().child(fields),
  };
}
