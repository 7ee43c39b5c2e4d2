/** A prompt block that cannot be admitted (answered with -32602). */
export class PromptContentError extends TypeError {
  /** @param message Names the block and the reason */
  constructor(message: string) {
    super(message);
    this.name = "PromptContentError";
  }
}
