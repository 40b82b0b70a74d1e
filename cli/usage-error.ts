// A command line that cannot be run as given: the CLI prints the message and the verb's usage, exit 2.
export class UsageError extends Error {
  constructor(
    readonly verb: string,
    message: string,
  ) {
    super(message);
  }
}
