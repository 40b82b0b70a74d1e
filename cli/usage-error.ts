// A command line that cannot be run as given: the CLI prints the message in one line
// with where the verb's usage is, exit 2.
export class UsageError extends Error {
  constructor(
    readonly verb: string,
    message: string,
  ) {
    super(message);
  }
}
